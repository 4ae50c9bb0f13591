//! A wallet position's whole story on the devnet (anvil with the real Uniswap v3 contracts),
//! checked against the chain: a wallet (not the deployer) mints, swaps pay fees, it adds at
//! another price, withdraws half without collecting, collects part, withdraws the rest without
//! collecting; another position is transferred in from a second account. Linked afterwards:
//! every history event is the chain's log (block, hash, index, amounts), valued at its block's
//! pool price; the ledger (deposited, withdrawn, fees collected, uncollected principal, fees
//! unclaimed) is what the contracts say to the unit; cost basis, PnL and HODL follow the
//! formulas of decisions 28 and 44. Events after the link appear after the next sync. On memory and on
//! DynamoDB (moto).

/// Charts exact at named blocks (issue 50).
#[path = "history_devnet/charts.rs"]
mod charts;
/// A Slipstream position staked in its gauge over time (issue 62).
#[path = "history_devnet/slipstream.rs"]
mod slipstream;
/// A staked position's rewards over time (issue 50).
#[path = "history_devnet/staked.rs"]
mod staked;

use alloy_primitives::{keccak256, U256};
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::str::FromStr;
use test_support::client::TestClient;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::world;

/// Whole tokens (18 decimals: both devnet tokens) as base units.
fn units(whole: &Value) -> U256 {
    let whole = text(whole);
    let (int, frac) = whole.split_once('.').unwrap_or((&whole, ""));
    assert!(frac.len() <= 18, "{whole}");
    U256::from_str(&format!("{int}{frac:0<18}")).unwrap()
}

fn number(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("a number: {value}"))
}

/// One of the manager's logs of a token, as the chain has it.
#[derive(Debug)]
struct Log {
    name: &'static str,
    block: u64,
    hash: String,
    index: u64,
    /// Liquidity or the collect's recipient word, then the two amounts (none for a Transfer).
    words: Vec<U256>,
    topics: Vec<String>,
}

fn quantity(value: &Value) -> u64 {
    u64::from_str_radix(text(value).trim_start_matches("0x"), 16).unwrap()
}

/// Every log of the position manager naming `token`, in chain order (straight from anvil).
async fn chain_logs(devnet: &Devnet, token: &str) -> Vec<Log> {
    let word = format!("0x{:064x}", U256::from_str(token).unwrap());
    let topic =
        |signature: &str| format!("0x{}", alloy_primitives::hex::encode(keccak256(signature)));
    let names = [
        ("Transfer(address,address,uint256)", "Transfer"),
        (
            "IncreaseLiquidity(uint256,uint128,uint256,uint256)",
            "IncreaseLiquidity",
        ),
        (
            "DecreaseLiquidity(uint256,uint128,uint256,uint256)",
            "DecreaseLiquidity",
        ),
        ("Collect(uint256,address,uint256,uint256)", "Collect"),
    ];
    let logs = devnet
        .rpc(
            "eth_getLogs",
            json!([{"address": devnet.address("manager"), "fromBlock": "0x0", "toBlock": "latest"}]),
        )
        .await;
    let mut found: Vec<Log> = logs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|log| {
            let topics: Vec<String> = log["topics"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| text(t).to_lowercase())
                .collect();
            let name = names.iter().find(|(s, _)| topic(s) == topics[0])?.1;
            let ours = if name == "Transfer" {
                topics.get(3) == Some(&word)
            } else {
                topics.get(1) == Some(&word)
            };
            let data =
                alloy_primitives::hex::decode(text(&log["data"]).trim_start_matches("0x")).unwrap();
            ours.then(|| Log {
                name,
                block: quantity(&log["blockNumber"]),
                hash: text(&log["transactionHash"]).to_lowercase(),
                index: quantity(&log["logIndex"]),
                words: data.chunks(32).map(U256::from_be_slice).collect(),
                topics,
            })
        })
        .collect();
    found.sort_by_key(|l| (l.block, l.index));
    found
}

