//! Nothing hidden by one failure (decision 63), on the devnet with Uniswap v3 and PancakeSwap v3
//! beside it: while PancakeSwap's position manager reverts every call (a node in front of the
//! devnet answers them so), the wallet's Uniswap position is read, listed and followed as usual,
//! its PancakeSwap position keeps its last read marked stale with the reason, the wallet names
//! the deployment in its errors, and once the manager answers again the syncs' retry reads it
//! back. A farm's withdrawal to another address closes the staker's position and opens the
//! receiver's count. On memory and on DynamoDB (moto).

use super::{get, number, positions};
use alloy_primitives::U256;
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::on_both_stores;
use test_support::rpc_stub::RpcStub;
use test_support::world::{local_api, operator, sync, user};

async fn wallet_view(client: &test_support::client::TestClient) -> Value {
    let reply = client.send(Method::GET, "/wallets", &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json["data"][0].clone()
}

pub async fn one_failing_deployment_hides_nothing(store: &[&str]) {
    let devnet = Devnet::with_pancake(3000).await;
    let wallet = devnet.account(1).await;
    let amount = "1000000000000000000000";
    let uniswap_range = devnet.range_around(3000).await;
    let uniswap = devnet.mint_to(&wallet, uniswap_range, None, amount).await;
    let range = devnet.pancake_range_around(2000).await;
    let pancake = devnet.mint_pancake_to(&wallet, range, amount).await;
    let manager = text(&devnet.state["pancake"]["manager"]).to_lowercase();

    // A node that reverts every call to PancakeSwap's manager while `broken` is set.
    let broken = Arc::new(AtomicBool::new(true));
    let reverting = broken.clone();
    let node = RpcStub::proxy(&devnet.rpc, move |call| {
        let to = call["params"][0]["to"].as_str().unwrap_or_default();
        let refused = call["method"] == "eth_call"
            && to.eq_ignore_ascii_case(&manager)
            && reverting.load(Ordering::SeqCst);
        refused.then(|| Err(json!({"code": 3, "message": "execution reverted"})))
    })
    .await;
    let server = local_api(&devnet, &node.url, store).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);

    // Linked while PancakeSwap's manager fails: its Uniswap position is listed all the same.
    devnet.link_account(&alice, &wallet).await;
    let listed = positions(&alice).await;
    let tokens: Vec<String> = listed.iter().map(|p| text(&p["tokenId"])).collect();
    assert_eq!(tokens, [uniswap.as_str()], "{listed:?}");
    let view = wallet_view(&alice).await;
    let errors = view["deploymentErrors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{view}");
    assert_eq!(errors[0]["protocol"], "pancakeswap-v3", "{view}");
    assert!(text(&errors[0]["reason"]).contains("revert"), "{view}");
    assert!(view["retry"].is_object(), "{view}");
    assert!(
        text(&view["refreshError"]).contains("pancakeswap-v3"),
        "{view}"
    );

    // It answers again: the syncs' retry reads it back, the errors are gone.
    broken.store(false, Ordering::SeqCst);
    sync(&ops).await;
    let listed = positions(&alice).await;
    let tokens: Vec<String> = listed.iter().map(|p| text(&p["tokenId"])).collect();
    assert_eq!(tokens, [pancake.as_str(), uniswap.as_str()], "{listed:?}");
    let view = wallet_view(&alice).await;
    assert!(view.get("deploymentErrors").is_none(), "{view}");
    assert!(view.get("retry").is_none(), "{view}");
    assert_eq!(view["positions"], 2, "{view}");
    let pancake_id = text(&listed[0]["id"]);
    let uniswap_id = text(&listed[1]["id"]);

    // It fails again while the wallet's Uniswap position moves: the Uniswap position follows
    // the chain, the PancakeSwap one keeps its last read, stale, open, in the portfolio.
    broken.store(true, Ordering::SeqCst);
    devnet.withdraw(&wallet, &uniswap, None).await;
    sync(&ops).await;
    let moved = get(&alice, &uniswap_id).await;
    assert_eq!(text(&moved["liquidity"]), "0", "{moved}");
    assert_eq!(moved["stale"], false, "{moved}");
    let kept = get(&alice, &pancake_id).await;
    assert_eq!(kept["status"], "active", "{kept}");
    assert_eq!(kept["stale"], true, "{kept}");
    assert!(
        text(&kept["readError"]).contains("pancakeswap-v3"),
        "{kept}"
    );
    let view = wallet_view(&alice).await;
    assert_eq!(view["deploymentErrors"].as_array().map(Vec::len), Some(1));
    assert_eq!(view["positions"], 2, "{view}");
    // The portfolio counts it at its last read: its value is the stale position's.
    let portfolio = alice.portfolio().await.json;
    assert_eq!(portfolio["totalValueUsd"], kept["valueUsd"], "{portfolio}");

    // And back: fresh again.
    broken.store(false, Ordering::SeqCst);
    sync(&ops).await;
    let back = get(&alice, &pancake_id).await;
    assert_eq!(back["stale"], false, "{back}");
    assert!(back["readError"].is_null(), "{back}");
}

