//! API Gateway's part: limits, CORS, route, authorize, build the HTTP API payload 2.0 event with
//! the headers API Gateway sets, invoke the handler, and turn a panic into a 500.

use crate::auth::JwtSettings;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use lambda_http::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use shared::event::EventParts;
use shared::routes::route;
use shared::{ApiError, App};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// API Gateway's own payload limit; the create handler enforces the API's smaller one.
const GATEWAY_BODY_LIMIT: usize = 10 * 1024 * 1024;
/// API Gateway HTTP APIs' limit on the request line and on the headers, each (10 KiB).
pub const HEADERS_LIMIT: usize = 10 * 1024;
/// How long a declared body may take to arrive.
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Headers clients may not set: API Gateway sets them itself.
const GATEWAY_HEADERS: [&str; 4] = [
    "host",
    "x-forwarded-for",
    "x-forwarded-port",
    "x-forwarded-proto",
];

/// The CORS answer of the stack's `CorsConfiguration`, for the listed origins.
#[derive(Debug, Clone, Default)]
pub struct Cors {
    pub allowed_origins: Vec<String>,
}

impl Cors {
    pub const ALLOW_METHODS: &'static str = "GET, POST, PUT, PATCH, DELETE";
    pub const ALLOW_HEADERS: &'static str = "Authorization, Content-Type, Idempotency-Key";
    pub const EXPOSE_HEADERS: &'static str = "Location, Retry-After, Idempotent-Replayed";
    pub const MAX_AGE_SECONDS: &'static str = "600";

    fn enabled(&self) -> bool {
        !self.allowed_origins.is_empty()
    }

    /// The request's `Origin` if it is allowed.
    fn allowed<'a>(&self, headers: &'a HeaderMap) -> Option<&'a HeaderValue> {
        let origin = headers.get(header::ORIGIN)?;
        let text = origin.to_str().ok()?;
        self.allowed_origins
            .iter()
            .any(|o| o == "*" || o == text)
            .then_some(origin)
    }

    /// Adds the headers an actual (non-preflight) response carries for an allowed origin.
    fn decorate(origin: HeaderValue, response: &mut HeaderMap) {
        response.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        response.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(Self::EXPOSE_HEADERS),
        );
        response.append(header::VARY, HeaderValue::from_static("Origin"));
    }

    /// The answer to a preflight (`OPTIONS` with `Origin` and
    /// `Access-Control-Request-Method`): 204, with the CORS headers when the origin is allowed.
    /// `None` when CORS is off or the request is no preflight.
    fn preflight(
        &self,
        method: &Method,
        headers: &HeaderMap,
    ) -> Option<hyper::Response<Full<Bytes>>> {
        let is_preflight = method == Method::OPTIONS
            && headers.contains_key(header::ORIGIN)
            && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
        if !self.enabled() || !is_preflight {
            return None;
        }
        let mut response = hyper::Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::NO_CONTENT;
        if let Some(origin) = self.allowed(headers) {
            let out = response.headers_mut();
            out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
            for (name, value) in [
                (header::ACCESS_CONTROL_ALLOW_METHODS, Self::ALLOW_METHODS),
                (header::ACCESS_CONTROL_ALLOW_HEADERS, Self::ALLOW_HEADERS),
                (header::ACCESS_CONTROL_MAX_AGE, Self::MAX_AGE_SECONDS),
                (header::VARY, "Origin"),
            ] {
                out.insert(name, HeaderValue::from_static(value));
            }
        }
        Some(response)
    }
}

pub struct Gateway {
    pub app: App,
    pub jwt: JwtSettings,
    pub cors: Cors,
    /// The address the server listens on: the `Host` API Gateway would give its own domain.
    pub local_addr: SocketAddr,
}

impl Gateway {
    pub async fn serve(
        self: Arc<Self>,
        request: hyper::Request<Incoming>,
        peer: SocketAddr,
    ) -> hyper::Response<Full<Bytes>> {
        // API Gateway's request id, also in the event, so logs of one request correlate.
        let request_id = ulid::Ulid::new().to_string();
        if let Some(preflight) = self.cors.preflight(request.method(), request.headers()) {
            return preflight;
        }
        let origin = self.cors.allowed(request.headers()).cloned();
        // The handler runs in its own task so that a panic becomes a 500, not a dropped
        // connection.
        let gateway = self.clone();
        let id = request_id.clone();
        let task = tokio::spawn(async move { gateway.invoke(request, peer, &id).await });
        let response = match task.await {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => error.render(&request_id),
            Err(failure) => {
                ApiError::internal(format!("handler panicked: {}", panic_text(failure)))
                    .render(&request_id)
            }
        };
        let mut response = to_hyper(response);
        if let Some(origin) = origin {
            Cors::decorate(origin, response.headers_mut());
        }
        response
    }

