//! Opening and moving Uniswap v4 positions (issue 52) on the devnet with v4's real contracts:
//! from a fresh wallet (tokens, no approval of any kind), `POST /positions` with
//! `protocol: "uniswap-v4"` on the native-ETH pool and on the USDC/WETH pool answers Permit2's
//! approvals (the ERC-20's to Permit2, then Permit2's to the PositionManager) and
//! `modifyLiquidities([MINT_POSITION, SETTLE_PAIR, SWEEP])` with the ETH as its `value`; sent as
//! answered, each within its gas, the wallet pays exactly what `expected` said (its gas added
//! back); reported and synced, the position is active with the minted token, the contracts'
//! (`v4-quote`). On the ERC-20 pool, with `"permit": "signature"`: Permit2's allowances by
//! one signed `PermitBatch` (the typed data answered, signed with `eth_signTypedData_v4`, given
//! back), the mint then `multicall([permitBatch, modifyLiquidities])`. A move of its range is one `modifyLiquidities([BURN_POSITION,
//! MINT_POSITION_FROM_DELTAS, CLOSE_CURRENCY ×2])`: the wallet gets exactly the leftover
//! `expected` said, the new position is active as the contracts have it, its history shows its
//! deposit, the old one closes `moved`, naming it; the new one's close pays the wallet exactly
//! what `expected` said and closes it `withdrawn`. On memory and on DynamoDB (moto).

use super::v4::{assert_view_is_the_chains, get, history, kinds};
use super::v4_actions::{balance, expected_pair, send_all, transaction_kinds};
use alloy_primitives::U256;
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use test_support::client::TestClient;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::on_both_stores;
use test_support::wallets::post;
use test_support::world::{local_api, operator, sync, user};

/// The wallet's balances of the pool's currencies (protocol order).
async fn balances(devnet: &Devnet, wallet: &str, currencies: &[String; 2]) -> [U256; 2] {
    [
        balance(devnet, wallet, &currencies[0]).await,
        balance(devnet, wallet, &currencies[1]).await,
    ]
}

/// Sends the answer's transactions as answered, reports the last hash on `id` and syncs: the
/// wallet's balances before and after (protocol order, the gas it paid in ETH added back), and
/// the sync's report of orders.
async fn send_and_follow(
    devnet: &Devnet,
    (alice, ops): (&TestClient, &TestClient),
    (id, wallet, currencies): (&str, &str, &[String; 2]),
    answer: &Value,
) -> ([U256; 2], [U256; 2], Value) {
    let before = balances(devnet, wallet, currencies).await;
    let (hash, gas) = send_all(devnet, answer, &text(&answer["pool"])).await;
    let mut after = balances(devnet, wallet, currencies).await;
    for (i, c) in currencies.iter().enumerate() {
        if c == super::v4::NATIVE {
            after[i] += gas;
        }
    }
    let path = format!("/positions/{id}/transactions");
    let reply = post(alice, &path, &json!({ "hash": hash })).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    (before, after, report.json["orders"].clone())
}

/// The Permit2 batch `created` (an open with `"permit": "signature"`) waits for, signed by the
/// wallet (`eth_signTypedData_v4`: anvil signs for its unlocked account) and given back: the
/// answer's transactions then end with `multicall([permitBatch, modifyLiquidities])`. A
/// signature of another batch is refused (409) and changes nothing.
async fn signed_permit(
    devnet: &Devnet,
    alice: &TestClient,
    (id, wallet): (&str, &str),
    created: &Value,
) -> Value {
    // Waiting: the approvals of Permit2 only, and the batch to sign.
    let typed = created["permit"].clone();
    assert_eq!(typed["primaryType"], "PermitBatch", "{created}");
    assert_eq!(typed["message"]["details"].as_array().unwrap().len(), 2);
    assert!(
        transaction_kinds(created).iter().all(|k| k == "approve"),
        "{created}"
    );
    let path = format!("/positions/{id}/transactions");
    let mut other = typed.clone();
    other["message"]["sigDeadline"] = json!("1");
    let forged = devnet
        .rpc("eth_signTypedData_v4", json!([wallet, other]))
        .await;
    let refused = post(alice, &path, &json!({ "signature": forged })).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text());
    assert_eq!(get(alice, id).await["permit"], typed, "unchanged");
    let signature = devnet
        .rpc("eth_signTypedData_v4", json!([wallet, typed]))
        .await;
    let answered = post(alice, &path, &json!({ "signature": signature })).await;
    assert_eq!(answered.status, StatusCode::OK, "{}", answered.text());
    assert!(answered.json["permit"].is_null(), "{}", answered.text());
    let last = answered.json["transactions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        text(&last["data"]).starts_with("0xac9650d8"),
        "a multicall: {last}"
    );
    answered.json
}