/// WETH's price in USDC at `block`, from the pool's sqrt price there.
async fn weth_usd(devnet: &Devnet, block: u64) -> f64 {
    let pool = devnet.run("pool", &["--block", &block.to_string()]).await;
    let sqrt = f64::from_str(&text(&pool["sqrtPriceX96"])).unwrap() / 2f64.powi(96);
    let token1_per_token0 = sqrt * sqrt;
    if devnet.usdc_is_token0() {
        1.0 / token1_per_token0
    } else {
        token1_per_token0
    }
}

async fn history(client: &TestClient, id: &str) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let path = format!("/positions/{id}/history");
        let query = format!("limit=3&offset={}", events.len());
        let reply = client.send(Method::GET, &path, &[], b"").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let paged = client
            .send(Method::GET, &format!("{path}?{query}"), &[], b"")
            .await;
        assert_eq!(paged.status, StatusCode::OK, "{}", paged.text());
        let data = paged.json["data"].as_array().unwrap().clone();
        let total = paged.json["total"].as_u64().unwrap();
        assert_eq!(reply.json["total"], total);
        let done = data.is_empty();
        events.extend(data);
        if done || events.len() as u64 == total {
            assert_eq!(events.len() as u64, total);
            return events;
        }
    }
}

/// The position of `token` in the caller's wallet positions.
async fn position(client: &TestClient, token: &str) -> Value {
    let listed = client.list("source=wallet&limit=100").await.json;
    listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| text(&p["tokenId"]) == token)
        .cloned()
        .unwrap_or_else(|| panic!("token {token} listed: {listed}"))
}

/// Base units of tokenA/tokenB as the protocol's token0/token1.
fn protocol_order(view: &Value, devnet: &Devnet) -> [&'static str; 2] {
    if text(&view["tokenA"]["address"]).eq_ignore_ascii_case(&devnet.address("token0")) {
        ["tokenA", "tokenB"]
    } else {
        ["tokenB", "tokenA"]
    }
}

/// Every event the API shows is the chain's log, valued at its block; answers the ledger the
/// logs make (principal first), per protocol token.
async fn assert_history_is_the_chains(
    devnet: &Devnet,
    view: &Value,
    events: &[Value],
    wallet: &str,
) -> BTreeMap<&'static str, [U256; 2]> {
    let token = text(&view["tokenId"]);
    let logs = chain_logs(devnet, &token).await;
    assert_eq!(events.len(), logs.len(), "{events:?}\n{logs:?}");
    let order = protocol_order(view, devnet);
    let zero = [U256::ZERO; 2];
    let mut ledger: BTreeMap<&str, [U256; 2]> =
        ["deposited", "withdrawn", "collected", "fees", "uncollected"]
            .into_iter()
            .map(|k| (k, zero))
            .collect();
    let wallet_word = format!("0x{:0>64}", wallet.trim_start_matches("0x").to_lowercase());
    for (event, log) in events.iter().zip(&logs) {
        assert_eq!(event["block"], log.block, "{event}");
        assert_eq!(text(&event["transactionHash"]), log.hash, "{event}");
        assert_eq!(event["logIndex"], log.index, "{event}");
        assert_eq!(event["priced"], "at-block", "{event}");
        let amounts = |event: &Value| order.map(|t| units(&event[t]["amount"]));
        let kind = text(&event["kind"]);
        match log.name {
            "Transfer" => {
                let expected = if log.topics[1] == format!("0x{:064x}", 0) {
                    "mint"
                } else if log.topics[2] == wallet_word {
                    "transfer-in"
                } else {
                    "transfer-out"
                };
                assert_eq!(kind, expected, "{event}");
                assert!(event["liquidity"].is_null());
                continue;
            }
            "IncreaseLiquidity" => {
                assert_eq!(kind, "deposit");
                assert_eq!(text(&event["liquidity"]), log.words[0].to_string());
                assert_eq!(amounts(event), [log.words[1], log.words[2]], "{event}");
                let d = ledger["deposited"];
                ledger.insert("deposited", [d[0] + log.words[1], d[1] + log.words[2]]);
            }
            "DecreaseLiquidity" => {
                assert_eq!(kind, "withdraw");
                assert_eq!(text(&event["liquidity"]), format!("-{}", log.words[0]));
                assert_eq!(amounts(event), [log.words[1], log.words[2]], "{event}");
                for key in ["withdrawn", "uncollected"] {
                    let w = ledger[key];
                    ledger.insert(key, [w[0] + log.words[1], w[1] + log.words[2]]);
                }
            }
            _ => {
                assert_eq!(kind, "collect");
                assert_eq!(amounts(event), [log.words[1], log.words[2]], "{event}");
                let owed = ledger["uncollected"];
                let principal = [0, 1].map(|t| log.words[1 + t].min(owed[t]));
                let fees = [0, 1].map(|t| log.words[1 + t] - principal[t]);
                for t in 0..2 {
                    assert_eq!(
                        units(&event[order[t]]["principal"]),
                        principal[t],
                        "{event}"
                    );
                    assert_eq!(units(&event[order[t]]["fees"]), fees[t], "{event}");
                }
                let f = ledger["fees"];
                ledger.insert("fees", [f[0] + fees[0], f[1] + fees[1]]);
                ledger.insert(
                    "uncollected",
                    [owed[0] - principal[0], owed[1] - principal[1]],
                );
            }
        }
        // Valued at its block: USDC at 1, WETH at the pool's price there.
        let weth = weth_usd(devnet, log.block).await;
        let [usdc_side, weth_side] = if devnet.usdc_is_token0() {
            [0, 1]
        } else {
            [1, 0]
        };
        let whole = |t: usize| f64::from_str(&text(&event[order[t]]["amount"])).unwrap();
        let expected = whole(usdc_side) + whole(weth_side) * weth;
        assert!(
            (number(&event["valueUsd"]) - expected).abs() < 0.011,
            "{event}: {expected}"
        );
    }
    ledger
}

