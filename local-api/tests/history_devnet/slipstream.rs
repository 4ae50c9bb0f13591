//! A Slipstream position staked in its gauge over time (issue 62, decision 71): minted, staked
//! in its pool's gauge, AERO notified, swaps, a harvest, an unstake; the syncs record the pool's
//! points with the gauge's `earned(staker, tokenId)` at each point's block. Each hourly point's
//! amounts and unclaimed fees are what the manager answers at its block (none while staked),
//! and its `rewardsUsd` is what the gauge paid to that block and owed there, at that block's
//! AERO price (the devnet's AERO/USDC pool, 0.8); its PnL counts them.

use super::charts::{assert_fits, found, get, sync_through, unix, HOUR};
use super::staked::history_shows;
use super::{number, position, protocol_order, units};
use alloy_primitives::U256;
use std::str::FromStr;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::world;

fn whole(units: U256) -> f64 {
    f64::from_str(&units.to_string()).unwrap() / 1e18
}

async fn slipstream_position_over_time(store_args: &[&str]) {
    let now = chrono::Utc::now().timestamp();
    let top = now - now.rem_euclid(HOUR);
    let devnet = Devnet::since(3000, top - 6 * HOUR).await;
    let slip = devnet.run("slipstream", &[]).await;
    let pool = text(&slip["generations"][1]["pool"]);
    let wallet = devnet.account(1).await;
    let catalog = devnet.slipstream_catalog(&slip);
    let server = world::local_api_on(&catalog, &devnet.rpc, store_args).await;
    let alice = world::user(&server, "alice").await;
    let ops = world::operator(&server).await;
    devnet.link_account(&alice, &wallet).await;

    devnet.next_block_at(top - 5 * HOUR + 100).await;
    let tick = devnet.run("pool", &[]).await["tick"].as_i64().unwrap();
    let lower = (tick.div_euclid(100) - 10) * 100;
    let (lower, upper) = (lower.to_string(), (lower + 2000).to_string());
    let amount = "1000000000000000000000";
    let mint = [
        "--lower",
        &lower,
        "--upper",
        &upper,
        "--amount0",
        amount,
        "--amount1",
        amount,
        "--recipient",
        &wallet,
        "--generation",
        "1",
    ];
    let token = text(&devnet.run("slip-mint", &mint).await["tokenId"]);
    found(&ops, &alice, &token).await;
    let id = text(&position(&alice, &token).await["id"]);
    devnet.next_block_at(top - 4 * HOUR + 100).await;
    let at = [
        "--account",
        wallet.as_str(),
        "--token-id",
        token.as_str(),
        "--generation",
        "1",
    ];
    let staked_at = devnet.run("slip-stake", &at).await["block"]
        .as_u64()
        .unwrap();
    history_shows(&ops, &alice, &id, "staked").await;
    devnet.next_block_at(top - 4 * HOUR + 200).await;
    devnet
        .run("slip-reward", &["--amount", "604800", "--generation", "1"])
        .await;
    devnet.next_block_at(top - 3 * HOUR + 100).await;
    for (sell, amount) in [("usdc", "30"), ("weth", "0.01")] {
        let args = ["--sell", sell, "--amount", amount, "--generation", "1"];
        devnet.run("slip-swap", &args).await;
    }
    sync_through(&ops, &alice, &pool, top - 3 * HOUR + 100).await;
    // What the gauge paid, by block, as the chain answered it.
    let aero = text(&slip["aero"]);
    let balance = || devnet.balance(&wallet, &aero);
    let mut paid: Vec<(u64, U256)> = Vec::new();
    for (time, command) in [
        (top - 2 * HOUR + 100, "slip-harvest"),
        (top - HOUR + 100, "slip-unstake"),
    ] {
        devnet.next_block_at(time).await;
        let before = balance().await;
        let block = devnet.run(command, &at).await["block"].as_u64().unwrap();
        paid.push((block, balance().await - before));
    }
    let unstaked_at = paid[1].0;
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
        let block = point["block"].as_u64().unwrap();
        let at_block = block.to_string();
        let quote = devnet
            .run(
                "slip-position-quote",
                &[
                    "--token-id",
                    &token,
                    "--generation",
                    "1",
                    "--block",
                    &at_block,
                ],
            )
            .await;
        for (t, side) in order.iter().enumerate() {
            let chain = |f: &str| U256::from_str(&text(&quote[format!("{f}{t}").as_str()]));
            assert_eq!(
                units(&point[side]["amount"]),
                chain("amount").unwrap(),
                "{point}"
            );
            assert_eq!(
                units(&point[side]["feesUnclaimed"]),
                chain("fees").unwrap(),
                "{point}"
            );
        }
        let pending = if (staked_at..unstaked_at).contains(&block) {
            let args = [
                "--account",
                wallet.as_str(),
                "--token-id",
                token.as_str(),
                "--generation",
                "1",
                "--block",
                at_block.as_str(),
            ];
            U256::from_str(&text(&devnet.run("slip-earned", &args).await["earned"])).unwrap()
        } else {
            U256::ZERO
        };
        let harvested: U256 = paid.iter().filter(|(b, _)| *b <= block).map(|p| p.1).sum();
        let expected = whole(harvested + pending) * 0.8;
        let rewards = number(&point["rewardsUsd"]);
        assert!((rewards - expected).abs() < 0.011, "{point}: {expected}");
        let pnl = number(&point["valueUsd"]) - number(&point["netDepositsUsd"]) + rewards;
        assert!((number(&point["pnlUsd"]) - pnl).abs() < 0.021, "{point}");
        rewarded.push(rewards);
    }
    // Nothing before the stake nor at the block AERO was notified in (the state at the second
    // boundary: no block between); owed while staked, then harvested, then paid at the unstake.
    assert_eq!(rewarded[..2], [0.0, 0.0], "{chart}");
    let growing = rewarded[2] > 0.0 && rewarded[3] > rewarded[2] && rewarded[4] > rewarded[3];
    assert!(growing, "{chart}");
    drop(server);
}

test_support::on_both_stores!(a_slipstream_position_over_time => slipstream_position_over_time);
