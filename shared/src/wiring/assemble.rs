//! The app's assembly: which store, market and clock fill [`App`] in each setting, the
//! embedded default (everything in memory) and production (DynamoDB).

use crate::adapters::store::{
    DynamoDbMarket, DynamoDbStore, MemoryHistory, MemoryMarket, MemoryStore, MemoryWallets,
};
use crate::application::app::App;
use crate::domain::clock::SystemClock;
use crate::domain::market::MarketRules;
use crate::domain::wallets::challenge::SigningDomain;
use std::sync::Arc;
use std::time::Duration;

impl App {
    /// The embedded default: in-memory positions, the shipped catalog, the system clock.
    pub fn in_memory() -> App {
        App {
            store: Arc::new(MemoryStore::new()),
            market: Arc::new(MemoryMarket::embedded()),
            clock: Arc::new(SystemClock),
            sync: None,
            wallets: Arc::new(MemoryWallets::default()),
            history: Arc::new(MemoryHistory::default()),
            signing: SigningDomain::default(),
            wallet_refresh: None,
            order_chain: None,
            follow: None,
        }
    }

    /// Production: positions and the catalog in DynamoDB, the catalog cached in the container
    /// for `catalog_ttl`; states live (stale after a while) where a sync runs, a snapshot where
    /// none does (local-api without `--rpc`), and discovered pools as deep as `rules` asks.
    pub fn on_dynamodb(
        store: DynamoDbStore,
        catalog_ttl: Duration,
        rules: impl Into<MarketRules>,
    ) -> App {
        let market = DynamoDbMarket::new(store.clone(), catalog_ttl, rules);
        let store = Arc::new(store);
        App {
            store: store.clone(),
            market: Arc::new(market),
            clock: Arc::new(SystemClock),
            sync: None,
            wallets: store.clone(),
            history: store,
            signing: SigningDomain::default(),
            wallet_refresh: None,
            order_chain: None,
            follow: None,
        }
    }
}
