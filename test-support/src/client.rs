//! A client for the API that reads like the contract: `create`, `list`, `get`, `portfolio`,
//! `pools`, or any request with [`TestClient::send`]. The same calls run in process or over
//! HTTP.

use crate::bodies::create_body;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use lambda_http::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use serde_json::Value;
use shared::event::EventParts;
use shared::routes::route;
use shared::App;
use std::collections::HashMap;

/// A response as the tests read it. `json` is `Value::Null` for an empty body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    pub json: Value,
}

impl Reply {
    /// Checks that the request was refused with `status` and a message saying `says`.
    pub fn assert_refused(&self, status: StatusCode, says: &str) {
        assert_eq!(self.status, status, "{}", self.text());
        let message = self.json["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{message:?} does not say {says:?}");
    }

    /// The body as text, for assertion messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[derive(Clone)]
enum Transport {
    /// Through the handlers, as the Lambda runtime invokes them behind the JWT authorizer.
    InProcess(Box<App>),
    /// Over HTTP to a running server.
    Http {
        base: String,
        client: Box<Client<HttpConnector, Full<Bytes>>>,
    },
}

/// Calls the API as one caller: in process a `sub` claim, over HTTP a bearer token; `None` is
/// a request without credentials.
#[derive(Clone)]
pub struct TestClient {
    transport: Transport,
    credential: Option<String>,
}

impl TestClient {
    /// Requests through the handlers with the authorizer's claims `{"sub": sub}` (none when
    /// `sub` is `None`).
    pub fn in_process(app: &App, sub: Option<&str>) -> TestClient {
        TestClient {
            transport: Transport::InProcess(Box::new(app.clone())),
            credential: sub.map(str::to_string),
        }
    }

    /// Requests to `base` (e.g. `http://127.0.0.1:3000`) with `Authorization: Bearer token`.
    pub fn over_http(base: &str, token: Option<&str>) -> TestClient {
        TestClient {
            transport: Transport::Http {
                base: base.trim_end_matches('/').to_string(),
                // A pooled connection idle for 5 s is not reused: local-api closes one idle
                // for its header-read timeout (10 s), and a request sent as it closes is lost.
                client: Box::new(
                    Client::builder(TokioExecutor::new())
                        .pool_timer(TokioTimer::new())
                        .pool_idle_timeout(std::time::Duration::from_secs(5))
                        .build_http(),
                ),
            },
            credential: token.map(str::to_string),
        }
    }

    /// The same API as another caller.
    pub fn as_caller(&self, credential: Option<&str>) -> TestClient {
        TestClient {
            transport: self.transport.clone(),
            credential: credential.map(str::to_string),
        }
    }

    /// `POST /positions` with a JSON body.
    pub async fn create(&self, body: &str) -> Reply {
        self.send(
            Method::POST,
            "/positions",
            &[("content-type", "application/json")],
            body.as_bytes(),
        )
        .await
    }

    /// `POST /positions` with a JSON body declared as sent with `Content-Encoding: encoding`.
    pub async fn create_encoded(&self, body: &str, encoding: &str) -> Reply {
        let headers = [
            ("content-type", "application/json"),
            ("content-encoding", encoding),
        ];
        self.send(Method::POST, "/positions", &headers, body.as_bytes())
            .await
    }

    /// Opens a position from [`create_body`] with `overrides`; anything but 201 fails the test.
    pub async fn open(&self, overrides: Value) -> Value {
        let reply = self.create(&create_body(overrides)).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
        reply.json
    }

    /// `GET /positions?{query}` (no query when empty).
    pub async fn list(&self, query: &str) -> Reply {
        let uri = if query.is_empty() {
            "/positions".to_string()
        } else {
            format!("/positions?{query}")
        };
        self.send(Method::GET, &uri, &[], b"").await
    }

    /// The `total` of `GET /positions`.
    pub async fn total(&self) -> u64 {
        let reply = self.list("").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        reply.json["total"].as_u64().expect("total is a number")
    }

