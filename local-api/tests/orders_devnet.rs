//! Opening and closing on chain through the API, on the devnet (anvil with the real Uniswap v3
//! contracts): one of anvil's unlocked accounts, linked by signature, is the wallet; the test
//! sends the transactions the API returns exactly as given (`eth_sendTransaction`), reports the
//! hashes, and compares what the API then shows with the position manager's events and
//! answers. The calldata is checked against the Uniswap v3 SDK from npm (`devnet/sdk.mjs`),
//! an independent computation. On memory and on DynamoDB (moto).

use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use shared::catalog::Catalog;
use shared::math::uniswap::sqrt_ratio_at_tick;
use shared::math::{Curve, U256};
use shared::model::{Chain, Protocol, TokenPair};
use shared::orders::actions::{
    collect_transaction, decrease_transaction, increase_transactions, share_of,
};
use shared::orders::build::{open_transactions, protocol_tokens, withdraw_transaction};
use shared::orders::slippage::burn_minimums;
use shared::orders::{plan_mint, venue, OrderTerms};
use test_support::devnet::{event, sdk, units};
use test_support::json::{text, texts};
use test_support::rpc_stub::RpcStub;
use test_support::wallets::post;
use test_support::world::{self, WalletWorld};

const WALLET: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

/// The minimums and calldata the API builds equal the SDK's, on a table of prices, ranges,
/// offers and slippages (mints), and of prices, liquidities and slippages (withdraws).
#[tokio::test]
async fn calldata_and_minimums_are_the_sdks() {
    let catalog = Catalog::embedded();
    let base = catalog
        .find(
            Chain::Ethereum,
            Protocol::UniswapV3,
            "0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640",
        )
        .unwrap()
        .clone();
    let venue = venue(&catalog, &base).unwrap();
    let deadline_at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for (tick, offset) in [
        (-201_000, 7u64),
        (-50_000, 0),
        (0, 1),
        (12_345, 999),
        (190_000, 3),
    ] {
        let sqrt_price = sqrt_ratio_at_tick(tick).unwrap() + U256::from(offset);
        let pool = shared::catalog::Pool {
            sqrt_price,
            tick: Curve::UniswapV3.tick_at_or_below(sqrt_price),
            ..base.clone()
        };
        let around = |t: i32| t.div_euclid(10) * 10;
        let ranges = [
            (around(tick - 3000), around(tick + 3000)),
            (around(tick + 100), around(tick + 4000)),
            (around(tick - 4000), around(tick - 100)),
            (around(tick - 10), around(tick + 20)),
        ];
        for (i, ticks) in ranges.into_iter().enumerate() {
            for bps in [0u32, 1, 50, 500, 5000] {
                let offered = TokenPair {
                    a: U256::from(10u64.pow(18) + i as u64 * 7_919),
                    b: U256::from(3_000u64 * 10u64.pow(6) + bps as u64),
                };
                let Ok(plan) = plan_mint(&pool, ticks, offered, bps) else {
                    continue;
                };
                let terms = OrderTerms {
                    venue: &venue,
                    wallet: WALLET,
                    height: 1,
                    slippage_bps: bps,
                    deadline_seconds: 1200,
                    now: deadline_at,
                };
                let transactions = open_transactions(
                    &pool,
                    &venue,
                    WALLET,
                    ticks,
                    &plan,
                    plan.desired,
                    terms.deadline(),
                )
                .unwrap();
                assert_eq!(transactions.len(), 1, "allowances suffice: the mint alone");
                let [token0, token1] = protocol_tokens(&pool).map(|t| t.address.clone());
                let common = json!({
                    "chainId": 1, "token0": token0, "token1": token1, "fee": pool.fee_tier,
                    "sqrtPriceX96": sqrt_price.to_string(), "tick": pool.tick,
                    "tickLower": ticks.0, "tickUpper": ticks.1, "bps": bps,
                    "recipient": WALLET, "deadline": terms.deadline(),
                });
                let mut mint = common.clone();
                mint["kind"] = json!("mint");
                mint["amount0Desired"] = json!(plan.desired[0].to_string());
                mint["amount1Desired"] = json!(plan.desired[1].to_string());
                cases.push(mint);
                ours.push(json!({
                    "amount0Min": plan.minimums[0].to_string(),
                    "amount1Min": plan.minimums[1].to_string(),
                    "liquidityMinted": plan.liquidity.to_string(),
                    "calldata": transactions[0].data,
                }));
                let withdraw =
                    withdraw_transaction(&pool, &terms, "4242", ticks, plan.liquidity).unwrap();
                let mins = burn_minimums(sqrt_price, ticks, plan.liquidity, bps).unwrap();
                let mut burn = common;
                burn["kind"] = json!("burn");
                burn["liquidity"] = json!(plan.liquidity.to_string());
                burn["tokenId"] = json!("4242");
                cases.push(burn);
                ours.push(json!({
                    "amount0Min": mins[0].to_string(),
                    "amount1Min": mins[1].to_string(),
                    "calldata": withdraw.data,
                }));
                // The actions on token 4242: an increase of the same amounts, a decrease of a
                // share, a collect.
                let increase =
                    increase_transactions(&pool, &terms, "4242", &plan, plan.desired).unwrap();
                let mut add = cases[cases.len() - 2].clone();
                add["tokenId"] = json!("4242");
                cases.push(add);
                ours.push(json!({
                    "amount0Min": plan.minimums[0].to_string(),
                    "amount1Min": plan.minimums[1].to_string(),
                    "calldata": increase[0].data,
                }));
                let percent = 1 + ((i as u32 * 37 + bps) % 99) as u8;
                let share = share_of(plan.liquidity, percent);
                if share > 0 {
                    let decrease =
                        decrease_transaction(&pool, &terms, "4242", ticks, share).unwrap();
                    let mins = burn_minimums(sqrt_price, ticks, share, bps).unwrap();
                    let mut part = cases[cases.len() - 2].clone();
                    part["percent"] = json!(percent);
                    cases.push(part);
                    ours.push(json!({
                        "amount0Min": mins[0].to_string(),
                        "amount1Min": mins[1].to_string(),
                        "calldata": decrease.data,
                    }));
                }
                let collect = collect_transaction(&terms, "4242").unwrap();
                cases.push(json!({
                    "kind": "collect", "chainId": 1, "token0": token0, "token1": token1,
                    "tokenId": "4242", "recipient": WALLET,
                }));
                ours.push(json!({ "calldata": collect.data }));
            }
        }
    }
    assert!(cases.len() >= 300, "{} cases", cases.len());
    println!("{} cases checked against the SDK", cases.len());
    let theirs = sdk(&Value::Array(cases.clone())).await;
    for ((case, ours), theirs) in cases.iter().zip(&ours).zip(theirs.as_array().unwrap()) {
        for field in ["amount0Min", "amount1Min", "liquidityMinted", "calldata"] {
            if ours.get(field).is_some() {
                assert_eq!(ours[field], theirs[field], "{field} of {case}");
            }
        }
    }
}

