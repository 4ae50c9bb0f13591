//! The in-memory store and market: the local server's embedded default and the handlers' test
//! double.

use crate::application::ports::{Market, PositionStore, StoreError, StoreResult};
use crate::domain::catalog::{
    embedded_deployments, embedded_records, Catalog, CatalogError, Deployment, Pool, PoolMarket,
    PoolRecord,
};
use crate::domain::fee_ticks::FeeTick;
use crate::domain::market::{Freshness, MarketRules, PoolKey, PoolState, Succession};
use crate::domain::model::{
    Chain, ChainOrder, Closing, Filter, KeyAnswer, KeyClaim, Page, PageRequest, Position, Protocol,
    Realized, Status, StoredResponse, KEY_LEASE, KEY_RETENTION,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
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
    /// Idempotency keys by (owner, key).
    keys: HashMap<(String, String), KeyRecord>,
}

/// An idempotency key as kept: the request it belongs to and where it stands.
struct KeyRecord {
    fingerprint: String,
    state: KeyState,
    expires_at: DateTime<Utc>,
}

enum KeyState {
    InFlight { lease: String, until: DateTime<Utc> },
    Answered(StoredResponse),
}

fn plus(at: DateTime<Utc>, by: std::time::Duration) -> DateTime<Utc> {
    at + chrono::Duration::from_std(by).unwrap_or(chrono::Duration::MAX)
}

fn pool_name(p: &Position) -> PoolName {
    (p.chain, p.protocol, p.pool.clone())
}

impl Positions {
    /// Checks that `answer`'s lease still holds its key (nothing is written otherwise).
    fn check_answer(&self, answer: Option<&KeyAnswer>) -> StoreResult<()> {
        let Some(answer) = answer else {
            return Ok(());
        };
        match self.keys.get(&(answer.owner.clone(), answer.key.clone())) {
            Some(KeyRecord {
                state: KeyState::InFlight { lease, .. },
                ..
            }) if *lease == answer.lease => Ok(()),
            _ => Err(StoreError::Conflict),
        }
    }

