//! Request and response helpers under both the handlers and the error type: the caller's
//! identity from the JWT authorizer's claims, the request id, JSON bodies.

use lambda_http::http::{header, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;

/// The longest caller id (`sub`) accepted, in bytes: ids are part of the table's keys.
pub const MAX_SUB_BYTES: usize = 256;

/// The caller: the `sub` claim the JWT authorizer put in the request context. `None` when the
/// authorizer's claims are missing, or `sub` is empty or longer than [`MAX_SUB_BYTES`].
pub fn caller(request: &Request) -> Option<String> {
    let Some(RequestContext::ApiGatewayV2(context)) = request.request_context_ref() else {
        return None;
    };
    context
        .authorizer
        .as_ref()
        .and_then(|a| a.jwt.as_ref())
        .and_then(|jwt| jwt.claims.get("sub"))
        .filter(|sub| !sub.is_empty() && sub.len() <= MAX_SUB_BYTES)
        .cloned()
}

/// The token claims that carry scopes, as API Gateway's JWT authorizer reads them.
pub const SCOPE_CLAIMS: [&str; 2] = ["scope", "scp"];

/// The scopes a token's claims grant, as API Gateway's JWT authorizer reads them: `scope` and
/// `scp`, each a space-separated string or an array of strings (as Okta issues `scp`); a claim
/// of any other type grants nothing, and so does an array holding anything but strings.
pub fn granted_scopes(claims: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
    use serde_json::Value;
    let mut scopes: Vec<String> = Vec::new();
    for claim in SCOPE_CLAIMS.iter().filter_map(|name| claims.get(*name)) {
        let found: Vec<&str> = match claim {
            Value::String(text) => text.split(' ').filter(|s| !s.is_empty()).collect(),
            Value::Array(items) => items
                .iter()
                .map(Value::as_str)
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        for scope in found {
            if !scopes.iter().any(|s| s == scope) {
                scopes.push(scope.to_string());
            }
        }
    }
    scopes
}

/// Whether the caller's token grants `scope`: in the `scopes` list the authorizer put in the
/// request context (API Gateway fills it from the token's `scope` and `scp`; local-api by
/// [`granted_scopes`]), or, where the context has no list, in the `scope` and `scp` claims as
/// API Gateway passes them, flattened to text: a space-separated string, or an array as
/// `[a b]`. Any other text (an object's) grants nothing.
pub fn has_scope(request: &Request, scope: &str) -> bool {
    let Some(RequestContext::ApiGatewayV2(context)) = request.request_context_ref() else {
        return false;
    };
    let Some(jwt) = context.authorizer.as_ref().and_then(|a| a.jwt.as_ref()) else {
        return false;
    };
    if let Some(scopes) = jwt.scopes.as_ref() {
        return scopes.iter().any(|s| s == scope);
    }
    SCOPE_CLAIMS
        .iter()
        .filter_map(|name| jwt.claims.get(*name))
        .any(|text| {
            let listed = match text.strip_prefix('[') {
                Some(array) => array.strip_suffix(']'),
                None if text.starts_with('{') => None,
                None => Some(text.as_str()),
            };
            listed.is_some_and(|list| list.split(' ').any(|s| s == scope))
        })
}

/// The id logs are correlated by: the Lambda invocation's, else API Gateway's (local runs).
pub fn request_id(request: &Request) -> String {
    if let Some(context) = request.lambda_context_ref() {
        if !context.request_id.is_empty() {
            return context.request_id.clone();
        }
    }
    match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => {
            context.request_id.clone().unwrap_or_default()
        }
        _ => String::new(),
    }
}

/// A JSON response with the given status.
pub fn json_response<T: Serialize>(status: StatusCode, value: &T) -> Response<Body> {
    let (status, body) = match serde_json::to_string(value) {
        Ok(body) => (status, body),
        Err(error) => {
            tracing::error!(%error, "response serialization failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                r#"{"message":"Internal Server Error","statusCode":500}"#.to_string(),
            )
        }
    };
    let mut response = Response::new(Body::Text(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// Whether the request declares a JSON body (`application/json`, any parameters, any case).
pub fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// The body's `Content-Encoding` when it is anything but `identity` (the API takes plain JSON;
/// a compressed body read as JSON would fail with a misleading message).
pub fn content_encoding(request: &Request) -> Option<String> {
    let values: Vec<&str> = request
        .headers()
        .get_all(header::CONTENT_ENCODING)
        .iter()
        // A value that is not text names no encoding we take: refused as such.
        .flat_map(|v| v.to_str().unwrap_or("(not text)").split(','))
        .map(str::trim)
        .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"))
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}
