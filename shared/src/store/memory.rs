//! The in-memory store and market: the local server's embedded default and the handlers' test
//! double.

use super::traits::{Market, PositionStore, StoreError, StoreResult};
use crate::catalog::{embedded_records, Catalog, CatalogError, Pool, PoolMarket, PoolRecord};
use crate::fee_ticks::FeeTick;
use crate::market::{Freshness, PoolKey, PoolState};
use crate::model::{
    Chain, Closing, Filter, Page, PageRequest, Position, Protocol, Realized, Status,
};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

/// Positions per owner, ordered by id (time-ordered), so newest-first is a reverse walk; and
/// the pending ones per pool.
#[derive(Default)]
pub struct MemoryStore {
    inner: RwLock<Positions>,
}

/// A pool as the pending index names it: chain, protocol, the catalog's spelling of its id.
type PoolName = (Chain, Protocol, String);

#[derive(Default)]
struct Positions {
    owners: HashMap<String, BTreeMap<String, Position>>,
    /// (id, owner) per pool: oldest first.
    pending: BTreeMap<PoolName, BTreeSet<(String, String)>>,
}

fn pool_name(p: &Position) -> PoolName {
    (p.chain, p.protocol, p.pool.clone())
}

impl Positions {
    fn index_pending(&mut self, position: &Position) {
        self.pending
            .entry(pool_name(position))
            .or_default()
            .insert((position.id.clone(), position.owner.clone()));
    }

    fn unindex_pending(&mut self, position: &Position) {
        if let Some(ids) = self.pending.get_mut(&pool_name(position)) {
            ids.remove(&(position.id.clone(), position.owner.clone()));
        }
    }

    /// The owner's position `id` if it is in `from`.
    fn in_status(&mut self, owner: &str, id: &str, from: Status) -> StoreResult<&mut Position> {
        self.owners
            .get_mut(owner)
            .and_then(|p| p.get_mut(id))
            .filter(|p| p.status == from)
            .ok_or(StoreError::Conflict)
    }
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn read<T>(&self, owner: &str, f: impl FnOnce(Option<&BTreeMap<String, Position>>) -> T) -> T {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        f(inner.owners.get(owner))
    }

    fn write<T>(&self, f: impl FnOnce(&mut Positions) -> StoreResult<T>) -> StoreResult<T> {
        f(&mut self.inner.write().unwrap_or_else(|e| e.into_inner()))
    }
}

#[async_trait]
impl PositionStore for MemoryStore {
    async fn insert(&self, position: &Position) -> StoreResult<()> {
        self.write(|inner| {
            let positions = inner.owners.entry(position.owner.clone()).or_default();
            if positions.contains_key(&position.id) {
                return Err(StoreError::Conflict);
            }
            positions.insert(position.id.clone(), position.clone());
            if position.status == Status::Pending {
                inner.index_pending(position);
            }
            Ok(())
        })
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

    async fn pending_on(
        &self,
        chain: Chain,
        protocol: Protocol,
        pool: &str,
    ) -> StoreResult<Vec<Position>> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let ids = inner.pending.get(&(chain, protocol, pool.to_string()));
        Ok(ids
            .into_iter()
            .flatten()
            .filter_map(|(id, owner)| inner.owners.get(owner)?.get(id).cloned())
            .collect())
    }

    async fn activate(&self, activated: &Position) -> StoreResult<()> {
        self.write(|inner| {
            let position = inner.in_status(&activated.owner, &activated.id, Status::Pending)?;
            *position = Position {
                status: Status::Active,
                ..activated.clone()
            };
            inner.unindex_pending(activated);
            Ok(())
        })
    }

    async fn close(
        &self,
        owner: &str,
        id: &str,
        from: Status,
        closing: &Closing,
    ) -> StoreResult<()> {
        if from == Status::Closed {
            return Err(StoreError::Conflict);
        }
        self.write(|inner| {
            let position = inner.in_status(owner, id, from)?;
            position.status = Status::Closed;
            position.closing = Some(closing.clone());
            let position = position.clone();
            inner.unindex_pending(&position);
            Ok(())
        })
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
        self.write(|inner| {
            let position = inner.in_status(owner, id, from)?;
            position.status = to;
            let position = position.clone();
            if from != to && from == Status::Pending {
                inner.unindex_pending(&position);
            }
            if from != to && to == Status::Pending {
                inner.index_pending(&position);
            }
            Ok(())
        })
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