/// The position's figures against the contracts and the formulas of decisions 28 and 44.
async fn assert_figures(
    devnet: &Devnet,
    view: &Value,
    events: &[Value],
    ledger: &BTreeMap<&str, [U256; 2]>,
) {
    assert_eq!(view["historyComplete"], true, "{view}");
    let order = protocol_order(view, devnet);
    let quote = devnet
        .run(
            "position-quote",
            &[
                "--token-id",
                &text(&view["tokenId"]),
                "--block",
                &text(&view["readHeight"]),
            ],
        )
        .await;
    for (t, token) in order.iter().enumerate() {
        let of = |field: &str| units(&view[token][field]);
        assert_eq!(of("deposited"), ledger["deposited"][t], "{view}");
        assert_eq!(of("withdrawn"), ledger["withdrawn"][t], "{view}");
        assert_eq!(of("feesCollected"), ledger["fees"][t], "{view}");
        assert_eq!(
            of("uncollectedPrincipal"),
            ledger["uncollected"][t],
            "{view}"
        );
        // What collect pays now (an eth_call from the holder) is unclaimed fees and the
        // uncollected principal.
        let owed = U256::from_str(&text(&quote[format!("fees{t}").as_str()])).unwrap();
        assert_eq!(
            of("feesUnclaimed") + of("uncollectedPrincipal"),
            owed,
            "{view}"
        );
        assert_eq!(
            of("feesEarned"),
            of("feesCollected") + of("feesUnclaimed"),
            "{view}"
        );
    }
    // Cost basis: the deposits at their blocks' prices; withdrawn and collected fees at theirs.
    let sum = |kind: &str, field: &dyn Fn(&Value) -> f64| -> f64 {
        events.iter().filter(|e| e["kind"] == kind).map(field).sum()
    };
    let cents =
        |a: f64, b: f64, n: f64| assert!((a - b).abs() <= 0.006 * n.max(1.0), "{a} != {b}: {view}");
    let n = events.len() as f64;
    cents(
        number(&view["costBasisUsd"]),
        sum("deposit", &|e| number(&e["valueUsd"])),
        n,
    );
    cents(
        number(&view["withdrawnUsd"]),
        sum("withdraw", &|e| number(&e["valueUsd"])),
        n,
    );
    // Collected fees at their blocks' prices (USDC at 1, WETH at the pool's price there).
    let mut collected_usd = 0.0;
    for e in events.iter().filter(|e| e["kind"] == "collect") {
        let weth = weth_usd(devnet, e["block"].as_u64().unwrap()).await;
        for t in ["tokenA", "tokenB"] {
            let usdc = text(&view[t]["address"]).eq_ignore_ascii_case(&devnet.address("usdc"));
            collected_usd +=
                f64::from_str(&text(&e[t]["fees"])).unwrap() * if usdc { 1.0 } else { weth };
        }
    }
    cents(number(&view["feesCollectedUsd"]), collected_usd, n);
    // PnL: what it holds now less its uncollected principal (counted as withdrawn), plus what
    // left it, less the cost basis.
    let weth_now = weth_usd(devnet, view["readHeight"].as_u64().unwrap()).await;
    let usd_of = |field: &str| -> f64 {
        ["tokenA", "tokenB"]
            .into_iter()
            .map(|t| {
                let usdc = text(&view[t]["address"]).eq_ignore_ascii_case(&devnet.address("usdc"));
                f64::from_str(&text(&view[t][field])).unwrap() * if usdc { 1.0 } else { weth_now }
            })
            .sum()
    };
    let pnl = number(&view["valueUsd"]) - usd_of("uncollectedPrincipal")
        + number(&view["withdrawnUsd"])
        + number(&view["feesCollectedUsd"])
        - number(&view["costBasisUsd"]);
    cents(number(&view["pnlUsd"]), pnl, 4.0);
    // HODL: deposited less withdrawn units at today's prices.
    let hodl = usd_of("deposited") - usd_of("withdrawn");
    cents(number(&view["hodlValueUsd"]), hodl, 4.0);
}

