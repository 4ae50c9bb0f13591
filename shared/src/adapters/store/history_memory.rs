//! Wallet positions' events in memory, beside the memory store's positions.

use crate::application::ports::{HistoryStore, StoreError, StoreResult};
use crate::domain::history::{HistoryProgress, PositionEvent};
use async_trait::async_trait;
use std::collections::HashMap;

/// A position's stored progress and events, by (owner, id).
type Histories = HashMap<(String, String), (HistoryProgress, Vec<PositionEvent>)>;

/// The in-memory [`HistoryStore`]: the embedded default's and the fast tests'.
#[derive(Default)]
pub struct MemoryHistory {
    positions: std::sync::RwLock<Histories>,
}

#[async_trait]
impl HistoryStore for MemoryHistory {
    async fn append_history(
        &self,
        owner: &str,
        id: &str,
        previous: Option<&HistoryProgress>,
        events: &[PositionEvent],
        progress: &HistoryProgress,
    ) -> StoreResult<()> {
        let mut positions = self.positions.write().unwrap_or_else(|e| e.into_inner());
        let key = (owner.to_string(), id.to_string());
        let stored = positions.get(&key);
        if stored.map(|(p, _)| p) != previous {
            return Err(StoreError::Conflict);
        }
        let mut all = stored.map(|(_, e)| e.clone()).unwrap_or_default();
        all.extend_from_slice(events);
        positions.insert(key, (*progress, all));
        Ok(())
    }

    async fn rewind_history(
        &self,
        owner: &str,
        id: &str,
        previous: &HistoryProgress,
        from: u64,
        progress: &HistoryProgress,
    ) -> StoreResult<()> {
        let mut positions = self.positions.write().unwrap_or_else(|e| e.into_inner());
        let key = (owner.to_string(), id.to_string());
        let Some((stored, events)) = positions.get_mut(&key) else {
            return Err(StoreError::Conflict);
        };
        if stored != previous {
            return Err(StoreError::Conflict);
        }
        *stored = *progress;
        events.retain(|e| e.block < from);
        Ok(())
    }

    async fn history_progress(
        &self,
        owner: &str,
        id: &str,
    ) -> StoreResult<Option<HistoryProgress>> {
        let positions = self.positions.read().unwrap_or_else(|e| e.into_inner());
        Ok(positions
            .get(&(owner.to_string(), id.to_string()))
            .map(|(p, _)| *p))
    }

    async fn history_page(
        &self,
        owner: &str,
        id: &str,
        offset: u64,
        limit: u64,
    ) -> StoreResult<Vec<PositionEvent>> {
        let positions = self.positions.read().unwrap_or_else(|e| e.into_inner());
        let events = positions
            .get(&(owner.to_string(), id.to_string()))
            .map(|(_, e)| e.as_slice())
            .unwrap_or_default();
        let skip = usize::try_from(offset).unwrap_or(usize::MAX);
        let take = usize::try_from(limit).unwrap_or(usize::MAX);
        Ok(events.iter().skip(skip).take(take).cloned().collect())
    }
}
