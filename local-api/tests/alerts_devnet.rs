//! Alerts from the chain (decision 61), on the devnet with the real Uniswap v3 contracts,
//! delivered to a receiver of the test's own on loopback (signatures checked by the
//! `standardwebhooks` crate): swaps move the pool's price out of a position's range and back,
//! each way, making exactly one `exited` and one `entered` event each time (none for a swing
//! inside the buffer that comes back by the next sync, none for the state seen at the link);
//! a deposit, a withdrawal, a collect and a transfer out each make their event once, also when
//! the same blocks are read again. On memory and on DynamoDB (moto).

use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use test_support::client::TestClient;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::on_both_stores;
use test_support::wallets::post;
use test_support::webhooks::Receiver;
use test_support::world::{local_api, operator, sync, user};

/// Every type but the approach (which a price passing near a bound also makes, told apart in
/// the unit tests of the watch).
const TYPES: [&str; 9] = [
    "position.range.exited",
    "position.range.entered",
    "position.fees.threshold",
    "position.liquidity.changed",
    "position.fees.collected",
    "position.closed",
    "position.transferred",
    "position.staked",
    "position.unstaked",
];

/// The caller's events, oldest first.
async fn feed(client: &TestClient) -> Vec<Value> {
    let reply = client
        .send(Method::GET, "/events?limit=100", &[], b"")
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let mut events = reply.json["data"].as_array().unwrap().clone();
    events.reverse();
    events
}

async fn counts(client: &TestClient) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for event in feed(client).await {
        *counts.entry(text(&event["type"])).or_default() += 1;
    }
    counts
}

fn expect(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(t, n)| (t.to_string(), *n)).collect()
}

/// A block mined, then a sync (a devnet mines only when sent something: a sync at the same
/// block reads no new state).
async fn sync_at_next_block(devnet: &Devnet, ops: &TestClient) {
    devnet.advance_time(1).await;
    sync(ops).await;
}

/// Swaps `sell` in steps until `done` holds of the pool's tick; the tick then.
async fn swap_until(devnet: &Devnet, sell: &str, done: impl Fn(i64) -> bool, step: &str) -> i64 {
    for _ in 0..400 {
        let pool = devnet
            .run("swap", &["--sell", sell, "--amount", step])
            .await;
        let tick = pool["tick"].as_i64().unwrap();
        if done(tick) {
            return tick;
        }
    }
    panic!("the pool's tick never got there selling {sell}");
}

