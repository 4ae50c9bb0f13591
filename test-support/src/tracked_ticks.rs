//! The ticks a pool tracks follow its open positions, through the handlers on any store: each
//! create counts its two ticks, each close releases them, a tick no open position uses lingers
//! until the series has recorded past its release and is then no longer read; one user holds
//! at most `MAX_OPEN_RANGES_PER_POOL` distinct ranges on a pool.

use crate::bodies::{create_body, ETH_USDC};
use crate::client::TestClient;
use crate::fixtures::unique_owner;
use lambda_http::http::StatusCode;
use serde_json::{json, Value};
use shared::handlers::MAX_OPEN_RANGES_PER_POOL;
use shared::App;
use std::collections::BTreeSet;

async fn tracked(app: &App) -> BTreeSet<i32> {
    let catalog = app.market.catalog().await.unwrap();
    let pool = catalog.pools.iter().find(|p| p.is_named(ETH_USDC)).unwrap();
    pool.tracked_ticks.iter().copied().collect()
}

fn ticks(position: &Value) -> [i32; 2] {
    ["tickLower", "tickUpper"].map(|f| position[f].as_i64().unwrap() as i32)
}

/// Range `i` of a user's: 2000 + 10·i .. 4000 + 10·i (distinct ticks for each `i`).
fn range(i: usize) -> Value {
    json!({"priceLower": 2000 + 10 * i, "priceUpper": 4000 + 10 * i})
}

pub async fn tracked_ticks_follow_open_positions(app: &App) {
    let before = tracked(app).await;
    let alice = TestClient::in_process(app, Some(&unique_owner("ranges")));
    let bob = TestClient::in_process(app, Some(&unique_owner("ranges")));
    let mut opened = Vec::new();
    for i in 0..MAX_OPEN_RANGES_PER_POOL {
        opened.push(alice.open(range(i)).await);
    }
    // One range more is refused, the same range again is not; another user is not limited.
    let refused = alice
        .create(&create_body(range(MAX_OPEN_RANGES_PER_POOL)))
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text());
    assert!(refused.json["message"]
        .as_str()
        .unwrap()
        .contains("distinct ranges"));
    let again = alice.open(range(0)).await;
    let bobs = bob.open(range(MAX_OPEN_RANGES_PER_POOL)).await;
    // Another pool is another count.
    let elsewhere = alice.create(&create_body(crate::bodies::solana())).await;
    assert_eq!(
        elsewhere.status,
        StatusCode::CREATED,
        "{}",
        elsewhere.text()
    );

    let used: BTreeSet<i32> = opened
        .iter()
        .chain([&again, &bobs])
        .flat_map(ticks)
        .collect();
    let now = tracked(app).await;
    assert!(
        used.is_subset(&now),
        "every tick in use is read by the sync"
    );

    // Range 0 is held twice: one close keeps its ticks, the second drops them.
    let range0 = ticks(&opened[0]);
    let close = |client: &TestClient, position: &Value| {
        let id = position["id"].as_str().unwrap().to_string();
        let client = client.clone();
        async move {
            let reply = client.close(&id).await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        }
    };
    close(&alice, &again).await;
    let still = tracked(app).await;
    assert!(
        range0.iter().all(|t| still.contains(t)),
        "range 0 is still held"
    );
    for position in &opened {
        close(&alice, position).await;
    }
    // Closed, her ticks linger, still read, until the series has recorded past their release
    // (a point recorded late holds them); one taken up again meanwhile stays.
    let lingering = tracked(app).await;
    assert!(used.is_subset(&lingering), "read until the series passes");
    let taken_up = alice.open(range(1)).await;
    let pool = crate::earnings::pool(app).await;
    app.market.expire_ticks(&pool, 0).await.unwrap();
    assert_eq!(tracked(app).await, lingering, "the series is not past them");
    let pool = crate::earnings::pool(app).await;
    app.market.expire_ticks(&pool, i64::MAX).await.unwrap();
    let left = tracked(app).await;
    let bobs_ticks: BTreeSet<i32> = ticks(&bobs).into_iter().collect();
    let kept: BTreeSet<i32> = ticks(&taken_up).into_iter().collect();
    let expected: BTreeSet<i32> = before.union(&bobs_ticks).copied().chain(kept).collect();
    assert_eq!(left, expected, "alice's ticks are dropped, bob's stay");
    close(&alice, &taken_up).await;
    // With her ranges closed, alice may open new ones again.
    alice.open(range(MAX_OPEN_RANGES_PER_POOL + 1)).await;
}
