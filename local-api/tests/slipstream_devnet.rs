//! Aerodrome Slipstream on the devnet, its real contracts compiled from npm sources
//! (`devnet/slipstream.mjs`): both generations, each with its own position manager, pool of
//! tick spacing 100 and gauge paying AERO. A wallet holding one position on each generation
//! (both token id 1), the second staked in its gauge, is read to the unit: amounts what the
//! manager's `decreaseLiquidity` would pay, fees what `collect` would (none while staked),
//! `staked` with the gauge and `earned` at the read's block; `GET /pools` shows each pool's tick
//! spacing and current fee; the histories are in order (the transfer into the gauge a stake, out
//! of it an unstake, never a disposal; each harvest the AERO the chain paid); rewards priced by
//! the devnet's AERO/USDC pool count in the PnL; the export has each harvest as AERO income; the
//! unstake and a range exit are told as alerts; a position sent to a stranger closes. On memory
//! and on DynamoDB (moto).

/// Acting on them through the API.
#[path = "slipstream_devnet/actions.rs"]
mod actions;

use alloy_primitives::U256;
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use std::str::FromStr;
use test_support::client::TestClient;
use test_support::devnet::{units, Devnet};
use test_support::json::text;
use test_support::on_both_stores;
use test_support::world::{local_api_on, operator, sync, user};

const AMOUNT: &str = "1000000000000000000000";
/// The wallet's position on each generation: the same id on both managers (the devnet took
/// each manager's first id for its own positions).
const TOKEN: &str = "2";

/// The caller's positions.
async fn positions(client: &TestClient) -> Vec<Value> {
    let reply = client.list("limit=100").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json["data"].as_array().unwrap().clone()
}

