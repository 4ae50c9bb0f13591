//! The pools' series in memory: the embedded default's and the fast tests' (nothing expires).

use crate::application::ports::{SeriesStore, StoreResult};
use crate::domain::chart::{PoolPoint, SeriesCursor, Tier};
use crate::domain::model::Chain;
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;

/// Points by (chain, pool in the key's spelling, boundary).
type Points = BTreeMap<(Chain, String, i64), PoolPoint>;

#[derive(Default)]
pub struct MemorySeries {
    cursors: RwLock<HashMap<Chain, SeriesCursor>>,
    points: RwLock<Points>,
}

/// A pool id as the series keys it (EVM addresses and v4 ids in lower case).
pub fn series_pool(chain: Chain, pool: &str) -> String {
    if chain.addresses_ignore_case() {
        pool.to_ascii_lowercase()
    } else {
        pool.to_string()
    }
}

#[async_trait]
impl SeriesStore for MemorySeries {
    async fn series_cursor(&self, chain: Chain) -> StoreResult<SeriesCursor> {
        let cursors = self.cursors.read().unwrap_or_else(|e| e.into_inner());
        Ok(cursors.get(&chain).cloned().unwrap_or_default())
    }

    async fn save_points(
        &self,
        chain: Chain,
        points: &[(String, PoolPoint)],
        cursor: &SeriesCursor,
    ) -> StoreResult<()> {
        let mut stored = self.points.write().unwrap_or_else(|e| e.into_inner());
        for (pool, point) in points {
            stored.insert((chain, series_pool(chain, pool), point.time), point.clone());
        }
        drop(stored);
        let mut cursors = self.cursors.write().unwrap_or_else(|e| e.into_inner());
        cursors.insert(chain, cursor.clone());
        Ok(())
    }

    async fn points(
        &self,
        chain: Chain,
        pool: &str,
        (from, to): (i64, i64),
        tiers: &[Tier],
    ) -> StoreResult<Vec<PoolPoint>> {
        let pool = series_pool(chain, pool);
        let stored = self.points.read().unwrap_or_else(|e| e.into_inner());
        Ok(stored
            .range((chain, pool.clone(), from)..=(chain, pool, to))
            .map(|(_, p)| p)
            .filter(|p| tiers.contains(&Tier::of(p.time)))
            .cloned()
            .collect())
    }
}
