//! Opening from a linked wallet through the handlers, in memory, with the wallet's allowances
//! scripted: the refusals (Solana, a wallet not linked, a state not fresh or a chain not read),
//! the approvals the allowances call for, the hash report, the cancel, and an idempotent retry.
//! The transactions themselves are sent to the real contracts in `local-api/tests/orders_devnet.rs`.

use async_trait::async_trait;
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use shared::app::{Allowed, OrderChain};
use shared::market::Freshness;
use shared::math::U256;
use shared::model::{Chain, TransactionRequest};
use shared::orders::simulation::{unhex, Credit, Simulated, SimulationError};
use shared::orders::v4::Permit2Allowance;
use shared::store::{MemoryMarket, MemoryStore};
use shared::App;
use std::sync::{Arc, Mutex};
use test_support::bodies::ETH_USDC;
use test_support::client::TestClient;
use test_support::lifecycle::give_fresh_state;
use test_support::wallets::{link_evm, post, EvmWallet};

/// The wallet's allowances as the chain would answer them (token0, token1), and a chain that
/// runs each transaction as the position manager would answer it (a mint takes what it asks
/// for) unless told it reverts.
struct Allowances(Mutex<[U256; 2]>, Mutex<Option<String>>);

impl Allowances {
    fn new(allowances: [U256; 2]) -> Allowances {
        Allowances(Mutex::new(allowances), Mutex::new(None))
    }
}

#[async_trait]
impl OrderChain for Allowances {
    async fn allowances(&self, _: &Allowed<'_>) -> Result<[U256; 2], String> {
        Ok(*self.0.lock().unwrap())
    }

    async fn permit2_allowances(&self, _: &Allowed<'_>) -> Result<[Permit2Allowance; 2], String> {
        Err("no Uniswap v4 pool here".into())
    }

    async fn simulate(
        &self,
        _: Chain,
        transactions: &[TransactionRequest],
        _: &[Credit],
    ) -> Result<Vec<Simulated>, SimulationError> {
        if let Some(reason) = self.1.lock().unwrap().clone() {
            return Err(SimulationError::Reverted {
                kind: transactions.last().unwrap().kind.clone(),
                reason,
            });
        }
        let word = |n: U256| n.to_be_bytes::<32>().to_vec();
        let run = |t: &TransactionRequest| {
            let data = unhex(&t.data).unwrap();
            let returned = match t.kind.as_str() {
                // (tokenId, liquidity, amount0, amount1): the desired amounts, words 5 and 6.
                "mint" => [U256::from(1u8), U256::from(1u8)]
                    .into_iter()
                    .chain([5, 6].map(|w| U256::from_be_slice(&data[4 + 32 * w..36 + 32 * w])))
                    .flat_map(word)
                    .collect(),
                _ => word(U256::from(1u8)),
            };
            Simulated {
                gas: 100_000,
                returned,
                reward: None,
            }
        };
        Ok(transactions.iter().map(run).collect())
    }

    async fn signed_by(
        &self,
        _: Chain,
        _: &str,
        _: &shared::wallets::proof::ContractProof,
    ) -> Result<bool, String> {
        Err("no contract wallet here".into())
    }
}

fn live_app() -> App {
    let market = MemoryMarket::new(
        shared::catalog::embedded_records(),
        Freshness::Live {
            stale_after: std::time::Duration::from_secs(300),
        },
    )
    .unwrap()
    .with_deployments(shared::catalog::embedded_deployments());
    App {
        store: Arc::new(MemoryStore::new()),
        market: Arc::new(market),
        ..App::in_memory()
    }
}

