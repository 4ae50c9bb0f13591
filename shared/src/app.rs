//! Assembles the dependencies every handler receives: the store, the market (pool catalog) and
//! a clock.

use crate::clock::{Clock, SystemClock};
use crate::market::{Freshness, SyncReport};
use crate::store::{
    DynamoDbMarket, DynamoDbStore, Market, MemoryMarket, MemoryStore, PositionStore, StoreError,
};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone)]
pub struct App {
    pub store: Arc<dyn PositionStore>,
    pub market: Arc<dyn Market>,
    pub clock: Arc<dyn Clock>,
    /// What `POST /markets/sync` runs; `None` where no chain is read (the snapshot).
    pub sync: Option<Arc<dyn MarketSync>>,
}

/// Reads the catalog pools' states from their chains and stores them (`chain::sync`).
#[async_trait]
pub trait MarketSync: Send + Sync {
    /// Fails only when the catalog itself cannot be read; each pool's fate is in the report.
    async fn sync(&self) -> Result<SyncReport, StoreError>;
}

impl App {
    /// The embedded default: in-memory positions, the shipped catalog, the system clock.
    pub fn in_memory() -> App {
        App {
            store: Arc::new(MemoryStore::new()),
            market: Arc::new(MemoryMarket::embedded()),
            clock: Arc::new(SystemClock),
            sync: None,
        }
    }

    /// Production: positions and the catalog in DynamoDB, the catalog cached in the container
    /// for `catalog_ttl`; states live (stale after a while) where a sync runs, a snapshot where
    /// none does (local-api without `--rpc`).
    pub fn on_dynamodb(store: DynamoDbStore, catalog_ttl: Duration, freshness: Freshness) -> App {
        let market = DynamoDbMarket::new(store.clone(), catalog_ttl, freshness);
        App {
            store: Arc::new(store),
            market: Arc::new(market),
            clock: Arc::new(SystemClock),
            sync: None,
        }
    }
}