async fn range_and_position_events(store: &[&str]) {
    let devnet = Devnet::up(3000).await;
    let wallet = devnet.funded_account(1).await;
    let (lower, upper) = devnet.range_around(600).await;
    let token = devnet
        .mint_to(&wallet, (lower, upper), None, "10000000000000000000")
        .await;
    let receiver = Receiver::start(Vec::new()).await;
    let mut args = vec![
        "--webhooks-http-loopback",
        "allow",
        "--webhook-retry-scale",
        "0.001",
    ];
    args.extend_from_slice(store);
    let server = local_api(&devnet, &devnet.rpc, &args).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);
    devnet.link_account(&alice, &wallet).await;
    let settings = json!({"types": TYPES, "approachPercent": 10, "feeThresholdUsd": null, "cooldownMinutes": 0});
    let body = settings.to_string();
    let headers = [("content-type", "application/json")];
    let reply = alice
        .send(Method::PUT, "/alerts", &headers, body.as_bytes())
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let hook = post(&alice, "/webhooks", &json!({"url": receiver.url})).await;
    assert_eq!(hook.status, StatusCode::CREATED, "{}", hook.text());
    let secret = text(&hook.json["secret"]);
    let listed = alice.list("limit=10").await.json;
    let id = text(&listed["data"][0]["id"]);

    // The state at the link tells nothing; nor a swing past the upper bound within its buffer
    // (60 ticks: the spacing) that is back inside by the next sync.
    sync_at_next_block(&devnet, &ops).await;
    let (weth_up, usdc_down) = if devnet.usdc_is_token0() {
        ("weth", "usdc")
    } else {
        ("usdc", "weth")
    };
    let buffer = 60;
    let past = swap_until(&devnet, weth_up, |t| t >= i64::from(upper) - 150, "1").await;
    assert!(past < i64::from(upper), "{past}");
    let past = swap_until(&devnet, weth_up, |t| t >= i64::from(upper), "0.1").await;
    assert!(
        past < i64::from(upper) + buffer,
        "a swing within the buffer: {past}"
    );
    sync_at_next_block(&devnet, &ops).await;
    swap_until(&devnet, usdc_down, |t| t < i64::from(upper) - 10, "300").await;
    sync_at_next_block(&devnet, &ops).await;
    sync_at_next_block(&devnet, &ops).await;
    assert_eq!(
        counts(&alice).await,
        expect(&[]),
        "{:?}",
        feed(&alice).await
    );

    // Out above, by more than the buffer: one exit, however many syncs see it.
    let out = swap_until(
        &devnet,
        weth_up,
        |t| t >= i64::from(upper) + buffer + 20,
        "1",
    )
    .await;
    sync_at_next_block(&devnet, &ops).await;
    sync_at_next_block(&devnet, &ops).await;
    assert_eq!(
        counts(&alice).await,
        expect(&[("position.range.exited", 1)])
    );
    let exited = &feed(&alice).await[0];
    assert_eq!(exited["positionId"], id.as_str());
    assert_eq!(exited["chain"], "ethereum");
    assert_eq!(exited["data"]["tick"], out, "{exited}");
    assert_eq!(exited["data"]["tickLower"], lower);
    assert_eq!(exited["data"]["tickUpper"], upper);
    assert_eq!(exited["data"]["side"], "above");
    assert!(exited["block"].as_u64().unwrap() > 0);

    // Back in: one entry. Out below and back: one exit and one entry more.
    let middle = (i64::from(lower) + i64::from(upper)) / 2;
    swap_until(&devnet, usdc_down, |t| t < middle + 200, "3000").await;
    sync_at_next_block(&devnet, &ops).await;
    sync_at_next_block(&devnet, &ops).await;
    let both = [("position.range.entered", 1), ("position.range.exited", 1)];
    assert_eq!(counts(&alice).await, expect(&both));
    swap_until(
        &devnet,
        usdc_down,
        |t| t < i64::from(lower) - buffer - 20,
        "3000",
    )
    .await;
    sync_at_next_block(&devnet, &ops).await;
    swap_until(&devnet, weth_up, |t| t >= middle - 200, "1").await;
    sync_at_next_block(&devnet, &ops).await;
    sync_at_next_block(&devnet, &ops).await;
    let range = [("position.range.entered", 2), ("position.range.exited", 2)];
    assert_eq!(counts(&alice).await, expect(&range));
    let sides: Vec<Value> = feed(&alice)
        .await
        .iter()
        .map(|e| e["data"]["side"].clone())
        .collect();
    assert_eq!(
        sides,
        [
            json!("above"),
            json!("inside"),
            json!("below"),
            json!("inside")
        ]
    );

    // Its own settings: fees past 1 cent unclaimed (the swings through its range earned more)
    // tell once, however many syncs see them.
    let own = json!({"types": TYPES, "approachPercent": 10, "feeThresholdUsd": "0.01", "cooldownMinutes": 0});
    let path = format!("/positions/{id}/alerts");
    let body = own.to_string();
    let reply = alice
        .send(Method::PUT, &path, &headers, body.as_bytes())
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    sync_at_next_block(&devnet, &ops).await;
    sync_at_next_block(&devnet, &ops).await;
    let with_fees = [
        ("position.fees.threshold", 1),
        ("position.range.entered", 2),
        ("position.range.exited", 2),
    ];
    assert_eq!(counts(&alice).await, expect(&with_fees));
    let told = feed(&alice).await.pop().unwrap();
    assert_eq!(told["data"]["thresholdUsd"], "0.01", "{told}");
    let usd: f64 = text(&told["data"]["feesUnclaimedUsd"]).parse().unwrap();
    // Nothing collected yet: the view's fees earned are its unclaimed ones.
    let view = alice.get(&id).await.json;
    assert!(usd > 0.01, "{told}");
    let earned = view["feesEarnedUsd"].as_f64().expect("fees earned");
    assert!((usd - earned).abs() <= 0.01, "{told} {view}");

    // What the wallet does to the position: each one event, once.
    devnet.deposit(&wallet, &token).await;
    sync(&ops).await;
    devnet.withdraw(&wallet, &token, Some("1000")).await;
    sync(&ops).await;
    devnet.collect(&wallet, &token).await;
    sync(&ops).await;
    let other = devnet.account(2).await;
    devnet.transfer(&wallet, &token, &other).await;
    sync(&ops).await;
    let all = [
        ("position.fees.collected", 1),
        ("position.fees.threshold", 1),
        ("position.liquidity.changed", 2),
        ("position.range.entered", 2),
        ("position.range.exited", 2),
        ("position.transferred", 1),
    ];
    assert_eq!(
        counts(&alice).await,
        expect(&all),
        "{:?}",
        feed(&alice).await
    );
    let events = feed(&alice).await;
    let changed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "position.liquidity.changed")
        .collect();
    assert_eq!(
        changed[1]["data"]["liquidityDelta"], "-1000",
        "{:?}",
        changed[1]
    );
    let sequences: Vec<u64> = events
        .iter()
        .map(|e| e["sequence"].as_u64().unwrap())
        .collect();
    assert!(sequences.windows(2).all(|w| w[0] < w[1]), "{sequences:?}");

    // The same blocks read again (every wallet read whole, then a sync): nothing new.
    let reply = ops
        .send(Method::POST, "/markets/sync?reconcile=all", &[], b"")
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    sync(&ops).await;
    assert_eq!(counts(&alice).await, expect(&all));

    // Each delivered once, signed; another user's feed has none of it.
    let got = receiver.wait_for(events.len()).await;
    let mut delivered: Vec<String> = got.iter().map(|r| r.id()).collect();
    delivered.sort();
    let mut ids: Vec<String> = events.iter().map(|e| text(&e["id"])).collect();
    ids.sort();
    assert_eq!(delivered, ids);
    assert!(got.iter().all(|r| r.signed_by(&secret)));
    let bob = user(&server, "bob").await;
    assert!(feed(&bob).await.is_empty());
    let only = format!("/events?positionId={id}&type=position.range.exited");
    let reply = alice.send(Method::GET, &only, &[], b"").await;
    assert_eq!(reply.json["total"], 2, "{}", reply.text());
}

