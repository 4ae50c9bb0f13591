//! The in-memory market: the catalog with its states, tracked ticks and fee records, for the
//! local server's embedded default and the tests.

use crate::application::ports::{Market, StoreError, StoreResult};
use crate::domain::catalog::{
    embedded_deployments, embedded_records, Catalog, CatalogError, Deployment, Pool, PoolMarket,
    PoolRecord,
};
use crate::domain::fee_ticks::FeeTick;
use crate::domain::market::{Freshness, MarketRules, PoolKey, PoolState, Succession};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

/// The catalog records with the states saved into them, in memory: the embedded default (a
/// snapshot nobody syncs) and local-api's live market (synced from `--rpc`).
pub struct MemoryMarket {
    records: Vec<PoolRecord>,
    deployments: Vec<Deployment>,
    rules: MarketRules,
    inner: RwLock<MarketInner>,
}

#[derive(Default)]
struct MarketInner {
    /// Pools linked wallets hold positions on, beside the catalog's.
    discovered: Vec<PoolRecord>,
    markets: HashMap<PoolKey, PoolMarket>,
    /// Per pool, how many positions use each tracked tick.
    uses: HashMap<PoolKey, BTreeMap<i32, u32>>,
    /// The catalog as last built; `None` after a write, rebuilt by the next read.
    built: Option<Arc<Catalog>>,
}

impl MemoryMarket {
    /// Fails when a record is invalid.
    pub fn new(
        records: Vec<PoolRecord>,
        rules: impl Into<MarketRules>,
    ) -> Result<Self, CatalogError> {
        let rules = rules.into();
        let deployments = embedded_deployments();
        let catalog =
            Catalog::build(&records, HashMap::new(), rules)?.with_deployments(deployments.clone());
        Ok(MemoryMarket {
            records,
            deployments,
            rules,
            inner: RwLock::new(MarketInner {
                built: Some(Arc::new(catalog)),
                ..MarketInner::default()
            }),
        })
    }

    /// These deployments instead of the embedded ones (a devnet's).
    pub fn with_deployments(mut self, deployments: Vec<Deployment>) -> Self {
        self.deployments = deployments;
        self.inner
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .built = None;
        self
    }

    /// The catalog shipped in the repository, never stale.
    pub fn embedded() -> Self {
        Self::new(embedded_records(), Freshness::Snapshot).expect("the embedded catalog is valid")
    }

    fn write<T>(
        &self,
        pool: &Pool,
        f: impl FnOnce(&mut PoolMarket, &mut BTreeMap<i32, u32>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *inner;
        let uses = inner.uses.entry(pool.key()).or_default();
        let out = f(inner.markets.entry(pool.key()).or_default(), uses)?;
        inner.built = None;
        Ok(out)
    }
}

/// A tick no position uses, no longer read: its record goes.
fn drop_tick(market: &mut PoolMarket, tick: i32) {
    market.tracked_ticks.remove(&tick);
    market.fee_ticks.remove(&tick);
    market.lingering.remove(&tick);
}

#[async_trait]
impl Market for MemoryMarket {
    async fn catalog(&self) -> StoreResult<Arc<Catalog>> {
        if let Some(built) = &self.inner.read().unwrap_or_else(|e| e.into_inner()).built {
            return Ok(built.clone());
        }
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let records: Vec<PoolRecord> = self
            .records
            .iter()
            .chain(&inner.discovered)
            .cloned()
            .collect();
        let catalog = Catalog::build(&records, inner.markets.clone(), self.rules)
            .map_err(|e| StoreError::Failure(Box::new(e)))?
            .with_deployments(self.deployments.clone());
        let catalog = Arc::new(catalog);
        inner.built = Some(catalog.clone());
        Ok(catalog)
    }

    async fn discover(&self, record: &PoolRecord) -> StoreResult<()> {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let key = PoolKey::new(record.chain, record.protocol, &record.pool);
        let known = self
            .records
            .iter()
            .chain(&inner.discovered)
            .any(|r| PoolKey::new(r.chain, r.protocol, &r.pool) == key);
        if !known {
            inner.discovered.push(record.clone());
            inner.built = None;
        }
        Ok(())
    }

    async fn track_ticks(
        &self,
        pool: &Pool,
        ticks: [i32; 2],
        first_use: &[FeeTick],
    ) -> StoreResult<PoolMarket> {
        self.write(pool, |market, uses| {
            for tick in ticks {
                *uses.entry(tick).or_default() += 1;
                market.tracked_ticks.insert(tick);
                market.lingering.remove(&tick);
            }
            for record in first_use {
                market.fee_ticks.entry(record.tick).or_insert(*record);
            }
            Ok(market.clone())
        })
    }

    async fn release_ticks(
        &self,
        pool: &Pool,
        ticks: [i32; 2],
        released_at: Option<i64>,
    ) -> StoreResult<()> {
        self.write(pool, |market, uses| {
            for tick in ticks {
                let Some(count) = uses.get_mut(&tick) else {
                    continue;
                };
                *count = count.saturating_sub(1);
                if *count == 0 {
                    uses.remove(&tick);
                    match released_at {
                        Some(at) => {
                            let until = market.lingering.entry(tick).or_insert(at);
                            *until = (*until).max(at);
                        }
                        None => drop_tick(market, tick),
                    }
                }
            }
            Ok(())
        })
    }

    async fn expire_ticks(&self, pool: &Pool, through: i64) -> StoreResult<()> {
        self.write(pool, |market, _| {
            let expired: Vec<i32> = market
                .lingering
                .iter()
                .filter(|(_, at)| **at <= through)
                .map(|(tick, _)| *tick)
                .collect();
            for tick in expired {
                drop_tick(market, tick);
            }
            Ok(())
        })
    }

    async fn save_state(
        &self,
        pool: &Pool,
        state: &PoolState,
        fee_ticks: &[FeeTick],
        succession: Succession,
    ) -> StoreResult<()> {
        let stored_height = |market: &PoolMarket| market.state.as_ref().map(|s| s.height);
        self.write(pool, |market, _| {
            match (succession, stored_height(market)) {
                (Succession::Next, Some(stored)) if stored >= state.height => {
                    Err(StoreError::Conflict)
                }
                (Succession::Replaces { height }, stored) if stored != Some(height) => {
                    Err(StoreError::Conflict)
                }
                _ => {
                    market.state = Some(state.clone());
                    // Only ticks still in use: one released meanwhile stays dropped.
                    let tracked = &market.tracked_ticks;
                    let records = fee_ticks.iter().filter(|r| tracked.contains(&r.tick));
                    market
                        .fee_ticks
                        .extend(records.map(|record| (record.tick, *record)));
                    Ok(())
                }
            }
        })
    }
}
