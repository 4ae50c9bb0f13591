//! HTTP glue shared by the Lambda binaries and the local server: the route table, the caller's
//! identity from the JWT authorizer's claims, and JSON responses.

use crate::app::App;
use crate::error::ApiError;
use crate::handlers;
use lambda_http::http::{header, Method, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;
use std::collections::HashMap;

/// One route of the API, as API Gateway's route keys name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    ListPositions,
    GetPosition,
    CreatePosition,
    GetPortfolio,
    ListPools,
}

impl Endpoint {
    pub const ALL: [Endpoint; 5] = [
        Endpoint::ListPositions,
        Endpoint::GetPosition,
        Endpoint::CreatePosition,
        Endpoint::GetPortfolio,
        Endpoint::ListPools,
    ];

    /// The function (and binary) that serves this endpoint.
    pub fn function_name(self) -> &'static str {
        match self {
            Endpoint::ListPositions => "list-positions",
            Endpoint::GetPosition => "get-position",
            Endpoint::CreatePosition => "create-position",
            Endpoint::GetPortfolio => "get-portfolio",
            Endpoint::ListPools => "list-pools",
        }
    }

    pub fn method(self) -> Method {
        match self {
            Endpoint::CreatePosition => Method::POST,
            _ => Method::GET,
        }
    }

    /// The path template, with `{id}` for the path parameter.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::ListPositions | Endpoint::CreatePosition => "/positions",
            Endpoint::GetPosition => "/positions/{id}",
            Endpoint::GetPortfolio => "/portfolio",
            Endpoint::ListPools => "/pools",
        }
    }

    /// API Gateway's route key, e.g. `GET /positions/{id}`.
    pub fn route_key(self) -> String {
        format!("{} {}", self.method(), self.path())
    }

    /// Runs the endpoint's handler; every failure becomes its error response here.
    pub async fn handle(self, app: &App, request: Request) -> Response<Body> {
        let result = match self {
            Endpoint::ListPositions => handlers::list_positions(app, &request).await,
            Endpoint::GetPosition => handlers::get_position(app, &request).await,
            Endpoint::CreatePosition => handlers::create_position(app, &request).await,
            Endpoint::GetPortfolio => handlers::get_portfolio(app, &request).await,
            Endpoint::ListPools => handlers::list_pools(app, &request).await,
        };
        result.unwrap_or_else(ApiError::into_response)
    }
}

/// A matched route: the endpoint and its path parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub endpoint: Endpoint,
    pub path_parameters: HashMap<String, String>,
}

/// Matches a method and path: unknown path → 404, known path with another method → 405.
pub fn route(method: &Method, path: &str) -> Result<Route, ApiError> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let (candidates, path_parameters): (&[Endpoint], HashMap<String, String>) =
        match segments.as_slice() {
            ["positions"] => (
                &[Endpoint::ListPositions, Endpoint::CreatePosition],
                HashMap::new(),
            ),
            ["positions", id] if !id.is_empty() => (
                &[Endpoint::GetPosition],
                HashMap::from([("id".to_string(), percent_decode(id))]),
            ),
            ["portfolio"] => (&[Endpoint::GetPortfolio], HashMap::new()),
            ["pools"] => (&[Endpoint::ListPools], HashMap::new()),
            _ => return Err(ApiError::NotFound("Not Found".into())),
        };
    match candidates.iter().find(|e| e.method() == method) {
        Some(&endpoint) => Ok(Route {
            endpoint,
            path_parameters,
        }),
        None => Err(ApiError::MethodNotAllowed {
            allow: if candidates.len() > 1 {
                "GET, POST"
            } else {
                "GET"
            },
        }),
    }
}

/// Decodes `%XX` escapes in a path segment (as API Gateway does for path parameters).
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The caller: the `sub` claim the JWT authorizer put in the request context.
pub fn caller(request: &Request) -> Result<String, ApiError> {
    let Some(RequestContext::ApiGatewayV2(context)) = request.request_context_ref() else {
        return Err(ApiError::Unauthorized);
    };
    context
        .authorizer
        .as_ref()
        .and_then(|a| a.jwt.as_ref())
        .and_then(|jwt| jwt.claims.get("sub"))
        .filter(|sub| !sub.is_empty())
        .cloned()
        .ok_or(ApiError::Unauthorized)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_methods_and_paths() {
        let ok = |m: Method, p: &str| route(&m, p).map(|r| r.endpoint);
        assert_eq!(ok(Method::GET, "/positions"), Ok(Endpoint::ListPositions));
        assert_eq!(ok(Method::POST, "/positions"), Ok(Endpoint::CreatePosition));
        assert_eq!(ok(Method::GET, "/positions/"), Ok(Endpoint::ListPositions));
        assert_eq!(ok(Method::GET, "/portfolio"), Ok(Endpoint::GetPortfolio));
        assert_eq!(ok(Method::GET, "/pools"), Ok(Endpoint::ListPools));
        let got = route(&Method::GET, "/positions/abc%20d").unwrap();
        assert_eq!(got.endpoint, Endpoint::GetPosition);
        assert_eq!(got.path_parameters["id"], "abc d");
        assert!(matches!(
            route(&Method::DELETE, "/positions"),
            Err(ApiError::MethodNotAllowed { allow: "GET, POST" })
        ));
        assert!(matches!(
            route(&Method::POST, "/portfolio"),
            Err(ApiError::MethodNotAllowed { allow: "GET" })
        ));
        assert!(matches!(
            route(&Method::GET, "/"),
            Err(ApiError::NotFound(_))
        ));
        assert!(matches!(
            route(&Method::GET, "/positions/a/b"),
            Err(ApiError::NotFound(_))
        ));
        assert!(matches!(
            route(&Method::GET, "/nope"),
            Err(ApiError::NotFound(_))
        ));
    }
}