on_both_stores!(range_and_position_events => range_and_position_events);

/// A devnet where a funded wallet holds one position 600 ticks either side of the price,
/// linked by alice on local-api (`store`) with the alert `settings` (`feeThresholdUsd` as
/// given), and a first synced state seen: the world of the scenarios below.
struct Watching {
    devnet: Devnet,
    wallet: String,
    token: String,
    upper: i32,
    alice: TestClient,
    ops: TestClient,
    _server: test_support::local_api::LocalApi,
}

async fn watching(store: &[&str], fee_threshold: Value) -> Watching {
    let devnet = Devnet::up(3000).await;
    let wallet = devnet.funded_account(1).await;
    let (lower, upper) = devnet.range_around(600).await;
    let token = devnet
        .mint_to(&wallet, (lower, upper), None, "10000000000000000000")
        .await;
    let server = local_api(&devnet, &devnet.rpc, store).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);
    devnet.link_account(&alice, &wallet).await;
    let settings = json!({"types": TYPES, "approachPercent": 10, "feeThresholdUsd": fee_threshold, "cooldownMinutes": 0});
    let headers = [("content-type", "application/json")];
    let body = settings.to_string();
    let reply = alice
        .send(Method::PUT, "/alerts", &headers, body.as_bytes())
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    sync_at_next_block(&devnet, &ops).await;
    Watching {
        devnet,
        wallet,
        token,
        upper,
        alice,
        ops,
        _server: server,
    }
}

/// Unlinking a wallet ends every watch of its positions: a deep exit after the unlink makes no
/// event in the user's feed; linked again, its position is watched anew and its return told.
async fn unlinked_wallets_are_not_watched(store: &[&str]) {
    // `_server` bound: local-api runs to the scenario's end.
    let Watching {
        devnet,
        wallet,
        upper,
        alice,
        ops,
        _server,
        ..
    } = watching(store, Value::Null).await;
    let path = format!("/wallets/ethereum/{wallet}");
    let reply = alice.send(Method::DELETE, &path, &[], b"").await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", reply.text());

    // Out, deep, while unlinked: nothing told.
    let (weth_up, usdc_down) = if devnet.usdc_is_token0() {
        ("weth", "usdc")
    } else {
        ("usdc", "weth")
    };
    swap_until(&devnet, weth_up, |t| t >= i64::from(upper) + 300, "1").await;
    sync_at_next_block(&devnet, &ops).await;
    sync_at_next_block(&devnet, &ops).await;
    assert_eq!(
        counts(&alice).await,
        expect(&[]),
        "{:?}",
        feed(&alice).await
    );

    // Linked again while out: watched anew, its return told.
    devnet.link_account(&alice, &wallet).await;
    sync_at_next_block(&devnet, &ops).await;
    swap_until(&devnet, usdc_down, |t| t < i64::from(upper) - 100, "300").await;
    sync_at_next_block(&devnet, &ops).await;
    sync_at_next_block(&devnet, &ops).await;
    assert_eq!(
        counts(&alice).await,
        expect(&[("position.range.entered", 1)]),
        "{:?}",
        feed(&alice).await
    );
}

on_both_stores!(unlinked_wallets => unlinked_wallets_are_not_watched);