    fn store_answer(&mut self, answer: Option<&KeyAnswer>) {
        if let Some(answer) = answer {
            if let Some(record) = self
                .keys
                .get_mut(&(answer.owner.clone(), answer.key.clone()))
            {
                record.state = KeyState::Answered(answer.response.clone());
                record.expires_at = answer.expires_at;
            }
        }
    }

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
    async fn insert_answering(
        &self,
        position: &Position,
        answer: Option<&KeyAnswer>,
    ) -> StoreResult<()> {
        self.write(|inner| {
            inner.check_answer(answer)?;
            let positions = inner.owners.entry(position.owner.clone()).or_default();
            let taken = |key: &str| {
                positions
                    .values()
                    .any(|p| p.holding.as_ref().is_some_and(|h| h.key(p.chain) == key))
            };
            if positions.contains_key(&position.id)
                || position
                    .holding
                    .as_ref()
                    .is_some_and(|h| taken(&h.key(position.chain)))
            {
                return Err(StoreError::Conflict);
            }
            positions.insert(position.id.clone(), position.clone());
            if position.status == Status::Pending {
                inner.index_pending(position);
            }
            inner.store_answer(answer);
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

    async fn holdings(
        &self,
        owner: &str,
        chain: Chain,
        wallet: &str,
    ) -> StoreResult<Vec<Position>> {
        Ok(self.read(owner, |positions| {
            positions
                .into_iter()
                .flat_map(|p| p.values())
                .filter(|p| {
                    p.chain == chain && p.holding.as_ref().is_some_and(|h| h.wallet == wallet)
                })
                .cloned()
                .collect()
        }))
    }

    async fn holding(&self, owner: &str, chain: Chain, key: &str) -> StoreResult<Option<Position>> {
        Ok(self.read(owner, |positions| {
            positions
                .into_iter()
                .flat_map(|p| p.values())
                .find(|p| {
                    p.chain == chain && p.holding.as_ref().is_some_and(|h| h.key(chain) == key)
                })
                .cloned()
        }))
    }

    async fn update_holding(&self, read: &Position, previous: &Position) -> StoreResult<()> {
        self.write(|inner| {
            let stored = inner.in_status(&previous.owner, &previous.id, previous.status)?;
            if stored.holding != previous.holding || stored.order != previous.order {
                return Err(StoreError::Conflict);
            }
            *stored = read.clone();
            Ok(())
        })
    }

    async fn set_order(
        &self,
        position: &Position,
        previous: Option<&ChainOrder>,
    ) -> StoreResult<()> {
        self.write(|inner| {
            let stored = inner.in_status(&position.owner, &position.id, position.status)?;
            if stored.order.as_deref() != previous || stored.holding != position.holding {
                return Err(StoreError::Conflict);
            }
            stored.order = position.order.clone();
            if position.status == Status::Active {
                match position.order {
                    Some(_) => inner.index_pending(position),
                    None => inner.unindex_pending(position),
                }
            }
            Ok(())
        })
    }

    async fn remove_holdings(&self, owner: &str, chain: Chain, wallet: &str) -> StoreResult<u64> {
        self.write(|inner| {
            let Some(positions) = inner.owners.get_mut(owner) else {
                return Ok(0);
            };
            let before = positions.len();
            positions.retain(|_, p| {
                !(p.chain == chain && p.holding.as_ref().is_some_and(|h| h.wallet == wallet))
            });
            Ok((before - positions.len()) as u64)
        })
    }

    async fn activate(&self, activated: &Position) -> StoreResult<()> {
        self.write(|inner| {
            let key = activated.holding.as_ref().map(|h| h.key(activated.chain));
            let taken = inner.owners.get(&activated.owner).is_some_and(|positions| {
                positions.values().any(|p| {
                    p.id != activated.id
                        && p.holding
                            .as_ref()
                            .map(|h| h.key(p.chain))
                            .is_some_and(|k| Some(k) == key)
                })
            });
            if taken {
                return Err(StoreError::Conflict);
            }
            let position = inner.in_status(&activated.owner, &activated.id, Status::Pending)?;
            *position = Position {
                status: Status::Active,
                ..activated.clone()
            };
            inner.unindex_pending(activated);
            Ok(())
        })
    }

    async fn close_answering(
        &self,
        owner: &str,
        id: &str,
        from: Status,
        closing: &Closing,
        answer: Option<&KeyAnswer>,
    ) -> StoreResult<()> {
        if from == Status::Closed {
            return Err(StoreError::Conflict);
        }
        self.write(|inner| {
            inner.check_answer(answer)?;
            let position = inner.in_status(owner, id, from)?;
            position.status = Status::Closed;
            position.closing = Some(closing.clone());
            let position = position.clone();
            inner.unindex_pending(&position);
            inner.store_answer(answer);
            Ok(())
        })
    }

    async fn claim_key(
        &self,
        owner: &str,
        key: &str,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> StoreResult<KeyClaim> {
        self.write(|inner| {
            let id = (owner.to_string(), key.to_string());
            if let Some(record) = inner.keys.get(&id).filter(|r| r.expires_at > now) {
                match &record.state {
                    KeyState::InFlight { until, .. } if *until <= now => {}
                    _ if record.fingerprint != fingerprint => return Ok(KeyClaim::OtherRequest),
                    KeyState::Answered(response) => {
                        return Ok(KeyClaim::Answered(response.clone()))
                    }
                    KeyState::InFlight { until, .. } => {
                        let left = (*until - now).num_milliseconds().max(0) as u64;
                        return Ok(KeyClaim::InFlight {
                            retry_after_seconds: left.div_ceil(1000).max(1),
                        });
                    }
                }
            }
            let lease = ulid::Ulid::new().to_string();
            inner.keys.insert(
                id,
                KeyRecord {
                    fingerprint: fingerprint.to_string(),
                    state: KeyState::InFlight {
                        lease: lease.clone(),
                        until: plus(now, KEY_LEASE),
                    },
                    expires_at: plus(now, KEY_RETENTION),
                },
            );
            Ok(KeyClaim::Claimed { lease })
        })
    }

    async fn answer_key(&self, answer: &KeyAnswer) -> StoreResult<()> {
        self.write(|inner| {
            inner.check_answer(Some(answer))?;
            inner.store_answer(Some(answer));
            Ok(())
        })
    }

    async fn release_key(&self, owner: &str, key: &str, lease: &str) -> StoreResult<()> {
        self.write(|inner| {
            let id = (owner.to_string(), key.to_string());
            if matches!(
                inner.keys.get(&id),
                Some(KeyRecord { state: KeyState::InFlight { lease: held, .. }, .. }) if held == lease
            ) {
                inner.keys.remove(&id);
            }
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
            }
            for record in first_use {
                market.fee_ticks.entry(record.tick).or_insert(*record);
            }
            Ok(market.clone())
        })
    }

    async fn release_ticks(&self, pool: &Pool, ticks: [i32; 2]) -> StoreResult<()> {
        self.write(pool, |market, uses| {
            for tick in ticks {
                let Some(count) = uses.get_mut(&tick) else {
                    continue;
                };
                *count = count.saturating_sub(1);
                if *count == 0 {
                    uses.remove(&tick);
                    market.tracked_ticks.remove(&tick);
                    market.fee_ticks.remove(&tick);
                }
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
