//! Inputs that used to break `local-api`, sent as an attacker would, over a socket: crafted
//! gateway headers, oversized and malformed heads, stalled clients, descriptor exhaustion,
//! panics in a handler, encodings; CORS as the stack configures it; the token command's input.

use lambda_http::http::StatusCode;
use local_api::auth::JwtSettings;
use local_api::gateway::{Cors, Gateway};
use serde_json::{json, Value};
use shared::model::{
    Chain, Closing, Filter, KeyAnswer, KeyClaim, Page, PageRequest, Position, Protocol, Realized,
    Status,
};
use shared::store::{MemoryMarket, PositionStore, StoreResult};
use shared::{App, SystemClock};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::bodies::create_body;
use test_support::client::TestClient;
use test_support::local_api::{read_reply, LocalApi, RawReply, PROMPT};
use tokio::io::AsyncWriteExt;

const BIN: &str = env!("CARGO_BIN_EXE_local-api");

fn token(sub: &str) -> String {
    JwtSettings::from_env().issue(sub, 300)
}

fn get(path: &str, extra: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {}\r\n{extra}\r\n",
        token("alice")
    )
    .into_bytes()
}

/// Every error answer carries the API's body and content type.
fn assert_error_body(reply: &RawReply, status: u16) {
    assert_eq!(reply.status, status, "{reply:?}");
    assert_eq!(
        reply.header("content-type"),
        Some("application/json"),
        "{reply:?}"
    );
    let body = reply.json();
    assert_eq!(body["statusCode"], status, "{reply:?}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{reply:?}"
    );
}

#[tokio::test]
async fn crafted_gateway_headers_are_replaced_not_trusted() {
    let api = LocalApi::start(BIN, &[]).await;
    for extra in [
        "x-forwarded-proto:\r\n",
        "x-forwarded-proto: a b\r\n",
        "x-forwarded-port: 99999\r\n",
        "x-forwarded-for: not an ip\r\n",
    ] {
        let reply = api.raw(&get("/pools", extra), PROMPT).await;
        assert_eq!(reply.status, 200, "{extra}: {reply:?}");
    }
    for host in ["999.1.1.1", "localhost:99999", "[::1", "a b"] {
        let request = format!(
            "GET /pools HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {}\r\n\r\n",
            token("alice")
        );
        let reply = api.raw(request.as_bytes(), PROMPT).await;
        assert!(
            reply.status == 200 || reply.status == 400,
            "{host}: {reply:?}"
        );
        if reply.status == 400 {
            assert_error_body(&reply, 400);
        }
    }
    let log = api.stop_and_read_log().await;
    assert!(
        log.iter()
            .all(|line| serde_json::from_str::<Value>(line).is_ok()),
        "every log line is JSON: {log:?}"
    );
    assert!(!log.iter().any(|l| l.contains("panic")), "{log:?}");
}

#[tokio::test]
async fn oversized_and_malformed_heads_get_the_error_body() {
    let api = LocalApi::start(BIN, &[]).await;
    let huge = format!("authorization: Bearer {}\r\n", "a".repeat(1024 * 1024));
    let reply = api
        .raw(
            format!("GET /pools HTTP/1.1\r\nhost: x\r\n{huge}\r\n").as_bytes(),
            PROMPT,
        )
        .await;
    assert_error_body(&reply, 431);
    let many: String = (0..150).map(|i| format!("x-h{i}: v\r\n")).collect();
    let reply = api.raw(&get("/pools", &many), PROMPT).await;
    assert_eq!(
        reply.status, 200,
        "150 small headers fit API Gateway's 10 KiB"
    );
    let big: String = (0..150)
        .map(|i| format!("x-h{i}: {}\r\n", "v".repeat(100)))
        .collect();
    assert_error_body(&api.raw(&get("/pools", &big), PROMPT).await, 431);
    let long_id = "A".repeat(100 * 1024);
    let reply = api
        .raw(&get(&format!("/positions/{long_id}"), ""), PROMPT)
        .await;
    assert_error_body(&reply, 414);
    let reply = api
        .raw(
            &get(&format!("/positions/{}", "A".repeat(11 * 1024)), ""),
            PROMPT,
        )
        .await;
    assert_error_body(&reply, 414);
    for garbage in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET /pools HTTP/9.9\r\n\r\n",
        b"GET /po ols HTTP/1.1\r\nhost: x\r\n\r\n",
        b"GET /pools HTTP/1.1\r\nbad header\r\n\r\n",
    ] {
        let reply = api.raw(garbage, PROMPT).await;
        assert_error_body(&reply, 400);
    }
}

