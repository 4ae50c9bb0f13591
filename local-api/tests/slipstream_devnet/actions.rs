//! Acting on Slipstream positions through the API, on the devnet's real contracts: an open on
//! a generation's pool (the manager's `mint` with the tick spacing), its stake (the manager's
//! `approve(gauge)`, then the gauge's `deposit`), a harvest (`getReward(tokenId)`, `expected`
//! naming the AERO its run paid), an add and a collect on the staked position (the gauge's
//! `withdraw` first, then the manager's calls), a decrease, a move and the close. Each answer's
//! transactions sent as answered succeed within their gas; each order settles.

use super::get;
use alloy_primitives::U256;
use lambda_http::http::StatusCode;
use serde_json::{json, Value};
use std::str::FromStr;
use test_support::client::TestClient;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::wallets::post;
use test_support::world::{local_api_on, operator, sync, user};

fn kinds(answer: &Value) -> Vec<String> {
    answer["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| text(&t["kind"]))
        .collect()
}

/// Sends each transaction as answered (each succeeding within its gas), reports the last one's
/// hash, syncs; the sync's report.
async fn send_and_report(
    devnet: &Devnet,
    (client, ops): (&TestClient, &TestClient),
    id: &str,
    answer: &Value,
) -> Value {
    let mut last = String::new();
    for t in answer["transactions"].as_array().unwrap() {
        let (hash, receipt) = devnet.send(t).await;
        assert_eq!(receipt["status"], "0x1", "{t}: {receipt}");
        let gas: u64 = text(&t["gas"]).parse().unwrap();
        let used = u64::from_str_radix(text(&receipt["gasUsed"]).trim_start_matches("0x"), 16);
        let used = used.unwrap();
        assert!(gas >= used, "{t} used {receipt}");
        println!("figures: {} used {used} gas (answered {gas})", t["kind"]);
        last = hash;
    }
    let path = format!("/positions/{id}/transactions");
    let reply = post(client, &path, &json!({ "hash": last })).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    sync(ops).await
}

async fn act(client: &TestClient, id: &str, action: &str, body: Value) -> Value {
    let reply = post(client, &format!("/positions/{id}/{action}"), &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{action}: {}", reply.text());
    reply.json
}

pub async fn acting_on_slipstream_positions(store: &[&str]) {
    let devnet = Devnet::up(3000).await;
    let slip = devnet.run("slipstream", &[]).await;
    let generation = slip["generations"][1].clone();
    let wallet = devnet.funded_account(1).await;
    let catalog = devnet.slipstream_catalog(&slip);
    let server = local_api_on(&catalog, &devnet.rpc, store).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);
    devnet.link_account(&alice, &wallet).await;
    sync(&ops).await;

    // The open: the second generation's pool, named with its manager in the catalog.
    let body = json!({
        "chain": "ethereum", "protocol": "aerodrome-slipstream",
        "pool": generation["pool"], "amountA": "1", "amountB": "3000",
        "priceLower": 2500, "priceUpper": 3600, "wallet": wallet,
    });
    let created = post(&alice, "/positions", &body).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let created = created.json;
    let mint = created["transactions"].as_array().unwrap().last().unwrap();
    assert_eq!(mint["kind"], "mint", "{created}");
    assert_eq!(
        text(&mint["to"]).to_lowercase(),
        text(&generation["manager"]).to_lowercase()
    );
    let id = text(&created["id"]);
    let report = send_and_report(&devnet, (&alice, &ops), &id, &created).await;
    assert_eq!(report["orders"]["opened"], 1, "{report}");
    let opened = get(&alice, &id).await;
    assert_eq!(opened["status"], "active", "{opened}");
    assert_eq!(opened["protocol"], "aerodrome-slipstream", "{opened}");
    let token = text(&opened["tokenId"]);
    let quote = ["--token-id", token.as_str(), "--generation", "1"];
    let chain = devnet.run("slip-position-quote", &quote).await;
    assert_eq!(text(&chain["owner"]).to_lowercase(), wallet.to_lowercase());
    assert_eq!(
        text(&opened["liquidity"]),
        text(&chain["liquidity"]),
        "{opened}"
    );

    // Staked through the API: the manager's approval of the gauge, then its deposit.
    let staked = act(&alice, &id, "stake", json!({})).await;
    assert_eq!(kinds(&staked), ["approve-gauge", "stake"], "{staked}");
    let gauge = text(&generation["gauge"]).to_lowercase();
    assert_eq!(text(&staked["transactions"][1]["to"]).to_lowercase(), gauge);
    let report = send_and_report(&devnet, (&alice, &ops), &id, &staked).await;
    assert_eq!(report["orders"]["applied"], 1, "{report}");
    let view = get(&alice, &id).await;
    assert_eq!(
        text(&view["staked"]["contract"]).to_lowercase(),
        gauge,
        "{view}"
    );
    let again = post(&alice, &format!("/positions/{id}/stake"), &json!({})).await;
    again.assert_refused(StatusCode::CONFLICT, "staked in its farm already");

    // AERO streamed to the gauge; the harvest's answer names what its run paid.
    devnet
        .run("slip-reward", &["--amount", "604800", "--generation", "1"])
        .await;
    // Within the orders' deadline (20 minutes from the service's clock): the devnet's clock
    // is moved on, never past what a deadline allows.
    devnet.advance_time(300).await;
    let harvest = act(&alice, &id, "harvest", json!({})).await;
    assert_eq!(kinds(&harvest), ["harvest"], "{harvest}");
    let reward = &harvest["transactions"][0]["expected"]["reward"];
    assert_eq!(reward["token"]["symbol"], "AERO", "{harvest}");
    let expected = U256::from_str(&test_support::devnet::units(&reward["amount"])).unwrap();
    assert!(expected > U256::ZERO, "{harvest}");
    let aero = text(&slip["aero"]);
    let balance = || devnet.balance(&wallet, &aero);
    let before = balance().await;
    let report = send_and_report(&devnet, (&alice, &ops), &id, &harvest).await;
    assert_eq!(report["orders"]["applied"], 1, "{report}");
    // Rewards stream every second: sent a block later, it pays at least what its run paid.
    assert!(balance().await - before >= expected);

    // An add to the staked position: out of the gauge first, then the approvals the manager's
    // pull needs and its increase, all run as one sequence; staked again afterwards.
    let before_add = get(&alice, &id).await;
    let add = act(
        &alice,
        &id,
        "increase",
        json!({"amountA": "0.1", "amountB": "300"}),
    )
    .await;
    let add_kinds = kinds(&add);
    assert_eq!(
        add_kinds.first().map(String::as_str),
        Some("unstake"),
        "{add}"
    );
    assert_eq!(
        add_kinds.last().map(String::as_str),
        Some("increase"),
        "{add}"
    );
    let report = send_and_report(&devnet, (&alice, &ops), &id, &add).await;
    assert_eq!(report["orders"]["applied"], 1, "{report}");
    let added = get(&alice, &id).await;
    let liquidity = |v: &Value| u128::from_str(&text(&v["liquidity"])).unwrap();
    assert!(liquidity(&added) > liquidity(&before_add), "{added}");
    let chain = devnet.run("slip-position-quote", &quote).await;
    assert_eq!(
        text(&added["liquidity"]),
        text(&chain["liquidity"]),
        "{added}"
    );
    let restaked = act(&alice, &id, "stake", json!({})).await;
    let report = send_and_report(&devnet, (&alice, &ops), &id, &restaked).await;
    assert_eq!(report["orders"]["applied"], 1, "{report}");

    // A collect on the staked position: out of the gauge first (it pays its AERO), then the
    // manager's collect.
    devnet.advance_time(60).await;
    let collect = act(&alice, &id, "collect", json!({})).await;
    assert_eq!(kinds(&collect), ["unstake", "collect"], "{collect}");
    assert_eq!(
        text(&collect["transactions"][0]["to"]).to_lowercase(),
        gauge
    );
    let paid = &collect["transactions"][0]["expected"]["reward"];
    assert_eq!(paid["token"]["symbol"], "AERO", "{collect}");
    let report = send_and_report(&devnet, (&alice, &ops), &id, &collect).await;
    assert_eq!(report["orders"]["applied"], 1, "{report}");
    let view = get(&alice, &id).await;
    assert!(view.get("staked").is_none(), "{view}");
    assert_eq!(view["status"], "active", "{view}");
    let kinds_now = alice.history_kinds(&id).await;
    for kind in ["staked", "harvest", "unstaked", "collect"] {
        assert!(kinds_now.iter().any(|k| k == kind), "{kind}: {kinds_now:?}");
    }

    // Half out, then the close: the manager's own calls, as v3's, each paying the wallet what
    // its answer expected (sent at the state it was run on).
    let held = || async {
        let weth = devnet.balance(&wallet, "weth").await;
        vec![weth, devnet.balance(&wallet, "usdc").await]
    };
    let expected_of = |answer: &Value| {
        let expected = &answer["transactions"][0]["expected"];
        ["tokenA", "tokenB"]
            .map(|t| U256::from_str(&test_support::devnet::units(&expected[t])).unwrap())
    };
    let decrease = act(&alice, &id, "decrease", json!({"percent": 50})).await;
    assert_eq!(kinds(&decrease), ["decrease"], "{decrease}");
    let before = held().await;
    let report = send_and_report(&devnet, (&alice, &ops), &id, &decrease).await;
    assert_eq!(report["orders"]["applied"], 1, "{report}");
    let after = held().await;
    // tokenA is WETH, tokenB USDC.
    assert_eq!(
        [after[0] - before[0], after[1] - before[1]],
        expected_of(&decrease)
    );
    // A move: the withdrawal and the new range's mint (with the tick spacing) in one multicall;
    // the old position closes "moved", the new one opens on the same pool.
    let range = json!({"priceLower": 2000, "priceUpper": 4500});
    let moved = act(&alice, &id, "rebalance", range).await;
    let last_kind = kinds(&moved).last().cloned();
    assert_eq!(last_kind.as_deref(), Some("rebalance"), "{moved}");
    let new_id = text(&moved["movedTo"]);
    let report = send_and_report(&devnet, (&alice, &ops), &id, &moved).await;
    assert_eq!(report["orders"]["opened"], 1, "{report}");
    assert_eq!(report["orders"]["withdrawn"], 1, "{report}");
    assert_eq!(get(&alice, &id).await["closeReason"], "moved");
    let new = get(&alice, &new_id).await;
    assert_eq!(new["status"], "active", "{new}");
    assert_eq!(new["pool"], generation["pool"], "{new}");
    let (id, token) = (new_id, text(&new["tokenId"]));
    let quote = ["--token-id", token.as_str(), "--generation", "1"];
    let chain = devnet.run("slip-position-quote", &quote).await;
    assert_eq!(text(&new["liquidity"]), text(&chain["liquidity"]), "{new}");
    let close = post(&alice, &format!("/positions/{id}/close"), &json!({})).await;
    assert_eq!(close.status, StatusCode::OK, "{}", close.text());
    let before = held().await;
    let report = send_and_report(&devnet, (&alice, &ops), &id, &close.json).await;
    assert_eq!(report["orders"]["withdrawn"], 1, "{report}");
    let after = held().await;
    assert_eq!(
        [after[0] - before[0], after[1] - before[1]],
        expected_of(&close.json)
    );
    let closed = get(&alice, &id).await;
    assert_eq!(closed["status"], "closed", "{closed}");
    let chain = devnet
        .run(
            "slip-position-quote",
            &["--token-id", &token, "--generation", "1"],
        )
        .await;
    assert_eq!(text(&chain["liquidity"]), "0", "{chain}");
}
