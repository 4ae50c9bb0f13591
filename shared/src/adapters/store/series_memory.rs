//! The pools' series in memory: the embedded default's and the fast tests' (nothing expires).

use crate::application::ports::{SeriesStore, StoreResult};
use crate::domain::chart::{FollowedStake, PoolPoint, SeriesCursor, Tier};
use crate::domain::model::Chain;
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::RwLock;

/// Points by (chain, pool in the key's spelling, boundary).
type Points = BTreeMap<(Chain, String, i64), PoolPoint>;

#[derive(Default)]
pub struct MemorySeries {
    cursors: RwLock<HashMap<Chain, SeriesCursor>>,
    points: RwLock<Points>,
    /// The daily points wanted from when, by (chain, pool).
    wanted: RwLock<BTreeMap<(Chain, String), i64>>,
    stakes: RwLock<BTreeSet<(Chain, FollowedStake)>>,
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
        cursor: Option<&SeriesCursor>,
    ) -> StoreResult<()> {
        let mut stored = self.points.write().unwrap_or_else(|e| e.into_inner());
        for (pool, point) in points {
            stored.insert((chain, series_pool(chain, pool), point.time), point.clone());
        }
        drop(stored);
        if let Some(cursor) = cursor {
            let mut cursors = self.cursors.write().unwrap_or_else(|e| e.into_inner());
            cursors.insert(chain, cursor.clone());
        }
        Ok(())
    }

    async fn want_days(&self, chain: Chain, pool: &str, since: i64) -> StoreResult<()> {
        let mut wanted = self.wanted.write().unwrap_or_else(|e| e.into_inner());
        let entry = wanted
            .entry((chain, series_pool(chain, pool)))
            .or_insert(since);
        *entry = (*entry).min(since);
        Ok(())
    }

    async fn wanted_days(&self, chain: Chain) -> StoreResult<Vec<(String, i64)>> {
        let wanted = self.wanted.read().unwrap_or_else(|e| e.into_inner());
        Ok(wanted
            .iter()
            .filter(|((c, _), _)| *c == chain)
            .map(|((_, pool), since)| (pool.clone(), *since))
            .collect())
    }

    async fn days_done(
        &self,
        chain: Chain,
        pool: &str,
        since: i64,
        through: Option<i64>,
    ) -> StoreResult<()> {
        let mut wanted = self.wanted.write().unwrap_or_else(|e| e.into_inner());
        let key = (chain, series_pool(chain, pool));
        if wanted.get(&key) == Some(&since) {
            match through {
                Some(through) => wanted.insert(key, through + 1),
                None => wanted.remove(&key),
            };
        }
        Ok(())
    }

    async fn follow_stake(&self, chain: Chain, stake: &FollowedStake) -> StoreResult<()> {
        let mut stakes = self.stakes.write().unwrap_or_else(|e| e.into_inner());
        let stake = FollowedStake {
            pool: series_pool(chain, &stake.pool),
            ..stake.clone()
        };
        stakes.retain(|(c, s)| (*c, &s.pool, &s.token) != (chain, &stake.pool, &stake.token));
        stakes.insert((chain, stake));
        Ok(())
    }

    async fn followed_stakes(&self, chain: Chain) -> StoreResult<Vec<FollowedStake>> {
        let stakes = self.stakes.read().unwrap_or_else(|e| e.into_inner());
        Ok(stakes
            .iter()
            .filter(|(c, _)| *c == chain)
            .map(|(_, s)| s.clone())
            .collect())
    }

    async fn points(
        &self,
        chain: Chain,
        pool: &str,
        (from, to): (i64, i64),
        tiers: &[Tier],
    ) -> StoreResult<Vec<PoolPoint>> {
        if from > to {
            return Ok(Vec::new());
        }
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