// The shared wallet world (its wallet linked), with this file's orders on it.
test_support::wallet_world!(World);

impl World {
    /// A create from the wallet (amounts in whole tokens), at USDC prices around 3000.
    async fn create(&self, extra: Value) -> shared_reply::Reply {
        let mut body = json!({
            "chain": "ethereum", "protocol": "uniswap-v3",
            "pool": self.devnet.address("pool"),
            "amountA": "1", "amountB": "3000", "priceLower": 2500, "priceUpper": 3600,
            "wallet": self.wallet,
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        post(&self.alice, "/positions", &body).await
    }

    async fn created(&self, extra: Value) -> Value {
        let reply = self.create(extra).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
        reply.json
    }

    /// Sends each transaction as given, in order; the receipts.
    async fn send_all(&self, transactions: &Value) -> Vec<(String, Value)> {
        let mut receipts = Vec::new();
        for t in transactions.as_array().unwrap() {
            receipts.push(self.devnet.send(t).await);
        }
        receipts
    }

    async fn report(&self, id: &str, hash: &str) -> Value {
        let reply = post(
            &self.alice,
            &format!("/positions/{id}/transactions"),
            &json!({ "hash": hash }),
        )
        .await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
        reply.json
    }

    async fn events(&self, hash: &str) -> Value {
        self.devnet.run("events", &["--hash", hash]).await
    }

    fn usdc_is_token0(&self) -> bool {
        self.devnet.usdc_is_token0()
    }
}

mod shared_reply {
    pub use test_support::client::Reply;
}

async fn start(store_args: &[&str]) -> World {
    let world = WalletWorld::start(store_args).await;
    world.devnet.link_account(&world.alice, &world.wallet).await;
    World(world)
}

/// The mint calldata's fields against the pool's state at the create and the SDK's own
/// calldata for the same desired amounts, slippage, recipient and deadline.
async fn assert_mint_is_the_sdks(world: &World, created: &Value, state: &Value, bps: u32) {
    let transactions = created["transactions"].as_array().unwrap();
    let mint = transactions.last().unwrap();
    assert_eq!(mint["kind"], "mint");
    assert_eq!(mint["to"], world.devnet.address("manager").as_str());
    assert_eq!(mint["from"], world.wallet.as_str());
    assert_eq!(mint["chainId"], 31337);
    assert_eq!(mint["value"], "0");
    let data = text(&mint["data"]);
    let word = |i: usize| U256::from_str_radix(&data[10 + 64 * i..10 + 64 * (i + 1)], 16).unwrap();
    let expires = chrono::DateTime::parse_from_rfc3339(&text(&created["expiresAt"])).unwrap();
    assert_eq!(word(10), U256::from(expires.timestamp() as u64), "deadline");
    let case = json!([{
        "kind": "mint", "chainId": 31337,
        "token0": world.devnet.address("token0"), "token1": world.devnet.address("token1"),
        "fee": 3000, "sqrtPriceX96": text(&state["sqrtPriceX96"]), "tick": state["tick"],
        "tickLower": created["tickLower"], "tickUpper": created["tickUpper"],
        "amount0Desired": word(5).to_string(), "amount1Desired": word(6).to_string(),
        "bps": bps, "recipient": world.wallet, "deadline": expires.timestamp(),
    }]);
    let theirs = &sdk(&case).await[0];
    assert_eq!(
        theirs["calldata"], mint["data"],
        "the SDK's addCallParameters"
    );
    assert_eq!(
        text(&theirs["liquidityMinted"]),
        text(&created["liquidity"])
    );
    // The desired amounts are the API's amounts, in protocol order.
    let (usdc, weth) = (
        units(&created["tokenB"]["amount"]),
        units(&created["tokenA"]["amount"]),
    );
    let (d0, d1) = if world.usdc_is_token0() {
        (usdc, weth)
    } else {
        (weth, usdc)
    };
    assert_eq!((word(5).to_string(), word(6).to_string()), (d0, d1));
}

/// Each answered transaction's gas covers what it used once mined.
fn assert_gas_covers(transactions: &Value, receipts: &[(String, Value)]) {
    for (t, (_, receipt)) in transactions.as_array().unwrap().iter().zip(receipts) {
        let gas: u64 = text(&t["gas"]).parse().unwrap();
        let used = u64::from_str_radix(text(&receipt["gasUsed"]).trim_start_matches("0x"), 16);
        let used = used.unwrap();
        assert!(gas >= used, "{t} used {receipt}");
        // The figure docs/figures/orders.md sets against v4's.
        eprintln!("v3 {}: {used} gas", t["kind"]);
    }
}

/// A transaction's `expected` amounts equal an event's `amount0`/`amount1` (tokenA is WETH).
fn assert_expected(usdc_is_token0: bool, transaction: &Value, args: &Value) {
    let (usdc, weth) = if usdc_is_token0 {
        ("amount0", "amount1")
    } else {
        ("amount1", "amount0")
    };
    let expected = &transaction["expected"];
    assert_eq!(
        units(&expected["tokenA"]),
        text(&args[weth]),
        "{transaction}"
    );
    assert_eq!(
        units(&expected["tokenB"]),
        text(&args[usdc]),
        "{transaction}"
    );
}

async fn opens_and_closes_on_chain(store_args: &[&str]) {
    let world = start(store_args).await;
    let (alice, devnet) = (&world.alice, &world.devnet);

    // Refused: a wallet not linked, Solana, a slippage or deadline out of bounds.
    let reply = world
        .create(json!({"wallet": "0x000000000000000000000000000000000000dEaD"}))
        .await;
    reply.assert_refused(StatusCode::BAD_REQUEST, "not linked");
    for bad in [
        json!({"slippageBps": 5001}),
        json!({"deadlineSeconds": 59}),
        json!({"slippageBps": 1.5}),
    ] {
        let reply = world.create(bad.clone()).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{bad}: {}",
            reply.text()
        );
    }
    assert_eq!(alice.list("").await.json["total"], 0, "nothing stored");

    // 1. Allowance 0 on both tokens: two approvals, then the mint.
    let state = devnet.run("pool", &[]).await;
    let created = world.created(json!({"slippageBps": 50})).await;
    assert_eq!(created["status"], "pending", "{created}");
    assert_eq!(created["source"], "wallet");
    assert_eq!(created["wallet"], world.wallet.as_str());
    assert_eq!(created["tokenId"], Value::Null);
    let kinds: Vec<_> = texts(&created["transactions"], "kind");
    assert_eq!(kinds, ["approve", "approve", "mint"], "{created}");
    assert_mint_is_the_sdks(&world, &created, &state, 50).await;
    let id = text(&created["id"]);
    // A client that lost the transactions reads them again.
    assert_eq!(
        world.get(&id).await["transactions"],
        created["transactions"]
    );
    let receipts = world.send_all(&created["transactions"]).await;
    assert!(
        receipts.iter().all(|(_, r)| r["status"] == "0x1"),
        "{receipts:?}"
    );
    assert_gas_covers(&created["transactions"], &receipts);
    let mint_hash = receipts.last().unwrap().0.clone();
    let reported = world.report(&id, &mint_hash).await;
    assert_eq!(reported["transactionHash"], mint_hash.as_str());
    // The sync settles it from the receipt (before the wallets' refresh could).
    let report = world.sync().await;
    assert_eq!(
        report["orders"],
        json!({"opened": 1, "withdrawn": 0, "ended": 0, "applied": 0}),
        "{report}"
    );
    let active = world.get(&id).await;
    assert_eq!(active["status"], "active", "{active}");
    let events = world.events(&mint_hash).await;
    let increase = event(&events, "IncreaseLiquidity");
    assert_eq!(text(&active["tokenId"]), text(&increase["args"]["tokenId"]));
    assert_eq!(
        text(&active["liquidity"]),
        text(&increase["args"]["liquidity"])
    );
    assert_eq!(
        text(&active["liquidity"]),
        text(&created["liquidity"]),
        "what the create answered"
    );
    // The mint's run took what the mint took, to the unit (nothing moved in between).
    assert_expected(
        world.usdc_is_token0(),
        &created["transactions"][2],
        &increase["args"],
    );
    let token_id = text(&active["tokenId"]);
    let quote = devnet
        .run("position-quote", &["--token-id", &token_id])
        .await;
    assert_eq!(text(&quote["owner"]), world.wallet);
    assert_eq!(text(&quote["liquidity"]), text(&active["liquidity"]));
    // The deposit is the event's: the cost basis those amounts at the settling sync's prices.
    let pools = alice.pools().await.json;
    let price = |symbol: &str| {
        let pool = &pools["data"][0];
        let token = if pool["tokenA"]["symbol"] == symbol {
            &pool["tokenA"]
        } else {
            &pool["tokenB"]
        };
        token["priceUsd"].as_f64().unwrap()
    };
    let (usdc_paid, weth_paid) = if world.usdc_is_token0() {
        (
            text(&increase["args"]["amount0"]),
            text(&increase["args"]["amount1"]),
        )
    } else {
        (
            text(&increase["args"]["amount1"]),
            text(&increase["args"]["amount0"]),
        )
    };
    let cost = usdc_paid.parse::<f64>().unwrap() / 1e18 * price("USDC")
        + weth_paid.parse::<f64>().unwrap() / 1e18 * price("WETH");
    let basis = active["costBasisUsd"].as_f64().unwrap();
    assert!((basis - cost).abs() < 1e-6 * cost, "{basis} vs {cost}");
    // The list shows it once: discovery never duplicates it.
    assert_eq!(alice.list("source=wallet").await.json["total"], 1);

    // Fees after swaps: what collect pays, to the unit.
    for (sell, amount) in [("usdc", "30000"), ("weth", "10")] {
        devnet
            .run("swap", &["--sell", sell, "--amount", amount])
            .await;
    }
    world.sync().await;
    let read = world.get(&id).await;
    let quote = devnet
        .run(
            "position-quote",
            &[
                "--token-id",
                &token_id,
                "--block",
                &text(&read["readHeight"]),
            ],
        )
        .await;
    let (fees_usdc, fees_weth) = if world.usdc_is_token0() {
        (text(&quote["fees0"]), text(&quote["fees1"]))
    } else {
        (text(&quote["fees1"]), text(&quote["fees0"]))
    };
    assert_ne!(fees_usdc, "0");
    assert_eq!(units(&read["tokenB"]["feesEarned"]), fees_usdc, "{read}");
    assert_eq!(units(&read["tokenA"]["feesEarned"]), fees_weth, "{read}");

    // 2. Close: one withdraw, the SDK's burn minimums; asked again, the same transaction.
    let state = devnet.run("pool", &[]).await;
    let close = post(
        alice,
        &format!("/positions/{id}/close"),
        &json!({"slippageBps": 100}),
    )
    .await;
    assert_eq!(close.status, StatusCode::OK, "{}", close.text());
    assert_eq!(close.json["status"], "active");
    assert!(
        close.json["closing"]["expiresAt"].is_string(),
        "{}",
        close.json
    );
    let withdraw = &close.json["transactions"][0];
    assert_eq!(withdraw["kind"], "withdraw");
    let expires =
        chrono::DateTime::parse_from_rfc3339(&text(&close.json["closing"]["expiresAt"])).unwrap();
    let case = json!([{
        "kind": "burn", "chainId": 31337,
        "token0": devnet.address("token0"), "token1": devnet.address("token1"), "fee": 3000,
        "sqrtPriceX96": text(&state["sqrtPriceX96"]), "tick": state["tick"],
        "tickLower": active["tickLower"], "tickUpper": active["tickUpper"],
        "liquidity": text(&active["liquidity"]), "tokenId": token_id, "bps": 100,
        "recipient": world.wallet, "deadline": expires.timestamp(),
    }]);
    assert_eq!(
        sdk(&case).await[0]["calldata"],
        withdraw["data"],
        "removeCallParameters"
    );
    let again = post(alice, &format!("/positions/{id}/close"), &json!({})).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.json["transactions"], close.json["transactions"]);
    let (withdraw_hash, receipt) = devnet.send(withdraw).await;
    assert_eq!(receipt["status"], "0x1");
    assert_gas_covers(
        &close.json["transactions"],
        &[(withdraw_hash.clone(), receipt.clone())],
    );
    world.report(&id, &withdraw_hash).await;
    let report = world.sync().await;
    assert_eq!(
        report["orders"],
        json!({"opened": 0, "withdrawn": 1, "ended": 0, "applied": 0}),
        "{report}"
    );
    let closed = world.get(&id).await;
    assert_eq!(closed["status"], "closed", "{closed}");
    assert_eq!(closed["closeReason"], "withdrawn");
    let events = world.events(&withdraw_hash).await;
    let decrease = &event(&events, "DecreaseLiquidity")["args"];
    let collect = &event(&events, "Collect")["args"];
    // The withdraw's run paid out what the collect paid.
    assert_expected(world.usdc_is_token0(), withdraw, collect);
    let at = chrono::DateTime::from_timestamp(events["timestamp"].as_i64().unwrap(), 0).unwrap();
    assert_eq!(text(&closed["closedAt"]), shared::model::format_time(&at));
    let fee = |i: &str| {
        let (c, d): (u128, u128) = (
            text(&collect[i]).parse().unwrap(),
            text(&decrease[i]).parse().unwrap(),
        );
        (c - d).to_string()
    };
    let (usdc_i, weth_i) = if world.usdc_is_token0() {
        ("amount0", "amount1")
    } else {
        ("amount1", "amount0")
    };
    // Closed, it holds nothing (issue 61): what the withdraw paid is in its history.
    for (side, i) in [("tokenB", usdc_i), ("tokenA", weth_i)] {
        assert_eq!(text(&closed[side]["amount"]), "0", "{closed}");
        assert_eq!(
            units(&closed[side]["withdrawn"]),
            text(&decrease[i]),
            "{closed}"
        );
    }
    assert_eq!(closed["valueUsd"], 0.0, "{closed}");
    assert_eq!(
        units(&closed["tokenB"]["feesEarned"]),
        fee(usdc_i),
        "{closed}"
    );
    assert_eq!(
        units(&closed["tokenA"]["feesEarned"]),
        fee(weth_i),
        "{closed}"
    );
    let portfolio = alice.portfolio().await.json;
    assert_eq!(
        portfolio["realizedPnlUsd"], closed["pnlUsd"],
        "realized once: {portfolio}"
    );
    let reply = post(alice, &format!("/positions/{id}/close"), &json!({})).await;
    assert_eq!(reply.status, StatusCode::CONFLICT);

