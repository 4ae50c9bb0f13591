//! The dependencies every handler receives: the store, the market (pool catalog) and a clock.

use crate::catalog::Catalog;
use crate::store::dynamodb::{DynamoDbMarket, CATALOG_TTL};
use crate::store::{DynamoDbStore, MemoryStore, PositionStore, StoreError};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;

pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Where the pool catalog and its market state come from.
#[async_trait]
pub trait Market: Send + Sync {
    async fn catalog(&self) -> Result<Arc<Catalog>, StoreError>;
}

/// A fixed catalog, such as the one shipped in the repository.
pub struct StaticMarket(pub Arc<Catalog>);

#[async_trait]
impl Market for StaticMarket {
    async fn catalog(&self) -> Result<Arc<Catalog>, StoreError> {
        Ok(self.0.clone())
    }
}

#[derive(Clone)]
pub struct App {
    pub store: Arc<dyn PositionStore>,
    pub market: Arc<dyn Market>,
    pub clock: Arc<dyn Clock>,
}

impl App {
    /// The embedded default: in-memory positions, the shipped catalog, the system clock.
    pub fn in_memory() -> App {
        App {
            store: Arc::new(MemoryStore::new()),
            market: Arc::new(StaticMarket(Arc::new(Catalog::embedded()))),
            clock: Arc::new(SystemClock),
        }
    }

    /// Production: positions and the catalog in DynamoDB (`TABLE_NAME`), the catalog cached in
    /// the container for [`CATALOG_TTL`].
    pub fn on_dynamodb(store: DynamoDbStore) -> App {
        let market = DynamoDbMarket::new(store.clone(), CATALOG_TTL);
        App {
            store: Arc::new(store),
            market: Arc::new(market),
            clock: Arc::new(SystemClock),
        }
    }
}
