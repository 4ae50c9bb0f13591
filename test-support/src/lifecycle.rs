//! The pending part of the life cycle through the handlers, run on each store: offers made
//! while the pool has no fresh state wait (`pending`), the next sync's settling activates them
//! at its state exactly as a create would size them there, or closes one its price leaves
//! unfunded; a cancel, a stale pool again, and the fees from the activation's checkpoint.

use crate::client::TestClient;
use crate::earnings::{decimal, pool, state, sync_to};
use chrono::{DateTime, Utc};
use lambda_http::http::StatusCode;
use serde_json::{json, Value};
use shared::clock::Clock;
use shared::lifecycle::{settle_pending, CANCELLED};
use shared::math::{U256, U512};
use shared::App;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A clock the test moves by hand.
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn new(at: DateTime<Utc>) -> ManualClock {
        ManualClock(Mutex::new(at))
    }

    pub fn set(&self, at: DateTime<Utc>) {
        *self.0.lock().unwrap() = at;
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap();
        *now += chrono::Duration::from_std(by).unwrap();
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

async fn settle(app: &App) -> Vec<(u32, u32)> {
    let target = pool(app).await;
    settle_pending(
        app.store.as_ref(),
        app.market.as_ref(),
        &[&target],
        app.clock.now(),
    )
    .await
    .unwrap()
}

/// Saves the ETH/USDC pool a state read now (price 3000), as a sync would.
pub async fn give_fresh_state(app: &App) {
    let target = pool(app).await;
    sync_to(app, &state(&target, 3000, 1, [U256::ZERO; 2])).await;
}

fn total(reply: &Value) -> u64 {
    reply["total"].as_u64().unwrap()
}

/// The scenario on `app`: a live market whose ETH/USDC pool was never synced, states going
/// stale after `stale_after`. `owner` and `other` are fresh users.
pub async fn offers_wait_for_a_fresh_state(
    app: &App,
    owner: &str,
    other: &str,
    stale_after: Duration,
) {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let app = App {
        clock: clock.clone(),
        ..app.clone()
    };
    let client = TestClient::in_process(&app, Some(owner));

    // Never synced: every offer waits, shown at its amounts and the last known USD prices.
    let both = client.open(json!({})).await;
    let only_a = client.open(json!({"amountB": "0"})).await;
    let cancelled = client.open(json!({"amountA": "0.5"})).await;
    for offer in [&both, &only_a, &cancelled] {
        assert_eq!(offer["status"], "pending", "{offer}");
        assert_eq!(offer["liquidity"], Value::Null);
        assert_eq!(offer["inRange"], Value::Null);
        assert_eq!(offer["stale"], true);
        assert_eq!(offer["pnlUsd"], 0);
        assert_eq!(offer["feesEarnedUsd"], 0);
        assert_eq!(offer["valueUsd"], offer["costBasisUsd"]);
    }
    assert_eq!(both["tokenA"]["amount"], "1");
    assert_eq!(both["tokenB"]["amount"], "3000");
    let weth_usd = decimal(&both["tokenA"]["valueUsd"]);
    assert!(weth_usd > 0);
    assert_eq!(decimal(&both["valueUsd"]), weth_usd + 3000);
    assert_eq!(total(&client.list("status=pending").await.json), 3);
    let portfolio = client.portfolio().await.json;
    assert_eq!(portfolio["positions"], 3, "{portfolio}");
    assert_eq!(portfolio["totalPnlUsd"], 0);

    // Closing an offer cancels it: nothing withdrawn, PnL 0, the reason kept.
    let id = |v: &Value| v["id"].as_str().unwrap().to_string();
    let reply = client.close(&id(&cancelled)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json["status"], "closed");
    assert_eq!(reply.json["closeReason"], CANCELLED);
    assert_eq!(reply.json["pnlUsd"], 0);
    assert_eq!(reply.json["costBasisUsd"], 0, "nothing was invested");
    assert_eq!(reply.json["valueUsd"], 0);
    assert_eq!(reply.json["tokenA"]["amount"], "0");
    assert_eq!(
        client.close(&id(&cancelled)).await.status,
        StatusCode::CONFLICT
    );

    // The first sync: the price is inside the range. The offer of both tokens is sized as a
    // create at this state sizes it; the one of WETH alone funds nothing there.
    let target = pool(&app).await;
    let start = [U256::from(5u8) << 128, U256::MAX - U256::from(99u8)];
    sync_to(&app, &state(&target, 3200, 100, start)).await;
    assert_eq!(settle(&app).await, vec![(1, 1)]);
    let active = client.get(&id(&both)).await.json;
    assert_eq!(active["status"], "active", "{active}");
    assert_eq!(active["inRange"], true);
    assert_eq!(active["stale"], false);
    let twin = TestClient::in_process(&app, Some(other))
        .open(json!({}))
        .await;
    assert_eq!(twin["status"], "active");
    for field in [
        "liquidity",
        "tickLower",
        "tickUpper",
        "costBasisUsd",
        "valueUsd",
    ] {
        assert_eq!(active[field], twin[field], "{field}: {active} vs {twin}");
    }
    for token in ["tokenA", "tokenB"] {
        assert_eq!(active[token]["amount"], twin[token]["amount"]);
    }
    assert!(decimal(&active["tokenA"]["amount"]) <= 1);
    assert!(decimal(&active["tokenB"]["amount"]) <= 3000);
    let unfunded = client.get(&id(&only_a)).await.json;
    assert_eq!(unfunded["status"], "closed", "{unfunded}");
    assert_eq!(unfunded["pnlUsd"], 0);
    assert!(
        unfunded["closeReason"]
            .as_str()
            .unwrap()
            .contains("fund no liquidity"),
        "{unfunded}"
    );
    assert_eq!(settle(&app).await, vec![(0, 0)], "nothing left pending");
    for (status, want) in [("pending", 0), ("active", 1), ("closed", 2)] {
        let listed = client.list(&format!("status={status}")).await.json;
        assert_eq!(total(&listed), want, "{status}: {listed}");
    }
    assert_eq!(client.total().await, 3);
    let portfolio = client.portfolio().await.json;
    assert_eq!(portfolio["positions"], 1);
    assert_eq!(portfolio["realizedPnlUsd"], 0);
    assert_eq!(portfolio["totalValueUsd"], active["valueUsd"]);

    // Fees from the activation's checkpoint: L × Δ / 2^128 per token.
    let delta = [U256::from(77u8) << 100, U256::from(12_345u32) << 96];
    let later = [0, 1].map(|i| start[i].wrapping_add(delta[i]));
    sync_to(&app, &state(&target, 3200, 101, later)).await;
    let earning = client.get(&id(&both)).await.json;
    let liquidity = U512::from_str(active["liquidity"].as_str().unwrap()).unwrap();
    let owed = |i: usize| (liquidity * U512::from_str(&delta[i].to_string()).unwrap()) >> 128;
    let (weth, usdc) = if target.orientation.base_is_token0 {
        (owed(0), owed(1))
    } else {
        (owed(1), owed(0))
    };
    let units = |v: &Value, decimals: u8| {
        let scaled = decimal(v) * bigdecimal::BigDecimal::from(10u64.pow(u32::from(decimals)));
        U512::from_str(&scaled.with_scale(0).to_string()).unwrap()
    };
    assert_eq!(
        units(&earning["tokenA"]["feesEarned"], target.token_a.decimals),
        weth
    );
    assert_eq!(
        units(&earning["tokenB"]["feesEarned"], target.token_b.decimals),
        usdc
    );
    assert!(usdc > U512::ZERO && weth > U512::ZERO);

    // Stale again: new offers wait, the active position cannot close at the old price, an
    // offer still cancels.
    // The states were read at real times (`observed_at`), however long the test ran since the
    // clock was made: stale past the latest of them.
    clock.set(Utc::now() + stale_after + Duration::from_secs(1));
    let waiting = client.open(json!({})).await;
    assert_eq!(waiting["status"], "pending");
    let refused = client.close(&id(&both)).await;
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        refused.text()
    );
    assert_eq!(refused.headers["retry-after"], "60");
    assert_eq!(refused.json["statusCode"], 503);
    let unchanged = client.get(&id(&both)).await.json;
    assert_eq!(unchanged["status"], "active");
    assert_eq!(unchanged["tokenA"], earning["tokenA"]);
    let reply = client.close(&id(&waiting)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(total(&client.list("status=closed").await.json), 3);
}
