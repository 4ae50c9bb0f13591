//! The life cycle black-box over HTTP on local-api without `--rpc` (a static catalog: creates
//! are active at once), in memory and on DynamoDB (moto): close, its frozen figures, 409 and 404,
//! list totals per status, the portfolio's realized PnL, and an idempotent close replayed.

use lambda_http::http::{Method, StatusCode};
use local_api::auth::JwtSettings;
use serde_json::json;
use test_support::bodies::create_body;
use test_support::dynamodb::dynamodb_endpoint;
use test_support::local_api::LocalApi;

const BIN: &str = env!("CARGO_BIN_EXE_local-api");

fn token(sub: &str) -> String {
    JwtSettings {
        secret: "local-dev-secret".into(),
        issuer: "local-dev".into(),
        audience: "positions-api".into(),
    }
    .issue(sub, 600)
}

async fn lifecycle_over_http(server: &LocalApi) {
    let owner = format!("owner-{}", ulid::Ulid::new());
    let alice = server.client(Some(&token(&owner)));
    let kept = alice.open(json!({})).await;
    let closing = alice.open(json!({"amountA": "2", "amountB": "5000"})).await;
    for created in [&kept, &closing] {
        assert_eq!(created["status"], "active", "a static catalog: {created}");
    }
    let id = closing["id"].as_str().unwrap();

    let closed = alice.close(id).await;
    assert_eq!(closed.status, StatusCode::OK, "{}", closed.text());
    assert_eq!(closed.json["status"], "closed");
    assert_eq!(closed.json["inRange"], serde_json::Value::Null);
    assert!(closed.json["closedAt"].is_string());
    assert_eq!(alice.get(id).await.json, closed.json, "frozen");
    let again = alice.close(id).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.json["statusCode"], 409);
    let other = server.client(Some(&token("someone-else")));
    assert_eq!(other.close(id).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        alice.close("01ARZ3NDEKTSV4RRFFQ69G5FAV").await.status,
        StatusCode::NOT_FOUND
    );

    for (status, want) in [("active", 1), ("closed", 1), ("pending", 0)] {
        let listed = alice.list(&format!("status={status}")).await.json;
        assert_eq!(listed["total"], want, "{status}: {listed}");
    }
    assert_eq!(alice.total().await, 2);
    let portfolio = alice.portfolio().await.json;
    assert_eq!(portfolio["positions"], 1);
    assert_eq!(portfolio["realizedPnlUsd"], closed.json["pnlUsd"]);

    // An idempotent close: the retry replays the answer.
    let kept_id = kept["id"].as_str().unwrap();
    let path = format!("/positions/{kept_id}/close");
    let key = [("idempotency-key", "close-kept-1")];
    let first = alice.send(Method::POST, &path, &key, b"").await;
    assert_eq!(first.status, StatusCode::OK);
    let retry = alice.send(Method::POST, &path, &key, b"").await;
    assert_eq!(retry.status, StatusCode::OK);
    assert_eq!(retry.body, first.body);
    assert_eq!(retry.headers["idempotent-replayed"], "true");
    assert_eq!(alice.list("status=closed").await.json["total"], 2);
    // And a create, retried.
    let body = create_body(json!({}));
    let headers = [
        ("content-type", "application/json"),
        ("idempotency-key", "create-1"),
    ];
    let created = alice
        .send(Method::POST, "/positions", &headers, body.as_bytes())
        .await;
    let replayed = alice
        .send(Method::POST, "/positions", &headers, body.as_bytes())
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert_eq!(replayed.body, created.body);
    assert_eq!(replayed.headers["location"], created.headers["location"]);
    assert_eq!(alice.total().await, 3);
}

#[tokio::test]
async fn lifecycle_over_http_in_memory() {
    lifecycle_over_http(&LocalApi::start(BIN, &[]).await).await;
}

#[tokio::test]
async fn lifecycle_over_http_on_dynamodb() {
    let table = format!("lifecycle-{}", ulid::Ulid::new().to_string().to_lowercase());
    let endpoint = dynamodb_endpoint();
    let args = ["--dynamodb-endpoint", &endpoint, "--table", &table];
    lifecycle_over_http(&LocalApi::start(BIN, &args).await).await;
}
