//! API Gateway's part: route, authorize, build the HTTP API payload 2.0 event, invoke the handler.

use crate::auth::JwtSettings;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use lambda_http::http::header;
use shared::event::EventParts;
use shared::routes::route;
use shared::{ApiError, App};
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
        // API Gateway's request id, also in the event, so logs of one request correlate.
        let request_id = ulid::Ulid::new().to_string();
        let response = match self.invoke(request, peer, &request_id).await {
            Ok(response) => response,
            Err(error) => error.render(&request_id),
        };
        to_hyper(response)
    }

    async fn invoke(
        &self,
        request: hyper::Request<Incoming>,
        peer: SocketAddr,
        request_id: &str,
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
            // Also over the API's own limit, which is the one worth telling the client.
            .map_err(|_| ApiError::PayloadTooLarge {
                limit: shared::validation::MAX_BODY_BYTES,
            })?
            .to_bytes();
        let event = EventParts {
            method: &parts.method,
            path: parts.uri.path(),
            raw_query: parts.uri.query().unwrap_or(""),
            headers: &parts.headers,
            route_key: matched.endpoint.route_key(),
            path_parameters: matched.path_parameters,
            claims,
            body: &body,
            source_ip: peer.ip().to_string(),
            request_id: request_id.to_string(),
        }
        .to_json();
        let request =
            lambda_http::request::from_str(&event.to_string()).map_err(ApiError::internal)?;
        Ok(matched.endpoint.handle(&self.app, request).await)
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
