//! Zaps (issue 63) on the devnet: anvil with the real Uniswap v3 contracts, SwapRouter02 and
//! QuoterV2. Opens from 2 WETH alone, from 6,000 USDC alone and from 1 WETH + 9,000 USDC, an
//! add of 4,000 USDC alone and a move of an out-of-range position, each with `"swap": true`:
//! every transaction sent exactly as answered succeeds within its gas, the wallet's balances
//! move by exactly what `expected` says, the liquidity made is at least 99.5 % of the best a
//! dense scan of the pool's quotes finds at the same state, and after the report and a sync the
//! position is active with the chain's liquidity and its history's deposit is the mint's. A
//! large one-sided offer is refused with its price impact, nothing stored. On memory and on
//! DynamoDB (moto).

use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use shared::chain::quotes::quote;
use shared::chain::rpc::RpcClient;
use shared::market::PoolState;
use shared::math::{Curve, U256};
use shared::model::Chain;
use shared::orders::zap::{after_swap, funded, QuotedPool};
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use test_support::devnet::{event, units, Devnet};
use test_support::json::text;
use test_support::rpc_stub::RpcStub;
use test_support::wallets::post;
use test_support::world::{self, WalletWorld};

/// The shared wallet world, local-api reading the devnet through a proxy that counts the
/// requests it sends and the quotes among them.
struct World(WalletWorld, RpcStub, Arc<AtomicUsize>);

impl std::ops::Deref for World {
    type Target = WalletWorld;
    fn deref(&self) -> &WalletWorld {
        &self.0
    }
}

fn big(value: &Value) -> U256 {
    U256::from_str(&text(value)).unwrap()
}

/// `pair` (`{tokenA, tokenB}` in whole tokens, tokenA WETH) in base units, protocol order.
fn protocol(devnet: &Devnet, pair: &Value) -> [U256; 2] {
    let (weth, usdc) = (units(&pair["tokenA"]), units(&pair["tokenB"]));
    let [a, b] = [weth, usdc].map(|u| U256::from_str(&u).unwrap());
    if devnet.usdc_is_token0() {
        [b, a]
    } else {
        [a, b]
    }
}

impl World {
    /// The wallet's balances of token0 and token1 at the head.
    async fn balances(&self) -> [U256; 2] {
        let mut out = [U256::ZERO; 2];
        for (t, name) in ["token0", "token1"].into_iter().enumerate() {
            let data = format!("0x70a08231{:0>64}", self.wallet.trim_start_matches("0x"));
            let call = json!({"to": self.devnet.address(name), "data": data});
            let answer = self.devnet.rpc("eth_call", json!([call, "latest"])).await;
            out[t] = U256::from_str_radix(text(&answer).trim_start_matches("0x"), 16).unwrap();
        }
        out
    }

    /// Sends each transaction exactly as answered: each mined, within its answered gas; the
    /// hashes and the gas each used.
    async fn send_all(&self, transactions: &Value) -> Vec<(String, u64)> {
        let mut sent = Vec::new();
        for t in transactions.as_array().unwrap() {
            let (hash, receipt) = self.devnet.send(t).await;
            assert_eq!(receipt["status"], "0x1", "{t}: {receipt}");
            let used = u64::from_str_radix(text(&receipt["gasUsed"]).trim_start_matches("0x"), 16)
                .unwrap();
            let gas: u64 = text(&t["gas"]).parse().unwrap();
            assert!(used <= gas, "{t} used {used}");
            eprintln!("figures: zap {}: {used} gas", t["kind"]);
            sent.push((hash, used));
        }
        sent
    }

    async fn report(&self, id: &str, hash: &str) {
        let path = format!("/positions/{id}/transactions");
        let reply = post(&self.alice, &path, &json!({ "hash": hash })).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    }

