//! The in-memory store and market: the local server's embedded default and the handlers' test
//! double.

use super::traits::{Market, PositionStore, StoreError, StoreResult};
use crate::catalog::{embedded_records, Catalog, CatalogError, Pool, PoolMarket, PoolRecord};
use crate::fee_ticks::FeeTick;
use crate::market::{Freshness, PoolKey, PoolState};
use crate::model::{Closing, Filter, Page, PageRequest, Position, Realized, Status};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

/// Positions per owner, ordered by id (time-ordered), so newest-first is a reverse walk.
#[derive(Default)]
pub struct MemoryStore {
    owners: RwLock<HashMap<String, BTreeMap<String, Position>>>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn read<T>(&self, owner: &str, f: impl FnOnce(Option<&BTreeMap<String, Position>>) -> T) -> T {
        let owners = self.owners.read().unwrap_or_else(|e| e.into_inner());
        f(owners.get(owner))
    }
}

#[async_trait]
impl PositionStore for MemoryStore {
    async fn insert(&self, position: &Position) -> StoreResult<()> {
        let mut owners = self.owners.write().unwrap_or_else(|e| e.into_inner());
        let positions = owners.entry(position.owner.clone()).or_default();
        if positions.contains_key(&position.id) {
            return Err(StoreError::Conflict);
        }
        positions.insert(position.id.clone(), position.clone());
        Ok(())
    }

    async fn get(&self, owner: &str, id: &str) -> StoreResult<Option<Position>> {
        Ok(self.read(owner, |positions| {
            positions.and_then(|p| p.get(id)).cloned()
        }))
    }

    async fn list(&self, owner: &str, filter: Filter, page: PageRequest) -> StoreResult<Page> {
        Ok(self.read(owner, |positions| {
            let matching = || {
                positions
                    .into_iter()
                    .flat_map(|p| p.values().rev())
                    .filter(|p| filter.matches(p))
            };
            let total = matching().count() as u64;
            let items = matching()
                .skip(usize::try_from(page.offset).unwrap_or(usize::MAX))
                .take(page.limit as usize)
                .cloned()
                .collect();
            Page { items, total }
        }))
    }

    async fn open_positions(&self, owner: &str) -> StoreResult<Vec<Position>> {
        Ok(self.read(owner, |positions| {
            positions
                .into_iter()
                .flat_map(|p| p.values().rev())
                .filter(|p| p.status != Status::Closed)
                .cloned()
                .collect()
        }))
    }

    async fn close(
        &self,
        owner: &str,
        id: &str,
        from: Status,
        closing: &Closing,
    ) -> StoreResult<()> {
        let mut owners = self.owners.write().unwrap_or_else(|e| e.into_inner());
        match owners.get_mut(owner).and_then(|p| p.get_mut(id)) {
            Some(position) if position.status == from && from != Status::Closed => {
                position.status = Status::Closed;
                position.closing = Some(closing.clone());
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }

    async fn realized(&self, owner: &str) -> StoreResult<Realized> {
        Ok(self.read(owner, |positions| {
            let mut totals = Realized::default();
            for closing in positions
                .into_iter()
                .flat_map(|p| p.values())
                .filter_map(|p| p.closing.as_ref())
            {
                totals.pnl_usd += &closing.pnl_usd;
                totals.cost_basis_usd += &closing.cost_basis_usd;
            }
            totals
        }))
    }

    async fn set_status(&self, owner: &str, id: &str, from: Status, to: Status) -> StoreResult<()> {
        let mut owners = self.owners.write().unwrap_or_else(|e| e.into_inner());
        match owners.get_mut(owner).and_then(|p| p.get_mut(id)) {
            Some(position) if position.status == from => {
                position.status = to;
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }
}

/// The catalog records with the states saved into them, in memory: the embedded default (a
/// snapshot nobody syncs) and local-api's live market (synced from `--rpc`).
pub struct MemoryMarket {
    records: Vec<PoolRecord>,
    freshness: Freshness,
    inner: RwLock<MarketInner>,
}

#[derive(Default)]
struct MarketInner {
    markets: HashMap<PoolKey, PoolMarket>,
    /// The catalog as last built; `None` after a write, rebuilt by the next read.
    built: Option<Arc<Catalog>>,
}

impl MemoryMarket {
    /// Fails when a record is invalid.
    pub fn new(records: Vec<PoolRecord>, freshness: Freshness) -> Result<Self, CatalogError> {
        let catalog = Catalog::build(&records, HashMap::new(), freshness)?;
        Ok(MemoryMarket {
            records,
            freshness,
            inner: RwLock::new(MarketInner {
                markets: HashMap::new(),
                built: Some(Arc::new(catalog)),
            }),
        })
    }

    /// The catalog shipped in the repository, never stale.
    pub fn embedded() -> Self {
        Self::new(embedded_records(), Freshness::Snapshot).expect("the embedded catalog is valid")
    }

    fn write<T>(
        &self,
        pool: &Pool,
        f: impl FnOnce(&mut PoolMarket) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let out = f(inner.markets.entry(pool.key()).or_default())?;
        inner.built = None;
        Ok(out)
    }
}

#[async_trait]
impl Market for MemoryMarket {
    async fn catalog(&self) -> StoreResult<Arc<Catalog>> {
        if let Some(built) = &self.inner.read().unwrap_or_else(|e| e.into_inner()).built {
            return Ok(built.clone());
        }
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let catalog = Catalog::build(&self.records, inner.markets.clone(), self.freshness)
            .map_err(|e| StoreError::Failure(Box::new(e)))?;
        let catalog = Arc::new(catalog);
        inner.built = Some(catalog.clone());
        Ok(catalog)
    }

    async fn track_ticks(
        &self,
        pool: &Pool,
        ticks: [i32; 2],
        first_use: &[FeeTick],
    ) -> StoreResult<PoolMarket> {
        self.write(pool, |market| {
            market.tracked_ticks.extend(ticks);
            for record in first_use {
                market.fee_ticks.entry(record.tick).or_insert(*record);
            }
            Ok(market.clone())
        })
    }

    async fn save_state(
        &self,
        pool: &Pool,
        state: &PoolState,
        fee_ticks: &[FeeTick],
    ) -> StoreResult<()> {
        self.write(pool, |market| match &market.state {
            Some(stored) if stored.height >= state.height => Err(StoreError::Conflict),
            _ => {
                market.state = Some(state.clone());
                market
                    .fee_ticks
                    .extend(fee_ticks.iter().map(|record| (record.tick, *record)));
                Ok(())
            }
        })
    }
}