    /// `GET /positions/{id}`.
    pub async fn get(&self, id: &str) -> Reply {
        self.send(Method::GET, &format!("/positions/{id}"), &[], b"")
            .await
    }

    /// `POST /positions/{id}/close`.
    pub async fn close(&self, id: &str) -> Reply {
        self.send(Method::POST, &format!("/positions/{id}/close"), &[], b"")
            .await
    }

    /// `GET /portfolio`.
    pub async fn portfolio(&self) -> Reply {
        self.send(Method::GET, "/portfolio", &[], b"").await
    }

    /// The kinds of a position's history, in order (`GET /positions/{id}/history`, checked 200).
    pub async fn history_kinds(&self, id: &str) -> Vec<String> {
        let path = format!("/positions/{id}/history?limit=100");
        let reply = self.send(Method::GET, &path, &[], b"").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let events = reply.json["data"].as_array().cloned().unwrap_or_default();
        let kind = |e: &Value| e["kind"].as_str().unwrap_or_default().to_string();
        events.iter().map(kind).collect()
    }

    /// `GET /pools`.
    pub async fn pools(&self) -> Reply {
        self.send(Method::GET, "/pools", &[], b"").await
    }

    /// Any request, with extra headers.
    pub async fn send(
        &self,
        method: Method,
        uri: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
                HeaderValue::from_bytes(value.as_bytes()).expect("a header value"),
            );
        }
        match &self.transport {
            Transport::InProcess(app) => {
                in_process(app, self.credential.as_deref(), method, uri, map, body).await
            }
            Transport::Http { base, client } => {
                let mut request = hyper::Request::builder()
                    .method(method)
                    .uri(format!("{base}{uri}"));
                if let Some(token) = &self.credential {
                    request = request.header("authorization", format!("Bearer {token}"));
                }
                let mut request = request
                    .body(Full::new(Bytes::copy_from_slice(body)))
                    .expect("a valid request");
                request.headers_mut().extend(map);
                let response = client.request(request).await.expect("the server answers");
                let (parts, body) = response.into_parts();
                let body = body.collect().await.expect("a whole body").to_bytes();
                reply(parts.status, parts.headers, body.to_vec())
            }
        }
    }
}

fn reply(status: StatusCode, headers: HeaderMap, body: Vec<u8>) -> Reply {
    let json = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    };
    Reply {
        status,
        headers,
        body,
        json,
    }
}

/// Routes, builds the payload 2.0 event the authorizer would pass, and runs the handler.
async fn in_process(
    app: &App,
    sub: Option<&str>,
    method: Method,
    uri: &str,
    headers: HeaderMap,
    body: &[u8],
) -> Reply {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let matched = route(&method, path).expect("a known route");
    let claims: HashMap<String, String> = sub
        .map(|s| HashMap::from([("sub".to_string(), s.to_string())]))
        .unwrap_or_default();
    let mut event = EventParts {
        method: &method,
        path,
        raw_query: query,
        headers: &headers,
        route_key: matched.endpoint.route_key(),
        path_parameters: matched.path_parameters,
        claims,
        scopes: None,
        body,
        source_ip: "127.0.0.1".into(),
        request_id: ulid::Ulid::new().to_string(),
    }
    .to_json();
    if sub.is_none() {
        event["requestContext"]
            .as_object_mut()
            .expect("a request context")
            .remove("authorizer");
    }
    let request = lambda_http::request::from_str(&event.to_string()).expect("a valid event");
    let response = matched.endpoint.handle(app, request).await;
    let (parts, body) = response.into_parts();
    let reply = reply(parts.status, parts.headers, body.as_ref().to_vec());
    assert!(
        !reply.json.is_null() || reply.status == StatusCode::NO_CONTENT && reply.body.is_empty(),
        "every body is JSON (none with 204): {}",
        reply.text()
    );
    reply
}
