//! Acting on Uniswap v4 positions (issue 52) on the devnet with v4's real contracts: a wallet's
//! positions on the native-ETH pool and on the USDC/WETH pool, fees accrued by swaps, then a
//! collect, an add, half decreased and the close, each built by the API as
//! `modifyLiquidities` (`DECREASE_LIQUIDITY`, `INCREASE_LIQUIDITY` with `CLOSE_CURRENCY` and
//! `SWEEP`, `BURN_POSITION`; `TAKE_PAIR`), run before it is answered, sent exactly as answered
//! (`eth_sendTransaction` from anvil's unlocked account), mined within its answered gas, paying
//! the wallet to the unit what `expected` said (native ETH as ETH, net of nothing: the gas is
//! added back), reported and followed: afterwards the position is the contracts' and its
//! history shows the action. An add from a wallet whose USDC has no Permit2 approval answers
//! the two approvals first; one already approved answers none (opening and moving:
//! `v4_opens`). On memory and on DynamoDB (moto).

use super::v4::{
    assert_view_is_the_chains, get, history, kinds, positions, swaps_on_both_pools, v4_mint, NATIVE,
};
use alloy_primitives::U256;
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use std::str::FromStr;
use test_support::client::TestClient;
use test_support::devnet::{units, Devnet};
use test_support::json::text;
use test_support::on_both_stores;
use test_support::wallets::post;
use test_support::world::{local_api, operator, sync, user};

fn hex_number(value: &Value) -> U256 {
    U256::from_str_radix(text(value).trim_start_matches("0x"), 16).unwrap()
}

/// The wallet's balance of `currency` (native ETH at `address(0)`) at the latest block.
pub(super) async fn balance(devnet: &Devnet, wallet: &str, currency: &str) -> U256 {
    if currency == NATIVE {
        return hex_number(
            &devnet
                .rpc("eth_getBalance", json!([wallet, "latest"]))
                .await,
        );
    }
    let data = format!(
        "0x70a08231{:0>64}",
        wallet.trim_start_matches("0x").to_lowercase()
    );
    let call = json!([{"to": currency, "data": data}, "latest"]);
    hex_number(&devnet.rpc("eth_call", call).await)
}

/// `expected` (tokenA/tokenB, whole tokens) in protocol order (currency0, currency1).
pub(super) fn expected_pair(view: &Value, expected: &Value, currency0: &str) -> [U256; 2] {
    let of = |side: &str| U256::from_str(&units(&expected[side])).unwrap();
    if text(&view["tokenA"]["address"]).eq_ignore_ascii_case(currency0) {
        [of("tokenA"), of("tokenB")]
    } else {
        [of("tokenB"), of("tokenA")]
    }
}

/// Sends `answer`'s transactions as answered, in order, each mined within its gas (the gas of
/// each printed, on `pool`): the last one's hash, and the wei their gas cost.
pub(super) async fn send_all(devnet: &Devnet, answer: &Value, pool: &str) -> (String, U256) {
    let (mut hash, mut gas) = (String::new(), U256::ZERO);
    for tx in answer["transactions"].as_array().unwrap() {
        let (sent, receipt) = devnet.send(tx).await;
        assert_eq!(receipt["status"], "0x1", "{tx}: {receipt}");
        let used = hex_number(&receipt["gasUsed"]);
        assert!(
            U256::from_str(&text(&tx["gas"])).unwrap() >= used,
            "{tx}: {receipt}"
        );
        // The figure docs/figures/orders.md gives of each v4 action.
        eprintln!("v4 {} on {pool}: {used} gas", tx["kind"]);
        gas += used * hex_number(&receipt["effectiveGasPrice"]);
        hash = sent;
    }
    (hash, gas)
}

/// Sends `answer`'s transactions as answered, in order: each mined within its gas; what the
/// wallet's balances moved by (protocol order; the native currency's with the gas it paid
/// added back) is what `expected` says of the last: paid to it (`tokenA`/`tokenB`), or for an
/// add, the deposit taken less the fees paid out (`fees`). Reports the last hash and syncs
/// until the order is applied.
async fn send_as_answered(
    devnet: &Devnet,
    (alice, ops): (&TestClient, &TestClient),
    view: &Value,
    answer: &Value,
) {
    let quote = assert_view_is_the_chains(devnet, view).await;
    let currencies = [text(&quote["currency0"]), text(&quote["currency1"])];
    let wallet = text(&view["wallet"]);
    let transactions = answer["transactions"].as_array().unwrap();
    let last = transactions.last().unwrap();
    let manager = text(&devnet.state["v4"]["positionManager"]);
    assert_eq!(text(&last["to"]).to_lowercase(), manager.to_lowercase());
    let mut before = Vec::new();
    for c in &currencies {
        before.push(balance(devnet, &wallet, c).await);
    }
    let (hash, gas) = send_all(devnet, answer, &text(&view["pool"])).await;
    let expected = &last["expected"];
    let moved = expected_pair(view, expected, &currencies[0]);
    for (i, c) in currencies.iter().enumerate() {
        let now = balance(devnet, &wallet, c).await;
        let gas = if c == NATIVE { gas } else { U256::ZERO };
        if last["kind"] == "increase" {
            let fees = expected_pair(view, &expected["fees"], &currencies[0]);
            assert_eq!(now + gas + moved[i], before[i] + fees[i], "{c}: {last}");
        } else {
            assert_eq!(now + gas, before[i] + moved[i], "{c}: {last}");
        }
    }
    let path = format!("/positions/{}/transactions", text(&view["id"]));
    let reply = post(alice, &path, &json!({ "hash": hash })).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    assert_eq!(report.json["orders"]["applied"], 1, "{}", report.text());
}

