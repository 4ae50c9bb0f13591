//! The one error type of the API and its single mapping to HTTP statuses and bodies. The use
//! cases' errors (and the domain's valuation errors) become an [`ApiError`] here; a server fault keeps its cause,
//! which is logged once, when the response is rendered.

use crate::application::error::UseCaseError;
use crate::domain::valuation::ValuationError;
use crate::edge::http::json_response;
use lambda_http::http::{header, StatusCode};
use lambda_http::{Body, Response};
use serde::Serialize;

/// The cause behind a server fault: logged, never sent.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Every way a request can fail. The `Display` text is the `message` sent to the client,
/// so variants that stand for server faults carry their cause as a source, not in the text.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("Unauthorized")]
    Unauthorized,
    /// The token is valid but does not grant what the route needs: the message says which scope.
    #[error("Forbidden: {0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("Method Not Allowed")]
    MethodNotAllowed { allow: String },
    #[error("request body exceeds {limit} bytes")]
    PayloadTooLarge { limit: usize },
    /// An answer past its size limit (an export): the message says how to narrow it.
    #[error("{0}")]
    AnswerTooLarge(String),
    #[error("request body not received in time")]
    RequestTimeout,
    #[error("request line exceeds {limit} bytes")]
    UriTooLong { limit: usize },
    #[error("request headers exceed {limit} bytes")]
    HeadersTooLarge { limit: usize },
    /// The body's media type or encoding is not JSON as sent: the message says which.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The request conflicts with the resource's state (closing a closed position).
    #[error("{0}")]
    Conflict(String),
    /// The resource kept changing under the request (a close racing other transitions): the
    /// same request may well succeed on retry, so it is never stored as an idempotency key's
    /// answer.
    #[error("{0}")]
    Contended(String),
    /// The request is well formed but cannot be applied as sent (an idempotency key reused
    /// for another request).
    #[error("{0}")]
    UnprocessableEntity(String),
    /// The idempotency key's first request is still being processed.
    #[error("a request with this Idempotency-Key is still being processed: retry after {retry_after_seconds} s")]
    KeyInFlight { retry_after_seconds: u64 },
    /// Past a limit of requests per time; the same request may succeed after the wait.
    #[error("{message}")]
    TooManyRequests {
        message: String,
        retry_after_seconds: u64,
    },
    /// The pool's market state is too old to act on; the next sync refreshes it.
    #[error("{0}")]
    MarketStale(String),
    #[error("Service Unavailable")]
    ServiceUnavailable(#[source] Cause),
    #[error("Internal Server Error")]
    Internal(#[source] Cause),
}

/// Seconds a client should wait before retrying a 503.
const RETRY_AFTER_SECONDS: &str = "1";
/// Seconds until the next scheduled sync can refresh a stale pool (the default schedule).
const MARKET_RETRY_AFTER_SECONDS: &str = "60";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ErrorBody<'a> {
    message: &'a str,
    status_code: u16,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::BadRequest(message.into())
    }

    /// A server fault with its cause.
    pub fn internal(cause: impl Into<Cause>) -> Self {
        ApiError::Internal(cause.into())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PayloadTooLarge { .. } | ApiError::AnswerTooLarge(_) => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::UriTooLong { .. } => StatusCode::URI_TOO_LONG,
            ApiError::HeadersTooLarge { .. } => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Conflict(_) | ApiError::Contended(_) | ApiError::KeyInFlight { .. } => {
                StatusCode::CONFLICT
            }
            ApiError::UnprocessableEntity(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::ServiceUnavailable(_) | ApiError::MarketStale(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Whether the same request would fail the same way: a client error that is no race's
    /// outcome, which an idempotency key may keep as its answer.
    pub fn is_final(&self) -> bool {
        self.status().is_client_error()
            && !matches!(
                self,
                ApiError::Contended(_)
                    | ApiError::KeyInFlight { .. }
                    | ApiError::TooManyRequests { .. }
            )
    }

    /// The response: `{"message": ..., "statusCode": ...}` with the matching status. A server
    /// fault's cause chain is logged here with the request id; the client sees none of it.
    pub fn render(self, request_id: &str) -> Response<Body> {
        match &self {
            ApiError::ServiceUnavailable(cause) => {
                tracing::warn!(requestId = request_id, error = %chain(cause.as_ref()), "service unavailable");
            }
            ApiError::Internal(cause) => {
                tracing::error!(requestId = request_id, error = %chain(cause.as_ref()), "internal error");
            }
            _ => {}
        }
        let status = self.status();
        let message = self.to_string();
        let body = ErrorBody {
            message: &message,
            status_code: status.as_u16(),
        };
        let mut response = json_response(status, &body);
        let headers = response.headers_mut();
        match self {
            ApiError::MethodNotAllowed { allow } => {
                if let Ok(value) = header::HeaderValue::from_str(&allow) {
                    headers.insert(header::ALLOW, value);
                }
            }
            ApiError::ServiceUnavailable(_) | ApiError::Contended(_) => {
                headers.insert(
                    header::RETRY_AFTER,
                    header::HeaderValue::from_static(RETRY_AFTER_SECONDS),
                );
            }
            ApiError::MarketStale(_) => {
                headers.insert(
                    header::RETRY_AFTER,
                    header::HeaderValue::from_static(MARKET_RETRY_AFTER_SECONDS),
                );
            }
            ApiError::KeyInFlight {
                retry_after_seconds,
            }
            | ApiError::TooManyRequests {
                retry_after_seconds,
                ..
            } => {
                headers.insert(
                    header::RETRY_AFTER,
                    header::HeaderValue::from(retry_after_seconds),
                );
            }
            _ => {}
        }
        response
    }
}

/// An error and its sources, `outer: inner: innermost`.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl From<UseCaseError> for ApiError {
    fn from(error: UseCaseError) -> Self {
        match error {
            UseCaseError::BadRequest(message) => ApiError::BadRequest(message),
            UseCaseError::Forbidden(message) => ApiError::Forbidden(message),
            UseCaseError::NotFound(message) => ApiError::NotFound(message),
            UseCaseError::Conflict(message) => ApiError::Conflict(message),
            UseCaseError::Contended(message) => ApiError::Contended(message),
            UseCaseError::MarketStale(message) => ApiError::MarketStale(message),
            UseCaseError::TooMany {
                message,
                retry_after_seconds,
            } => ApiError::TooManyRequests {
                message,
                retry_after_seconds,
            },
            UseCaseError::Unavailable(cause) => ApiError::ServiceUnavailable(cause),
            UseCaseError::Internal(cause) => ApiError::Internal(cause),
        }
    }
}

impl From<ValuationError> for ApiError {
    fn from(error: ValuationError) -> Self {
        match error {
            ValuationError::Rejected(message) => ApiError::BadRequest(message),
            other => ApiError::Internal(Box::new(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::application::ports::StoreError;
    use crate::domain::math::MathError;

    fn body_of(error: ApiError) -> (StatusCode, serde_json::Value) {
        let response = error.render("test");
        let json = serde_json::from_slice(response.body().as_ref()).unwrap();
        (response.status(), json)
    }

    #[test]
    fn every_error_has_the_message_and_matching_status_code() {
        let cases = [
            (ApiError::bad_request("limit must be 1-100"), 400),
            (ApiError::Unauthorized, 401),
            (ApiError::Forbidden("x".into()), 403),
            (ApiError::NotFound("position not found".into()), 404),
            (
                ApiError::MethodNotAllowed {
                    allow: "GET".into(),
                },
                405,
            ),
            (ApiError::PayloadTooLarge { limit: 65536 }, 413),
            (ApiError::AnswerTooLarge("narrow it".into()), 413),
            (ApiError::RequestTimeout, 408),
            (ApiError::UriTooLong { limit: 10240 }, 414),
            (ApiError::HeadersTooLarge { limit: 10240 }, 431),
            (
                ApiError::UnsupportedMediaType("Content-Type must be application/json".into()),
                415,
            ),
            (ApiError::ServiceUnavailable("throttled".into()), 503),
            (ApiError::internal("boom"), 500),
        ];
        for (error, status) in cases {
            let message = error.to_string();
            let (code, body) = body_of(error);
            assert_eq!(code.as_u16(), status);
            assert_eq!(body["statusCode"], status);
            assert_eq!(body["message"], message.as_str());
            assert_eq!(body.as_object().unwrap().len(), 2);
        }
    }

    #[test]
    fn unavailable_store_maps_to_503_with_retry_after() {
        let error: ApiError =
            UseCaseError::from(StoreError::Unavailable("throttled".into())).into();
        assert!(matches!(error, ApiError::ServiceUnavailable(_)));
        let response = error.render("test");
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        let body: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body["message"], "Service Unavailable");
    }

    #[test]
    fn server_faults_keep_their_cause_and_hide_it() {
        let error: ApiError =
            UseCaseError::from(StoreError::Failure("secret table detail".into())).into();
        let cause = std::error::Error::source(&error).map(ToString::to_string);
        assert_eq!(cause.as_deref(), Some("store failure: secret table detail"));
        let (status, body) = body_of(error);
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!body.to_string().contains("secret"));

        let error: ApiError = ValuationError::Math(MathError("tick out of range")).into();
        assert_eq!(
            chain(&error),
            "Internal Server Error: math: tick out of range"
        );
        let error: ApiError = ValuationError::Rejected("range too wide".into()).into();
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        assert_eq!(error.to_string(), "range too wide");
    }
}