    /// The most liquidity any swap of `sell` funds from `offer` in `ticks` at the head, by a
    /// dense scan of QuoterV2's quotes (128 amounts, then 64 around the best): independent of
    /// the API's search.
    async fn optimum(&self, offer: [U256; 2], sell: usize, ticks: (i32, i32)) -> U256 {
        let rpc = RpcClient::new(&self.devnet.rpc, Duration::from_secs(10)).unwrap();
        let (token0, token1) = (self.devnet.address("token0"), self.devnet.address("token1"));
        let pool = QuotedPool {
            chain: Chain::Ethereum,
            quoter: self.devnet.state["quoter"].as_str().unwrap(),
            tokens: [&token0, &token1],
            fee: 3000,
        };
        let head = self.devnet.rpc("eth_blockNumber", json!([])).await;
        let state = PoolState {
            sqrt_price: U256::ZERO,
            tick: 0,
            liquidity: 0,
            fee_growth_global0: U256::ZERO,
            fee_growth_global1: U256::ZERO,
            height: u64::from_str_radix(text(&head).trim_start_matches("0x"), 16).unwrap(),
            block_hash: None,
            observed_at: chrono::Utc::now(),
            ticks: Vec::new(),
            balances: None,
            slipstream: None,
        };
        let curve = Curve::UniswapV3;
        let range = (
            curve.sqrt_price_at_tick(ticks.0).unwrap(),
            curve.sqrt_price_at_tick(ticks.1).unwrap(),
        );
        let funds = |x: U256| {
            let (rpc, pool, state) = (&rpc, &pool, &state);
            async move {
                let q = quote(rpc, pool, state, (sell, x)).await.unwrap();
                funded(after_swap(offer, sell, x, &q), q.sqrt_price_after, range)
            }
        };
        let whole = offer[sell];
        let (mut best, mut at) = (U256::ZERO, 0u32);
        for k in 1..=128u32 {
            let l = funds(whole * U256::from(k) / U256::from(128u32)).await;
            if l > best {
                (best, at) = (l, k);
            }
        }
        let low = whole * U256::from(at.saturating_sub(1)) / U256::from(128u32);
        let step = whole / U256::from(128u32 * 32);
        for j in 1..64u32 {
            best = best.max(funds(low + step * U256::from(j)).await);
        }
        best
    }

    /// Checks a zap's answer once sent: the wallet's balances moved by exactly `expected`
    /// (the offer paid, the leftover swept back), the mint or increase made the liquidity it
    /// names; the transactions' hashes and the zap's events.
    async fn send_zap(&self, transactions: &Value) -> (Vec<(String, u64)>, Value) {
        let zap = transactions.as_array().unwrap().last().unwrap();
        assert_eq!(zap["kind"], "zap", "{transactions}");
        assert_eq!(zap["to"], self.devnet.state["router02"], "{zap}");
        let expected = &zap["expected"];
        let before = self.balances().await;
        let sent = self.send_all(transactions).await;
        let after = self.balances().await;
        let (paid, swept) = (
            protocol(&self.devnet, expected),
            protocol(&self.devnet, &expected["leftover"]),
        );
        for t in 0..2 {
            assert_eq!(
                after[t] + paid[t],
                before[t] + swept[t],
                "token{t}: {expected}"
            );
        }
        let events = self
            .devnet
            .run("events", &["--hash", &sent.last().unwrap().0])
            .await;
        let minted = &event(&events, "IncreaseLiquidity")["args"];
        assert_eq!(minted["liquidity"], expected["liquidity"], "{events}");
        let deposited = protocol(&self.devnet, &expected["deposited"]);
        assert_eq!(
            [big(&minted["amount0"]), big(&minted["amount1"])],
            deposited
        );
        // What the offer leaves unused: at most 0.5 % of its value (each token's leftover
        // against what was offered of it, or what the swap paid of it).
        let bought = 1 - usize::from(expected["swap"]["sell"] == "tokenB");
        let bought = if self.devnet.usdc_is_token0() {
            1 - bought
        } else {
            bought
        };
        for t in 0..2 {
            let base = if t == bought {
                paid[t] + big(&json!(units(&expected["swap"]["amountOut"])))
            } else {
                paid[t]
            };
            assert!(
                swept[t] * U256::from(200u32) <= base.max(U256::from(1u8)) || swept[t].is_zero(),
                "token{t}: {} of {base} left: {expected}",
                swept[t]
            );
            let ppm = swept[t] * U256::from(1_000_000u32) / base.max(U256::from(1u8));
            println!("figures: token{t} left unused: {ppm} ppm of what the zap held of it");
        }
        (sent, events)
    }

