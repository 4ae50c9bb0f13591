//! API Gateway HTTP API payload 2.0 events, built the way the JWT authorizer delivers them.
//! The local server uses this to invoke handlers, and tests use it to make requests.

use base64::Engine;
use lambda_http::http::{header, HeaderMap, Method};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The pieces of a payload 2.0 event.
pub struct EventParts<'a> {
    pub method: &'a Method,
    pub path: &'a str,
    pub raw_query: &'a str,
    pub headers: &'a HeaderMap,
    pub route_key: String,
    pub path_parameters: HashMap<String, String>,
    pub claims: HashMap<String, String>,
    /// The token's scopes, as the authorizer lists them (`None`: the context has no list).
    pub scopes: Option<Vec<String>>,
    pub body: &'a [u8],
    pub source_ip: String,
    /// API Gateway's `requestContext.requestId`.
    pub request_id: String,
}

impl EventParts<'_> {
    /// The event as API Gateway sends it: lowercase headers with repeats comma-joined, the JWT
    /// claims under `requestContext.authorizer.jwt.claims`, text bodies as they are and others
    /// base64-encoded.
    pub fn to_json(&self) -> Value {
        let mut headers = Map::new();
        for (name, value) in self.headers {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            headers
                .entry(name.as_str().to_string())
                .and_modify(|v| *v = Value::String(format!("{},{value}", v.as_str().unwrap_or(""))))
                .or_insert(Value::String(value));
        }
        let mut query = Map::new();
        for (key, value) in url_pairs(self.raw_query) {
            query
                .entry(key)
                .and_modify(|v| *v = Value::String(format!("{},{value}", v.as_str().unwrap_or(""))))
                .or_insert(Value::String(value));
        }
        let (body, encoded) = match std::str::from_utf8(self.body) {
            Ok(text) => (text.to_string(), false),
            Err(_) => (
                base64::engine::general_purpose::STANDARD.encode(self.body),
                true,
            ),
        };
        let now = chrono::Utc::now();
        json!({
            "version": "2.0",
            "routeKey": self.route_key,
            "rawPath": self.path,
            "rawQueryString": self.raw_query,
            "headers": headers,
            "queryStringParameters": if query.is_empty() { Value::Null } else { Value::Object(query) },
            "pathParameters": if self.path_parameters.is_empty() { Value::Null } else { json!(self.path_parameters) },
            "requestContext": {
                "accountId": "local",
                "apiId": "local",
                "domainName": "localhost",
                "domainPrefix": "localhost",
                "http": {
                    "method": self.method.as_str(),
                    "path": self.path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": self.source_ip,
                    "userAgent": self.headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or(""),
                },
                "requestId": self.request_id,
                "routeKey": self.route_key,
                "stage": "$default",
                "time": now.format("%d/%b/%Y:%H:%M:%S %z").to_string(),
                "timeEpoch": now.timestamp_millis(),
                "authorizer": { "jwt": { "claims": self.claims, "scopes": self.scopes } },
            },
            "body": if self.body.is_empty() { Value::Null } else { Value::String(body) },
            "isBase64Encoded": encoded,
        })
    }
}

/// Decoded `key=value` pairs of a query string.
fn url_pairs(query: &str) -> Vec<(String, String)> {
    let parsed: lambda_http::aws_lambda_events::query_map::QueryMap =
        query.parse().unwrap_or_default();
    parsed
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
