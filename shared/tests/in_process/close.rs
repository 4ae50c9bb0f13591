//! `POST /positions/{id}/close` through the handlers on the in-memory store: the withdrawal
//! rounded down and frozen, every error status, one winner among concurrent closes, and the
//! portfolio's realized and unrealized totals.

use bigdecimal::BigDecimal;
use lambda_http::http::StatusCode;
use serde_json::{json, Value};
use shared::App;
use std::str::FromStr;
use test_support::client::TestClient;

fn dec(value: &Value) -> BigDecimal {
    BigDecimal::from_str(&value.to_string().replace('"', "")).unwrap()
}

#[tokio::test]
async fn a_close_withdraws_rounded_down_and_freezes_the_figures() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, Some("alice"));
    let kept = alice.open(json!({})).await;
    let closing = alice.open(json!({"amountA": "2", "amountB": "5000"})).await;
    let id = closing["id"].as_str().unwrap();
    let open = alice.get(id).await.json;

    let reply = alice.close(id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let closed = reply.json;
    assert_eq!(closed["status"], "closed");
    assert_eq!(closed["inRange"], Value::Null);
    assert_eq!(closed["stale"], Value::Null);
    let at = closed["closedAt"].as_str().unwrap();
    assert!(
        at.ends_with('Z') && at.len() == "2026-11-22T06:30:00.000Z".len(),
        "{at}"
    );
    // A burn pays rounded down, a read shows rounded up: at most one unit apart.
    for token in ["tokenA", "tokenB"] {
        let (read, paid) = (dec(&open[token]["amount"]), dec(&closed[token]["amount"]));
        assert!(paid <= read, "{token}: {paid} > {read}");
        assert!(
            &read - &paid <= BigDecimal::from_str("0.000001").unwrap(),
            "{token}"
        );
    }
    // Realized PnL: withdrawn value + fees − cost basis.
    let value = dec(&closed["tokenA"]["valueUsd"]) + dec(&closed["tokenB"]["valueUsd"]);
    assert_eq!(
        dec(&closed["valueUsd"]),
        value + dec(&closed["feesEarnedUsd"])
    );
    assert!(
        (dec(&closed["pnlUsd"]) - (dec(&closed["valueUsd"]) - dec(&closed["costBasisUsd"]))).abs()
            <= BigDecimal::from_str("0.01").unwrap()
    );
    // Reads return the frozen figures.
    assert_eq!(alice.get(id).await.json, closed);

    // Lists per status, before and after.
    assert_eq!(alice.list("status=closed").await.json["total"], 1);
    assert_eq!(alice.list("status=active").await.json["total"], 1);
    assert_eq!(alice.list("status=closed").await.json["data"][0], closed);
    assert_eq!(alice.total().await, 2);

    // The portfolio: the open position unrealized, the closed one realized.
    let portfolio = alice.portfolio().await.json;
    assert_eq!(portfolio["positions"], 1);
    assert_eq!(portfolio["realizedPnlUsd"], closed["pnlUsd"]);
    assert_eq!(portfolio["unrealizedPnlUsd"], kept["pnlUsd"]);
    assert_eq!(
        dec(&portfolio["totalPnlUsd"]),
        dec(&closed["pnlUsd"]) + dec(&kept["pnlUsd"])
    );
    assert_eq!(portfolio["totalValueUsd"], kept["valueUsd"]);
}

#[tokio::test]
async fn closing_twice_unknown_or_anothers_position_is_refused_and_changes_nothing() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, Some("alice"));
    let bob = TestClient::in_process(&app, Some("bob"));
    let created = alice.open(json!({})).await;
    let id = created["id"].as_str().unwrap();
    for (client, target) in [
        (&bob, id),
        (&alice, "01ARZ3NDEKTSV4RRFFQ69G5FAV"),
        (&alice, "not-an-id"),
    ] {
        let reply = client.close(target).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{target}");
        assert_eq!(
            reply.json,
            json!({"message": "position not found", "statusCode": 404})
        );
    }
    let nobody = TestClient::in_process(&app, None);
    assert_eq!(nobody.close(id).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(alice.get(id).await.json["status"], "active");

    assert_eq!(alice.close(id).await.status, StatusCode::OK);
    let again = alice.close(id).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(
        again.json,
        json!({"message": "the position is already closed", "statusCode": 409})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_twenty_concurrent_closes_exactly_one_succeeds() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, Some("alice"));
    let id = alice.open(json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let closes = (0..20).map(|_| {
        let (app, id) = (app.clone(), id.clone());
        tokio::spawn(async move {
            TestClient::in_process(&app, Some("alice"))
                .close(&id)
                .await
                .status
        })
    });
    let mut statuses = Vec::new();
    for close in closes {
        statuses.push(close.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::OK).count(), 1);
    assert!(statuses
        .iter()
        .all(|s| *s == StatusCode::OK || *s == StatusCode::CONFLICT));
    assert_eq!(alice.list("status=closed").await.json["total"], 1);
    assert_eq!(alice.list("status=active").await.json["total"], 0);
}
