//! What alerts need from persistence and from the outside (decision 61): the events' feed, the
//! users' settings, the positions watched on each pool, the webhook endpoints and their
//! deliveries; the queue deliveries wait on, and the sender that makes them.

use crate::application::ports::StoreResult;
use crate::domain::alerts::range::RangeWatch;
use crate::domain::alerts::settings::AlertSettings;
use crate::domain::alerts::{AlertEvent, EventType};
use crate::domain::model::{Chain, PageRequest, Protocol};
use crate::domain::webhooks::address::Reach;
use crate::domain::webhooks::{Delivery, Webhook};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// The allowance of an event that is not counted against its owner's hourly allowance (a
/// webhook test: limited apart, per endpoint and minute).
pub const UNCOUNTED: u64 = u64::MAX;

/// A position watched on its pool: its range, and what its watch remembers (`None`: no state
/// seen yet, so the next one tells nothing).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Watched {
    pub owner: String,
    pub position: String,
    pub chain: Chain,
    pub protocol: Protocol,
    pub pool: String,
    pub tick_lower: i32,
    pub tick_upper: i32,
    pub watch: Option<RangeWatch>,
    /// The position's own settings, kept here so a sync reads them with the watch.
    pub settings: Option<AlertSettings>,
}

/// Which of a user's events to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    pub position: Option<String>,
    pub event_type: Option<EventType>,
}

/// `page` of `all` (in the order to show) and how many there are in all: what a store answers
/// when it reads the whole list to count it.
pub fn paged<T>(all: Vec<T>, page: PageRequest) -> (Vec<T>, u64) {
    let total = all.len() as u64;
    let items = all
        .into_iter()
        .skip(usize::try_from(page.offset).unwrap_or(usize::MAX))
        .take(page.limit as usize)
        .collect();
    (items, total)
}

/// What recording an event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// New, and within the user's hourly allowance: to deliver.
    New,
    /// New, past the hourly allowance: kept in the feed (said so), not delivered.
    OverAllowance,
    /// Its id was recorded before: nothing written.
    Seen,
}

#[async_trait]
pub trait AlertStore: Send + Sync {
    /// The user's settings (`None`: the defaults), or a position's own.
    async fn settings(
        &self,
        owner: &str,
        position: Option<&str>,
    ) -> StoreResult<Option<AlertSettings>>;

    async fn put_settings(
        &self,
        owner: &str,
        position: Option<&str>,
        settings: &AlertSettings,
    ) -> StoreResult<()>;

    /// The positions watched on one pool: one read of the pool's index.
    async fn watched(
        &self,
        chain: Chain,
        protocol: Protocol,
        pool: &str,
    ) -> StoreResult<Vec<Watched>>;

    /// Starts (or restarts, its state forgotten) watching a position on its pool.
    async fn watch(&self, watched: &Watched) -> StoreResult<()>;

    /// Stores a watch's state after a synced state.
    async fn save_watch(&self, watched: &Watched) -> StoreResult<()>;

    /// Stops watching a position (closed, or its pool or range changed).
    async fn unwatch(&self, watched: &Watched) -> StoreResult<()>;

    /// Keeps deliveries the queue refused, to be queued by a later run (the outbox): their
    /// events stay in the feed, so their deliveries must not be lost.
    async fn keep_unqueued(&self, jobs: &[DeliveryJob]) -> StoreResult<()>;

    /// At most `limit` of the deliveries kept unqueued, the oldest first.
    async fn unqueued(&self, limit: usize) -> StoreResult<Vec<DeliveryJob>>;

    /// Forgets `jobs` kept unqueued: they are queued now.
    async fn queued(&self, jobs: &[DeliveryJob]) -> StoreResult<()>;

    /// Counts one test of `owner`'s endpoint `webhook` in the UTC minute `minute` (unix
    /// minutes) and answers how many that minute holds now: tests have their own limit, apart
    /// from the events' hourly allowance.
    async fn count_test(&self, owner: &str, webhook: &str, minute: i64) -> StoreResult<u64>;

