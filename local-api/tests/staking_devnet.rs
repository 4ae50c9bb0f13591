//! Every position a wallet holds, on the devnet with PancakeSwap v3's real contracts (npm) and
//! MasterChefV3 beside Uniswap v3: a wallet's positions on both managers are listed with their
//! histories; its PancakeSwap position staked in the farm after the link stays the wallet's
//! (never closed, same id), shows `staked` with `rewardsPending` = the farm's `pendingCake` at
//! the read's block, amounts equal to what the manager would pay, `rewardsHarvested` what its
//! harvests paid, `staked`, `harvest` and `unstaked` in its history, through a harvest, a
//! decrease and a collect answered by the API through the farm, and the unstake; another
//! user's staked position is not the caller's (404); a close answered through the farm unstakes. A wallet linked
//! while its position is already staked lists it at once. On memory and on DynamoDB (moto).
//! CAKE rewards here come from the devnet's stand-in LM pool through `pendingCake`, not from
//! PancakeSwap's reward maths.

/// Nothing hidden by one failure (decision 63): a failing deployment, a farm's withdrawal.
#[path = "staking_devnet/failures.rs"]
mod failures;

use alloy_primitives::U256;
use lambda_http::http::StatusCode;
use serde_json::{json, Value};
use std::str::FromStr;
use test_support::client::TestClient;
use test_support::devnet::{units, Devnet, PANCAKE};
use test_support::json::text;
use test_support::on_both_stores;
use test_support::wallets::post;
use test_support::world::{local_api, operator, sync, user};

/// The caller's wallet positions, by protocol then token id.
async fn positions(client: &TestClient) -> Vec<Value> {
    let reply = client.list("limit=100").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let mut list = reply.json["data"].as_array().unwrap().clone();
    list.sort_by_key(|p| (text(&p["protocol"]), text(&p["tokenId"])));
    list
}

fn number(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("a number: {value}"))
}

