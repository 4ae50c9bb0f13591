//! Wallets on the devnet (anvil with the real Uniswap v3 contracts): one of anvil's accounts,
//! not the deployer, links through local-api by `personal_sign` of its challenge (anvil signs
//! for it); the positions it holds (in range, out of range on each side, in a pool outside the
//! catalog with a token of the test's own, one withdrawn with its fees left, one transferred
//! away) are listed by the API as the caller's positions, each compared with the position
//! manager's own answers at the block of its read: `positions`, `decreaseLiquidity` and
//! `collect` as `eth_call`s from the holder. On memory and on DynamoDB (moto).

/// Uniswap v4 positions (decision 62): the same story on its singleton.
#[path = "wallets_devnet/v4.rs"]
mod v4;

/// Acting on Uniswap v4 positions: collect, add, decrease and close (issue 52).
#[path = "wallets_devnet/v4_actions.rs"]
mod v4_actions;

/// Opening and moving Uniswap v4 positions (issue 52).
#[path = "wallets_devnet/v4_opens.rs"]
mod v4_opens;

/// Safes and other contract wallets, linked by ERC-1271 and ERC-6492 (issue 51).
#[path = "wallets_devnet/contract_wallets.rs"]
mod contract_wallets;

use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::portfolio::assert_portfolio_is_its_positions;
use test_support::wallets::post;
use test_support::world;

/// Mints a position of 1,000 of each token at most for `recipient` (the deployer pays); its
/// token id.
async fn mint(devnet: &Devnet, recipient: &str, range: (i32, i32), pool: Option<&Value>) -> String {
    devnet
        .mint_to(recipient, range, pool, "1000000000000000000000")
        .await
}

/// Whole tokens written as a decimal string, in base units of `decimals`.
fn units(whole: &str, decimals: usize) -> String {
    let (int, frac) = whole.split_once('.').unwrap_or((whole, ""));
    assert!(frac.len() <= decimals, "{whole}");
    let digits = format!("{int}{frac:0<decimals$}");
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() {
        "0".into()
    } else {
        trimmed.into()
    }
}

/// The wallet positions the API lists for `client`, by token id.
async fn listed(
    client: &test_support::client::TestClient,
) -> std::collections::BTreeMap<String, Value> {
    let reply = client.list("source=wallet&limit=100").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let data = reply.json["data"].as_array().unwrap().clone();
    assert_eq!(reply.json["total"], data.len(), "{}", reply.json);
    data.into_iter().map(|p| (text(&p["tokenId"]), p)).collect()
}

/// The API's view of a wallet position against the position manager's answers at its read.
async fn assert_view_is_the_chains(devnet: &Devnet, view: &Value) {
    let id = text(&view["tokenId"]);
    let block = text(&view["readHeight"]);
    let chain = devnet
        .run("position-quote", &["--token-id", &id, "--block", &block])
        .await;
    assert_eq!(view["source"], "wallet");
    for (ours, theirs) in [
        ("liquidity", "liquidity"),
        ("tickLower", "tickLower"),
        ("tickUpper", "tickUpper"),
    ] {
        assert_eq!(text(&view[ours]), text(&chain[theirs]), "{ours}: {view}");
    }
    // tokenA is the catalog's base asset where it has the pool, token0 elsewhere.
    let (t0, t1) = if text(&view["tokenA"]["address"]) == text(&chain["token0"]) {
        ("tokenA", "tokenB")
    } else {
        ("tokenB", "tokenA")
    };
    assert_eq!(text(&view[t0]["address"]), text(&chain["token0"]), "{view}");
    assert_eq!(text(&view[t1]["address"]), text(&chain["token1"]), "{view}");
    let whole = |v: &Value| units(&text(v), 18);
    for (token, index) in [(t0, "0"), (t1, "1")] {
        let amount = text(&chain[format!("amount{index}").as_str()]);
        let fees = text(&chain[format!("fees{index}").as_str()]);
        assert_eq!(whole(&view[token]["amount"]), amount, "{token}: {view}");
        // What collect pays is the unclaimed fees and the uncollected principal (the history's
        // split, principal first); fees earned are those collected and those unclaimed.
        let sum = |a: &str, b: &str| {
            let [a, b] = [a, b].map(|f| whole(&view[token][f]).parse::<u128>().unwrap());
            (a + b).to_string()
        };
        assert_eq!(
            sum("feesUnclaimed", "uncollectedPrincipal"),
            fees,
            "{token}: {view}"
        );
        assert_eq!(
            whole(&view[token]["feesEarned"]),
            sum("feesCollected", "feesUnclaimed"),
            "{token}: {view}"
        );
    }
}