/// Swaps both ways in the pool, `times` times: fees for the positions in range.
async fn churn(devnet: &Devnet, times: usize) {
    for _ in 0..times {
        devnet
            .run("swap", &["--sell", "weth", "--amount", "1"])
            .await;
        devnet
            .run("swap", &["--sell", "usdc", "--amount", "3000"])
            .await;
    }
}

/// A collect arms the fee threshold again at once: fees passing it again before any synced
/// state saw them under it are told again.
async fn a_collect_arms_the_fee_threshold_again(store: &[&str]) {
    let Watching {
        devnet,
        wallet,
        token,
        alice,
        ops,
        _server,
        ..
    } = watching(store, json!("0.01")).await;
    churn(&devnet, 3).await;
    sync_at_next_block(&devnet, &ops).await;
    sync_at_next_block(&devnet, &ops).await;
    let threshold =
        |counts: &BTreeMap<String, usize>| counts.get("position.fees.threshold").copied();
    assert_eq!(
        threshold(&counts(&alice).await),
        Some(1),
        "{:?}",
        feed(&alice).await
    );

    // Collected, and past the threshold again before the next sync.
    devnet.collect(&wallet, &token).await;
    churn(&devnet, 3).await;
    sync_at_next_block(&devnet, &ops).await;
    sync_at_next_block(&devnet, &ops).await;
    assert_eq!(
        threshold(&counts(&alice).await),
        Some(2),
        "{:?}",
        feed(&alice).await
    );
}

on_both_stores!(fee_threshold_after_a_collect => a_collect_arms_the_fee_threshold_again);

/// A reorg deeper than the confirmations replaces the block of a withdrawal that was told: the
/// next sync marks its event retracted in the feed and tells a `position.event.retracted`
/// naming it, signed, to the endpoint that wanted the withdrawal's type (only that type is
/// subscribed); the syncs after it tell nothing again.
async fn a_reorg_retracts_what_it_replaced(store: &[&str]) {
    let mut args = vec!["--webhooks-http-loopback", "allow"];
    args.extend_from_slice(store);
    let Watching {
        devnet,
        wallet,
        token,
        alice,
        ops,
        _server,
        ..
    } = watching(&args, Value::Null).await;
    let receiver = Receiver::start(Vec::new()).await;
    let subscribed = json!({"url": receiver.url, "eventTypes": ["position.liquidity.changed"]});
    let hook = post(&alice, "/webhooks", &subscribed).await;
    assert_eq!(hook.status, StatusCode::CREATED, "{}", hook.text());
    let secret = text(&hook.json["secret"]);

    let snapshot = devnet.rpc("evm_snapshot", json!([])).await;
    devnet.withdraw(&wallet, &token, Some("1000")).await;
    sync_at_next_block(&devnet, &ops).await;
    let told = feed(&alice).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["type"], "position.liquidity.changed");
    let withdrawal = text(&told[0]["id"]);
    assert_eq!(receiver.wait_for(1).await[0].id(), withdrawal);

    devnet.rpc("evm_revert", json!([snapshot])).await;
    for _ in 0..3 {
        devnet.rpc("evm_mine", json!([])).await;
    }
    sync(&ops).await;
    sync_at_next_block(&devnet, &ops).await;
    let events = feed(&alice).await;
    assert_eq!(events.len(), 2, "{events:?}");
    let (taken_back, retraction) = (&events[0], &events[1]);
    assert_eq!(retraction["type"], "position.event.retracted", "{events:?}");
    assert_eq!(text(&taken_back["id"]), withdrawal);
    assert_eq!(taken_back["retractedBy"], retraction["id"], "{events:?}");
    assert_eq!(text(&retraction["data"]["retractedEventId"]), withdrawal);
    assert_eq!(
        retraction["data"]["retractedType"],
        "position.liquidity.changed"
    );
    assert_eq!(
        retraction["data"]["transaction"],
        told[0]["data"]["transaction"]
    );
    assert_eq!(retraction["positionId"], told[0]["positionId"]);
    let got = receiver.wait_for(2).await;
    assert_eq!(got[1].id(), text(&retraction["id"]));
    assert_eq!(got[1].json()["data"]["retractedEventId"], withdrawal);
    assert!(got[1].signed_by(&secret));

    // Told once: later syncs find nothing replaced.
    sync_at_next_block(&devnet, &ops).await;
    sync_at_next_block(&devnet, &ops).await;
    assert_eq!(feed(&alice).await.len(), 2);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(receiver.got().len(), 2);
}

on_both_stores!(reorg_retractions => a_reorg_retracts_what_it_replaced);