async fn get(client: &TestClient, id: &str) -> Value {
    let reply = client.get(id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json
}

/// The position as the chain has it at the view's read block: the farm's answers and what the
/// manager would pay for its liquidity.
/// The farm at the block its pending reward was read at, the manager at the view's.
async fn chain_at(devnet: &Devnet, token: &str, view: &Value) -> (Value, Value) {
    let block = view["staked"]["rewardsPendingBlock"]
        .as_u64()
        .unwrap()
        .to_string();
    let farm = devnet
        .run("staking-quote", &["--token-id", token, "--block", &block])
        .await;
    let block = view["readHeight"].as_u64().unwrap().to_string();
    let mut quote_args = vec!["--token-id", token, "--block", &block];
    quote_args.extend(PANCAKE);
    let position = devnet.run("position-quote", &quote_args).await;
    (farm, position)
}

fn assert_staked_as_chain(view: &Value, farm: &Value, position: &Value, devnet: &Devnet) {
    let staked = &view["staked"];
    assert_eq!(view["status"], "active", "{view}");
    assert_eq!(
        text(&staked["contract"]).to_lowercase(),
        devnet.state["pancake"]["masterChef"]
            .as_str()
            .unwrap()
            .to_lowercase()
    );
    assert_eq!(
        units(&staked["rewardsPending"]),
        text(&farm["pendingCake"]),
        "{view}"
    );
    assert_eq!(text(&staked["rewardToken"]["symbol"]), "CAKE");
    assert_eq!(text(&view["liquidity"]), text(&position["liquidity"]));
    let chain = |name: &str| U256::from_str(&text(&position[name])).unwrap();
    assert_eq!(
        devnet.protocol_order(view, "amount"),
        [chain("amount0"), chain("amount1")],
        "{view}"
    );
    // What the farm's collect would pay the staker, to the unit: fees (PancakeSwap's protocol
    // share never in them) and withdrawn principal not collected yet.
    let [f, p] = ["feesUnclaimed", "uncollectedPrincipal"].map(|f| devnet.protocol_order(view, f));
    assert_eq!(
        [f[0] + p[0], f[1] + p[1]],
        [chain("fees0"), chain("fees1")],
        "{view}"
    );
}

async fn staked_positions_stay_the_wallets(store: &[&str]) {
    let devnet = Devnet::with_pancake(3000).await;
    let wallet = devnet.account(1).await;
    let amount = "1000000000000000000000";
    // One position on each manager, minted to the wallet (the deployer pays).
    let uniswap_range = devnet.range_around(3000).await;
    let uniswap = devnet.mint_to(&wallet, uniswap_range, None, amount).await;
    let range = devnet.pancake_range_around(2000).await;
    let pancake = devnet.mint_pancake_to(&wallet, range, amount).await;

    let server = local_api(&devnet, &devnet.rpc, store).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);
    devnet.link_account(&alice, &wallet).await;
    sync(&ops).await;
    let listed = positions(&alice).await;
    let protocols: Vec<String> = listed.iter().map(|p| text(&p["protocol"])).collect();
    assert_eq!(protocols, ["pancakeswap-v3", "uniswap-v3"], "{listed:?}");
    for (view, token) in listed.iter().zip([&pancake, &uniswap]) {
        assert_eq!(&text(&view["tokenId"]), token);
        assert_eq!(view["historyComplete"], true, "{view}");
        assert!(view.get("staked").is_none(), "{view}");
        assert_eq!(
            alice.history_kinds(&text(&view["id"])).await,
            ["mint", "deposit"]
        );
    }
    let id = text(&listed[0]["id"]);

    // Staked after the link through the API (the manager's safeTransferFrom to the farm, sent
    // as answered): the NFT leaves the wallet for the farm; the position stays. A Uniswap
    // position has no farm to go to.
    let no_farm = post(
        &alice,
        &format!("/positions/{}/stake", text(&listed[1]["id"])),
        &json!({}),
    )
    .await;
    no_farm.assert_refused(StatusCode::CONFLICT, "no farm is known");
    let answer = act(&alice, &id, "stake", json!({})).await;
    let stake_tx = &answer["transactions"][0];
    assert_eq!(stake_tx["kind"], "stake", "{answer}");
    assert!(stake_tx["expected"].is_null(), "{answer}");
    let manager = text(&devnet.state["pancake"]["manager"]);
    assert_eq!(text(&stake_tx["to"]).to_lowercase(), manager.to_lowercase());
    let (hash, receipt) = devnet.send(stake_tx).await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    let used = u64::from_str_radix(text(&receipt["gasUsed"]).trim_start_matches("0x"), 16);
    assert!(text(&stake_tx["gas"]).parse::<u64>().unwrap() >= used.unwrap());
    let mined = text(&receipt["blockNumber"]);
    let staked_at = json!(u64::from_str_radix(mined.trim_start_matches("0x"), 16).unwrap());
    let reported = post(
        &alice,
        &format!("/positions/{id}/transactions"),
        &json!({ "hash": hash }),
    )
    .await;
    assert_eq!(reported.status, StatusCode::ACCEPTED, "{}", reported.text());
    for sell in ["usdc", "weth"] {
        let mut args = vec!["--sell", sell, "--amount", "20"];
        args.extend(PANCAKE);
        devnet.run("swap", &args).await;
    }
    devnet.advance_time(60).await;
    let report = sync(&ops).await;
    assert_eq!(report["orders"]["applied"], 1, "{report}");
    let again = post(&alice, &format!("/positions/{id}/stake"), &json!({})).await;
    again.assert_refused(StatusCode::CONFLICT, "staked in its farm already");
    let view = get(&alice, &id).await;
    let (farm, position) = chain_at(&devnet, &pancake, &view).await;
    assert_eq!(text(&farm["user"]).to_lowercase(), wallet.to_lowercase());
    assert_ne!(text(&farm["pendingCake"]), "0");
    assert_staked_as_chain(&view, &farm, &position, &devnet);
    assert_eq!(view["staked"]["sinceBlock"], staked_at, "{view}");
    assert_eq!(
        alice.history_kinds(&id).await,
        ["mint", "deposit", "staked"]
    );
    // Decision 60's PnL: nothing taken out yet, so value − cost basis + the rewards (CAKE priced
    // by the devnet's CAKE/USDC pool); nothing harvested yet, so the rewards are pending ones.
    let staked = &view["staked"];
    let rewards = number(&staked["rewardsPendingUsd"]) + number(&staked["rewardsHarvestedUsd"]);
    assert!(rewards > 0.0, "{view}");
    let expected = number(&view["valueUsd"]) - number(&view["costBasisUsd"]) + rewards;
    let pnl = number(&view["pnlUsd"]);
    // Each USD figure is written to the cent: four of them here.
    assert!(
        (pnl - expected).abs() <= 0.02 + 1e-9,
        "{pnl} {expected}: {view}"
    );
    // The portfolio counts it once, its rewards apart from fees and in its PnL.
    let portfolio = alice.portfolio().await.json;
    assert_eq!(portfolio["positions"], 2, "{portfolio}");
    let total_rewards = number(&portfolio["totalRewardsUsd"]);
    assert!(
        (total_rewards - rewards).abs() <= 0.01 + 1e-9,
        "{portfolio}"
    );
    let listed = positions(&alice).await;
    let pnls: f64 = listed.iter().map(|p| number(&p["pnlUsd"])).sum();
    let total_pnl = number(&portfolio["totalPnlUsd"]);
    assert!((total_pnl - pnls).abs() <= 0.02 + 1e-9, "{portfolio}");

    // A harvest, half out, a collect, then more in (the wallet approving the farm, which pulls
    // the tokens), each answered by the API through the farm, sent as answered.
    let farm_address = text(&devnet.state["pancake"]["masterChef"]);
    devnet.run("fund", &["--account", &wallet]).await;
    let actions = [
        ("harvest", json!({})),
        ("decrease", json!({"percent": 50})),
        ("collect", json!({})),
        ("increase", json!({"amountA": "0.01", "amountB": "30"})),
    ];
    for (action, body) in actions {
        let answer = act(&alice, &id, action, body).await;
        send_and_follow(
            &devnet,
            (&alice, &ops),
            &id,
            &answer,
            (&farm_address, "applied"),
        )
        .await;
    }
    devnet.advance_time(30).await;
    sync(&ops).await;
    let view = get(&alice, &id).await;
    let (farm, position) = chain_at(&devnet, &pancake, &view).await;
    assert_staked_as_chain(&view, &farm, &position, &devnet);
    // The wallet held no CAKE before: its balance is what the harvest paid.
    let paid = text(&farm["cakeBalanceOfUser"]);
    assert_ne!(paid, "0");
    assert_eq!(units(&view["staked"]["rewardsHarvested"]), paid, "{view}");
    assert!(
        number(&view["staked"]["rewardsHarvestedUsd"]) > 0.0,
        "{view}"
    );

    // Unstaked: back in the wallet, the same position, its history goes on.
    devnet
        .run("unstake", &["--account", &wallet, "--token-id", &pancake])
        .await;
    sync(&ops).await;
    let view = get(&alice, &id).await;
    assert_eq!(view["status"], "active", "{view}");
    assert!(view.get("staked").is_none(), "{view}");
    let reply = post(&alice, &format!("/positions/{id}/harvest"), &json!({})).await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.text());
    // The decrease answered is a multicall of decreaseLiquidity and collect; then the collect,
    // the increase; the unstake harvests what was pending (the farm kept it owed).
    let kinds = [
        "mint", "deposit", "staked", "harvest", "withdraw", "collect", "collect",
    ];
    let mut kinds = kinds.to_vec();
    kinds.extend(["deposit", "harvest", "unstaked"]);
    assert_eq!(alice.history_kinds(&id).await, kinds);
    // Held again, it closes through the position manager.
    let manager = text(&devnet.state["pancake"]["manager"]);
    let answer = act(&alice, &id, "decrease", json!({"percent": 100})).await;
    let sent = (&manager[..], "withdrawn");
    send_and_follow(&devnet, (&alice, &ops), &id, &answer, sent).await;
    assert_eq!(get(&alice, &id).await["status"], "closed");

    // A wallet linked while its position is staked lists it at once.
    let bob_wallet = devnet.account(2).await;
    let bobs = devnet.mint_pancake_to(&bob_wallet, range, amount).await;
    let stake = ["--account", &bob_wallet, "--token-id", &bobs];
    let staked_at = devnet.run("stake", &stake).await["block"].clone();
    let bob = user(&server, "bob").await;
    devnet.link_account(&bob, &bob_wallet).await;
    sync(&ops).await;
    let listed = positions(&bob).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let (farm, position) = chain_at(&devnet, &bobs, &listed[0]).await;
    assert_staked_as_chain(&listed[0], &farm, &position, &devnet);
    // Staked before the link: since its stake's block, from its history.
    assert_eq!(listed[0]["staked"]["sinceBlock"], staked_at, "{listed:?}");
    let bobs_id = text(&listed[0]["id"]);
    assert_eq!(
        bob.history_kinds(&bobs_id).await,
        ["mint", "deposit", "staked"]
    );

    // Another user's staked position is not alice's to act on.
    let path = format!("/positions/{bobs_id}/collect");
    assert_eq!(
        post(&alice, &path, &json!({})).await.status,
        StatusCode::NOT_FOUND
    );
    // Bob closes it: through the farm, which pays its rewards and gives the NFT back.
    let answer = act(&bob, &bobs_id, "decrease", json!({"percent": 100})).await;
    let sent = (&farm_address[..], "withdrawn");
    send_and_follow(&devnet, (&bob, &ops), &bobs_id, &answer, sent).await;
    let closed = get(&bob, &bobs_id).await;
    assert_eq!(closed["status"], "closed", "{closed}");
    let owner = devnet
        .run(
            "position-quote",
            &[&["--token-id", bobs.as_str()][..], PANCAKE].concat(),
        )
        .await;
    assert_eq!(
        text(&owner["owner"]).to_lowercase(),
        bob_wallet.to_lowercase()
    );
    let kinds = bob.history_kinds(&bobs_id).await;
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("unstaked"),
        "{kinds:?}"
    );
}

