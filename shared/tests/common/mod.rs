//! Helpers shared by the integration tests.
#![allow(dead_code)]

use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use shared::model::{Chain, Position, Protocol, Status};
use shared::store::DynamoDbStore;

/// The DynamoDB-API server the test command started. Missing is an error, never a skip.
pub fn dynamodb_endpoint() -> String {
    std::env::var("DYNAMODB_TEST_ENDPOINT").expect(
        "DYNAMODB_TEST_ENDPOINT is not set: run the tests with scripts/test.sh, which starts moto's server",
    )
}

/// A fresh table on the test server.
pub async fn dynamodb_store() -> DynamoDbStore {
    let table = format!("test-{}", ulid::Ulid::new().to_string().to_lowercase());
    let store = DynamoDbStore::new(
        shared::store::dynamodb::local_client(&dynamodb_endpoint()),
        table,
    );
    store
        .prepare_local()
        .await
        .expect("the test DynamoDB server answers");
    store
}

pub fn unique_owner(prefix: &str) -> String {
    format!("{prefix}-{}", ulid::Ulid::new())
}

/// A stored position created at `millis` (ids are time-ordered like the server's).
pub fn position(owner: &str, status: Status, chain: Chain, millis: i64) -> Position {
    let created_at: DateTime<Utc> = DateTime::from_timestamp_millis(millis).unwrap();
    Position {
        id: ulid::Ulid::from_datetime(created_at.into()).to_string(),
        owner: owner.to_string(),
        chain,
        protocol: Protocol::UniswapV3,
        pool: "0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640".to_string(),
        status,
        tick_lower: -80000,
        tick_upper: -70000,
        liquidity: 1_000_000_000_000,
        cost_basis_usd: BigDecimal::from(100),
        fees_earned_usd: BigDecimal::from(0),
        created_at,
    }
}

use lambda_http::http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::Value;
use shared::event::EventParts;
use shared::http::route;
use shared::App;
use std::collections::HashMap;

/// A response as the tests read it.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub json: Value,
}

/// Calls the handler for `method uri` as the Lambda runtime would, with the authorizer's claims
/// for `sub` (none when `None`) and a JSON body.
pub async fn call(
    app: &App,
    method: Method,
    uri: &str,
    body: Option<&str>,
    sub: Option<&str>,
) -> Reply {
    let mut headers = HeaderMap::new();
    if body.is_some() {
        headers.insert("content-type", HeaderValue::from_static("application/json"));
    }
    call_with(
        app,
        method,
        uri,
        headers,
        body.unwrap_or("").as_bytes(),
        sub,
    )
    .await
}

pub async fn call_with(
    app: &App,
    method: Method,
    uri: &str,
    headers: HeaderMap,
    body: &[u8],
    sub: Option<&str>,
) -> Reply {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let matched = route(&method, path).expect("a known route");
    let claims: HashMap<String, String> = sub
        .map(|s| HashMap::from([("sub".to_string(), s.to_string())]))
        .unwrap_or_default();
    let event = EventParts {
        method: &method,
        path,
        raw_query: query,
        headers: &headers,
        route_key: matched.endpoint.route_key(),
        path_parameters: matched.path_parameters,
        claims,
        body,
        source_ip: "127.0.0.1".into(),
    }
    .to_json();
    let mut event = event;
    if sub.is_none() {
        event["requestContext"]
            .as_object_mut()
            .unwrap()
            .remove("authorizer");
    }
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    let response = matched.endpoint.handle(app, request).await;
    let json = serde_json::from_slice(response.body().as_ref()).expect("every body is JSON");
    Reply {
        status: response.status(),
        headers: response.headers().clone(),
        json,
    }
}

/// A create body on the mainnet ETH/USDC pool with overrides.
pub fn create_body(overrides: Value) -> String {
    let mut body = serde_json::json!({
        "chain": "ethereum",
        "protocol": "uniswap-v3",
        "pool": "0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640",
        "amountA": "1",
        "amountB": "3000",
        "priceLower": 2500,
        "priceUpper": 3500
    });
    for (k, v) in overrides.as_object().unwrap() {
        body[k] = v.clone();
    }
    body.to_string()
}

/// The manifest of `events/`: expected status per file and the fixture position some read.
pub struct EventManifest {
    pub dir: std::path::PathBuf,
    pub expected: Vec<(String, u16)>,
    pub fixture: Position,
}

pub fn event_manifest() -> EventManifest {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../events");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected-status.json")).unwrap())
            .unwrap();
    let expected = manifest["expected"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(file, status)| (file.clone(), status.as_u64().unwrap() as u16))
        .collect();
    let fixture = &manifest["fixture"];
    let mut position = position(
        fixture["owner"].as_str().unwrap(),
        Status::Active,
        Chain::Ethereum,
        1_790_000_000_000,
    );
    position.id = fixture["id"].as_str().unwrap().to_string();
    EventManifest {
        dir,
        expected,
        fixture: position,
    }
}

/// The endpoint whose function name starts the event file's name.
pub fn endpoint_of(file: &str) -> shared::Endpoint {
    *shared::Endpoint::ALL
        .iter()
        .find(|e| file.starts_with(&format!("{}-", e.function_name())))
        .unwrap_or_else(|| panic!("{file} does not start with a function name"))
}
