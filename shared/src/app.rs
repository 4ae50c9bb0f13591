//! Assembles the dependencies every handler receives: the store, the market (pool catalog) and
//! a clock.

use crate::catalog::Catalog;
use crate::clock::{Clock, SystemClock};
use crate::store::{
    DynamoDbMarket, DynamoDbStore, Market, MemoryStore, PositionStore, StaticMarket,
};
use std::sync::Arc;
use std::time::Duration;

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

    /// Production: positions and the catalog in DynamoDB, the catalog cached in the container
    /// for `catalog_ttl`.
    pub fn on_dynamodb(store: DynamoDbStore, catalog_ttl: Duration) -> App {
        let market = DynamoDbMarket::new(store.clone(), catalog_ttl);
        App {
            store: Arc::new(store),
            market: Arc::new(market),
            clock: Arc::new(SystemClock),
        }
    }
}
