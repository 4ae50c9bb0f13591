//! The in-memory store and a fixed market: the local server's embedded default and the
//! handlers' test double.

use super::traits::{Market, PositionStore, StoreError, StoreResult};
use crate::catalog::Catalog;
use crate::model::{Filter, Page, PageRequest, Position, Status};
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

/// A fixed catalog, such as the one shipped in the repository.
pub struct StaticMarket(pub Arc<Catalog>);

#[async_trait]
impl Market for StaticMarket {
    async fn catalog(&self) -> Result<Arc<Catalog>, StoreError> {
        Ok(self.0.clone())
    }
}
