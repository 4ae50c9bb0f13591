//! `Idempotency-Key` through the handlers, run on each store: replays exactly, another request
//! on a key is 422, malformed keys 400, keys per user, client errors replayed, closes guarded
//! too, retention ending with the clock, and one key raced by 50 requests.

use crate::bodies::{create_body, ETH_USDC};
use crate::client::{Reply, TestClient};
use crate::lifecycle::ManualClock;
use chrono::Utc;
use lambda_http::http::{Method, StatusCode};
use serde_json::json;
use shared::App;
use std::sync::Arc;
use std::time::Duration;

async fn create(client: &TestClient, key: &str, body: &str) -> Reply {
    let headers = [
        ("content-type", "application/json"),
        ("idempotency-key", key),
    ];
    client
        .send(Method::POST, "/positions", &headers, body.as_bytes())
        .await
}

async fn close(client: &TestClient, key: &str, id: &str) -> Reply {
    let uri = format!("/positions/{id}/close");
    client
        .send(Method::POST, &uri, &[("idempotency-key", key)], b"")
        .await
}

fn replayed(reply: &Reply) -> bool {
    reply
        .headers
        .get("idempotent-replayed")
        .is_some_and(|v| v == "true")
}

/// The same status, body and `Location`, marked as a replay.
fn assert_replay_of(replay: &Reply, first: &Reply) {
    assert!(replayed(replay), "{:?}", replay.headers);
    assert!(!replayed(first));
    assert_eq!(replay.status, first.status);
    assert_eq!(replay.body, first.body, "byte for byte");
    assert_eq!(
        replay.headers.get("location"),
        first.headers.get("location")
    );
    assert_eq!(replay.headers["content-type"], "application/json");
}

/// The scenario on `app` (any store); `owner` and `other` are fresh users.
pub async fn retried_writes_apply_once(app: &App, owner: &str, other: &str) {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let app = App {
        clock: clock.clone(),
        ..app.clone()
    };
    let alice = TestClient::in_process(&app, Some(owner));
    let body = create_body(json!({}));

    let first = create(&alice, "order-1", &body).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    assert!(first.headers.contains_key("location"));
    let again = create(&alice, "order-1", &body).await;
    assert_replay_of(&again, &first);
    assert_eq!(alice.total().await, 1, "nothing new written");

    // The same key on another request: 422, nothing written.
    let other_body = create_body(json!({"amountA": "2"}));
    let mismatch = create(&alice, "order-1", &other_body).await;
    assert_eq!(mismatch.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(mismatch.json["statusCode"], 422);
    assert!(mismatch.json["message"].is_string());
    assert_eq!(alice.total().await, 1);

    // Keys are per user: bob's equal key is his own.
    let bob = TestClient::in_process(&app, Some(other));
    let his = create(&bob, "order-1", &body).await;
    assert_eq!(his.status, StatusCode::CREATED);
    assert!(!replayed(&his));
    assert_ne!(his.json["id"], first.json["id"]);

    // Malformed keys: 400, nothing written.
    let long = "k".repeat(256);
    for key in ["", long.as_str(), "caf\u{e9}", "tab\there"] {
        let reply = create(&alice, key, &body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{key:?}");
        assert_eq!(reply.json["statusCode"], 400);
    }
    assert_eq!(
        create(&alice, &"k".repeat(255), &body).await.status,
        StatusCode::CREATED
    );
    assert_eq!(alice.total().await, 2);

    // A client error is kept and replayed: the same bad request stays bad.
    let unknown = create_body(json!({"pool": format!("{ETH_USDC}00")}));
    let bad = create(&alice, "order-2", &unknown).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_replay_of(&create(&alice, "order-2", &unknown).await, &bad);

    // Closes are guarded alike; without a key a second close is the usual 409.
    let id = first.json["id"].as_str().unwrap();
    let closed = close(&alice, "close-1", id).await;
    assert_eq!(closed.status, StatusCode::OK, "{}", closed.text());
    assert_replay_of(&close(&alice, "close-1", id).await, &closed);
    assert_eq!(alice.close(id).await.status, StatusCode::CONFLICT);

    // Kept 24 hours: after that the key is new again and the request runs anew.
    clock.advance(Duration::from_secs(24 * 3600 + 1));
    let anew = create(&alice, "order-1", &body).await;
    assert_eq!(anew.status, StatusCode::CREATED);
    assert!(!replayed(&anew));
    assert_ne!(anew.json["id"], first.json["id"]);

    // Without the header nothing changes: two creates, two positions.
    let before = alice.total().await;
    alice.open(json!({})).await;
    alice.open(json!({})).await;
    assert_eq!(alice.total().await, before + 2);

    // 50 racing requests with one key: one position; each answer the replay or 409.
    let before = alice.total().await;
    let racers: Vec<_> = (0..50)
        .map(|_| {
            let (client, body) = (alice.clone(), body.clone());
            tokio::spawn(async move { create(&client, "race", &body).await })
        })
        .collect();
    let mut ids = std::collections::HashSet::new();
    for racer in racers {
        let reply = racer.await.unwrap();
        match reply.status {
            StatusCode::CREATED => {
                ids.insert(reply.json["id"].as_str().unwrap().to_string());
            }
            StatusCode::CONFLICT => {
                assert!(
                    reply.headers.contains_key("retry-after"),
                    "{:?}",
                    reply.headers
                );
                assert_eq!(reply.json["statusCode"], 409);
            }
            other => panic!("{other}: {}", reply.text()),
        }
    }
    assert_eq!(ids.len(), 1, "every 201 is the one position");
    assert_eq!(alice.total().await, before + 1);
}
