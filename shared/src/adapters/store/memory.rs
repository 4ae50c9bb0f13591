//! The in-memory store: the local server's embedded default and the handlers' test double.

use crate::application::ports::{PositionStore, StoreError, StoreResult};
use crate::domain::model::{
    Chain, ChainOrder, Closing, Filter, KeyAnswer, KeyClaim, Page, PageRequest, Position, Protocol,
    Realized, Status, StoredResponse, KEY_LEASE, KEY_RETENTION,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::RwLock;

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

    /// `position`'s order over the stored one's if that is still `previous` (and its read the
    /// same); the pending index joined or left with it.
    fn replace_order(
        &mut self,
        position: &Position,
        previous: Option<&ChainOrder>,
    ) -> StoreResult<()> {
        let stored = self.in_status(&position.owner, &position.id, position.status)?;
        if stored.order.as_deref() != previous || stored.holding != position.holding {
            return Err(StoreError::Conflict);
        }
        stored.order = position.order.clone();
        if position.status == Status::Active {
            match position.order {
                Some(_) => self.index_pending(position),
                None => self.unindex_pending(position),
            }
        }
        Ok(())
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
        self.write(|inner| inner.replace_order(position, previous))
    }

    async fn set_move_order(
        &self,
        position: &Position,
        previous: Option<&ChainOrder>,
        opening: &Position,
    ) -> StoreResult<()> {
        self.write(|inner| {
            // Both checked before either is written: all or nothing.
            let taken = inner
                .owners
                .get(&opening.owner)
                .is_some_and(|p| p.contains_key(&opening.id));
            if taken {
                return Err(StoreError::Conflict);
            }
            inner.replace_order(position, previous)?;
            inner
                .owners
                .entry(opening.owner.clone())
                .or_default()
                .insert(opening.id.clone(), opening.clone());
            inner.index_pending(opening);
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
