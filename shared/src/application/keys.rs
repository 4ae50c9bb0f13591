//! Idempotency keys as use cases see them (decisions 33, 49): a key claimed before a write, its
//! answer kept with the write it answers (or after it), or the key released for a retry.

use crate::application::app::App;
use crate::application::error::Outcome;
use crate::domain::model::{KeyAnswer, KeyClaim, PositionEntry};
use chrono::{DateTime, Utc};

/// The answer a write keeps for its key, made from the position it shows (the edge renders it
/// as the response a replay gives); `None` without a key.
pub type Answering<'a> = Option<&'a (dyn Fn(&PositionEntry) -> KeyAnswer + Send + Sync)>;

/// Claims `key` of `owner` for the request of `fingerprint`.
pub async fn claim(
    app: &App,
    owner: &str,
    key: &str,
    fingerprint: &str,
    now: DateTime<Utc>,
) -> Outcome<KeyClaim> {
    Ok(app.store.claim_key(owner, key, fingerprint, now).await?)
}

/// Keeps `answer` as its key's: after a write that did not keep it itself, which a replay
/// would repeat harmlessly. A failure leaves the key in flight until its lease ends.
pub async fn keep(app: &App, answer: &KeyAnswer) {
    if let Err(e) = app.store.answer_key(answer).await {
        tracing::warn!(cause = %e, "idempotency key left in flight until its lease ends");
    }
}

/// Keeps the answer `answering` makes of `shown`, if there is a key.
pub async fn keep_shown(app: &App, answering: Answering<'_>, shown: &PositionEntry) {
    if let Some(answer) = answering.map(|f| f(shown)) {
        keep(app, &answer).await;
    }
}

/// Releases a claimed key whose request failed in a way a retry may not: the next request with
/// it runs afresh.
pub async fn release(app: &App, owner: &str, key: &str, lease: &str) {
    if let Err(e) = app.store.release_key(owner, key, lease).await {
        tracing::warn!(cause = %e, "idempotency key left in flight until its lease ends");
    }
}