async fn a_positions_whole_story(store_args: &[&str]) {
    let devnet = Devnet::up(3000).await;
    let wallet = text(&devnet.run("account", &["--index", "1"]).await["address"]);
    let second = text(&devnet.run("account", &["--index", "2"]).await["address"]);
    let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
    for account in [&wallet, &second] {
        devnet.run("fund", &["--account", account]).await;
        for token in ["usdc", "weth"] {
            devnet
                .run(
                    "approve",
                    &["--account", account, "--token", token, "--amount", max],
                )
                .await;
        }
    }
    let tick = devnet.run("pool", &[]).await["tick"].as_i64().unwrap() as i32;
    let at = |offset: i32| (tick + offset).div_euclid(60) * 60;
    let (lower, upper) = (at(-1200).to_string(), at(1200).to_string());
    let thousand = "1000000000000000000000";
    let mint_from = |account: String| {
        let (lower, upper) = (lower.clone(), upper.clone());
        let devnet = &devnet;
        async move {
            let minted = devnet
                .run(
                    "mint",
                    &[
                        "--account",
                        &account,
                        "--lower",
                        &lower,
                        "--upper",
                        &upper,
                        "--amount0",
                        thousand,
                        "--amount1",
                        thousand,
                    ],
                )
                .await;
            (
                text(&minted["tokenId"]),
                minted["liquidity"]
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(|| text(&minted["liquidity"])),
            )
        }
    };
    let (story, liquidity) = mint_from(wallet.clone()).await;
    devnet.swap_both_ways("20", "30000").await;
    devnet.advance_time(3600).await;
    let added = devnet
        .run(
            "increase",
            &[
                "--account",
                &wallet,
                "--token-id",
                &story,
                "--amount0",
                "500000000000000000000",
                "--amount1",
                "500000000000000000000",
            ],
        )
        .await;
    let total =
        u128::from_str(&liquidity).unwrap() + u128::from_str(&text(&added["liquidity"])).unwrap();
    devnet
        .run(
            "withdraw",
            &[
                "--account",
                &wallet,
                "--token-id",
                &story,
                "--liquidity",
                &(total / 2).to_string(),
            ],
        )
        .await;
    devnet.advance_time(3600).await;
    devnet
        .run(
            "collect",
            &[
                "--account",
                &wallet,
                "--token-id",
                &story,
                "--amount0",
                "1000000000000000",
                "--amount1",
                "2000000000000000",
            ],
        )
        .await;
    devnet
        .run("swap", &["--sell", "weth", "--amount", "10"])
        .await;
    devnet.withdraw(&wallet, &story, None).await;
    // Another position, minted by the second account and transferred in after fees accrued.
    let (arrived, _) = mint_from(second.clone()).await;
    devnet
        .run("swap", &["--sell", "usdc", "--amount", "20000"])
        .await;
    devnet.transfer(&second, &arrived, &wallet).await;

    // A third, half withdrawn by the second account and not collected, then transferred in
    // (no swap after it): the owed principal comes with it.
    let (handed, _) = mint_from(second.clone()).await;
    let quote = devnet.run("position-quote", &["--token-id", &handed]).await;
    let half = (text(&quote["liquidity"]).parse::<u128>().unwrap() / 2).to_string();
    devnet.withdraw(&second, &handed, Some(&half)).await;
    devnet.transfer(&second, &handed, &wallet).await;

    let mut args = vec!["--log-range", "7"];
    args.extend_from_slice(store_args);
    let server = world::local_api(&devnet, &devnet.rpc, &args).await;
    let alice = world::user(&server, "alice").await;
    let ops = world::operator(&server).await;
    devnet.link_account(&alice, &wallet).await;

    let view = position(&alice, &story).await;
    let events = history(&alice, text(&view["id"]).as_str()).await;
    let kinds: Vec<String> = events.iter().map(|e| text(&e["kind"])).collect();
    assert_eq!(
        kinds,
        ["mint", "deposit", "deposit", "withdraw", "collect", "withdraw"],
        "{events:?}"
    );
    let ledger = assert_history_is_the_chains(&devnet, &view, &events, &wallet).await;
    assert_figures(&devnet, &view, &events, &ledger).await;
    assert_eq!(view["status"], "closed", "{view}");
    assert_eq!(view["closeReason"], "withdrawn", "{view}");
    // Never principal as fees: the fees earned are a small part of what collect would pay.
    for t in ["tokenA", "tokenB"] {
        assert!(
            units(&view[t]["uncollectedPrincipal"])
                > units(&view[t]["feesUnclaimed"]) * U256::from(10),
            "{view}"
        );
    }

    // Transferred in: its events before are listed, counted from the transfer.
    let came = position(&alice, &arrived).await;
    let came_events = history(&alice, text(&came["id"]).as_str()).await;
    let kinds: Vec<String> = came_events.iter().map(|e| text(&e["kind"])).collect();
    assert_eq!(kinds, ["mint", "deposit", "transfer-in"], "{came_events:?}");
    assert_eq!(came["historyComplete"], true, "{came}");
    let quote = devnet
        .run(
            "position-quote",
            &[
                "--token-id",
                &arrived,
                "--block",
                &text(&came_events[2]["block"]),
            ],
        )
        .await;
    let order = protocol_order(&came, &devnet);
    for (t, token) in order.iter().enumerate() {
        // Its deposit is the principal it held at the transfer, as a withdrawal pays.
        let held = U256::from_str(&text(&quote[format!("amount{t}").as_str()])).unwrap();
        assert_eq!(units(&came[token]["deposited"]), held, "{came}");
        assert_eq!(
            units(&came_events[2][token]["amount"]),
            held,
            "{came_events:?}"
        );
    }

    // The owed principal it came with counts once: in its cost basis, and withdrawn at its
    // arrival; with no price move since, its PnL is its fees since (none).
    let handed_view = position(&alice, &handed).await;
    assert_eq!(handed_view["historyComplete"], true, "{handed_view}");
    assert_handed_over_counts_once(&handed_view);

    // The portfolio: the closed position's PnL is realized, the open one's unrealized.
    let overview = alice.portfolio().await.json;
    let cents = |a: &Value, b: &Value| (number(a) - number(b)).abs() <= 0.011;
    assert!(
        cents(&overview["realizedPnlUsd"], &view["pnlUsd"]),
        "{overview} {view}"
    );
    assert!(
        cents(&overview["unrealizedPnlUsd"], &came["pnlUsd"]),
        "{overview} {came}"
    );
    // The open positions' fees (a closed one's are in its realized PnL, as for simulated ones).
    assert!(
        cents(&overview["totalFeesEarnedUsd"], &came["feesEarnedUsd"]),
        "{overview}"
    );

    // After the link: the rest collected, the arrived position sent back; the next sync reads on.
    devnet.collect(&wallet, &story).await;
    devnet.transfer(&wallet, &arrived, &second).await;
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    let view = position(&alice, &story).await;
    let events = history(&alice, text(&view["id"]).as_str()).await;
    assert_eq!(events.last().unwrap()["kind"], "collect", "{events:?}");
    let ledger = assert_history_is_the_chains(&devnet, &view, &events, &wallet).await;
    assert_figures(&devnet, &view, &events, &ledger).await;
    for t in ["tokenA", "tokenB"] {
        assert_eq!(view[t]["uncollectedPrincipal"], "0", "{view}");
    }
    let gone = position(&alice, &arrived).await;
    assert_eq!(gone["closeReason"], "transferred", "{gone}");
    // Collected by its new holder: the principal left, and still counts once.
    devnet.collect(&wallet, &handed).await;
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    let collected = position(&alice, &handed).await;
    for t in ["tokenA", "tokenB"] {
        assert_eq!(collected[t]["uncollectedPrincipal"], "0", "{collected}");
    }
    assert!(number(&collected["pnlUsd"]).abs() <= 0.01, "{collected}");
    let gone_events = history(&alice, text(&gone["id"]).as_str()).await;
    assert_eq!(
        gone_events.last().unwrap()["kind"],
        "transfer-out",
        "{gone_events:?}"
    );

    assert_the_export_is_the_history(&devnet, (&alice, &wallet), &view, &events).await;

    // Another caller sees none of it.
    let bob = world::user(&server, "bob").await;
    let reply = bob
        .send(
            Method::GET,
            &format!("/positions/{}/history", text(&view["id"])),
            &[],
            b"",
        )
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.text());
}