    // 3. Allowances: enough already → the mint alone; above 0 but short → a reset first.
    let manager_max = "1000000000000000000000000";
    for token in ["usdc", "weth"] {
        devnet
            .run(
                "approve",
                &[
                    "--account",
                    &world.wallet,
                    "--token",
                    token,
                    "--amount",
                    manager_max,
                ],
            )
            .await;
    }
    // Allowances are read at the block of the pool's state the mint is sized at.
    world.sync().await;
    let enough = world.created(json!({})).await;
    let kinds: Vec<_> = texts(&enough["transactions"], "kind");
    assert_eq!(kinds, ["mint"], "{enough}");
    devnet
        .run(
            "approve",
            &[
                "--account",
                &world.wallet,
                "--token",
                "usdc",
                "--amount",
                "1",
            ],
        )
        .await;
    world.sync().await;
    let short = world.created(json!({})).await;
    let transactions = short["transactions"].as_array().unwrap();
    let kinds: Vec<_> = transactions.iter().map(|t| text(&t["kind"])).collect();
    assert_eq!(kinds, ["approve", "approve", "mint"], "{short}");
    assert!(transactions[..2]
        .iter()
        .all(|t| t["to"] == devnet.address("usdc").as_str()));
    assert!(
        text(&transactions[0]["data"]).ends_with(&"0".repeat(64)),
        "a reset to 0 first"
    );
    // The first one waits for its mint still: cancelled by its owner (else, being the oldest
    // open of the same range, it would take the next mint seen without a hash).
    let cancel = post(
        alice,
        &format!("/positions/{}/close", text(&enough["id"])),
        &json!({}),
    )
    .await;
    assert_eq!(cancel.status, StatusCode::OK, "{}", cancel.text());
    assert_eq!(cancel.json["status"], "closed");
    assert_eq!(
        cancel.json["closeReason"],
        "cancelled by its owner before it was confirmed"
    );
    // Sent without reporting a hash: the wallet's refresh matches the minted token to it.
    let receipts = world.send_all(&short["transactions"]).await;
    assert!(receipts.iter().all(|(_, r)| r["status"] == "0x1"));
    let after = devnet
        .run(
            "allowance",
            &["--account", &world.wallet, "--token", "usdc"],
        )
        .await;
    assert!(
        text(&after["allowance"]).len() < 4,
        "exactly what the mint takes: {after}"
    );
    world.sync().await;
    let matched = world.get(&text(&short["id"])).await;
    assert_eq!(matched["status"], "active", "{matched}");
    assert!(matched["tokenId"].is_string(), "{matched}");