async fn act(client: &TestClient, id: &str, action: &str, body: Value) -> Value {
    let reply = post(client, &format!("/positions/{id}/{action}"), &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{action}: {}", reply.text());
    reply.json
}

/// Sends the answer's transactions from the wallet as answered (each to `target`, the farm or
/// the manager, but approvals, which are for it; each within its answered gas), reports the last
/// one's hash and syncs: the order `outcome` (the sync report's count: `applied`, `withdrawn`).
async fn send_and_follow(
    devnet: &Devnet,
    (client, ops): (&TestClient, &TestClient),
    id: &str,
    answer: &Value,
    (target, outcome): (&str, &str),
) {
    let target = target.to_lowercase();
    let mut last = String::new();
    for t in answer["transactions"].as_array().unwrap() {
        if t["kind"] == "approve" {
            assert!(text(&t["data"]).contains(&target[2..]), "{t}");
        } else {
            assert_eq!(text(&t["to"]).to_lowercase(), target, "{t}");
        }
        let (hash, receipt) = devnet.send(t).await;
        assert_eq!(receipt["status"], "0x1", "{t}: {receipt}");
        let gas: u64 = text(&t["gas"]).parse().unwrap();
        let used = u64::from_str_radix(text(&receipt["gasUsed"]).trim_start_matches("0x"), 16);
        assert!(gas >= used.unwrap(), "{t} used {receipt}");
        last = hash;
    }
    let path = format!("/positions/{id}/transactions");
    let reply = post(client, &path, &json!({ "hash": last })).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    let report = sync(ops).await;
    assert_eq!(report["orders"][outcome], 1, "{report}");
}

on_both_stores!(staked_positions => staked_positions_stay_the_wallets);
