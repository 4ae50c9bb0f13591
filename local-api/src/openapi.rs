//! The API's OpenAPI document (`openapi.yaml` at the repository root), served as JSON at
//! `GET /openapi.json` without a token, as generators and schemathesis read it. The served copy
//! states this deployment's catalog: the create body's schema is one alternative per pool
//! (`shared::limits`), so a body is schema-valid exactly when the handler accepts its form.

use lambda_http::http::{header, HeaderValue, Method, StatusCode};
use lambda_http::{Body, Response};
use serde_json::Value;
use shared::catalog::Catalog;
use shared::limits::create_request_schema;
use shared::ApiError;
use std::sync::LazyLock;

pub const PATH: &str = "/openapi.json";

const SOURCE: &str = include_str!("../../openapi.yaml");

static DOCUMENT: LazyLock<Result<Value, String>> =
    LazyLock::new(|| serde_yaml_ng::from_str(SOURCE).map_err(|e| e.to_string()));

/// The document as written in the repository.
pub fn document() -> Result<Value, String> {
    DOCUMENT.clone()
}

/// The document for a deployment serving `catalog`.
pub fn served(catalog: &Catalog) -> Result<Value, String> {
    let mut document = document()?;
    let schema = document
        .pointer_mut("/components/schemas/CreatePositionRequest")
        .ok_or("the document has no CreatePositionRequest schema")?;
    *schema = create_request_schema(catalog);
    Ok(document)
}

/// The answer to a request for the document's path: the JSON for GET, 405 otherwise.
pub fn answer(method: &Method, catalog: &Catalog) -> Result<Response<Body>, ApiError> {
    if method != Method::GET {
        return Err(ApiError::MethodNotAllowed {
            allow: "GET".into(),
        });
    }
    let document = served(catalog).map_err(ApiError::internal)?;
    let json = serde_json::to_string(&document).map_err(ApiError::internal)?;
    let mut response = Response::new(Body::Text(json));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}