    // 4. Slippage: a price moved beyond the tolerance reverts the mint on chain; within it
    // the mint succeeds.
    let tight = world.created(json!({"slippageBps": 10})).await;
    let wide = world.created(json!({"slippageBps": 2000})).await;
    devnet
        .run("swap", &["--sell", "weth", "--amount", "2000"])
        .await;
    let (tight_hash, receipt) = world.send_all(&tight["transactions"]).await.pop().unwrap();
    assert_eq!(receipt["status"], "0x0", "past the tolerance: {receipt}");
    world.report(&text(&tight["id"]), &tight_hash).await;
    let (wide_hash, receipt) = world.send_all(&wide["transactions"]).await.pop().unwrap();
    assert_eq!(receipt["status"], "0x1", "within the tolerance");
    world.report(&text(&wide["id"]), &wide_hash).await;
    let report = world.sync().await;
    assert_eq!(
        report["orders"],
        json!({"opened": 1, "withdrawn": 0, "ended": 1, "applied": 0}),
        "{report}"
    );
    let reverted = world.get(&text(&tight["id"])).await;
    assert_eq!(reverted["status"], "closed");
    assert_eq!(reverted["closeReason"], "the transaction reverted on chain");
    assert_eq!(world.get(&text(&wide["id"])).await["status"], "active");

