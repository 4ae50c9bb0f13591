//! A staked PancakeSwap position over time (issue 50, decision 66): minted, staked in the farm
//! (MasterChefV3), swaps, a harvest, an unstake; the syncs record the pool's points with the
//! farm's pending reward of the staked position at each point's block. Each hourly point's
//! amounts and unclaimed fees are what the manager answers at its block, and its `rewardsUsd` is
//! what the farm paid to that block (the harvest's and the unstake's rewards, as the chain
//! answered them) and owed there (`pendingCake` at the block), at that block's CAKE price; its
//! PnL counts them.

use super::charts::{assert_fits, found, get, sync_through, unix, HOUR};
use super::{number, position, protocol_order, units};
use alloy_primitives::U256;
use lambda_http::http::{Method, StatusCode};
use std::str::FromStr;
use test_support::client::TestClient;
use test_support::devnet::{Devnet, PANCAKE};
use test_support::json::text;
use test_support::world;

/// Syncs until the position's history shows `kind` (its events are read as the syncs follow
/// the chain; the series follows a stake from its history's).
pub(super) async fn history_shows(ops: &TestClient, alice: &TestClient, id: &str, kind: &str) {
    for _ in 0..60 {
        let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
        assert_eq!(report.status, StatusCode::OK, "{}", report.text());
        let path = format!("/positions/{id}/history?limit=100");
        let history = get(alice, &path).await;
        let kinds = history["data"].as_array().unwrap();
        if kinds.iter().any(|e| e["kind"] == kind) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("the history of {id} never showed {kind}");
}

/// CAKE's USD price at `block`: the CAKE/USDC pool's (USDC at a dollar, both 18 decimals).
async fn cake_usd(devnet: &Devnet, block: u64) -> f64 {
    let pancake = &devnet.state["pancake"];
    let address = text(&pancake["cakePool"]);
    let mut args = vec!["--address", address.as_str()];
    let block = block.to_string();
    args.extend(["--block", block.as_str()]);
    args.extend(PANCAKE);
    let pool = devnet.run("pool", &args).await;
    let sqrt = f64::from_str(&text(&pool["sqrtPriceX96"])).unwrap() / 2f64.powi(96);
    let usdc_per_cake = if pancake["cakeIsToken0"].as_bool().unwrap() {
        sqrt * sqrt
    } else {
        1.0 / (sqrt * sqrt)
    };
    assert!((usdc_per_cake - 2.0).abs() < 0.01, "{pool}");
    usdc_per_cake
}

fn whole(units: U256) -> f64 {
    f64::from_str(&units.to_string()).unwrap() / 1e18
}

async fn staked_position_over_time(store_args: &[&str]) {
    let now = chrono::Utc::now().timestamp();
    let top = now - now.rem_euclid(HOUR);
    let devnet = Devnet::pancake_since(3000, top - 6 * HOUR).await;
    let wallet = devnet.account(1).await;
    let pool = text(&devnet.state["pancake"]["pool"]);
    let server = world::local_api(&devnet, &devnet.rpc, store_args).await;
    let alice = world::user(&server, "alice").await;
    let ops = world::operator(&server).await;
    devnet.link_account(&alice, &wallet).await;

    devnet.next_block_at(top - 5 * HOUR + 100).await;
    let range = devnet.pancake_range_around(2000).await;
    let token = devnet
        .mint_pancake_to(&wallet, range, "1000000000000000000000")
        .await;
    found(&ops, &alice, &token).await;
    let id = text(&position(&alice, &token).await["id"]);
    devnet.next_block_at(top - 4 * HOUR + 100).await;
    let at = ["--account", wallet.as_str(), "--token-id", token.as_str()];
    devnet.run("stake", &at).await;
    history_shows(&ops, &alice, &id, "staked").await;
    devnet.next_block_at(top - 3 * HOUR + 100).await;
    for sell in ["usdc", "weth"] {
        let mut args = vec!["--sell", sell, "--amount", "20"];
        args.extend(PANCAKE);
        devnet.run("swap", &args).await;
    }
    sync_through(&ops, &alice, &pool, top - 3 * HOUR + 100).await;
    // What the farm paid, by block, as the chain answered it.
    let mut paid: Vec<(u64, U256)> = Vec::new();
    devnet.next_block_at(top - 2 * HOUR + 100).await;
    let harvest = devnet.run("harvest", &at).await;
    devnet.next_block_at(top - HOUR + 100).await;
    let unstake = devnet.run("unstake", &at).await;
    for reply in [&harvest, &unstake] {
        let reward = U256::from_str(&text(&reply["reward"])).unwrap();
        paid.push((reply["block"].as_u64().unwrap(), reward));
    }
    devnet.mine_at(top).await;
    sync_through(&ops, &alice, &pool, top).await;
    history_shows(&ops, &alice, &id, "unstaked").await;

    let view = position(&alice, &token).await;
    let chart = get(&alice, &format!("/positions/{id}/chart?period=7d")).await;
    assert_fits("PositionChart", &chart);
    let points = chart["points"].as_array().unwrap();
    let times: Vec<i64> = points.iter().map(|p| unix(&p["time"])).collect();
    assert_eq!(
        times,
        (0..5).map(|h| top - (4 - h) * HOUR).collect::<Vec<_>>()
    );
    let order = protocol_order(&view, &devnet);
    let mut rewarded = Vec::new();
    for point in points {
        assert_eq!(point["exact"], true, "{point}");
        let block = point["block"].as_u64().unwrap().to_string();
        let mut args = vec!["--token-id", token.as_str(), "--block", block.as_str()];
        args.extend(PANCAKE);
        let quote = devnet.run("position-quote", &args).await;
        for (t, side) in order.iter().enumerate() {
            let chain = |f: &str| U256::from_str(&text(&quote[format!("{f}{t}").as_str()]));
            assert_eq!(units(&point[side]["amount"]), chain("amount").unwrap());
            assert_eq!(units(&point[side]["feesUnclaimed"]), chain("fees").unwrap());
        }
        let farm = devnet
            .run("staking-quote", &["--token-id", &token, "--block", &block])
            .await;
        let block = point["block"].as_u64().unwrap();
        let harvested: U256 = paid.iter().filter(|(b, _)| *b <= block).map(|p| p.1).sum();
        let pending = U256::from_str(&text(&farm["pendingCake"])).unwrap();
        let expected = whole(harvested + pending) * cake_usd(&devnet, block).await;
        let rewards = number(&point["rewardsUsd"]);
        assert!((rewards - expected).abs() < 0.011, "{point}: {expected}");
        let pnl = number(&point["valueUsd"]) - number(&point["netDepositsUsd"]) + rewards;
        assert!((number(&point["pnlUsd"]) - pnl).abs() < 0.021, "{point}");
        rewarded.push(rewards);
    }
    // Nothing before the stake nor at its block; owed while staked, then harvested, then paid
    // at the unstake.
    assert_eq!(rewarded[..2], [0.0, 0.0], "{chart}");
    let growing = rewarded[2] > 0.0 && rewarded[3] > rewarded[2] && rewarded[4] > rewarded[3];
    assert!(growing, "{chart}");
    let portfolio = get(&alice, "/portfolio/chart?period=7d").await;
    let last = portfolio["points"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        (number(&last["rewardsUsd"]) - rewarded[4]).abs() < 0.011,
        "{last}"
    );
    drop(server);
}

test_support::on_both_stores!(a_staked_position_over_time => staked_position_over_time);