on_both_stores!(one_failing_deployment => one_failing_deployment_hides_nothing);

/// Stakes `token` from `wallet`, then lets rewards accrue through two swaps and a minute.
async fn staked_a_while(devnet: &Devnet, wallet: &str, token: &str) {
    devnet
        .run("stake", &["--account", wallet, "--token-id", token])
        .await;
    for sell in ["usdc", "weth"] {
        let mut args = vec!["--sell", sell, "--amount", "20"];
        args.extend(test_support::devnet::PANCAKE);
        devnet.run("swap", &args).await;
    }
    devnet.advance_time(60).await;
}

/// The farm's withdrawals to other addresses than the staker's: the staker's position closes
/// as transferred at the next sync with its unstake in its history and nothing pending (its
/// withdrawal harvested it, to whoever it named: still the staker's reward); a linked
/// receiver's count starts at the transfer, with figures, as one from a wallet does.
pub async fn farm_withdrawals_to_others(store: &[&str]) {
    let devnet = Devnet::with_pancake(3000).await;
    let (wallet, receiver) = (devnet.account(1).await, devnet.account(2).await);
    let stranger = devnet.account(3).await;
    let amount = "1000000000000000000000";
    let range = devnet.pancake_range_around(2000).await;
    let first = devnet.mint_pancake_to(&wallet, range, amount).await;
    let second = devnet.mint_pancake_to(&wallet, range, amount).await;
    let server = local_api(&devnet, &devnet.rpc, store).await;
    let (alice, bob) = (user(&server, "alice").await, user(&server, "bob").await);
    let ops = operator(&server).await;
    devnet.link_account(&alice, &wallet).await;
    devnet.link_account(&bob, &receiver).await;
    staked_a_while(&devnet, &wallet, &first).await;
    devnet
        .run("stake", &["--account", &wallet, "--token-id", &second])
        .await;
    sync(&ops).await;
    let listed = positions(&alice).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    let id_of = |token: &str| {
        let p = listed.iter().find(|p| text(&p["tokenId"]) == token);
        text(&p.expect("listed")["id"])
    };
    let (first_id, second_id) = (id_of(&first), id_of(&second));
    let staked = get(&alice, &first_id).await;
    assert_ne!(text(&staked["staked"]["rewardsPending"]), "0", "{staked}");

    // Withdrawn to a stranger: no linked address is named by the manager's transfer.
    let unstake = [
        "--account",
        &wallet,
        "--token-id",
        &first,
        "--to",
        &stranger,
    ];
    devnet.run("unstake", &unstake).await;
    // What the withdrawal harvested went to the stranger, who held no CAKE before.
    let cake = text(&devnet.state["pancake"]["cake"]);
    let data = format!("0x70a08231{:0>64}", stranger.trim_start_matches("0x"));
    let balance = devnet
        .rpc("eth_call", json!([{"to": cake, "data": data}, "latest"]))
        .await;
    let reward = U256::from_str_radix(text(&balance).trim_start_matches("0x"), 16)
        .unwrap()
        .to_string();
    assert_ne!(reward, "0");
    sync(&ops).await;
    let gone = get(&alice, &first_id).await;
    assert_eq!(gone["status"], "closed", "{gone}");
    assert_eq!(gone["closeReason"], "transferred", "{gone}");
    let kinds = alice.history_kinds(&first_id).await;
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("unstaked"),
        "{kinds:?}"
    );
    // Nothing pending once closed; its withdrawal's harvest (paid to the stranger) is the
    // staker's reward all the same (decision 63).
    let staked = &gone["staked"];
    assert_eq!(text(&staked["rewardsPending"]), "0", "{gone}");
    assert_eq!(number(&staked["rewardsPendingUsd"]), 0.0, "{gone}");
    let harvested = test_support::devnet::units(&staked["rewardsHarvested"]);
    assert_eq!(harvested, reward, "{gone}");
    let rewards = number(&staked["rewardsHarvestedUsd"]);
    let out = number(&gone["withdrawnUsd"]) + number(&gone["feesCollectedUsd"]);
    let expected = number(&gone["valueUsd"]) + out - number(&gone["costBasisUsd"]) + rewards;
    assert!(
        (number(&gone["pnlUsd"]) - expected).abs() <= 0.05,
        "{expected}: {gone}"
    );

    // Withdrawn to another user's linked wallet: it arrives there with figures from the
    // transfer on, as a transfer from a wallet would.
    let unstake = [
        "--account",
        &wallet,
        "--token-id",
        &second,
        "--to",
        &receiver,
    ];
    devnet.run("unstake", &unstake).await;
    sync(&ops).await;
    assert_eq!(get(&alice, &second_id).await["closeReason"], "transferred");
    let received = positions(&bob).await;
    assert_eq!(received.len(), 1, "{received:?}");
    let view = &received[0];
    assert_eq!(view["status"], "active", "{view}");
    for figure in ["costBasisUsd", "pnlUsd", "feesEarnedUsd", "valueUsd"] {
        assert!(view[figure].is_number(), "{figure}: {view}");
    }
    assert!(number(&view["costBasisUsd"]) > 0.0, "{view}");
    assert!(number(&view["pnlUsd"]).abs() <= 0.05, "{view}");
}