    async fn invoke(
        &self,
        request: hyper::Request<Incoming>,
        peer: SocketAddr,
        request_id: &str,
    ) -> Result<lambda_http::Response<lambda_http::Body>, ApiError> {
        let (parts, body) = request.into_parts();
        check_sizes(&parts)?;
        // The document is public: served before the authorizer, as a static site would.
        if parts.uri.path() == crate::openapi::PATH {
            let catalog = shared::application::positions::catalog(&self.app).await?;
            return crate::openapi::answer(&parts.method, &catalog);
        }
        // So is the page (`web/`): its files are public, the API calls it makes carry a token.
        if let Some(answer) = crate::web::answer(&parts.method, parts.uri.path()) {
            return answer;
        }
        // As in API Gateway, where a request no route takes goes to the `$default` route,
        // behind the same authorizer: the token is checked before any 404 or 405.
        let authorization = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let authorized = self
            .jwt
            .authorize(authorization)
            .ok_or(ApiError::Unauthorized)?;
        let matched = route(&parts.method, parts.uri.path())?;
        let body = tokio::time::timeout(
            BODY_READ_TIMEOUT,
            Limited::new(body, GATEWAY_BODY_LIMIT).collect(),
        )
        .await
        .map_err(|_| ApiError::RequestTimeout)?
        // Also over the API's own limit, which is the one worth telling the client.
        .map_err(|_| ApiError::PayloadTooLarge {
            limit: shared::validation::MAX_BODY_BYTES,
        })?
        .to_bytes();
        let headers = self.gateway_headers(&parts.headers, peer);
        let event = EventParts {
            method: &parts.method,
            path: parts.uri.path(),
            raw_query: parts.uri.query().unwrap_or(""),
            headers: &headers,
            route_key: matched.endpoint.route_key(),
            path_parameters: matched.path_parameters,
            claims: authorized.claims,
            scopes: authorized.scopes,
            body: &body,
            source_ip: peer.ip().to_string(),
            request_id: request_id.to_string(),
        }
        .to_json();
        let request =
            lambda_http::request::from_str(&event.to_string()).map_err(ApiError::internal)?;
        Ok(matched.endpoint.handle(&self.app, request).await)
    }

    /// The client's headers with those API Gateway sets replaced by its own values.
    fn gateway_headers(&self, client: &HeaderMap, peer: SocketAddr) -> HeaderMap {
        let mut headers = client.clone();
        for name in GATEWAY_HEADERS {
            headers.remove(name);
        }
        let set = |headers: &mut HeaderMap, name: &'static str, value: String| {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(name, value);
            }
        };
        set(&mut headers, "host", self.local_addr.to_string());
        set(&mut headers, "x-forwarded-for", peer.ip().to_string());
        set(
            &mut headers,
            "x-forwarded-port",
            self.local_addr.port().to_string(),
        );
        set(&mut headers, "x-forwarded-proto", "http".to_string());
        headers
    }
}

/// API Gateway's limits on the request line and the headers, answered in the API's error body.
fn check_sizes(parts: &hyper::http::request::Parts) -> Result<(), ApiError> {
    let line = parts.method.as_str().len() + parts.uri.to_string().len() + " HTTP/1.1".len() + 1;
    if line > HEADERS_LIMIT {
        return Err(ApiError::UriTooLong {
            limit: HEADERS_LIMIT,
        });
    }
    let headers: usize = parts
        .headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if headers > HEADERS_LIMIT {
        return Err(ApiError::HeadersTooLarge {
            limit: HEADERS_LIMIT,
        });
    }
    Ok(())
}

/// What a panicking task said, for the log.
fn panic_text(failure: tokio::task::JoinError) -> String {
    match failure.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-text panic".to_string()),
        Err(other) => other.to_string(),
    }
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