test_support::on_both_stores!(a_positions_whole_story => a_positions_whole_story);

/// The export (issue 50): Koinly's and CoinTracker's headers byte for byte; the ledger's rows of
/// `view`'s position are its history's token movements to the unit: each deposit sent, each
/// collect's principal and fees received apart, as the history splits them; each transaction
/// the wallet sent has its gas, what its receipt says it cost (`gasUsed × effectiveGasPrice`).
async fn assert_the_export_is_the_history(
    devnet: &Devnet,
    (alice, wallet): (&TestClient, &str),
    view: &Value,
    events: &[Value],
) {
    let export = |format: &'static str| async move {
        let path = format!("/history/export?format={format}");
        let reply = alice.send(Method::GET, &path, &[], b"").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        reply.text()
    };
    let koinly = export("koinly").await;
    assert_eq!(koinly.lines().next(), Some(shared::export::KOINLY_HEADER));
    assert!(koinly.contains(",Reward,"), "{koinly}");
    let tracker = export("cointracker").await;
    assert_eq!(
        tracker.lines().next(),
        Some(shared::export::COINTRACKER_HEADER)
    );
    assert!(tracker.contains(",interest"), "{tracker}");
    let ledger = export("ledger").await;
    let id = text(&view["id"]);
    let symbols = [
        text(&view["tokenA"]["symbol"]),
        text(&view["tokenB"]["symbol"]),
    ];
    let mut expected: BTreeMap<(String, String, String), U256> = BTreeMap::new();
    for event in events {
        let tx = text(&event["transactionHash"]).to_lowercase();
        for (t, symbol) in ["tokenA", "tokenB"].iter().zip(&symbols) {
            let parts: &[(&str, &str)] = match event["kind"].as_str() {
                Some("deposit") => &[("amount", "deposit")],
                Some("collect") => &[("principal", "principal"), ("fees", "fees")],
                _ => &[],
            };
            for (field, kind) in parts {
                let amount = units(&event[*t][*field]);
                if amount > U256::ZERO {
                    let key = (tx.clone(), kind.to_string(), symbol.clone());
                    *expected.entry(key).or_default() += amount;
                }
            }
        }
    }
    for tx in events
        .iter()
        .map(|e| text(&e["transactionHash"]).to_lowercase())
    {
        let receipt = devnet.rpc("eth_getTransactionReceipt", json!([tx])).await;
        if !text(&receipt["from"]).eq_ignore_ascii_case(wallet) {
            continue;
        }
        let hex = |name: &str| {
            U256::from_str_radix(text(&receipt[name]).trim_start_matches("0x"), 16).unwrap()
        };
        let key = (tx.clone(), "gas".to_string(), "ETH".to_string());
        expected.insert(key, hex("gasUsed") * hex("effectiveGasPrice"));
    }
    let mut exported: BTreeMap<(String, String, String), U256> = BTreeMap::new();
    let mut lines = ledger.lines();
    assert_eq!(lines.next(), Some(shared::export::LEDGER_HEADER));
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if cells[5] != id {
            continue;
        }
        let key = (
            cells[2].to_lowercase(),
            cells[6].to_string(),
            cells[9].to_string(),
        );
        *exported.entry(key).or_default() += U256::from_str(cells[10]).unwrap();
    }
    for kind in ["fees", "gas"] {
        assert!(expected.keys().any(|k| k.1 == kind), "{kind}: {events:?}");
    }
    assert_eq!(exported, expected, "{ledger}");
    // Koinly and CoinTracker carry the same gas in their fee columns.
    assert!(koinly.contains(",ETH,"), "{koinly}");
}