async fn get(client: &TestClient, id: &str) -> Value {
    let reply = client.get(id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json
}

/// The view against the chain at its read block: liquidity, amounts (what decreasing all would
/// pay) and fees with principal not collected (what collect would pay).
async fn assert_as_chain(devnet: &Devnet, view: &Value, generation: &str) -> Value {
    let block = view["readHeight"].as_u64().unwrap().to_string();
    let args = [
        "--token-id",
        TOKEN,
        "--generation",
        generation,
        "--block",
        &block,
    ];
    let chain = devnet.run("slip-position-quote", &args).await;
    let word = |name: &str| U256::from_str(&text(&chain[name])).unwrap();
    assert_eq!(
        text(&view["liquidity"]),
        text(&chain["liquidity"]),
        "{view}"
    );
    assert_eq!(
        devnet.protocol_order(view, "amount"),
        [word("amount0"), word("amount1")],
        "{view}"
    );
    let [f, p] = ["feesUnclaimed", "uncollectedPrincipal"].map(|f| devnet.protocol_order(view, f));
    assert_eq!(
        [f[0] + p[0], f[1] + p[1]],
        [word("fees0"), word("fees1")],
        "{view}"
    );
    chain
}

async fn slipstream_positions(store: &[&str]) {
    let devnet = Devnet::up(3000).await;
    let slip = devnet.run("slipstream", &[]).await;
    let generations = slip["generations"].as_array().unwrap().clone();
    let wallet = devnet.account(1).await;
    let tick = devnet.run("pool", &[]).await["tick"].as_i64().unwrap();
    let lower = (tick.div_euclid(100) - 10) * 100;
    let (lower, upper) = (lower.to_string(), (lower + 2000).to_string());
    for generation in ["0", "1"] {
        let args = [
            "--lower",
            &lower,
            "--upper",
            &upper,
            "--amount0",
            AMOUNT,
            "--amount1",
            AMOUNT,
            "--recipient",
            &wallet,
            "--generation",
            generation,
        ];
        let minted = devnet.run("slip-mint", &args).await;
        // Token ids repeat between the managers: a position is keyed by its manager.
        assert_eq!(text(&minted["tokenId"]), TOKEN, "{minted}");
    }
    let staker = [
        "--account",
        &wallet,
        "--token-id",
        TOKEN,
        "--generation",
        "1",
    ];
    devnet.run("slip-stake", &staker).await;
    devnet
        .run("slip-reward", &["--amount", "604800", "--generation", "1"])
        .await;
    for generation in ["0", "1"] {
        // About 30 USD each way: the pools hold only these positions, so the price stays in
        // their range.
        for (sell, amount) in [("usdc", "30"), ("weth", "0.01")] {
            let args = [
                "--sell",
                sell,
                "--amount",
                amount,
                "--generation",
                generation,
            ];
            devnet.run("slip-swap", &args).await;
        }
    }
    devnet.advance_time(3_600).await;

    let catalog = devnet.slipstream_catalog(&slip);
    let server = local_api_on(&catalog, &devnet.rpc, store).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);
    devnet.link_account(&alice, &wallet).await;
    let settings = json!({
        "types": ["position.range.exited", "position.staked", "position.unstaked"],
        "approachPercent": 10, "feeThresholdUsd": null, "cooldownMinutes": 0,
    });
    let headers = [("content-type", "application/json")];
    let reply = alice
        .send(
            Method::PUT,
            "/alerts",
            &headers,
            settings.to_string().as_bytes(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    sync(&ops).await;

    // GET /pools: each Slipstream pool with its tick spacing and its current fee, read with its
    // state (the catalog gives none).
    let pools = alice.send(Method::GET, "/pools", &[], b"").await;
    assert_eq!(pools.status, StatusCode::OK, "{}", pools.text());
    for g in &generations {
        let listed = pools.json["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| text(&p["pool"]).eq_ignore_ascii_case(&text(&g["pool"])))
            .unwrap_or_else(|| panic!("{} listed: {}", g["pool"], pools.json))
            .clone();
        assert_eq!(listed["protocol"], "aerodrome-slipstream", "{listed}");
        assert_eq!(listed["tickSpacing"], 100, "{listed}");
        assert!(listed["feeTier"].as_u64().unwrap() > 0, "{listed}");
    }

    let listed = positions(&alice).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    // Each generation's position is on its own pool.
    let by_manager = |generation: usize| {
        let pool = text(&generations[generation]["pool"]);
        listed
            .iter()
            .find(|p| text(&p["pool"]).eq_ignore_ascii_case(&pool))
            .unwrap_or_else(|| panic!("generation {generation}: {listed:?}"))
            .clone()
    };
    let (held, staked) = (by_manager(0), by_manager(1));
    for view in [&held, &staked] {
        assert_eq!(view["protocol"], "aerodrome-slipstream", "{view}");
        assert_eq!(text(&view["tokenId"]), TOKEN, "{view}");
        assert_eq!(view["status"], "active", "{view}");
    }
    let (held_id, staked_id) = (text(&held["id"]), text(&staked["id"]));

    // The held one: every figure the chain's, its fees by fee growth what collect pays.
    let held = get(&alice, &held_id).await;
    assert!(held.get("staked").is_none(), "{held}");
    let chain = assert_as_chain(&devnet, &held, "0").await;
    assert_ne!(text(&chain["fees0"]), "0", "{chain}");
    assert_eq!(alice.history_kinds(&held_id).await, ["mint", "deposit"]);

    // The staked one: in the gauge, its AERO pending what `earned` answers at the read's
    // block, no swap fees while staked.
    let staked = get(&alice, &staked_id).await;
    let gauge = text(&generations[1]["gauge"]);
    assert_eq!(
        text(&staked["staked"]["contract"]).to_lowercase(),
        gauge.to_lowercase(),
        "{staked}"
    );
    assert_eq!(text(&staked["staked"]["rewardToken"]["symbol"]), "AERO");
    let block = staked["staked"]["rewardsPendingBlock"]
        .as_u64()
        .unwrap()
        .to_string();
    let earned = devnet
        .run(
            "slip-earned",
            &[
                "--account",
                &wallet,
                "--token-id",
                TOKEN,
                "--generation",
                "1",
                "--block",
                &block,
            ],
        )
        .await;
    assert_eq!(staked["inRange"], true, "{staked}");
    assert_ne!(text(&earned["earned"]), "0", "{earned}");
    assert_eq!(
        units(&staked["staked"]["rewardsPending"]),
        text(&earned["earned"]),
        "{staked}"
    );
    // AERO priced by the AERO/USDC pool (0.8 USDC): the rewards count in the PnL (decision 60).
    let earned_whole = f64::from_str(&text(&earned["earned"])).unwrap() / 1e18;
    let pending_usd = staked["staked"]["rewardsPendingUsd"].as_f64().unwrap();
    assert!((pending_usd - earned_whole * 0.8).abs() <= 0.01, "{staked}");
    let pnl = staked["valueUsd"].as_f64().unwrap() - staked["costBasisUsd"].as_f64().unwrap()
        + pending_usd;
    assert!(
        (staked["pnlUsd"].as_f64().unwrap() - pnl).abs() <= 0.03,
        "{staked}"
    );
    // The portfolio: its positions, with the staked one's rewards.
    let portfolio = alice.portfolio().await.json;
    assert_eq!(portfolio["positions"], 2, "{portfolio}");
    let rewards = portfolio["totalRewardsUsd"].as_f64().unwrap();
    assert!((rewards - pending_usd).abs() <= 0.01, "{portfolio}");
    let listed = positions(&alice).await;
    let sum = |field: &str| {
        listed
            .iter()
            .map(|p| p[field].as_f64().unwrap())
            .sum::<f64>()
    };
    let total = |field: &str| portfolio[field].as_f64().unwrap();
    assert!(
        (total("totalValueUsd") - sum("valueUsd")).abs() <= 0.02,
        "{portfolio}"
    );
    assert!(
        (total("totalPnlUsd") - sum("pnlUsd")).abs() <= 0.03,
        "{portfolio}"
    );
    let chain = assert_as_chain(&devnet, &staked, "1").await;
    assert_eq!(
        [text(&chain["fees0"]), text(&chain["fees1"])],
        ["0", "0"],
        "{chain}"
    );
    // The gauge's deposit collects what was owed to the owner first (its `Collect`).
    assert_eq!(
        alice.history_kinds(&staked_id).await,
        ["mint", "deposit", "collect", "staked"]
    );

    // A harvest (getReward(tokenId)): its ClaimRewards, which names no token id, is the
    // position's by the transaction's call; the AERO paid is what the history says.
    let aero = text(&slip["aero"]);
    let balance = || devnet.balance(&wallet, &aero);
    let before = balance().await;
    devnet.run("slip-harvest", &staker).await;
    let harvested = balance().await - before;
    assert!(harvested > U256::ZERO);
    sync(&ops).await;
    let view = get(&alice, &staked_id).await;
    assert_eq!(
        units(&view["staked"]["rewardsHarvested"]),
        harvested.to_string(),
        "{view}"
    );
    assert_eq!(
        alice.history_kinds(&staked_id).await,
        ["mint", "deposit", "collect", "staked", "harvest"]
    );

    // Unstaked (the gauge returns the NFT and pays its AERO): the wallet's again, its count on.
    devnet.advance_time(600).await;
    let before = balance().await;
    devnet.run("slip-unstake", &staker).await;
    let paid_at_unstake = balance().await - before;
    assert!(paid_at_unstake > U256::ZERO);
    sync(&ops).await;
    let path = format!("/positions/{staked_id}/history?limit=100");
    let history = alice.send(Method::GET, &path, &[], b"").await.json;
    let rewards: Vec<U256> = history["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "harvest")
        .map(|e| U256::from_str(&text(&e["reward"])).unwrap())
        .collect();
    assert_eq!(rewards, [harvested, paid_at_unstake], "{history}");
    let unstaked = get(&alice, &staked_id).await;
    assert_eq!(unstaked["status"], "active", "{unstaked}");
    assert!(unstaked.get("staked").is_none(), "{unstaked}");
    assert_as_chain(&devnet, &unstaked, "1").await;
    let kinds = alice.history_kinds(&staked_id).await;
    assert_eq!(
        kinds[..4],
        ["mint", "deposit", "collect", "staked"],
        "{kinds:?}"
    );
    assert!(kinds.contains(&"unstaked".to_string()), "{kinds:?}");

    // The export: each harvest (the getReward's and the unstake's) a row of AERO income.
    let reply = alice
        .send(Method::GET, "/history/export?format=koinly", &[], b"")
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let csv = reply.text();
    let incomes: Vec<&str> = csv.lines().filter(|l| l.contains(",AERO,")).collect();
    assert_eq!(incomes.len(), 2, "{csv}");
    let scale = U256::from(10u64).pow(U256::from(18u8));
    for (line, paid) in incomes.iter().zip([harvested, paid_at_unstake]) {
        // Whole AERO, exactly: the integer part, then the fraction without trailing zeros.
        let fraction = format!("{:0>18}", (paid % scale).to_string());
        let whole = format!("{}.{}", paid / scale, fraction.trim_end_matches('0'));
        assert!(line.contains("Reward"), "{line}");
        assert!(line.contains(&format!(",{whole},AERO,")), "{line}: {whole}");
    }

    // Alerts: the unstake told; the held position's pool pushed out of its range, told once.
    let sell = if devnet.usdc_is_token0() {
        "weth"
    } else {
        "usdc"
    };
    let args = ["--sell", sell, "--amount", "20", "--generation", "0"];
    devnet.run("slip-swap", &args).await;
    for _ in 0..2 {
        devnet.advance_time(1).await;
        sync(&ops).await;
    }
    let reply = alice.send(Method::GET, "/events?limit=100", &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let told: Vec<(String, String)> = reply.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (text(&e["type"]), text(&e["positionId"])))
        .collect();
    let exited = ("position.range.exited".to_string(), held_id.clone());
    let unstaked = ("position.unstaked".to_string(), staked_id.clone());
    assert_eq!(told.iter().filter(|t| **t == exited).count(), 1, "{told:?}");
    assert_eq!(
        told.iter().filter(|t| **t == unstaked).count(),
        1,
        "{told:?}"
    );

    // Sent to a stranger: the position is no longer the wallet's.
    let stranger = devnet.account(2).await;
    let args = [
        "--account",
        &wallet,
        "--to",
        &stranger,
        "--token-id",
        TOKEN,
        "--generation",
        "0",
    ];
    devnet.run("slip-transfer", &args).await;
    sync(&ops).await;
    let gone = get(&alice, &held_id).await;
    assert_eq!(gone["status"], "closed", "{gone}");
    let kinds = alice.history_kinds(&held_id).await;
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("transfer-out"),
        "{kinds:?}"
    );
}

on_both_stores!(slipstream => slipstream_positions);
use actions::acting_on_slipstream_positions;
on_both_stores!(slipstream_actions => acting_on_slipstream_positions);