/// The whole story on one devnet, with local-api on `store_args` (memory or DynamoDB).
async fn wallet_positions_follow_the_chain(store_args: &[&str]) {
    let devnet = Devnet::up(3000).await;
    let wallet = text(&devnet.run("account", &["--index", "1"]).await["address"]);
    let stranger = text(&devnet.run("account", &["--index", "2"]).await["address"]);
    let tick = devnet.run("pool", &[]).await["tick"].as_i64().unwrap() as i32;
    let at = |offset: i32| (tick + offset).div_euclid(60) * 60;

    let in_range = mint(&devnet, &wallet, (at(-600), at(600)), None).await;
    let below = mint(&devnet, &wallet, (at(-3000), at(-1200)), None).await;
    let above = mint(&devnet, &wallet, (at(1200), at(3000)), None).await;
    let withdrawn = mint(&devnet, &wallet, (at(-1200), at(1200)), None).await;
    let transferred = mint(&devnet, &wallet, (at(-1800), at(1800)), None).await;
    let own = devnet
        .run("new-pool", &["--symbol", "OWN", "--fee", "500"])
        .await;
    let outside = mint(&devnet, &wallet, (-600, 600), Some(&own)).await;
    // Two tokens of the test's own: no route prices either.
    let lone = devnet
        .run(
            "new-pool",
            &["--symbol", "AAA", "--fee", "500", "--with", "BBB"],
        )
        .await;
    let unpriced = mint(&devnet, &wallet, (-600, 600), Some(&lone)).await;

    // Linking through local-api: the challenge names the devnet's chain id, anvil signs it.
    let server = world::local_api(&devnet, &devnet.rpc, store_args).await;
    let alice = world::user(&server, "alice").await;
    let ops = world::operator(&server).await;
    let reply = post(
        &alice,
        "/wallets/challenge",
        &json!({"chain": "ethereum", "address": wallet.to_lowercase()}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let message = text(&reply.json["message"]);
    assert!(message.contains("\nChain ID: 31337\n"), "{message}");
    let signed = devnet
        .run("sign", &["--account", &wallet, "--message", &message])
        .await;
    let link = json!({"chain": "ethereum", "address": wallet, "message": message, "signature": signed["signature"]});
    let reply = post(&alice, "/wallets", &link).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(reply.json["address"], wallet.as_str());
    assert_eq!(reply.json["positions"], 7, "{}", reply.json);
    assert!(reply.json.get("refreshError").is_none(), "{}", reply.json);
    // The same signature again: the challenge is used.
    let reply = post(&alice, "/wallets", &link).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    let wallets = alice.send(Method::GET, "/wallets", &[], b"").await;
    assert_eq!(wallets.json["data"][0]["positions"], 7, "{}", wallets.json);

    // Read at the link: six active positions, each the chain's at its read.
    let first = listed(&alice).await;
    assert_eq!(first.len(), 7, "{first:?}");
    for view in first.values() {
        assert_eq!(view["status"], "active", "{view}");
        assert_view_is_the_chains(&devnet, view).await;
    }
    assert_eq!(alice.list("source=simulated").await.json["total"], 0);
    let outside_view = &first[&outside];
    assert_eq!(text(&outside_view["pool"]), text(&own["pool"]));
    // Its pool is discovered, and prices OWN through WETH; AAA/BBB has no route.
    assert!(
        outside_view["valueUsd"].is_number(),
        "OWN is priced through its pool with WETH: {outside_view}"
    );
    assert!(outside_view["costBasisUsd"].is_number(), "{outside_view}");
    assert!(
        first[&unpriced]["valueUsd"].is_null(),
        "{}",
        first[&unpriced]
    );
    assert!(
        first[&unpriced]["costBasisUsd"].is_null(),
        "{}",
        first[&unpriced]
    );
    assert!(first[&unpriced]["tokenA"]["valueUsd"].is_null());
    let pools = alice.pools().await.json;
    let discovered: Vec<&Value> = pools["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["discovered"] == true)
        .collect();
    let mut found: Vec<String> = discovered.iter().map(|p| text(&p["pool"])).collect();
    found.sort();
    let mut expected = vec![text(&own["pool"]), text(&lone["pool"])];
    expected.sort();
    assert_eq!(found, expected, "{pools}");
    assert!(discovered
        .iter()
        .any(|p| p["tokenA"]["priceUsd"].is_null() && p["tokenB"]["priceUsd"].is_null()));
    // Positions are not opened on a discovered pool through the API.
    let body = json!({"chain": "ethereum", "protocol": "uniswap-v3", "pool": own["pool"], "amountA": "1", "amountB": "1", "priceLower": 0.5, "priceUpper": 2});
    let reply = post(&alice, "/positions", &body).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    assert!(
        first[&in_range]["valueUsd"].is_number(),
        "{}",
        first[&in_range]
    );

    // Fees in both tokens, one position withdrawn with its fees left, one sent away.
    devnet.swap_both_ways("20", "70000").await;
    devnet.withdraw(&wallet, &withdrawn, None).await;
    devnet.transfer(&wallet, &transferred, &stranger).await;
    for round in 0..2 {
        let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
        assert_eq!(report.status, StatusCode::OK, "{}", report.text());
        // The discovered pools are read like the catalog's.
        let own_pool = report.json["pools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| text(&p["pool"]).eq_ignore_ascii_case(&text(&own["pool"])))
            .cloned()
            .unwrap_or_else(|| panic!("the discovered pool is synced: {}", report.json));
        if round == 0 {
            assert_eq!(own_pool["updated"], true, "{own_pool}");
        }
        // The withdrawal and the transfer touched the wallet: read whole once; the second sync
        // finds no event and reads no wallet (decision 45).
        let touched = if round == 0 { 1 } else { 0 };
        assert_eq!(
            report.json["wallets"]["refreshed"], touched,
            "{}",
            report.json
        );
        // Twice synced: nothing duplicates, every id stays.
        let now = listed(&alice).await;
        assert_eq!(now.len(), 7, "{now:?}");
        for (token, view) in &now {
            assert_eq!(view["id"], first[token]["id"], "{view}");
        }
    }
    let now = listed(&alice).await;
    for (token, view) in &now {
        if *token == transferred {
            assert_eq!(view["status"], "closed", "{view}");
            assert_eq!(view["closeReason"], "transferred", "{view}");
            continue;
        }
        assert_view_is_the_chains(&devnet, view).await;
        if *token == withdrawn {
            assert_eq!(view["status"], "closed", "{view}");
            assert_eq!(view["closeReason"], "withdrawn", "{view}");
            assert_ne!(
                view["tokenA"]["feesEarned"], "0",
                "fees still shown: {view}"
            );
        } else {
            assert_eq!(view["status"], "active", "{view}");
        }
    }
    for side in [&below, &above] {
        let view = &now[side];
        let zero = |t: &str| view[t]["amount"] == "0";
        assert!(zero("tokenA") != zero("tokenB"), "one side only: {view}");
    }
    let in_range_view = &now[&in_range];
    assert_ne!(
        in_range_view["tokenA"]["feesEarned"], "0",
        "{in_range_view}"
    );
    assert_ne!(
        in_range_view["tokenB"]["feesEarned"], "0",
        "{in_range_view}"
    );
    let got = alice.get(in_range_view["id"].as_str().unwrap()).await;
    assert_eq!(got.json, *in_range_view);
    let closed = alice.list("source=wallet&status=closed").await;
    assert_eq!(closed.json["total"], 2, "{}", closed.json);

    // The portfolio: wallet positions count like the others; OWN's has no USD value.
    let portfolio = alice.portfolio().await.json;
    assert_eq!(portfolio["positions"], 5, "{portfolio}");
    assert_eq!(portfolio["unpricedPositions"], 1, "{portfolio}");
    assert_eq!(portfolio["chains"][0]["chain"], "ethereum", "{portfolio}");
    assert_eq!(portfolio["chains"][0]["percentage"], 100, "{portfolio}");
    assert_eq!(
        portfolio["chains"][0]["valueUsd"], portfolio["totalValueUsd"],
        "{portfolio}"
    );

    // Simulated positions beside them, one of them closed; then a swap that is no event of any
    // position: the portfolio still sums what each position shows, the wallet positions valued
    // at the pool's synced state (decision 57), not at their last whole read.
    let pool = devnet.address("pool");
    let offer = |lower: u32, upper: u32| {
        json!({"chain": "ethereum", "protocol": "uniswap-v3", "pool": pool, "amountA": "1",
               "amountB": "3000", "priceLower": lower, "priceUpper": upper})
    };
    alice.open(offer(2500, 3600)).await;
    let closing = alice.open(offer(2000, 4000)).await;
    let reply = alice.close(&text(&closing["id"])).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_portfolio_is_its_positions(&alice).await;
    let before = alice.portfolio().await.json;
    devnet
        .run("swap", &["--sell", "usdc", "--amount", "150000"])
        .await;
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.json["wallets"]["refreshed"], 0, "{}", report.json);
    let after = assert_portfolio_is_its_positions(&alice).await;
    assert_ne!(before["totalValueUsd"], after["totalValueUsd"], "{after}");

    // Unlinked: its positions leave the lists and the portfolio; the simulated ones stay.
    let path = format!("/wallets/ethereum/{wallet}");
    let reply = alice.send(Method::DELETE, &path, &[], b"").await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", reply.text());
    assert_eq!(alice.list("source=wallet").await.json["total"], 0);
    assert_eq!(alice.portfolio().await.json["positions"], 1);
    assert_portfolio_is_its_positions(&alice).await;
}

test_support::on_both_stores!(wallet_positions_follow_the_chain => wallet_positions_follow_the_chain);

/// One pool, one price (decision 63): a position on a pool outside the catalog, too shallow to
/// price a token, is valued at the pool's state read by every sync, as `GET /pools` shows it,
/// after a swap moves it; its amounts and fees are what the chain answers at that block.
async fn a_pool_outside_the_catalog_has_one_price(store_args: &[&str]) {
    let devnet = Devnet::up(3000).await;
    let wallet = text(&devnet.run("account", &["--index", "1"]).await["address"]);
    let own = devnet
        .run("new-pool", &["--symbol", "OWN", "--fee", "500"])
        .await;
    // Too shallow to price OWN: the sync would read it only hourly for its depth.
    let token = devnet
        .mint_to(&wallet, (-6000, 6000), Some(&own), "1000000000000000")
        .await;
    let mut args = vec!["--stale-after", "2"];
    args.extend_from_slice(store_args);
    let server = world::local_api(&devnet, &devnet.rpc, &args).await;
    let alice = world::user(&server, "alice").await;
    let ops = world::operator(&server).await;
    devnet.link_account(&alice, &wallet).await;
    let swap = [
        "--token",
        &text(&own["token"]),
        "--fee",
        "500",
        "--sell",
        "weth",
        "--amount",
        "50",
    ];
    devnet.run("swap", &swap).await;
    world::sync(&ops).await;
    let view = listed(&alice).await[&token].clone();
    let pools = ops.send(Method::GET, "/pools", &[], b"").await;
    let pool = pools.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| text(&p["pool"]).eq_ignore_ascii_case(&text(&own["pool"])))
        .unwrap_or_else(|| panic!("the discovered pool is listed: {}", pools.json))
        .clone();
    assert_eq!(view["stale"], false, "{view}");
    // The same double, written by the pool's exact-decimal writer and the position's.
    let price = |v: &Value| v["currentPrice"].as_f64().unwrap();
    let apart = (price(&view) - price(&pool)).abs() / price(&pool);
    assert!(apart < 1e-14, "{view} {pool}");
    assert_ne!(
        text(&pool["sqrtPrice"]),
        "79228162514264337593543950336",
        "moved: {pool}"
    );
    assert_eq!(
        text(&view["readHeight"]),
        text(&pool["block"]),
        "{view} {pool}"
    );
    assert_view_is_the_chains(&devnet, &view).await;

    // Its pool not read again for longer than the freshness allows: stale, its age its
    // `refreshedAt`; fresh again at the next sync.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let aged = listed(&alice).await[&token].clone();
    assert_eq!(aged["stale"], true, "{aged}");
    assert_eq!(aged["refreshedAt"], view["refreshedAt"], "{aged}");
    // A new block to read (a devnet mines only when sent something).
    devnet.advance_time(1).await;
    world::sync(&ops).await;
    assert_eq!(listed(&alice).await[&token]["stale"], false);
}

test_support::on_both_stores!(one_price_outside_the_catalog => a_pool_outside_the_catalog_has_one_price);

/// The cost of one wallet refresh: a wallet with 10 positions on the devnet read at one block
/// (HTTP requests, JSON-RPC calls, milliseconds), five times.
#[tokio::test]
#[ignore = "a benchmark: scripts/bench-wallet-refresh.sh runs it and prints its figures"]
async fn bench_wallet_refresh() {
    use shared::chain::refresh::confirmed_block;
    use shared::chain::wallets::read_wallet;
    use shared::chain::{RpcClient, RPC_TIMEOUT};
    use std::sync::atomic::Ordering;
    let devnet = Devnet::up(3000).await;
    let wallet = text(&devnet.run("account", &["--index", "1"]).await["address"]);
    let tick = devnet.run("pool", &[]).await["tick"].as_i64().unwrap() as i32;
    for i in 0..10 {
        let low = (tick - 600 - 120 * i).div_euclid(60) * 60;
        let high = (tick + 600 + 120 * i).div_euclid(60) * 60;
        mint(&devnet, &wallet, (low, high), None).await;
    }
    let file: shared::catalog::CatalogFile =
        serde_json::from_str(&std::fs::read_to_string(&devnet.catalog).unwrap()).unwrap();
    let deployments: Vec<_> = file.deployments.iter().collect();
    println!("| run | HTTP requests | JSON-RPC calls | ms |");
    println!("|---|---:|---:|---:|");
    for run in 1..=5 {
        let client = RpcClient::new(&devnet.rpc, RPC_TIMEOUT).unwrap();
        let started = std::time::Instant::now();
        let block = confirmed_block(&client, 0).await.unwrap();
        let holdings = read_wallet(&client, &deployments, &[], &wallet, &block)
            .await
            .unwrap();
        let millis = started.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(holdings.positions.len(), 10);
        println!(
            "| {run} | {} | {} | {millis:.1} |",
            client.stats.requests.load(Ordering::Relaxed),
            client.stats.calls.load(Ordering::Relaxed)
        );
    }
}

/// The cost of the scheduled refresh of 100 wallets through the queue: each holding one position
/// on the devnet, queued on moto's SQS, consumed ten a batch by `refresh_batch` on DynamoDB
/// (moto): HTTP requests and JSON-RPC calls to the chain, milliseconds.
#[tokio::test]
#[ignore = "a benchmark: scripts/bench-wallet-refresh.sh runs it and prints its figures"]
async fn bench_hundred_wallets_through_the_queue() {
    use shared::chain::fanout::{enqueue, refresh_batch};
    use shared::chain::refresh::WalletReader;
    use shared::chain::{RpcClient, RPC_TIMEOUT};
    use shared::market::Freshness;
    use shared::wallets::challenge::Challenge;
    use shared::wallets::LinkedWallet;
    use std::collections::BTreeMap;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    let devnet = Devnet::up(3000).await;
    let tick = devnet.run("pool", &[]).await["tick"].as_i64().unwrap() as i32;
    let range = (
        (tick - 600).div_euclid(60) * 60,
        (tick + 600).div_euclid(60) * 60,
    );
    let endpoint = test_support::dynamodb::dynamodb_endpoint();
    let store = shared::store::DynamoDbStore::new(
        shared::store::dynamodb::local_client(&endpoint),
        format!("bench-{}", ulid::Ulid::new()),
    );
    store.ensure_table().await.unwrap();
    let file: shared::catalog::CatalogFile =
        serde_json::from_str(&std::fs::read_to_string(&devnet.catalog).unwrap()).unwrap();
    store.seed_catalog(&file.pools).await.unwrap();
    store.seed_deployments(&file.deployments).await.unwrap();
    let mut app = shared::App::on_dynamodb(store, std::time::Duration::ZERO, Freshness::Snapshot);
    let rpc = Arc::new(RpcClient::new(&devnet.rpc, RPC_TIMEOUT).unwrap());
    let endpoints = BTreeMap::from([(shared::model::Chain::Ethereum, rpc.clone())]);
    app.wallet_refresh = Some(Arc::new(WalletReader::new(endpoints, &app, 0)));
    let mut wallets = Vec::new();
    for i in 0..100u64 {
        let address = test_support::wallets::EvmWallet::from_seed(5000 + i).address;
        mint(&devnet, &address, range, None).await;
        let now = chrono::Utc::now();
        let wallet = LinkedWallet::new(
            format!("bench-{i}"),
            (shared::model::Chain::Ethereum, address),
            now,
            shared::wallets::WalletKind::Eoa,
        );
        let challenge = Challenge {
            owner: wallet.owner.clone(),
            chain: wallet.chain,
            address: wallet.address.clone(),
            nonce: format!("n{i}"),
            message: "m".into(),
            expires_at: now + chrono::Duration::minutes(10),
            used: false,
        };
        app.wallets.put_challenge(&challenge).await.unwrap();
        app.wallets.link(&challenge, &wallet).await.unwrap();
        wallets.push(wallet);
    }
    let (sqs, queue) = test_support::dynamodb::sqs_queue("bench").await;
    let started = std::time::Instant::now();
    let linked = app.wallets.linked().await.unwrap();
    assert!(linked.len() >= 100);
    let sent = enqueue(&sqs, &queue, &wallets, shared::app::WholeRead::Reconcile)
        .await
        .unwrap();
    let queued_ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut refreshed = 0;
    let mut batches = 0;
    while refreshed < sent {
        let batch = sqs
            .receive_message()
            .queue_url(&queue)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap();
        let records: Vec<Value> = batch
            .messages()
            .iter()
            .map(|m| json!({"messageId": m.message_id(), "body": m.body()}))
            .collect();
        // A queue that stops delivering fails the benchmark instead of spinning on it.
        assert!(
            !records.is_empty(),
            "only {refreshed} of {sent} messages arrived"
        );
        let answer = refresh_batch(&app, &json!({"Records": records})).await;
        assert_eq!(answer["batchItemFailures"], json!([]), "{answer}");
        refreshed += records.len();
        batches += 1;
    }
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    println!(
        "| wallets | batches | chain HTTP requests | JSON-RPC calls | queueing ms | total ms |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {sent} | {batches} | {} | {} | {queued_ms:.0} | {millis:.0} |",
        rpc.stats.requests.load(Ordering::Relaxed),
        rpc.stats.calls.load(Ordering::Relaxed)
    );
}