/// A node that cannot serve old state ("missing trie node") and a provider that fails part way
/// through a backfill: the events are valued at the nearest state and say so, what was read is
/// kept, the position says its history is not complete (no fee figure rather than a wrong
/// one), and the next refresh reads on from there to the same events as the chain's, once each.
#[tokio::test]
async fn a_backfill_survives_a_pruned_node_and_a_provider_failing_part_way() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use test_support::rpc_stub::RpcStub;

    let devnet = Devnet::up(3000).await;
    let wallet = devnet.account(1).await;
    let range = devnet.range_around(600).await;
    let token = devnet
        .mint_to(&wallet, range, None, "1000000000000000000000")
        .await;
    devnet
        .run("swap", &["--sell", "weth", "--amount", "5"])
        .await;
    let id = ["--account", wallet.as_str(), "--token-id", token.as_str()];
    devnet
        .run("withdraw", &[&id[..], &["--liquidity", "1000000"]].concat())
        .await;
    devnet
        .run("swap", &["--sell", "usdc", "--amount", "9000"])
        .await;
    devnet
        .run(
            "collect",
            &[&id[..], &["--amount0", "7", "--amount1", "9"]].concat(),
        )
        .await;
    // One block more: the head's state is served, every event's is not.
    devnet.rpc("evm_mine", json!([])).await;
    let head = quantity(&devnet.rpc("eth_blockNumber", json!([])).await);

    // State before `pruned_below` is gone; logs past `failing_from` time out while `failing`.
    let pruned_below = head;
    let failing = Arc::new(AtomicBool::new(true));
    let failing_from = head - 2;
    let fails = failing.clone();
    let hashes: BTreeMap<String, u64> = {
        let mut hashes = BTreeMap::new();
        for n in 0..=head {
            let block = devnet
                .rpc("eth_getBlockByNumber", json!([format!("0x{n:x}"), false]))
                .await;
            hashes.insert(text(&block["hash"]).to_lowercase(), n);
        }
        hashes
    };
    let proxy = RpcStub::proxy(&devnet.rpc, move |call| {
        let params = &call["params"];
        match call["method"].as_str()? {
            "eth_call" => {
                let hash = params[1]["blockHash"].as_str()?.to_lowercase();
                let number = *hashes.get(&hash)?;
                (number < pruned_below).then(|| {
                    Err(json!({"code": -32000, "message": "missing trie node 4f1c (path ) state is not available"}))
                })
            }
            "eth_getLogs" if fails.load(Ordering::SeqCst) => {
                let to = quantity(&params[0]["toBlock"]);
                (to >= failing_from).then(|| Err(json!({"code": -32000, "message": "request timed out"})))
            }
            _ => None,
        }
    })
    .await;

    let server = world::local_api(&devnet, &proxy.url, &["--log-range", "2"]).await;
    let alice = world::user(&server, "alice").await;
    let ops = world::operator(&server).await;
    devnet.link_account(&alice, &wallet).await;

    let partial = position(&alice, &token).await;
    assert_eq!(partial["historyComplete"], false, "{partial}");
    assert!(
        text(&partial["historyReason"]).contains("request timed out"),
        "{partial}"
    );
    assert!(partial["tokenA"]["feesEarned"].is_null(), "{partial}");
    assert!(partial["pnlUsd"].is_null(), "{partial}");
    assert!(
        partial["valueUsd"].is_number(),
        "what it holds is still known: {partial}"
    );
    let kept = history(&alice, text(&partial["id"]).as_str()).await;
    assert!(!kept.is_empty(), "what was read is kept");
    assert!(kept
        .iter()
        .all(|e| e["block"].as_u64().unwrap() < failing_from));
    assert!(kept.iter().all(|e| e["priced"] == "nearest"), "{kept:?}");

    // The provider recovers: the next refresh reads on from where the last stopped.
    failing.store(false, Ordering::SeqCst);
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    let whole = position(&alice, &token).await;
    assert_eq!(whole["historyComplete"], true, "{whole}");
    assert_eq!(whole["pricedNearest"], true, "{whole}");
    let events = history(&alice, text(&whole["id"]).as_str()).await;
    let logs = chain_logs(&devnet, &token).await;
    let ours: Vec<(u64, u64)> = events
        .iter()
        .map(|e| {
            (
                e["block"].as_u64().unwrap(),
                e["logIndex"].as_u64().unwrap(),
            )
        })
        .collect();
    let theirs: Vec<(u64, u64)> = logs.iter().map(|l| (l.block, l.index)).collect();
    assert_eq!(ours, theirs, "each event once, in chain order");
    assert_eq!(events[..kept.len()], kept[..]);
    assert!(
        events.iter().all(|e| e["priced"] == "nearest"),
        "{events:?}"
    );
    // Principal first: the collect's 7 and 9 base units are withdrawn principal, not fees.
    let collect = events.iter().find(|e| e["kind"] == "collect").unwrap();
    for t in ["tokenA", "tokenB"] {
        assert_eq!(collect[t]["fees"], "0", "{collect}");
    }
}

/// A position transferred in with its previous holder's withdrawn, uncollected principal: the
/// principal shows as withdrawn and uncollected, and the PnL (no price move, no fees since)
/// is nothing, not minus the owed principal.
fn assert_handed_over_counts_once(view: &Value) {
    for t in ["tokenA", "tokenB"] {
        let owed = units(&view[t]["uncollectedPrincipal"]);
        assert_eq!(units(&view[t]["withdrawn"]), owed, "{view}");
    }
    assert!(
        units(&view["tokenA"]["uncollectedPrincipal"]) > U256::ZERO
            || units(&view["tokenB"]["uncollectedPrincipal"]) > U256::ZERO,
        "{view}"
    );
    assert!(number(&view["pnlUsd"]).abs() <= 0.01, "{view}");
}
