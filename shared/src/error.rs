//! The one error type of the API and its single mapping to HTTP statuses and bodies.

use crate::store::StoreError;
use lambda_http::http::{header, StatusCode};
use lambda_http::{Body, Response};
use serde::Serialize;

/// Every way a request can fail. The `Display` text is the `message` sent to the client,
/// so variants that stand for server faults carry no detail.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("Unauthorized")]
    Unauthorized,
    #[error("{0}")]
    NotFound(String),
    #[error("Method Not Allowed")]
    MethodNotAllowed { allow: &'static str },
    #[error("request body exceeds {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("Content-Type must be application/json")]
    UnsupportedMediaType,
    #[error("Service Unavailable")]
    ServiceUnavailable,
    #[error("Internal Server Error")]
    Internal,
}

/// Seconds a client should wait before retrying a 503.
const RETRY_AFTER_SECONDS: &str = "1";

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

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The response: `{"message": ..., "statusCode": ...}` with the matching status.
    pub fn into_response(self) -> Response<Body> {
        let status = self.status();
        let message = self.to_string();
        let body = ErrorBody {
            message: &message,
            status_code: status.as_u16(),
        };
        let mut response = crate::http::json_response(status, &body);
        let headers = response.headers_mut();
        match self {
            ApiError::MethodNotAllowed { allow } => {
                headers.insert(header::ALLOW, header::HeaderValue::from_static(allow));
            }
            ApiError::ServiceUnavailable => {
                headers.insert(
                    header::RETRY_AFTER,
                    header::HeaderValue::from_static(RETRY_AFTER_SECONDS),
                );
            }
            _ => {}
        }
        response
    }
}

impl From<StoreError> for ApiError {
    /// Logs the real cause here, the one place store faults become responses.
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(cause) => {
                tracing::warn!(error = %cause, "store unavailable");
                ApiError::ServiceUnavailable
            }
            other => {
                tracing::error!(error = %other, "store failure");
                ApiError::Internal
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(error: ApiError) -> (StatusCode, serde_json::Value) {
        let response = error.into_response();
        let json = serde_json::from_slice(response.body().as_ref()).unwrap();
        (response.status(), json)
    }

    #[test]
    fn every_error_has_the_message_and_matching_status_code() {
        let cases = [
            (ApiError::bad_request("limit must be 1-100"), 400),
            (ApiError::Unauthorized, 401),
            (ApiError::NotFound("position not found".into()), 404),
            (ApiError::MethodNotAllowed { allow: "GET" }, 405),
            (ApiError::PayloadTooLarge { limit: 65536 }, 413),
            (ApiError::UnsupportedMediaType, 415),
            (ApiError::ServiceUnavailable, 503),
            (ApiError::Internal, 500),
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
        let error: ApiError = StoreError::Unavailable("throttled".into()).into();
        assert_eq!(error, ApiError::ServiceUnavailable);
        let response = error.into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        let body: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body["message"], "Service Unavailable");
    }

    #[test]
    fn other_store_failures_hide_their_cause() {
        let error: ApiError = StoreError::Failure("secret table detail".into()).into();
        let (status, body) = body_of(error);
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!body.to_string().contains("secret"));
    }
}
