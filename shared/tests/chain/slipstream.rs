//! Aerodrome Slipstream as its real contracts behave (issue 62, the groundwork): the devnet
//! compiles its sources from npm (solc 0.7.6) and deploys two generations, each a factory with
//! its own position manager and gauges, on the devnet's tokens. What the service's reads will
//! rest on is checked here on the contracts themselves: `positions(tokenId)`'s fifth word is the
//! pool's tick spacing and the pool is the factory's `getPool(token0, token1, tickSpacing)`;
//! token ids repeat between the two managers; the pool's `slot0` has six words (no
//! `feeProtocol`); staking moves the NFT into the gauge, which lists it for its owner and
//! streams AERO to it (`earned`), paid by `getReward(tokenId)`.

use serde_json::Value;
use shared::math::U256;
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
    assert_eq!(ids, ["1", "1"]);
    for (g, generation) in generations.iter().enumerate() {
        let g = g.to_string();
        let quote = devnet
            .run("slip-quote", &["--generation", &g, "--token-id", "1"])
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
    let stake = ["--generation", "1", "--account", &wallet, "--token-id", "1"];
    devnet.run("slip-stake", &stake).await;
    let quote = devnet
        .run("slip-quote", &["--generation", "1", "--token-id", "1"])
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
    assert_eq!(earned["stakedValues"], serde_json::json!(["1"]), "{earned}");
    let pending = big(&earned["earned"]);
    assert!(pending > U256::ZERO, "{earned}");
    let aero = text(&deployed["aero"]);
    let balance = || async {
        let read = devnet
            .run("allowance", &["--account", &wallet, "--token", &aero])
            .await;
        big(&read["balance"])
    };
    let before = balance().await;
    devnet.run("slip-harvest", &stake).await;
    let paid = balance().await - before;
    // Rewards stream every second: the harvest, a block later, pays at least what was pending.
    assert!(paid >= pending, "{paid} < {pending}");
    println!(
        "figures: a Slipstream gauge paid {paid} AERO units ({pending} pending the block before)"
    );
}