    /// After the report and a sync: the position active with the chain's liquidity, its
    /// history's deposit the mint's amounts.
    async fn assert_opened(&self, id: &str, minted: &Value) {
        let shown = self.get(id).await;
        assert_eq!(shown["status"], "active", "{shown}");
        let token = text(&shown["tokenId"]);
        let chain = self
            .devnet
            .run("position-quote", &["--token-id", &token])
            .await;
        assert_eq!(shown["liquidity"], chain["liquidity"], "{shown}");
        let history = self
            .alice
            .send(Method::GET, &format!("/positions/{id}/history"), &[], b"")
            .await;
        assert_eq!(history.status, StatusCode::OK, "{}", history.text());
        let deposit = history.json["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == "deposit")
            .unwrap_or_else(|| panic!("a deposit in {}", history.text()))
            .clone();
        let amounts = json!({
            "tokenA": deposit["tokenA"]["amount"],
            "tokenB": deposit["tokenB"]["amount"],
        });
        assert_eq!(
            protocol(&self.devnet, &amounts),
            [big(&minted["amount0"]), big(&minted["amount1"])],
            "{deposit}"
        );
    }
}

/// `weth` and `usdc` whole tokens in protocol order, base units.
fn offer_of(devnet: &Devnet, weth: u64, usdc: u64) -> [U256; 2] {
    let e18 = U256::from(10u64).pow(U256::from(18u8));
    let (w, u) = (U256::from(weth) * e18, U256::from(usdc) * e18);
    if devnet.usdc_is_token0() {
        [u, w]
    } else {
        [w, u]
    }
}

async fn start(store_args: &[&str]) -> World {
    // The node's clock a minute behind ours, as a node's may be: a mint it mines right after
    // an answer carries a time before it.
    let devnet = Devnet::since(3000, chrono::Utc::now().timestamp() - 60).await;
    let wallet = devnet.account(1).await;
    devnet.run("fund", &["--account", &wallet]).await;
    let quotes = Arc::new(AtomicUsize::new(0));
    let (counted, quoter) = (quotes.clone(), text(&devnet.state["quoter"]).to_lowercase());
    let node = RpcStub::proxy(&devnet.rpc, move |call| {
        let to = call["params"][0]["to"].as_str().unwrap_or_default();
        if call["method"] == "eth_call" && to.to_lowercase() == quoter {
            counted.fetch_add(1, Ordering::SeqCst);
        }
        None
    })
    .await;
    let server = world::local_api(&devnet, &node.url, store_args).await;
    let alice = world::user(&server, "alice").await;
    let ops = world::operator(&server).await;
    let shared = WalletWorld {
        devnet,
        server,
        alice,
        ops,
        wallet,
    };
    World(shared, node, quotes)
}

impl World {
    /// What `answer` (a request to the API) cost the chain: its requests and the quotes
    /// among their calls.
    async fn counted<T>(&self, answer: impl std::future::Future<Output = T>) -> (T, usize, usize) {
        let (requests, quotes) = (self.1.requests(), self.2.load(Ordering::SeqCst));
        let answered = answer.await;
        (
            answered,
            self.1.requests() - requests,
            self.2.load(Ordering::SeqCst) - quotes,
        )
    }
}

async fn zaps(store_args: &[&str]) {
    let world = start(store_args).await;
    let devnet = &world.devnet;
    devnet.link_account(&world.alice, &world.wallet).await;
    let pool = devnet.address("pool");
    let create = |a: &str, b: &str, extra: Value| {
        let mut body = json!({
            "chain": "ethereum", "protocol": "uniswap-v3", "pool": pool,
            "amountA": a, "amountB": b, "priceLower": 2500, "priceUpper": 3600,
            "wallet": world.wallet, "swap": true, "slippageBps": 100,
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let client = &world.alice;
        async move { post(client, "/positions", &body).await }
    };

    // A large one-sided offer against the pool's depth: 409 with its price impact, nothing
    // stored. Without a wallet, "swap" is refused (400).
    let listed = world.alice.total().await;
    let refused = create("400", "0", json!({})).await;
    refused.assert_refused(StatusCode::CONFLICT, "price impact");
    assert_eq!(world.alice.total().await, listed);
    let simulated = post(
        &world.alice,
        "/positions",
        &json!({
            "chain": "ethereum", "protocol": "uniswap-v3", "pool": pool,
            "amountA": "1", "amountB": "0", "priceLower": 2500, "priceUpper": 3600,
            "swap": true,
        }),
    )
    .await;
    assert_eq!(
        simulated.status,
        StatusCode::BAD_REQUEST,
        "{}",
        simulated.text()
    );

    // Opens: 2 WETH alone, 6,000 USDC alone, 1 WETH and 9,000 USDC.
    let mut opened = Vec::new();
    for (weth, usdc) in [(2u64, 0u64), (0, 6_000), (1, 9_000)] {
        world.sync().await;
        let (reply, requests, quotes) = world
            .counted(Box::pin(create(
                &weth.to_string(),
                &usdc.to_string(),
                json!({}),
            )))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
        println!("figures: zap open of {weth} WETH + {usdc} USDC answered with {requests} requests, {quotes} of them quotes");
        assert!(quotes <= 24, "{quotes} quotes");
        let answer = reply.json;
        let zap = answer["transactions"].as_array().unwrap().last().unwrap();
        let expected = &zap["expected"];
        let sell = usize::from(expected["swap"]["sell"] == "tokenB");
        let sell = if devnet.usdc_is_token0() {
            1 - sell
        } else {
            sell
        };
        let ticks = (
            answer["tickLower"].as_i64().unwrap() as i32,
            answer["tickUpper"].as_i64().unwrap() as i32,
        );
        let offer = offer_of(devnet, weth, usdc);
        let best = world.optimum(offer, sell, ticks).await;
        let liquidity = big(&expected["liquidity"]);
        println!(
            "figures: zap open of {weth} WETH + {usdc} USDC: liquidity {liquidity} against the \
             scan's {best}; swap {}",
            expected["swap"]
        );
        assert!(
            liquidity * U256::from(1_000u32) >= best * U256::from(995u32),
            "{liquidity} against {best}"
        );
        let id = text(&answer["id"]);
        let (sent, events) = world.send_zap(&answer["transactions"]).await;
        world.report(&id, &sent.last().unwrap().0).await;
        let report = world.sync().await;
        assert_eq!(report["orders"]["opened"], 1, "{report}");
        world
            .assert_opened(&id, &event(&events, "IncreaseLiquidity")["args"])
            .await;
        opened.push(id);
    }

    // Add 4,000 USDC alone to the first.
    let id = &opened[0];
    let before = world.get(id).await;
    let (add, requests, quotes) = world
        .counted(Box::pin(post(
            &world.alice,
            &format!("/positions/{id}/increase"),
            &json!({"amountA": "0", "amountB": "4000", "swap": true, "slippageBps": 100}),
        )))
        .await;
    println!(
        "figures: zap add of 4000 USDC answered with {requests} requests, {quotes} of them quotes"
    );
    assert_eq!(add.status, StatusCode::OK, "{}", add.text());
    let (sent, events) = world.send_zap(&add.json["transactions"]).await;
    world.report(id, &sent.last().unwrap().0).await;
    let report = world.sync().await;
    assert_eq!(report["orders"]["applied"], 1, "{report}");
    let grown =
        big(&before["liquidity"]) + big(&event(&events, "IncreaseLiquidity")["args"]["liquidity"]);
    let after = world.get(id).await;
    assert_eq!(big(&after["liquidity"]), grown, "{after}");

    // Move an out-of-range position (it holds WETH only) into a range around the price.
    let range = devnet.range_around(3000).await;
    let above = (range.1 + 600, range.1 + 1800);
    let token = devnet
        .mint_to(&world.wallet, above, None, "1000000000000000000")
        .await;
    world.sync().await;
    let listed = world.alice.list("source=wallet").await.json;
    let old = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["tokenId"] == token.as_str())
        .unwrap_or_else(|| panic!("{token} in {listed}"))
        .clone();
    let old_id = text(&old["id"]);
    let (moved, requests, quotes) = world
        .counted(Box::pin(post(
            &world.alice,
            &format!("/positions/{old_id}/rebalance"),
            &json!({"priceLower": 2500, "priceUpper": 3600, "swap": true, "slippageBps": 100}),
        )))
        .await;
    println!("figures: zap move answered with {requests} requests, {quotes} of them quotes");
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.text());
    let answer = moved.json;
    let new_id = text(&answer["movedTo"]);
    // The approvals to the router, the withdrawal, then the zap: two transactions besides
    // the approvals, in that order.
    let transactions = answer["transactions"].as_array().unwrap();
    let kinds: Vec<_> = transactions.iter().map(|t| text(&t["kind"])).collect();
    let at = kinds
        .iter()
        .position(|k| k == "withdraw")
        .expect("a withdrawal");
    assert_eq!(at, kinds.len() - 2, "{kinds:?}");
    assert!(kinds[..at].iter().all(|k| k == "approve"), "{kinds:?}");
    let withdrawn = protocol(devnet, &transactions[at]["expected"]);
    world
        .send_all(&Value::Array(transactions[..at].to_vec()))
        .await;
    let before = world.balances().await;
    let sent = world
        .send_all(&Value::Array(vec![transactions[at].clone()]))
        .await;
    let withdraw = sent[0].0.clone();
    let between = world.balances().await;
    for t in 0..2 {
        assert_eq!(
            between[t],
            before[t] + withdrawn[t],
            "the withdrawal pays as answered"
        );
    }
    let zap_only = Value::Array(vec![transactions[at + 1].clone()]);
    let (sent, events) = world.send_zap(&zap_only).await;
    world.report(&old_id, &withdraw).await;
    world.report(&new_id, &sent.last().unwrap().0).await;
    let report = world.sync().await;
    assert_eq!(report["orders"]["opened"], 1, "{report}");
    assert_eq!(report["orders"]["withdrawn"], 1, "{report}");
    let closed = world.get(&old_id).await;
    assert_eq!(closed["closeReason"], "moved", "{closed}");
    assert_eq!(closed["movedTo"], new_id.as_str(), "{closed}");
    world
        .assert_opened(&new_id, &event(&events, "IncreaseLiquidity")["args"])
        .await;

    // A zap's mint whose block carries a time before the answer (the node's clock a minute
    // behind ours), sent without reporting its hash: the wallet's read still takes it for the
    // open, rather than as a position of its own.
    world.sync().await;
    let reply = create("1", "0", json!({})).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let id = text(&reply.json["id"]);
    world.send_all(&reply.json["transactions"]).await;
    world.sync().await;
    let shown = world.get(&id).await;
    assert_eq!(shown["status"], "active", "{shown}");
    let wallet_positions = world.alice.list("source=wallet&status=active").await.json;
    let tokens = wallet_positions["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["tokenId"] == shown["tokenId"])
        .count();
    assert_eq!(tokens, 1, "one position for the token: {wallet_positions}");
}

test_support::on_both_stores!(zaps_from_whatever_the_wallet_holds => zaps);