    /// Records an event if its id is new (a conditional write: overlapping syncs, retries and
    /// re-scans make it once), kept until `expires`, counted against its owner's hourly
    /// allowance of `allowance` events ([`UNCOUNTED`]: not counted at all).
    async fn record_event(
        &self,
        event: &AlertEvent,
        expires: DateTime<Utc>,
        allowance: u64,
    ) -> StoreResult<Recorded>;

    /// The user's events, newest first, `page.offset` skipped, and how many match in all.
    async fn events(
        &self,
        owner: &str,
        filter: &EventFilter,
        page: PageRequest,
    ) -> StoreResult<(Vec<AlertEvent>, u64)>;

    /// One of the user's events by id.
    async fn event(&self, owner: &str, id: &str) -> StoreResult<Option<AlertEvent>>;

    /// Marks the user's event `id` taken back by the retraction `by`, in the feed too: the
    /// event as it was, or `None` when there is none or it was taken back already (a
    /// conditional write: overlapping syncs retract it once).
    async fn retract_event(
        &self,
        owner: &str,
        id: &str,
        by: &str,
    ) -> StoreResult<Option<AlertEvent>>;

    /// Adds an endpoint if the user has fewer than `max`; `Conflict` otherwise.
    async fn insert_webhook(&self, webhook: &Webhook, max: usize) -> StoreResult<()>;

    /// The user's endpoints, oldest first.
    async fn webhooks(&self, owner: &str) -> StoreResult<Vec<Webhook>>;

    async fn webhook(&self, owner: &str, id: &str) -> StoreResult<Option<Webhook>>;

    /// Stores `webhook` over `previous` if that is still what is stored; `Conflict` otherwise.
    async fn update_webhook(&self, webhook: &Webhook, previous: &Webhook) -> StoreResult<()>;

    /// Removes an endpoint and its deliveries' log; `false` when there was none.
    async fn delete_webhook(&self, owner: &str, id: &str) -> StoreResult<bool>;

    /// Keeps one attempt in the endpoint's log (for the feed's 30 days).
    async fn record_delivery(&self, delivery: &Delivery, expires: DateTime<Utc>)
        -> StoreResult<()>;

    /// One attempt of the endpoint's log.
    async fn delivery(&self, owner: &str, webhook: &str, id: &str)
        -> StoreResult<Option<Delivery>>;

    /// The endpoint's attempts, newest first.
    async fn deliveries(
        &self,
        owner: &str,
        webhook: &str,
        page: PageRequest,
    ) -> StoreResult<(Vec<Delivery>, u64)>;
}

/// One delivery of one event to one endpoint, waiting on the queue.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryJob {
    pub owner: String,
    pub webhook_id: String,
    pub event_id: String,
    /// 1 for the first attempt.
    pub attempt: u32,
}

/// The queue deliveries wait on (SQS deployed; a task per job in local-api).
#[async_trait]
pub trait DeliveryQueue: Send + Sync {
    async fn enqueue(&self, jobs: &[DeliveryJob]) -> Result<(), String>;
}

/// What one attempt's request got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub status: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: u64,
}

/// One signed request to an endpoint, made only to a permitted address (decision 61).
#[async_trait]
pub trait WebhookSender: Send + Sync {
    async fn send(&self, url: &str, headers: &[(&str, String)], body: &str) -> Sent;
}

/// Seals webhook secrets at rest (KMS deployed) and opens them to sign.
#[async_trait]
pub trait Sealer: Send + Sync {
    async fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, String>;
    async fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, String>;
}

/// What alerts use: their store, the queue deliveries wait on (`None`: events are kept in the
/// feed, and delivered by whichever function has one), the secrets' sealer, the sender, where
/// webhooks may be sent, and the retry schedule's scale (1 deployed; tests shorten it).
#[derive(Clone)]
pub struct Alerts {
    pub store: Arc<dyn AlertStore>,
    pub queue: Option<Arc<dyn DeliveryQueue>>,
    pub sealer: Arc<dyn Sealer>,
    pub sender: Option<Arc<dyn WebhookSender>>,
    pub reach: Reach,
    pub retry_scale: f64,
}
