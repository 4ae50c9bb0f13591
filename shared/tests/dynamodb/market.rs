//! The market on a real table: states stored beside the catalog with a conditional write on
//! height, tracked ticks as a set, both surviving a reseed and a cold start; positions read
//! through the handlers valued at the stored state.

use bigdecimal::BigDecimal;
use chrono::Utc;
use futures_util::future::join_all;
use serde_json::json;
use shared::catalog::Pool;
use shared::market::{Freshness, PoolState, Succession};
use shared::store::{DynamoDbMarket, Market, StoreError};
use shared::App;
use std::time::Duration;
use test_support::bodies::ETH_USDC;
use test_support::client::TestClient;
use test_support::dynamodb::dynamodb_store;
use test_support::fixtures::unique_owner;

const STALE_AFTER: Duration = Duration::from_secs(300);

/// `pool` at `price` (tokenB per tokenA), read at `height`.
fn state_at(pool: &Pool, price: u32, height: u64) -> PoolState {
    let sqrt_price = pool.orientation.sqrt_price_of(&BigDecimal::from(price));
    PoolState {
        sqrt_price,
        tick: pool.curve().tick_at_or_below(sqrt_price),
        liquidity: 1_000_000_000_000,
        fee_growth_global0: Default::default(),
        fee_growth_global1: Default::default(),
        height,
        block_hash: None,
        observed_at: Utc::now(),
        ticks: Vec::new(),
        balances: None,
        slipstream: None,
    }
}

async fn pool(market: &DynamoDbMarket) -> Pool {
    market
        .catalog()
        .await
        .unwrap()
        .pools
        .iter()
        .find(|p| p.is_named(ETH_USDC))
        .unwrap()
        .clone()
}

#[tokio::test]
async fn racing_writes_leave_the_newest_state_and_ticks_accumulate() {
    let store = dynamodb_store().await;
    let market = DynamoDbMarket::new(store.clone(), Duration::ZERO, Freshness::live(STALE_AFTER));
    let target = pool(&market).await;

    // Twenty syncs at different heights, all at once: the highest lands last, whatever the
    // order; every write at or below a stored height is refused.
    let writes = (1..=20u64).rev().map(|h| {
        let (market, state) = (&market, state_at(&target, 2000 + h as u32, h));
        let target = &target;
        async move {
            market
                .save_state(target, &state, &[], Succession::Next)
                .await
        }
    });
    let results = join_all(writes).await;
    assert!(results.iter().any(Result::is_ok));
    assert!(results
        .iter()
        .all(|r| matches!(r, Ok(()) | Err(StoreError::Conflict))));
    assert_eq!(pool(&market).await.state.unwrap().height, 20);
    assert!(matches!(
        market
            .save_state(&target, &state_at(&target, 1, 20), &[], Succession::Next)
            .await,
        Err(StoreError::Conflict)
    ));

    let tracks = (0..10).map(|i| market.track_ticks(&target, [i * 10, i * 10 + 60], &[]));
    assert!(join_all(tracks).await.iter().all(Result::is_ok));
    let expected: Vec<i32> = (0..10)
        .flat_map(|i| [i * 10, i * 10 + 60])
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();

    // A reseed keeps both; a cold start (a new market) reads them.
    store
        .seed_catalog(&shared::catalog::embedded_records())
        .await
        .unwrap();
    let cold = DynamoDbMarket::new(
        store.clone(),
        Duration::from_secs(60),
        Freshness::live(STALE_AFTER),
    );
    let reread = pool(&cold).await;
    assert_eq!(reread.tracked_ticks, expected);
    // In the file's order, not the sort keys': prices route by catalog order (decision 21).
    let loaded: Vec<String> = cold
        .catalog()
        .await
        .unwrap()
        .pools
        .iter()
        .map(|p| p.id.clone())
        .collect();
    let seeded: Vec<String> = shared::catalog::embedded_records()
        .into_iter()
        .map(|r| r.pool)
        .collect();
    assert_eq!(loaded, seeded);
    let state = reread.state.clone().unwrap();
    assert_eq!(state.height, 20);
    assert_eq!(state, {
        let mut s = state_at(&target, 2020, 20);
        s.observed_at = state.observed_at;
        s
    });
    assert_eq!(reread.tick, state.tick);
    let view = serde_json::to_value(reread.view(
        Freshness::Live {
            stale_after: STALE_AFTER,
        },
        Utc::now(),
    ))
    .unwrap();
    assert_eq!(view["block"], 20);
    assert_eq!(view["stale"], false);
}

