//! The API's OpenAPI document (`openapi.yaml` at the repository root), served as JSON at
//! `GET /openapi.json` without a token, as generators and schemathesis read it.

use lambda_http::http::{header, HeaderValue, Method, StatusCode};
use lambda_http::{Body, Response};
use shared::ApiError;
use std::sync::LazyLock;

pub const PATH: &str = "/openapi.json";

const SOURCE: &str = include_str!("../../openapi.yaml");

static DOCUMENT: LazyLock<Result<String, String>> = LazyLock::new(|| {
    let value: serde_json::Value = serde_yaml_ng::from_str(SOURCE).map_err(|e| e.to_string())?;
    serde_json::to_string(&value).map_err(|e| e.to_string())
});

/// The document as a JSON value.
pub fn document() -> Result<serde_json::Value, String> {
    let text = DOCUMENT.as_ref().map_err(Clone::clone)?;
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// The answer to a request for the document's path: the JSON for GET, 405 otherwise.
pub fn answer(method: &Method) -> Result<Response<Body>, ApiError> {
    if method != Method::GET {
        return Err(ApiError::MethodNotAllowed {
            allow: "GET".into(),
        });
    }
    let json = DOCUMENT.as_ref().map_err(|e| ApiError::internal(e.clone()))?;
    let mut response = Response::new(Body::Text(json.clone()));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}
