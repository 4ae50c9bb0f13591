//! Aerodrome Slipstream as its real contracts behave (issue 62, the groundwork): the devnet
//! compiles its sources from npm (solc 0.7.6) and deploys two generations, each a factory with
//! its own position manager and gauges, on the devnet's tokens. What the service's reads will
//! rest on is checked here on the contracts themselves: `positions(tokenId)`'s fifth word is the
//! pool's tick spacing and the pool is the factory's `getPool(token0, token1, tickSpacing)`;
//! token ids repeat between the two managers; the pool's `slot0` has six words (no
//! `feeProtocol`); staking moves the NFT into the gauge, which lists it for its owner and
//! streams AERO to it (`earned`), paid by `getReward(tokenId)`.

use serde_json::{json, Value};
use shared::catalog::Deployment;
use shared::chain::refresh::confirmed_block;
use shared::chain::wallets::{read_wallet, GaugedPool};
use shared::chain::{RpcClient, RPC_TIMEOUT};
use shared::math::U256;
use shared::model::{Chain, Protocol};
use std::str::FromStr;
use test_support::devnet::Devnet;
use test_support::json::text;

fn big(value: &Value) -> U256 {
    U256::from_str(&text(value)).unwrap()
}

#[tokio::test]
async fn slipstreams_real_contracts_behave_as_its_reads_will_assume() {
    let devnet = Devnet::up(3000).await;
    let wallet = devnet.funded_account(1).await;
    let deployed = devnet.run("slipstream", &[]).await;
    let generations = deployed["generations"].as_array().unwrap().clone();
    assert_eq!(generations.len(), 2, "{deployed}");
    let tick = devnet.run("pool", &[]).await["tick"].as_i64().unwrap();
    let lower = (tick - 2_000).div_euclid(100) * 100;
    let (l, u) = (lower.to_string(), (lower + 4_000).to_string());
    let amount = "1000000000000000000000";
    let mut ids = Vec::new();
    for g in ["0", "1"] {
        let args = [
            "--generation",
            g,
            "--lower",
            &l,
            "--upper",
            &u,
            "--amount0",
            amount,
            "--amount1",
            amount,
            "--recipient",
            &wallet,
        ];
        ids.push(text(&devnet.run("slip-mint", &args).await["tokenId"]));
    }
    // Two managers, one numbering each: the same id names two positions.
    assert_eq!(ids[0], ids[1]);
    let id = ids[0].as_str();
    for (g, generation) in generations.iter().enumerate() {
        let g = g.to_string();
        let quote = devnet
            .run("slip-quote", &["--generation", &g, "--token-id", id])
            .await;
        let words = quote["words"].as_array().unwrap();
        // nonce, operator, token0, token1, tickSpacing, tickLower, tickUpper, liquidity, …
        assert_eq!(big(&words[4]), U256::from(100u8), "{quote}");
        assert_eq!(quote["pool"], generation["pool"], "{quote}");
        assert_eq!(
            quote["owner"].as_str().unwrap().to_lowercase(),
            wallet.to_lowercase()
        );
        assert_eq!(quote["slot0Words"], 6, "{quote}");
        // The swap fee is the pool's own (its fee module's or the tick spacing's default).
        assert!(big(&quote["fee"]) > U256::ZERO, "{quote}");
    }

    // Staked in the second generation's gauge: the gauge holds the NFT and lists it for its
    // owner; AERO streamed to the gauge accrues to it and is paid by getReward(tokenId).
    let stake = ["--generation", "1", "--account", &wallet, "--token-id", id];
    devnet.run("slip-stake", &stake).await;
    let quote = devnet
        .run("slip-quote", &["--generation", "1", "--token-id", id])
        .await;
    assert_eq!(quote["owner"], generations[1]["gauge"], "{quote}");
    assert_eq!(quote["staked"], true, "{quote}");
    devnet
        .run("slip-reward", &["--generation", "1", "--amount", "604800"])
        .await;
    devnet.advance_time(3_600).await;
    for sell in ["usdc", "weth"] {
        let args = ["--generation", "1", "--sell", sell, "--amount", "1000"];
        devnet.run("slip-swap", &args).await;
    }
    let earned = devnet.run("slip-earned", &stake).await;
    assert_eq!(earned["stakedValues"], serde_json::json!([id]), "{earned}");
    let pending = big(&earned["earned"]);
    assert!(pending > U256::ZERO, "{earned}");
    wallet_read_finds_both(&devnet, &deployed, &wallet, pending).await;
    let aero = text(&deployed["aero"]);
    let balance = || devnet.balance(&wallet, &aero);
    let before = balance().await;
    devnet.run("slip-harvest", &stake).await;
    let paid = balance().await - before;
    // Rewards stream every second: the harvest, a block later, pays at least what was pending.
    assert!(paid >= pending, "{paid} < {pending}");
    println!(
        "figures: a Slipstream gauge paid {paid} AERO units ({pending} pending the block before)"
    );
}