on_both_stores!(farm_withdrawals => farm_withdrawals_to_others);

/// A staked position whose reward token has no USD price (the catalog without the CAKE pool
/// that prices it): its principal and fees count in the portfolio as its own figures do, its
/// PnL says what it leaves out, and the reward is counted apart in tokens.
pub async fn unpriced_rewards_leave_out_only_themselves(store: &[&str]) {
    let devnet = Devnet::with_pancake(3000).await;
    let wallet = devnet.account(1).await;
    let range = devnet.pancake_range_around(2000).await;
    let token = devnet
        .mint_pancake_to(&wallet, range, "1000000000000000000000")
        .await;
    let mut catalog: Value =
        serde_json::from_str(&std::fs::read_to_string(&devnet.catalog).unwrap()).unwrap();
    let cake_pool = text(&devnet.state["pancake"]["cakePool"]).to_lowercase();
    let pools = catalog["pools"].as_array_mut().unwrap();
    pools.retain(|p| text(&p["pool"]).to_lowercase() != cake_pool);
    let file = devnet.catalog.with_file_name("catalog-without-cake.json");
    std::fs::write(&file, catalog.to_string()).unwrap();
    let server = test_support::world::local_api_on(&file, &devnet.rpc, store).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);
    devnet.link_account(&alice, &wallet).await;
    staked_a_while(&devnet, &wallet, &token).await;
    sync(&ops).await;
    let listed = positions(&alice).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let view = &listed[0];
    let pending = text(&view["staked"]["rewardsPending"]);
    assert_ne!(pending, "0", "{view}");
    assert!(view["staked"]["rewardsPendingUsd"].is_null(), "{view}");
    assert!(view["pnlUsd"].is_number(), "{view}");
    assert!(text(&view["pnlLeavesOut"]).contains("CAKE"), "{view}");
    let portfolio = alice.portfolio().await.json;
    assert_eq!(portfolio["unpricedPositions"], 0, "{portfolio}");
    assert_eq!(portfolio["totalValueUsd"], view["valueUsd"], "{portfolio}");
    assert_eq!(portfolio["totalPnlUsd"], view["pnlUsd"], "{portfolio}");
    let rewards = &portfolio["unpricedRewards"];
    assert_eq!(rewards.as_array().map(Vec::len), Some(1), "{portfolio}");
    assert_eq!(rewards[0]["symbol"], "CAKE", "{portfolio}");
    assert_eq!(text(&rewards[0]["amount"]), pending, "{portfolio}");
}

on_both_stores!(unpriced_rewards => unpriced_rewards_leave_out_only_themselves);
