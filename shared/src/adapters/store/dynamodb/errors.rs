//! SDK failures sorted into the store's error classes, and the backoff for batch leftovers.

use crate::application::ports::StoreError;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use std::time::Duration;

/// Error codes that mean "try again later": throttling, or DynamoDB itself failing.
pub(super) fn is_transient(code: &str) -> bool {
    matches!(
        code,
        "ProvisionedThroughputExceededException"
            | "ThrottlingException"
            | "RequestLimitExceeded"
            | "InternalServerError"
            | "ServiceUnavailable"
            | "TransactionInProgressException"
    )
}

/// Sorts an SDK failure into the store's error classes.
pub(super) fn classify<E>(
    error: SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    // The whole chain (code, message, cause) for the log; clients never see it.
    let detail = || DisplayErrorContext(&error).to_string().into();
    match &error {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            StoreError::Unavailable(detail())
        }
        SdkError::ServiceError(service) if service.err().code().is_some_and(is_transient) => {
            StoreError::Unavailable(detail())
        }
        _ => StoreError::Failure(detail()),
    }
}

/// Any conditional write refused: its condition failed (a conflict), or as [`classify`].
pub(super) fn classify_conditional<E>(
    error: SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let failed =
        error.as_service_error().and_then(|e| e.code()) == Some("ConditionalCheckFailedException");
    if failed {
        StoreError::Conflict
    } else {
        classify(error)
    }
}

/// A conditional `PutItem` refused: its condition failed (a conflict), or as [`classify`].
pub(super) fn classify_put(
    error: SdkError<
        aws_sdk_dynamodb::operation::put_item::PutItemError,
        aws_sdk_dynamodb::config::http::HttpResponse,
    >,
) -> StoreError {
    if error
        .as_service_error()
        .is_some_and(|e| e.is_conditional_check_failed_exception())
    {
        StoreError::Conflict
    } else {
        classify(error)
    }
}

/// A cancelled transaction: a failed condition is a conflict, contention or throttling is
/// transient, anything else a failure. Nothing of a cancelled transaction is written.
pub(super) fn classify_transaction(
    error: SdkError<TransactWriteItemsError, aws_sdk_dynamodb::config::http::HttpResponse>,
) -> StoreError {
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
        error.as_service_error()
    {
        let codes: Vec<&str> = cancelled
            .cancellation_reasons()
            .iter()
            .filter_map(|r| r.code())
            .collect();
        if codes.contains(&"ConditionalCheckFailed") {
            return StoreError::Conflict;
        }
        if codes.iter().any(|c| {
            matches!(
                *c,
                "ThrottlingError" | "TransactionConflict" | "ProvisionedThroughputExceeded"
            )
        }) {
            return StoreError::Unavailable(Box::new(error));
        }
    }
    classify(error)
}

/// Before each batch round after the first, waits with exponential backoff (25 ms doubling,
/// capped at 800 ms), as DynamoDB asks for unprocessed batch entries; gives up after 8 rounds.
pub(super) async fn back_off(attempt: &mut u32, what: &'static str) -> Result<(), StoreError> {
    if *attempt >= 8 {
        return Err(StoreError::Unavailable(what.into()));
    }
    if *attempt > 0 {
        tokio::time::sleep(Duration::from_millis(25 << (*attempt).min(5))).await;
    }
    *attempt += 1;
    Ok(())
}

pub(super) fn build_error(error: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Failure(Box::new(error))
}

/// A JSON attribute that would not (de)serialize: a bug, never the client's.
pub(super) fn json_failure(e: serde_json::Error) -> StoreError {
    StoreError::Failure(Box::new(e))
}
