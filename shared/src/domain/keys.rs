//! Idempotency keys as the stores keep them: how long a claim and an answer last, the answer
//! kept for replay, what a claim comes to (decision 33).

use chrono::{DateTime, Utc};

/// How long a claimed idempotency key stays in flight before another attempt may take it
/// over: longer than any API function may run (10 s), short enough that a crashed attempt does
/// not lock its key for long.
pub const KEY_LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// How long an answered key is kept and replayed.
pub const KEY_RETENTION: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// A response kept with its idempotency key, replayed exactly: status, body, `Location`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    pub body: String,
    pub location: Option<String>,
}

/// What the store answers a request that carries an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyClaim {
    /// The key is the caller's now, for one lease: process the request, then complete it.
    Claimed { lease: String },
    /// The key's request was answered: replay this.
    Answered(StoredResponse),
    /// The key was used for another request (method, path or body differ).
    OtherRequest,
    /// The key's first request is still being processed (its lease runs this many seconds).
    InFlight { retry_after_seconds: u64 },
}

/// The answer that completes a claimed key, stored with it until `expires_at`. A create or
/// close writes it in the same transaction as the change it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAnswer {
    pub owner: String,
    pub key: String,
    /// The claim's lease: completing a key another request took over (after the lease ran
    /// out) fails and writes nothing.
    pub lease: String,
    pub response: StoredResponse,
    pub expires_at: DateTime<Utc>,
}