/// The service's wallet read on both generations, through a proxy counting its requests: the
/// held position and the staked one (found in its pool's gauge, its `earned` what the gauge
/// answers at the read's block, no fees while staked). Prints what the gauges add.
async fn wallet_read_finds_both(devnet: &Devnet, deployed: &Value, wallet: &str, pending: U256) {
    let node = test_support::rpc_stub::RpcStub::proxy(&devnet.rpc, |_| None).await;
    let rpc = RpcClient::new(&node.url, RPC_TIMEOUT).unwrap();
    let chain_id = devnet.rpc("eth_chainId", json!([])).await;
    let chain_id = u64::from_str_radix(text(&chain_id).trim_start_matches("0x"), 16).unwrap();
    let generations = deployed["generations"].as_array().unwrap();
    let deployments: Vec<Deployment> = generations
        .iter()
        .map(|g| {
            let contracts = (text(&g["factory"]), text(&g["manager"]));
            let on = (Chain::Ethereum, Protocol::AerodromeSlipstream);
            Deployment::v3(on, chain_id, (&contracts.0, &contracts.1))
        })
        .collect();
    let deployments: Vec<&Deployment> = deployments.iter().collect();
    let pools: Vec<String> = generations.iter().map(|g| text(&g["pool"])).collect();
    let gauges: Vec<String> = generations.iter().map(|g| text(&g["gauge"])).collect();
    // The first pool's gauge asked of the pool, the second's as a synced state names it; then
    // both as their states name them.
    let gauged = |g: usize, known: bool| GaugedPool {
        pool: &pools[g],
        gauge: known.then_some(gauges[g].as_str()),
    };
    let asked = [gauged(0, false), gauged(1, true)];
    let known = [gauged(0, true), gauged(1, true)];
    let block = confirmed_block(&rpc, 0).await.unwrap();
    let mut counts = Vec::new();
    for gauge_pools in [&[][..], &asked[..], &known[..]] {
        let before = node.requests();
        let read = read_wallet(&rpc, &deployments, gauge_pools, wallet, &block)
            .await
            .unwrap();
        counts.push(node.requests() - before);
        assert!(read.failed.is_empty(), "{:?}", read.failed);
        let staked: Vec<_> = read
            .positions
            .iter()
            .filter(|p| p.staked.is_some())
            .collect();
        if gauge_pools.is_empty() {
            // Without its gauge the staked one is not the wallet's to read.
            assert_eq!((read.positions.len(), staked.len()), (1, 0));
            continue;
        }
        assert_eq!((read.positions.len(), staked.len()), (2, 1));
        let stake = staked[0].staked.as_ref().unwrap();
        assert_eq!(
            stake.farm.to_lowercase(),
            text(&generations[1]["gauge"]).to_lowercase()
        );
        assert_eq!(stake.reward_token.symbol, "AERO");
        assert_eq!(stake.rewards_pending, pending);
        assert_eq!(staked[0].fees, [0, 0]);
        assert_eq!(staked[0].tick_spacing, 100);
        assert!(read
            .positions
            .iter()
            .all(|p| p.fee > 0 && p.protocol == Protocol::AerodromeSlipstream));
    }
    println!(
        "figures: a wallet read of two Slipstream managers: {} requests; with two pools' gauges: {} (one asked of its pool), {} (both known from their states)",
        counts[0], counts[1], counts[2]
    );
}
