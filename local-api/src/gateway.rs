//! API Gateway's part: route, authorize, build the HTTP API payload 2.0 event, invoke the handler.

use crate::auth::JwtSettings;
use base64::Engine;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use lambda_http::http::{header, HeaderMap, Method};
use serde_json::{json, Map, Value};
use shared::http::route;
use shared::{ApiError, App};
use std::collections::HashMap;
use std::net::SocketAddr;

/// API Gateway's own payload limit; the create handler enforces the API's smaller one.
const GATEWAY_BODY_LIMIT: usize = 10 * 1024 * 1024;

pub struct Gateway {
    pub app: App,
    pub jwt: JwtSettings,
}

impl Gateway {
    pub async fn serve(
        &self,
        request: hyper::Request<Incoming>,
        peer: SocketAddr,
    ) -> hyper::Response<Full<Bytes>> {
        let response = match self.invoke(request, peer).await {
            Ok(response) => response,
            Err(error) => error.into_response(),
        };
        to_hyper(response)
    }

    async fn invoke(
        &self,
        request: hyper::Request<Incoming>,
        peer: SocketAddr,
    ) -> Result<lambda_http::Response<lambda_http::Body>, ApiError> {
        let (parts, body) = request.into_parts();
        let matched = route(&parts.method, parts.uri.path())?;
        let authorization = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let claims = self
            .jwt
            .authorize(authorization)
            .ok_or(ApiError::Unauthorized)?;
        let body = Limited::new(body, GATEWAY_BODY_LIMIT)
            .collect()
            .await
            .map_err(|_| ApiError::PayloadTooLarge {
                limit: GATEWAY_BODY_LIMIT,
            })?
            .to_bytes();
        let event = EventParts {
            method: &parts.method,
            path: parts.uri.path(),
            raw_query: parts.uri.query().unwrap_or(""),
            headers: &parts.headers,
            route_key: matched.endpoint.route_key(),
            path_parameters: matched
                .path_parameters
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            claims,
            body: &body,
            source_ip: peer.ip().to_string(),
        }
        .to_json();
        let request = lambda_http::request::from_str(&event.to_string()).map_err(|error| {
            tracing::error!(%error, "event did not parse");
            ApiError::Internal
        })?;
        Ok(matched.endpoint.handle(&self.app, request).await)
    }
}

/// The pieces of a payload 2.0 event.
pub struct EventParts<'a> {
    pub method: &'a Method,
    pub path: &'a str,
    pub raw_query: &'a str,
    pub headers: &'a HeaderMap,
    pub route_key: String,
    pub path_parameters: HashMap<String, String>,
    pub claims: HashMap<String, String>,
    pub body: &'a [u8],
    pub source_ip: String,
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
                "requestId": ulid::Ulid::new().to_string(),
                "routeKey": self.route_key,
                "stage": "$default",
                "time": now.format("%d/%b/%Y:%H:%M:%S %z").to_string(),
                "timeEpoch": now.timestamp_millis(),
                "authorizer": { "jwt": { "claims": self.claims, "scopes": null } },
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

fn to_hyper(response: lambda_http::Response<lambda_http::Body>) -> hyper::Response<Full<Bytes>> {
    let (parts, body) = response.into_parts();
    let bytes = match body {
        lambda_http::Body::Empty => Bytes::new(),
        lambda_http::Body::Text(text) => Bytes::from(text),
        lambda_http::Body::Binary(data) => Bytes::from(data),
        _ => Bytes::new(),
    };
    hyper::Response::from_parts(parts, Full::new(bytes))
}
