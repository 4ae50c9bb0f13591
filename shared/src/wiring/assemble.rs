//! The app's assembly: which store, market and clock fill [`App`] in each setting, the
//! embedded default (everything in memory) and production (DynamoDB).

use crate::adapters::store::{
    DynamoDbMarket, DynamoDbStore, KeptAsGiven, MemoryAlerts, MemoryHistory, MemoryMarket,
    MemorySeries, MemoryStore, MemoryWallets, NoKey,
};
use crate::application::alert_ports::AlertStore;
use crate::application::alert_ports::Alerts;
use crate::application::app::App;
use crate::domain::clock::SystemClock;
use crate::domain::market::MarketRules;
use crate::domain::wallets::challenge::SigningDomain;
use crate::domain::webhooks::address::Reach;
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
            series: Arc::new(MemorySeries::default()),
            signing: SigningDomain::default(),
            wallet_refresh: None,
            order_chain: None,
            follow: None,
            alerts: Alerts::kept_in(Arc::new(MemoryAlerts::default())),
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
            history: store.clone(),
            series: store.clone(),
            signing: SigningDomain::default(),
            wallet_refresh: None,
            order_chain: None,
            follow: None,
            // Deployed, secrets are sealed by KMS or not at all (the wiring adds the key).
            alerts: Alerts {
                sealer: Arc::new(NoKey),
                ..Alerts::kept_in(store)
            },
        }
    }
}

impl Alerts {
    /// Alerts kept in `store`, with no queue, no sender and secrets kept as given: the wiring
    /// of each function (and local-api) adds what it delivers with.
    pub fn kept_in(store: Arc<dyn AlertStore>) -> Alerts {
        Alerts {
            store,
            queue: None,
            sealer: Arc::new(KeptAsGiven),
            sender: None,
            reach: Reach::PublicHttpsOnly,
            retry_scale: 1.0,
        }
    }
}