#[tokio::test]
async fn stalled_clients_are_timed_out() {
    let api = LocalApi::start(BIN, &[]).await;
    let started = Instant::now();
    // Half a head, then silence: the connection is closed by the header-read timeout.
    let reply = api
        .raw(
            b"GET /pools HTTP/1.1\r\nhost: x\r\n",
            Duration::from_secs(20),
        )
        .await;
    assert!(reply.closed, "{reply:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    // A body shorter than its Content-Length: 408 with the error body.
    let head = format!(
        "POST /positions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{",
        token("alice")
    );
    let reply = api.raw(head.as_bytes(), Duration::from_secs(20)).await;
    assert_error_body(&reply, 408);
    // An idle keep-alive connection is closed too.
    let mut stream = tokio::net::TcpStream::connect(&api.addr).await.unwrap();
    stream.write_all(&get("/pools", "")).await.unwrap();
    let first = read_reply(&mut stream, PROMPT).await;
    assert_eq!(first.status, 200);
    let idle = read_reply(&mut stream, Duration::from_secs(20)).await;
    assert!(idle.closed && idle.status == 0, "{idle:?}");
}

#[tokio::test]
async fn descriptor_exhaustion_backs_off_and_recovers() {
    let mut command = tokio::process::Command::new("sh");
    command.args([
        "-c",
        &format!("ulimit -n 64 && exec {BIN} \"$@\""),
        "local-api",
    ]);
    let api = LocalApi::start_with(command, &[]).await;
    let mut idle = Vec::new();
    for _ in 0..100 {
        if let Ok(stream) = tokio::net::TcpStream::connect(&api.addr).await {
            idle.push(stream);
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    drop(idle);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let reply = api.raw(&get("/pools", ""), PROMPT).await;
    assert_eq!(reply.status, 200, "serves again once descriptors are free");
    let log = api.stop_and_read_log().await;
    let failures = log.iter().filter(|l| l.contains("accept failed")).count();
    assert!(failures > 0, "the limit was reached: {log:?}");
    assert!(
        failures < 50,
        "backed off, not spun: {failures} accept failures in ~2 s"
    );
}

#[tokio::test]
async fn a_compressed_body_is_refused_by_name() {
    let api = LocalApi::start(BIN, &[]).await;
    let alice = api.client(Some(&token("alice")));
    let reply = alice.create_encoded(&create_body(json!({})), "gzip").await;
    assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(reply.json["message"].as_str().unwrap().contains("gzip"));
    assert_eq!(alice.total().await, 0);
}

#[tokio::test]
async fn tokens_api_gateway_would_refuse_are_refused() {
    let api = LocalApi::start(BIN, &[]).await;
    let jwt = JwtSettings::from_env();
    let now = chrono::Utc::now().timestamp();
    let base =
        json!({"sub": "alice", "iss": "local-dev", "aud": "positions-api", "exp": now + 300});
    let with = |k: &str, v: Value| {
        let mut claims = base.clone();
        claims[k] = v;
        jwt.sign(&claims)
    };
    for bad in [
        with("exp", json!(now)),
        with("sub", json!(123)),
        with("sub", json!(true)),
        with("sub", json!(null)),
        with("sub", json!("")),
        with("sub", json!("x".repeat(257))),
        with("iss", json!(["local-dev"])),
    ] {
        let reply = api.client(Some(&bad)).list("").await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{bad}");
        assert_eq!(
            reply.json,
            json!({"message": "Unauthorized", "statusCode": 401})
        );
    }
    assert_eq!(
        api.client(Some(&jwt.sign(&base))).list("").await.status,
        200
    );
}

#[test]
fn the_token_command_refuses_tokens_that_could_never_work() {
    for args in [
        &["--sub", "carol", "--ttl", "9223372036854775807"][..],
        &["--sub", "carol", "--ttl", "-10"],
        &["--sub", "carol", "--ttl", "0"],
        &["--sub", ""],
    ] {
        let output = std::process::Command::new(BIN)
            .arg("token")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--ttl") || stderr.contains("--sub"),
            "{stderr}"
        );
    }
}

#[tokio::test]
async fn cors_answers_preflights_without_a_token_and_marks_responses() {
    let api = LocalApi::start(BIN, &["--cors-origin", "https://app.example"]).await;
    let preflight = |origin: &str| {
        format!(
            "OPTIONS /positions HTTP/1.1\r\nhost: x\r\norigin: {origin}\r\naccess-control-request-method: POST\r\naccess-control-request-headers: authorization, content-type\r\n\r\n"
        )
    };
    let reply = api
        .raw(preflight("https://app.example").as_bytes(), PROMPT)
        .await;
    assert_eq!(reply.status, 204, "{reply:?}");
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(
        reply.header("access-control-allow-methods"),
        Some(Cors::ALLOW_METHODS)
    );
    assert_eq!(
        reply.header("access-control-allow-headers"),
        Some(Cors::ALLOW_HEADERS)
    );
    assert_eq!(reply.header("access-control-max-age"), Some("600"));
    let reply = api
        .raw(preflight("https://evil.example").as_bytes(), PROMPT)
        .await;
    assert_eq!(reply.status, 204);
    assert_eq!(reply.header("access-control-allow-origin"), None);
    let reply = api
        .raw(&get("/pools", "origin: https://app.example\r\n"), PROMPT)
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(
        reply.header("access-control-expose-headers"),
        Some("Location, Retry-After, Idempotent-Replayed")
    );
    // Without --cors-origin there is no CORS: a preflight is an ordinary request, which (no
    // route takes OPTIONS) reaches the fallback behind the authorizer: 401 without a token.
    let plain = LocalApi::start(BIN, &[]).await;
    let reply = plain
        .raw(preflight("https://app.example").as_bytes(), PROMPT)
        .await;
    assert_error_body(&reply, 401);
    assert_eq!(reply.header("access-control-allow-origin"), None);
}

/// A store whose reads panic, standing in for any bug in a handler.
struct PanickingStore;

#[async_trait::async_trait]
impl PositionStore for PanickingStore {
    async fn insert_answering(&self, _: &Position, _: Option<&KeyAnswer>) -> StoreResult<()> {
        panic!("insert blew up")
    }
    async fn get(&self, _: &str, _: &str) -> StoreResult<Option<Position>> {
        panic!("get blew up")
    }
    async fn list(&self, _: &str, _: Filter, _: PageRequest) -> StoreResult<Page> {
        panic!("list blew up")
    }
    async fn open_positions(&self, _: &str) -> StoreResult<Vec<Position>> {
        panic!("open_positions blew up")
    }
    async fn set_status(&self, _: &str, _: &str, _: Status, _: Status) -> StoreResult<()> {
        panic!("set_status blew up")
    }
    async fn holdings(&self, _: &str, _: Chain, _: &str) -> StoreResult<Vec<Position>> {
        panic!("holdings blew up")
    }
    async fn holding(&self, _: &str, _: Chain, _: &str) -> StoreResult<Option<Position>> {
        panic!("holding blew up")
    }
    async fn update_holding(&self, _: &Position, _: &Position) -> StoreResult<()> {
        panic!("update_holding blew up")
    }
    async fn set_order(
        &self,
        _: &Position,
        _: Option<&shared::model::ChainOrder>,
    ) -> StoreResult<()> {
        panic!("set_order blew up")
    }
    async fn set_move_order(
        &self,
        _: &Position,
        _: Option<&shared::model::ChainOrder>,
        _: &Position,
    ) -> StoreResult<()> {
        panic!("set_move_order blew up")
    }
    async fn remove_holdings(&self, _: &str, _: Chain, _: &str) -> StoreResult<u64> {
        panic!("remove_holdings blew up")
    }
    async fn close_answering(
        &self,
        _: &str,
        _: &str,
        _: Status,
        _: &Closing,
        _: Option<&KeyAnswer>,
    ) -> StoreResult<()> {
        panic!("close blew up")
    }
    async fn claim_key(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<KeyClaim> {
        panic!("claim_key blew up")
    }
    async fn answer_key(&self, _: &KeyAnswer) -> StoreResult<()> {
        panic!("answer_key blew up")
    }
    async fn release_key(&self, _: &str, _: &str, _: &str) -> StoreResult<()> {
        panic!("release_key blew up")
    }
    async fn realized(&self, _: &str) -> StoreResult<Realized> {
        panic!("realized blew up")
    }
    async fn pending_on(&self, _: Chain, _: Protocol, _: &str) -> StoreResult<Vec<Position>> {
        panic!("pending_on blew up")
    }
    async fn activate(&self, _: &Position) -> StoreResult<()> {
        panic!("activate blew up")
    }
}

#[tokio::test]
async fn a_panicking_handler_answers_500_and_keeps_the_connection() {
    let app = App {
        store: Arc::new(PanickingStore),
        market: Arc::new(MemoryMarket::embedded()),
        clock: Arc::new(SystemClock),
        ..App::in_memory()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let gateway = Arc::new(Gateway {
        app,
        jwt: JwtSettings::from_env(),
        cors: Cors::default(),
        local_addr: addr,
    });
    tokio::spawn(local_api::server::serve(
        listener,
        gateway,
        std::future::pending(),
    ));
    let client = TestClient::over_http(&format!("http://{addr}"), Some(&token("alice")));
    let reply = client.list("").await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        reply.json,
        json!({"message": "Internal Server Error", "statusCode": 500})
    );
    assert_eq!(
        client.pools().await.status,
        StatusCode::OK,
        "the server still serves"
    );
}