    // 5. Deadline: a mint never sent expires once the chain's time passes it.
    let never = world.created(json!({"deadlineSeconds": 60})).await;
    devnet.advance_time(120).await;
    world.sync().await;
    let expired = world.get(&text(&never["id"])).await;
    assert_eq!(expired["status"], "closed", "{expired}");
    assert_eq!(
        expired["closeReason"],
        "expired: not mined before its deadline"
    );
    drop(world);
}

test_support::on_both_stores!(opens_and_closes_on_chain => opens_and_closes_on_chain);

/// Nothing the chain would refuse is answered: a wallet without the tokens, a slippage a swap
/// mined after the last sync makes too tight (409 with the reason, nothing stored); a node
/// that cannot run an approval's allowance in (no state overrides): 503 with what to do,
/// then, the token approved from the wallet, the mint alone, simulated without one.
#[tokio::test]
async fn answers_only_what_the_chain_would_run() {
    let world = start(&[]).await;
    let (alice, devnet) = (&world.alice, &world.devnet);
    world.sync().await;

    let poor = devnet.account(2).await;
    devnet.link_account(alice, &poor).await;
    let reply = world.create(json!({ "wallet": poor })).await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.text());
    let message = text(&reply.json["message"]);
    assert!(
        message.contains("mint would revert") && message.contains("STF"),
        "{message}"
    );

    devnet
        .run("swap", &["--sell", "weth", "--amount", "2000"])
        .await;
    let reply = world.create(json!({"slippageBps": 10})).await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.text());
    assert!(
        text(&reply.json["message"]).contains("Price slippage check"),
        "{}",
        reply.json
    );
    assert_eq!(alice.list("").await.json["total"], 0, "nothing stored");
    // Sized at the state it is mined on, the same open passes.
    world.sync().await;
    world.created(json!({"slippageBps": 10})).await;

    // A node refusing state overrides, as geth before them did (a third parameter).
    let refusing = RpcStub::proxy(&devnet.rpc, |call| {
        let overridden = call["params"].as_array().is_some_and(|p| p.len() > 2);
        let simulation = matches!(
            call["method"].as_str(),
            Some("eth_call" | "eth_estimateGas")
        );
        (simulation && overridden)
            .then(|| Err(json!({"code": -32602, "message": "too many arguments, want at most 2"})))
    })
    .await;
    let server = world::local_api(devnet, &refusing.url, &[]).await;
    let bob = world::user(&server, "bob").await;
    let ops = world::operator(&server).await;
    let rich = devnet.account(3).await;
    devnet.run("fund", &["--account", &rich]).await;
    devnet.link_account(&bob, &rich).await;
    let sync = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(sync.status, StatusCode::OK, "{}", sync.text());
    let body = json!({
        "chain": "ethereum", "protocol": "uniswap-v3", "pool": devnet.address("pool"),
        "amountA": "1", "amountB": "3000", "priceLower": 2500, "priceUpper": 3600,
        "wallet": rich,
    });
    let reply = post(&bob, "/positions", &body).await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.text()
    );
    assert!(
        text(&reply.json["message"]).contains("approve the token from your wallet first"),
        "{}",
        reply.json
    );
    assert_eq!(bob.list("").await.json["total"], 0, "nothing stored");
    for token in ["usdc", "weth"] {
        let amount = "1000000000000000000000000";
        let args = ["--account", &rich, "--token", token, "--amount", amount];
        devnet.run("approve", &args).await;
    }
    ops.send(Method::POST, "/markets/sync", &[], b"").await;
    let reply = post(&bob, "/positions", &body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let mint = &reply.json["transactions"][0];
    assert_eq!(mint["kind"], "mint");
    let (_, receipt) = devnet.send(mint).await;
    assert_eq!(receipt["status"], "0x1");
    assert_gas_covers(&reply.json["transactions"], &[(String::new(), receipt)]);
    drop(server);
    drop(world);
}