#[tokio::test]
async fn positions_on_the_lambda_path_are_valued_at_the_stored_state() {
    let store = dynamodb_store().await;
    let app = App::on_dynamodb(store, Duration::ZERO, Freshness::live(STALE_AFTER));
    let target = {
        let catalog = app.market.catalog().await.unwrap();
        catalog
            .pools
            .iter()
            .find(|p| p.is_named(ETH_USDC))
            .unwrap()
            .clone()
    };
    // Before any sync, a live market's pools are stale.
    let owner = unique_owner("synced");
    let client = TestClient::in_process(&app, Some(&owner));
    let pools = client.pools().await.json;
    assert!(
        pools["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["stale"] == true),
        "{pools}"
    );

    app.market
        .save_state(
            &target,
            &state_at(&target, 2000, 21_000_000),
            &[],
            Succession::Next,
        )
        .await
        .unwrap();
    let created = client.open(json!({})).await;
    assert_eq!(created["stale"], false, "{created}");
    assert_eq!(created["inRange"], false, "2000 is below 2500..3500");
    let price = created["currentPrice"].as_f64().unwrap();
    assert!((price - 2000.0).abs() < 1e-6, "{price}");
    // Below the range the position is all tokenA.
    assert_eq!(created["tokenB"]["amount"], "0");
    let id = created["id"].as_str().unwrap();
    let read = client.get(id).await.json;
    assert_eq!(read["liquidity"], created["liquidity"]);
    assert_eq!(read["tickLower"], created["tickLower"]);

    // The create tracked the position's ticks for the sync.
    let catalog = app.market.catalog().await.unwrap();
    let tracked = &catalog
        .pools
        .iter()
        .find(|p| p.is_named(ETH_USDC))
        .unwrap()
        .tracked_ticks;
    assert!(tracked.contains(&(created["tickLower"].as_i64().unwrap() as i32)));
    assert!(tracked.contains(&(created["tickUpper"].as_i64().unwrap() as i32)));

    let pools = client.pools().await.json;
    let listed = pools["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pool"] == ETH_USDC)
        .unwrap();
    assert_eq!(listed["block"], 21_000_000);
    assert_eq!(listed["stale"], false);
}

#[tokio::test]
async fn fee_checkpoints_and_tick_records_persist_through_a_cold_start() {
    let store = dynamodb_store().await;
    let app = App::on_dynamodb(store.clone(), Duration::ZERO, Freshness::live(STALE_AFTER));
    let owner = unique_owner("earner");
    test_support::earnings::fees_follow_the_pools_fee_growth(&app, &owner, || {
        App::on_dynamodb(
            store.clone(),
            Duration::from_secs(60),
            Freshness::live(STALE_AFTER),
        )
    })
    .await;
}

/// The pending scenario on a fresh table: the pending index, activation and the unfunded close
/// as DynamoDB transactions.
#[tokio::test]
async fn offers_wait_for_a_fresh_state_on_dynamodb() {
    let store = dynamodb_store().await;
    let app = App::on_dynamodb(store, Duration::ZERO, Freshness::live(STALE_AFTER));
    test_support::lifecycle::offers_wait_for_a_fresh_state(
        &app,
        &unique_owner("offer"),
        &unique_owner("twin"),
        STALE_AFTER,
    )
    .await;
}

/// Idempotency keys through the handlers on a fresh table: answers in the writes' transactions.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retried_writes_apply_once_on_dynamodb() {
    let app = App::on_dynamodb(
        dynamodb_store().await,
        Duration::ZERO,
        Freshness::live(STALE_AFTER),
    );
    // A never-synced live pool takes offers as pending: give it a fresh state first.
    test_support::lifecycle::give_fresh_state(&app).await;
    test_support::idempotency::retried_writes_apply_once(
        &app,
        &unique_owner("retry"),
        &unique_owner("other"),
    )
    .await;
}

#[tokio::test]
async fn tracked_ticks_follow_open_positions_on_dynamodb() {
    let app = App::on_dynamodb(dynamodb_store().await, Duration::ZERO, Freshness::Snapshot);
    test_support::tracked_ticks::tracked_ticks_follow_open_positions(&app).await;
}

/// Wallets linked by signature through the handlers on a fresh table: the link's transaction
/// (challenge used, wallet, registry entry, capped count) and the unlink's.
#[tokio::test]
async fn wallets_link_by_signature_on_dynamodb() {
    let app = App::on_dynamodb(dynamodb_store().await, Duration::ZERO, Freshness::Snapshot);
    test_support::wallets::wallets_link_by_signature(&app).await;
}

/// Watched addresses on a fresh table: their own count, its cap, the unlink's count.
#[tokio::test]
async fn watched_addresses_are_counted_apart_on_dynamodb() {
    let app = App::on_dynamodb(dynamodb_store().await, Duration::ZERO, Freshness::Snapshot);
    test_support::watched::watched_addresses_are_counted_apart(&app).await;
}

/// Reads of a linked wallet on a fresh table: the key item, the conditional replace, the
/// status moves.
#[tokio::test]
async fn wallet_reads_never_go_back_on_dynamodb() {
    let app = App::on_dynamodb(dynamodb_store().await, Duration::ZERO, Freshness::Snapshot);
    test_support::wallets::wallet_reads_never_go_back(&app).await;
}

/// A wallet position's bounds tracked while it is open, on a fresh table (the tick items).
#[tokio::test]
async fn wallet_positions_track_their_bounds_while_open_on_dynamodb() {
    let app = App::on_dynamodb(dynamodb_store().await, Duration::ZERO, Freshness::Snapshot);
    test_support::wallets::wallet_positions_track_their_bounds_while_open(&app).await;
}

/// A position moved between two wallets of one owner on a fresh table: its key item follows
/// the wallet.
#[tokio::test]
async fn positions_follow_their_owners_wallets_on_dynamodb() {
    let app = App::on_dynamodb(dynamodb_store().await, Duration::ZERO, Freshness::Snapshot);
    test_support::wallets::positions_follow_their_owners_wallets(&app).await;
}

/// Unlinking on a fresh table: one transaction with few positions, one a position past nine.
#[tokio::test]
async fn unlinking_removes_the_wallets_positions_on_dynamodb() {
    let app = App::on_dynamodb(dynamodb_store().await, Duration::ZERO, Freshness::Snapshot);
    test_support::wallets::unlinking_removes_the_wallets_positions(&app).await;
}