fn body(wallet: &str, extra: Value) -> Value {
    let mut body = json!({
        "chain": "ethereum", "protocol": "uniswap-v3", "pool": ETH_USDC,
        "amountA": "1", "amountB": "3000", "priceLower": 2500, "priceUpper": 3500,
        "wallet": wallet,
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

fn kinds(created: &Value) -> Vec<String> {
    created["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap().to_string())
        .collect()
}

/// The last ABI word of a transaction's calldata (an approve's amount).
fn last_word(transaction: &Value) -> U256 {
    let data = transaction["data"].as_str().unwrap();
    U256::from_str_radix(&data[data.len() - 64..], 16).unwrap()
}

#[tokio::test]
async fn opening_from_a_wallet_asks_for_exactly_the_approvals_it_needs() {
    let app = live_app();
    let client = TestClient::in_process(&app, Some("olivia"));
    let wallet = EvmWallet::from_seed(4242);

    // Refused, nothing stored: Solana; a wallet not linked; then linked but no fresh state.
    let solana = json!({
        "chain": "solana", "protocol": "orca-whirlpools",
        "pool": "Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE",
        "amountA": "1", "amountB": "100", "priceLower": 100, "priceUpper": 200,
        "wallet": wallet.address,
    });
    let reply = post(&client, "/positions", &solana).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    assert!(
        reply.text().contains("not supported yet"),
        "{}",
        reply.text()
    );
    let reply = post(&client, "/positions", &body(&wallet.address, json!({}))).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    assert!(reply.text().contains("not linked"), "{}", reply.text());
    link_evm(&client, "ethereum", &wallet).await;
    let reply = post(&client, "/positions", &body(&wallet.address, json!({}))).await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.text()
    );
    assert!(reply.headers.contains_key("retry-after"));
    give_fresh_state(&app).await;
    // A fresh state, but no chain to read the allowances from here.
    let reply = post(&client, "/positions", &body(&wallet.address, json!({}))).await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.text()
    );
    for bad in [
        json!({"slippageBps": -1}),
        json!({"slippageBps": 5001}),
        json!({"deadlineSeconds": 86401}),
        json!({"deadlineSeconds": "60"}),
        json!({"deadlineSeconds": 60.5}),
        json!({"slippageBps": null}),
        json!({"slippageBps": 1e30}),
        json!({"wallet": null}),
    ] {
        let reply = post(&client, "/positions", &body(&wallet.address, bad.clone())).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{bad}: {}",
            reply.text()
        );
    }
    // Checked without a wallet too (a simulated create), where they change nothing.
    let mut simulated = body(&wallet.address, json!({"slippageBps": 5001}));
    simulated.as_object_mut().unwrap().remove("wallet");
    let reply = post(&client, "/positions", &simulated).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    assert_eq!(client.list("").await.json["total"], 0);

    let chain = Arc::new(Allowances::new([U256::ZERO; 2]));
    let app = App {
        order_chain: Some(chain.clone()),
        ..app
    };
    let client = TestClient::in_process(&app, Some("olivia"));
    // Nothing approved: one approve per token, of exactly what the mint may take.
    let lower = wallet.address.to_lowercase();
    let created = post(&client, "/positions", &body(&lower, json!({}))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let created = created.json;
    assert_eq!(kinds(&created), ["approve", "approve", "mint"]);
    assert_eq!(
        created["wallet"],
        wallet.address.as_str(),
        "its one spelling"
    );
    assert_eq!(created["status"], "pending");
    assert_eq!(created["source"], "wallet");
    assert_eq!(created["tokenId"], Value::Null);
    assert!(created["liquidity"].is_string());
    let transactions = created["transactions"].as_array().unwrap();
    for t in transactions {
        assert_eq!(t["from"], wallet.address.as_str());
        assert_eq!(t["chainId"], 1);
        assert_eq!(t["value"], "0");
    }
    let units = |whole: &str, decimals: usize| {
        let (int, frac) = whole.split_once('.').unwrap_or((whole, ""));
        U256::from_str_radix(&format!("{int}{frac:0<decimals$}"), 10).unwrap()
    };
    let usdc = units(created["tokenB"]["amount"].as_str().unwrap(), 6);
    let weth = units(created["tokenA"]["amount"].as_str().unwrap(), 18);
    let approved: Vec<(String, U256)> = transactions[..2]
        .iter()
        .map(|t| (t["to"].as_str().unwrap().to_string(), last_word(t)))
        .collect();
    assert!(approved.contains(&(created["tokenB"]["address"].as_str().unwrap().into(), usdc)));
    assert!(approved.contains(&(created["tokenA"]["address"].as_str().unwrap().into(), weth)));
    assert!(usdc <= U256::from(3_000_000_000u64) && weth <= units("1", 18));
    // Each run on the chain first: its gas with the 20 % margin; the mint's expected amounts
    // are what the run took, an approval's none.
    for t in transactions {
        assert_eq!(t["gas"], "120000");
    }
    assert_eq!(transactions[0]["expected"], Value::Null);
    assert_eq!(
        transactions[2]["expected"]["tokenA"],
        created["tokenA"]["amount"]
    );
    assert_eq!(
        transactions[2]["expected"]["tokenB"],
        created["tokenB"]["amount"]
    );

    // A run that reverts: 409 with its reason, nothing stored, nothing to sign.
    *chain.1.lock().unwrap() = Some("STF".into());
    let total = client.list("").await.json["total"].clone();
    let refused = post(&client, "/positions", &body(&wallet.address, json!({}))).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text());
    assert!(refused.text().contains("would revert") && refused.text().contains("STF"));
    assert!(refused.json.get("transactions").is_none());
    assert_eq!(client.list("").await.json["total"], total);
    *chain.1.lock().unwrap() = None;

    // Enough approved: the mint alone. token0 (USDC) approved but short: a reset to 0 first.
    *chain.0.lock().unwrap() = [U256::MAX; 2];
    let enough = post(&client, "/positions", &body(&wallet.address, json!({}))).await;
    assert_eq!(kinds(&enough.json), ["mint"], "{}", enough.text());
    *chain.0.lock().unwrap() = [U256::from(1u8), U256::MAX];
    let short = post(&client, "/positions", &body(&wallet.address, json!({}))).await;
    assert_eq!(kinds(&short.json), ["approve", "approve", "mint"]);
    let short_tx = short.json["transactions"].as_array().unwrap();
    assert_eq!(last_word(&short_tx[0]), U256::ZERO);
    assert_eq!(short_tx[0]["to"], short_tx[1]["to"]);
    assert_eq!(last_word(&short_tx[1]), usdc);

    // The hash: 0x and 64 hex digits, kept in lower case; a later one replaces it.
    let id = created["id"].as_str().unwrap();
    let path = format!("/positions/{id}/transactions");
    let hash = format!("0x{}", "ab".repeat(32));
    for bad in [
        json!({"hash": "0x1234"}),
        json!({"hash": 5}),
        json!({}),
        json!({"hash": hash, "signature": "0x01"}),
        json!({"signature": "0x"}),
        json!({"signature": "0x123"}),
        json!({"signature": "0xzz"}),
        json!({"signature": null}),
    ] {
        let reply = post(&client, &path, &bad).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{bad}");
    }
    // A signature where no Permit2 batch waits (a v3 mint: ERC-20 approvals): 409.
    let signature = format!("0x{}", "11".repeat(65));
    let reply = post(&client, &path, &json!({ "signature": signature })).await;
    reply.assert_refused(StatusCode::CONFLICT, "no Permit2 batch waiting");
    // `"permit": "signature"` is Uniswap v4's (Permit2); a v3 pool refuses it, nothing stored.
    for (permit, why) in [("signature", "Uniswap v4"), ("bogus", "permit must be")] {
        let asked = body(&wallet.address, json!({ "permit": permit }));
        let reply = post(&client, "/positions", &asked).await;
        reply.assert_refused(StatusCode::BAD_REQUEST, why);
    }
    let hash = format!("0x{}", "AB".repeat(32));
    let reply = post(&client, &path, &json!({ "hash": hash })).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    assert_eq!(reply.json["transactionHash"], hash.to_lowercase());
    let replaced = format!("0x{}", "cd".repeat(32));
    post(&client, &path, &json!({ "hash": replaced })).await;
    let read = client.get(id).await.json;
    assert_eq!(read["transactionHash"], replaced.as_str());
    assert_eq!(
        read["transactions"], created["transactions"],
        "shown until it settles"
    );

    // A close before the chain confirms it cancels it; nothing waits any more.
    let cancelled = client.close(id).await;
    assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.text());
    assert_eq!(
        cancelled.json["closeReason"],
        "cancelled by its owner before it was confirmed"
    );
    assert_eq!(cancelled.json["pnlUsd"], 0);
    assert!(
        cancelled.json.get("transactions").is_none(),
        "{}",
        cancelled.json
    );
    let reply = post(&client, &path, &json!({ "hash": replaced })).await;
    assert_eq!(reply.status, StatusCode::CONFLICT);
    // A simulated position has no transaction to follow.
    let simulated = client.open(json!({})).await;
    let simulated_path = format!(
        "/positions/{}/transactions",
        simulated["id"].as_str().unwrap()
    );
    let reply = post(&client, &simulated_path, &json!({ "hash": replaced })).await;
    assert_eq!(reply.status, StatusCode::CONFLICT);

    // An Idempotency-Key replays the create's answer, transactions included.
    // An integer written with a fraction of zero is an integer, as JSON Schema reads it.
    let request = body(&wallet.address, json!({"slippageBps": 10.0}))
        .to_string()
        .into_bytes();
    let headers = [
        ("content-type", "application/json"),
        ("idempotency-key", "open-once"),
    ];
    let first = client
        .send(Method::POST, "/positions", &headers, &request)
        .await;
    let again = client
        .send(Method::POST, "/positions", &headers, &request)
        .await;
    assert_eq!(first.status, StatusCode::CREATED);
    assert_eq!(first.body, again.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
}

/// The actions answer only for an open wallet position: a simulated one is 409 with the
/// reason, a body out of bounds 400, another's or an unknown id 404; none changes anything.
#[tokio::test]
async fn actions_refuse_what_they_cannot_act_on() {
    let app = live_app();
    give_fresh_state(&app).await;
    let client = TestClient::in_process(&app, Some("olivia"));
    let simulated = client.open(json!({})).await;
    let id = simulated["id"].as_str().unwrap();
    let before = client.get(id).await.json;
    for (action, body) in [
        ("collect", json!({})),
        ("increase", json!({"amountA": "1", "amountB": "3000"})),
        ("decrease", json!({"percent": 50})),
        ("decrease", json!({"percent": 100})),
        ("rebalance", json!({"priceLower": 2000, "priceUpper": 4000})),
    ] {
        let reply = post(&client, &format!("/positions/{id}/{action}"), &body).await;
        assert_eq!(
            reply.status,
            StatusCode::CONFLICT,
            "{action}: {}",
            reply.text()
        );
        assert!(
            reply.text().contains("simulated position moves no token"),
            "{}",
            reply.text()
        );
    }
    for (action, bad) in [
        ("decrease", json!({"percent": 0})),
        ("decrease", json!({"percent": 101})),
        ("decrease", json!({"percent": 50.5})),
        ("decrease", json!({"percent": "50"})),
        ("decrease", json!({"percent": null})),
        ("decrease", json!({})),
        ("decrease", json!({"percent": 5, "slippageBps": 5001})),
        ("increase", json!({"amountA": 1, "amountB": "1"})),
        ("increase", json!({"amountA": "1"})),
        ("collect", json!({"deadlineSeconds": 59})),
        ("collect", json!({"extra": true})),
        ("rebalance", json!({"priceLower": 0, "priceUpper": 4000})),
        (
            "rebalance",
            json!({"priceLower": "2000", "priceUpper": 4000}),
        ),
        ("rebalance", json!({"priceUpper": 4000})),
    ] {
        let reply = post(&client, &format!("/positions/{id}/{action}"), &bad).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{action} {bad}");
    }
    let other = TestClient::in_process(&app, Some("mallory"));
    let reply = post(&other, &format!("/positions/{id}/collect"), &json!({})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.text());
    assert_eq!(client.get(id).await.json, before, "nothing changed");
}

#[tokio::test]
async fn a_swap_to_fit_is_refused_where_no_router_reaches_the_pool() {
    let app = live_app();
    give_fresh_state(&app).await;
    let app = App {
        order_chain: Some(Arc::new(Allowances::new([U256::MAX; 2]))),
        ..app
    };
    let client = TestClient::in_process(&app, Some("olivia"));
    let wallet = EvmWallet::from_seed(4243);
    link_evm(&client, "ethereum", &wallet).await;
    link_evm(&client, "bsc", &wallet).await;
    // The body's own rules: a boolean, and only with a wallet.
    for bad in [
        json!({"swap": null}),
        json!({"swap": "yes"}),
        json!({"swap": 1}),
    ] {
        let reply = post(&client, "/positions", &body(&wallet.address, bad.clone())).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{bad}: {}",
            reply.text()
        );
    }
    let mut simulated = body(&wallet.address, json!({"swap": true}));
    simulated.as_object_mut().unwrap().remove("wallet");
    let reply = post(&client, "/positions", &simulated).await;
    reply.assert_refused(StatusCode::BAD_REQUEST, "swap is for an open from a wallet");
    // PancakeSwap v3 on BNB Chain (Uniswap's router does not reach its pools) and Orca (the
    // licence): 409 with the reason.
    for (chain, protocol, pool, prices, says) in [
        (
            "bsc",
            "pancakeswap-v3",
            "0x172fcD41E0913e95784454622d1c3724f546f849",
            (800, 1000),
            "no swap router that reaches pancakeswap-v3",
        ),
        (
            "solana",
            "orca-whirlpools",
            "Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE",
            (100, 200),
            "not offered on Orca pools",
        ),
    ] {
        let offer = json!({
            "chain": chain, "protocol": protocol, "pool": pool,
            "amountA": "1", "amountB": "0", "priceLower": prices.0, "priceUpper": prices.1,
            "wallet": wallet.address, "swap": true,
        });
        let reply = post(&client, "/positions", &offer).await;
        reply.assert_refused(StatusCode::CONFLICT, says);
    }
    // Uniswap v4: its swaps go through the UniversalRouter, not SwapRouter02.
    let v4_pool = format!("0x{}", "ab".repeat(32));
    let mut records = shared::catalog::embedded_records();
    let mut v4 = records[0].clone();
    v4.protocol = shared::model::Protocol::UniswapV4;
    v4.pool = v4_pool.clone();
    records.push(v4);
    let mut deployments = shared::catalog::embedded_deployments();
    deployments.push(shared::catalog::Deployment {
        protocol: shared::model::Protocol::UniswapV4,
        pool_manager: Some("0x00000000000000000000000000000000000000b2".into()),
        state_view: Some("0x00000000000000000000000000000000000000b3".into()),
        wrapped_native: Some("0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2".into()),
        ..shared::catalog::Deployment::v3(
            (Chain::Ethereum, shared::model::Protocol::UniswapV4),
            1,
            (
                "0x00000000000000000000000000000000000000b0",
                "0x00000000000000000000000000000000000000b1",
            ),
        )
    });
    let market = MemoryMarket::new(
        records,
        Freshness::Live {
            stale_after: std::time::Duration::from_secs(300),
        },
    )
    .unwrap()
    .with_deployments(deployments);
    let with_v4 = App {
        market: Arc::new(market),
        ..app.clone()
    };
    let v4_client = TestClient::in_process(&with_v4, Some("olivia"));
    let reply = post(
        &v4_client,
        "/positions",
        &body(
            &wallet.address,
            json!({"swap": true, "protocol": "uniswap-v4", "pool": v4_pool}),
        ),
    )
    .await;
    reply.assert_refused(StatusCode::CONFLICT, "UniversalRouter");
    // A chain that answers no quotes: 503, nothing stored.
    let reply = post(
        &client,
        "/positions",
        &body(&wallet.address, json!({"swap": true})),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.text()
    );
    assert_eq!(client.list("").await.json["total"], 0);
}