/// The kinds of `answer`'s transactions, in order.
pub(super) fn transaction_kinds(answer: &Value) -> Vec<String> {
    let transactions = answer["transactions"].as_array().unwrap();
    transactions.iter().map(|t| text(&t["kind"])).collect()
}

async fn v4_positions_are_acted_on(store: &[&str]) {
    let devnet = Devnet::with_v4(3000).await;
    let wallet = devnet.account(1).await;
    devnet.run("fund", &["--account", &wallet]).await;
    let liquidity = "1000000000000000000000";
    v4_mint(&devnet, "eth", 1200, liquidity, &wallet).await;
    v4_mint(&devnet, "erc20", 600, liquidity, &wallet).await;
    let server = local_api(&devnet, &devnet.rpc, store).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);
    devnet.link_account(&alice, &wallet).await;
    sync(&ops).await;
    swaps_on_both_pools(&devnet).await;
    sync(&ops).await;
    let listed = positions(&alice).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    for listed in &listed {
        let id = text(&listed["id"]);
        let act = |action: &str, body: Value| {
            let (alice, path) = (&alice, format!("/positions/{id}/{action}"));
            async move { post(alice, &path, &body).await }
        };
        // Collect: every fee owed, nothing else.
        let view = get(&alice, &id).await;
        let collect = act("collect", json!({})).await;
        assert_eq!(collect.status, StatusCode::OK, "{}", collect.text());
        assert_eq!(collect.json["transactions"][0]["kind"], "collect");
        send_as_answered(&devnet, (&alice, &ops), &view, &collect.json).await;
        sync(&ops).await;
        let view = get(&alice, &id).await;
        for side in ["tokenA", "tokenB"] {
            assert_eq!(units(&view[side]["feesUnclaimed"]), "0", "{view}");
        }

        // An add: the approvals through Permit2 only where missing, the native currency as
        // the transaction's value (its rest swept back), the fees it pays out netted. The
        // native pool comes first: its USDC is approved by the answer; then both ERC-20s are
        // approved from the wallet (an add of its own), and the ERC-20 pool's answer has none.
        let view = get(&alice, &id).await;
        let native = [&view["tokenA"], &view["tokenB"]]
            .iter()
            .any(|t| t["address"] == NATIVE);
        if !native {
            let token = text(&view["tokenId"]);
            let own = [
                "--account",
                &wallet,
                "--token-id",
                &token,
                "--liquidity",
                "1",
            ];
            devnet.run("v4-increase", &own).await;
            sync(&ops).await;
        }
        let view = get(&alice, &id).await;
        let add = act("increase", json!({"amountA": "0.5", "amountB": "1500"})).await;
        assert_eq!(add.status, StatusCode::OK, "{}", add.text());
        let kinds_answered = transaction_kinds(&add.json);
        let approvals = if native { 2 } else { 0 };
        assert_eq!(kinds_answered.len(), approvals + 1, "{kinds_answered:?}");
        let last = add.json["transactions"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["kind"], "increase");
        assert_eq!(last["value"] != "0", native, "{last}");
        send_as_answered(&devnet, (&alice, &ops), &view, &add.json).await;
        sync(&ops).await;
        let view = get(&alice, &id).await;
        assert_view_is_the_chains(&devnet, &view).await;

        // Half of it out.
        let half = act("decrease", json!({"percent": 50})).await;
        assert_eq!(half.status, StatusCode::OK, "{}", half.text());
        send_as_answered(&devnet, (&alice, &ops), &view, &half.json).await;
        sync(&ops).await;
        let view = get(&alice, &id).await;
        assert_eq!(view["status"], "active", "{view}");
        assert_view_is_the_chains(&devnet, &view).await;

        // The close: all of it and every fee, the position closed by the wallet's next read.
        let close = post(&alice, &format!("/positions/{id}/close"), &json!({})).await;
        assert_eq!(close.status, StatusCode::OK, "{}", close.text());
        assert_eq!(close.json["transactions"][0]["kind"], "withdraw");
        send_as_answered(&devnet, (&alice, &ops), &view, &close.json).await;
        let mut closed = get(&alice, &id).await;
        for _ in 0..5 {
            if closed["status"] == "closed" {
                break;
            }
            sync(&ops).await;
            closed = get(&alice, &id).await;
        }
        assert_eq!(closed["status"], "closed", "{closed}");
        assert_eq!(closed["closeReason"], "withdrawn", "{closed}");
        // Burnt: its manager knows no owner of it any more.
        let token = U256::from_str(&text(&closed["tokenId"])).unwrap();
        let owner_of = format!("0x6352211e{token:064x}");
        let manager = text(&devnet.state["v4"]["positionManager"]);
        let rpc = shared::chain::RpcClient::new(&devnet.rpc, std::time::Duration::from_secs(30));
        let asked = json!([{"to": manager, "data": owner_of}, "latest"]);
        let burnt = rpc.unwrap().call("eth_call", asked).await;
        assert!(burnt.is_err(), "ownerOf answered {burnt:?}");
        let events = kinds(&history(&alice, &id).await);
        let withdrawals = events.iter().filter(|k| *k == "withdraw").count();
        assert!(withdrawals >= 2, "the decrease and the close: {events:?}");
    }
}

on_both_stores!(v4_positions_are_acted_on => v4_positions_are_acted_on);