async fn v4_positions_are_opened_and_moved(store: &[&str]) {
    let devnet = Devnet::with_v4(3000).await;
    // A fresh wallet: its tokens, no approval to anything.
    let wallet = devnet.account(2).await;
    devnet.run("fund", &["--account", &wallet]).await;
    let server = local_api(&devnet, &devnet.rpc, store).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);
    devnet.link_account(&alice, &wallet).await;
    sync(&ops).await;
    for name in ["eth", "erc20"] {
        let pool = &devnet.state["v4"]["pools"][name];
        let currencies = [text(&pool["currency0"]), text(&pool["currency1"])];
        let native = currencies.contains(&super::v4::NATIVE.to_string());
        // The ERC-20 pool's open gives Permit2's allowances by one signed batch.
        let signing = !native;
        let permit = if signing { "signature" } else { "transaction" };
        let body = json!({
            "chain": "ethereum", "protocol": "uniswap-v4", "pool": text(&pool["id"]),
            "amountA": "1", "amountB": "3000", "priceLower": 2500, "priceUpper": 3600,
            "wallet": wallet, "slippageBps": 50, "permit": permit,
        });
        let created = post(&alice, "/positions", &body).await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
        let mut created = created.json;
        assert_eq!(created["status"], "pending", "{created}");
        let id = text(&created["id"]);
        if signing {
            created = signed_permit(&devnet, &alice, (&id, &wallet), &created).await;
        }
        // Per ERC-20: its approval of Permit2, then Permit2's of the PositionManager (signed
        // instead on the ERC-20 pool). There (the second open), USDC's allowance to Permit2
        // left by the first open's maximum is reset to 0 before it is raised (as tokens such
        // as USDT require).
        let approvals = if native { 2 } else { 3 };
        let kinds_answered = transaction_kinds(&created);
        assert_eq!(kinds_answered.len(), approvals + 1, "{kinds_answered:?}");
        assert!(kinds_answered[..approvals].iter().all(|k| k == "approve"));
        let mint = created["transactions"][approvals].clone();
        assert_eq!(mint["kind"], "mint", "{mint}");
        assert_eq!(mint["value"] != "0", native, "{mint}");
        let (before, after, orders) = send_and_follow(
            &devnet,
            (&alice, &ops),
            (&id, &wallet, &currencies),
            &created,
        )
        .await;
        assert_eq!(orders["opened"], 1, "{orders}");
        let taken = expected_pair(&created, &mint["expected"], &currencies[0]);
        for i in 0..2 {
            assert_eq!(after[i] + taken[i], before[i], "{}: {mint}", currencies[i]);
        }
        let opened = get(&alice, &id).await;
        assert_eq!(opened["status"], "active", "{opened}");
        assert_eq!(opened["liquidity"], created["liquidity"], "{opened}");
        sync(&ops).await;
        let view = get(&alice, &id).await;
        assert_view_is_the_chains(&devnet, &view).await;
        // Its history's deposit is what the wallet paid.
        let deposited = super::v4::protocol_order(&view, "deposited", &currencies[0]);
        assert_eq!(deposited, taken, "{view}");

        // The move: one unlock, no approval (the burn pays for the mint).
        let range = json!({"priceLower": 2000, "priceUpper": 4000, "slippageBps": 50});
        let moved = post(&alice, &format!("/positions/{id}/rebalance"), &range).await;
        assert_eq!(moved.status, StatusCode::OK, "{}", moved.text());
        let moved = moved.json;
        assert_eq!(transaction_kinds(&moved), ["rebalance"], "{moved}");
        let new_id = text(&moved["movedTo"]);
        let step = &moved["transactions"][0];
        for part in ["withdrawn", "deposited", "leftover"] {
            assert!(step["expected"][part].is_object(), "{part}: {step}");
        }
        let (before, after, orders) =
            send_and_follow(&devnet, (&alice, &ops), (&id, &wallet, &currencies), &moved).await;
        assert_eq!(orders["opened"], 1, "{orders}");
        assert_eq!(orders["applied"], 1, "{orders}");
        let leftover = expected_pair(&moved, &step["expected"], &currencies[0]);
        for i in 0..2 {
            assert_eq!(
                after[i],
                before[i] + leftover[i],
                "{}: {step}",
                currencies[i]
            );
        }
        let mut old = get(&alice, &id).await;
        for _ in 0..5 {
            if old["status"] == "closed" {
                break;
            }
            sync(&ops).await;
            old = get(&alice, &id).await;
        }
        assert_eq!(old["status"], "closed", "{old}");
        assert_eq!(old["closeReason"], "moved", "{old}");
        assert_eq!(old["movedTo"], new_id.as_str(), "{old}");
        sync(&ops).await;
        let new = get(&alice, &new_id).await;
        assert_eq!(new["status"], "active", "{new}");
        assert_eq!(new["movedFrom"], id.as_str(), "{new}");
        assert_view_is_the_chains(&devnet, &new).await;
        let events = kinds(&history(&alice, &new_id).await);
        assert!(events.iter().any(|k| k == "deposit"), "{events:?}");

        // The new position closed: all of it and every fee to the wallet, as `expected` said.
        let close = post(&alice, &format!("/positions/{new_id}/close"), &json!({})).await;
        assert_eq!(close.status, StatusCode::OK, "{}", close.text());
        let close = close.json;
        let (before, after, orders) = send_and_follow(
            &devnet,
            (&alice, &ops),
            (&new_id, &wallet, &currencies),
            &close,
        )
        .await;
        assert_eq!(orders["applied"], 1, "{orders}");
        let paid = expected_pair(
            &close,
            &close["transactions"][0]["expected"],
            &currencies[0],
        );
        for i in 0..2 {
            assert_eq!(after[i], before[i] + paid[i], "{}: {close}", currencies[i]);
        }
        sync(&ops).await;
        let closed = get(&alice, &new_id).await;
        assert_eq!(closed["status"], "closed", "{closed}");
        assert_eq!(closed["closeReason"], "withdrawn", "{closed}");
    }
}

on_both_stores!(v4_positions_are_opened_and_moved => v4_positions_are_opened_and_moved);
