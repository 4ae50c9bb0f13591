//! Why a use case did not do what it was asked. The messages are the client's (they name the
//! field or the state, never the code); a port's fault keeps its cause as the source. The edge
//! maps each to its status in one place (`edge::error`).

use crate::application::ports::StoreError;
use crate::domain::valuation::ValuationError;

/// The cause behind a fault: logged where the answer is rendered, never sent.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum UseCaseError {
    /// The input cannot be acted on as sent (a pool not supported, an amount past its type).
    #[error("{0}")]
    BadRequest(String),
    /// The caller may not do this with what they hold (act from a wallet only watched).
    #[error("{0}")]
    Forbidden(String),
    /// Nothing of the caller's by that name.
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with the resource's state (closing a closed position).
    #[error("{0}")]
    Conflict(String),
    /// The resource kept changing under the request, or the chain refused what was built for
    /// it now: the same request may well succeed on retry.
    #[error("{0}")]
    Contended(String),
    /// Past a limit of requests per time (a webhook's tests): the same request may succeed
    /// after `retry_after_seconds`.
    #[error("{message}")]
    TooMany {
        message: String,
        retry_after_seconds: u64,
    },
    /// The pool's market state (or the chain) cannot be acted on now; the next sync may.
    #[error("{0}")]
    MarketStale(String),
    /// A port is throttling or unreachable: the client may retry.
    #[error("Service Unavailable")]
    Unavailable(#[source] Cause),
    /// A fault of ours or of a port.
    #[error("Internal Server Error")]
    Internal(#[source] Cause),
}

impl UseCaseError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        UseCaseError::BadRequest(message.into())
    }

    /// A fault with its cause.
    pub fn internal(cause: impl Into<Cause>) -> Self {
        UseCaseError::Internal(cause.into())
    }
}

impl From<StoreError> for UseCaseError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(_) => UseCaseError::Unavailable(Box::new(error)),
            other => UseCaseError::Internal(Box::new(other)),
        }
    }
}

impl From<ValuationError> for UseCaseError {
    fn from(error: ValuationError) -> Self {
        match error {
            ValuationError::Rejected(message) => UseCaseError::BadRequest(message),
            other => UseCaseError::Internal(Box::new(other)),
        }
    }
}

/// A use case's result.
pub type Outcome<T> = Result<T, UseCaseError>;
