//! Persistence of positions behind one trait, with an in-memory implementation (local runs and
//! fast tests) and a DynamoDB one (production). Paging and counting are operations of the store
//! so each backend can make them cheap.

pub mod dynamodb;
pub mod memory;

use crate::model::{Filter, Page, PageRequest, Position, Status};
use async_trait::async_trait;

pub use dynamodb::DynamoDbStore;
pub use memory::MemoryStore;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend is throttling or unreachable after retries: the client may retry.
    #[error("store unavailable: {0}")]
    Unavailable(BoxError),
    /// A write's precondition failed (the id exists, the status changed meanwhile).
    #[error("conflicting write")]
    Conflict,
    /// Anything else: a bug, a misconfiguration, a malformed item.
    #[error("store failure: {0}")]
    Failure(BoxError),
}

#[async_trait]
pub trait PositionStore: Send + Sync {
    /// Stores a new position; `Conflict` if its id exists. All or nothing.
    async fn insert(&self, position: &Position) -> Result<(), StoreError>;

    /// The owner's position with this id; another owner's is `None`, as an unknown id.
    async fn get(&self, owner: &str, id: &str) -> Result<Option<Position>, StoreError>;

    /// Newest first (ids are time-ordered), `page.offset` skipped, and the exact count of every
    /// position of the owner that matches the filter.
    async fn list(
        &self,
        owner: &str,
        filter: Filter,
        page: PageRequest,
    ) -> Result<Page, StoreError>;

    /// Every position of the owner that is not closed (the portfolio's inputs).
    async fn open_positions(&self, owner: &str) -> Result<Vec<Position>, StoreError>;

    /// Moves a position from `from` to `to` keeping every count right; `Conflict` if it is not
    /// in `from` (or does not exist).
    async fn set_status(
        &self,
        owner: &str,
        id: &str,
        from: Status,
        to: Status,
    ) -> Result<(), StoreError>;
}
