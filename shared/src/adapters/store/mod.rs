//! Persistence behind the application's ports (`application::ports`): an in-memory
//! implementation (local runs and fast tests) and a DynamoDB one (production). Paging and
//! counting are operations of the store so each backend can make them cheap.

pub mod alerts_memory;
pub mod dynamodb;
pub mod history_memory;
pub mod market_memory;
pub mod memory;
pub mod series_memory;
pub mod wallets_memory;

pub use crate::application::ports::{
    BoxError, HistoryStore, Market, PositionStore, SeriesStore, StoreError, StoreResult,
    WalletStore,
};
pub use alerts_memory::{KeptAsGiven, MemoryAlerts, NoKey};
pub use dynamodb::{DynamoDbMarket, DynamoDbStore};
pub use history_memory::MemoryHistory;
pub use market_memory::MemoryMarket;
pub use memory::MemoryStore;
pub use series_memory::{series_pool, MemorySeries};
pub use wallets_memory::MemoryWallets;
