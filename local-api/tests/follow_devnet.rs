//! Following the chain instead of polling it (decision 45) on the devnet, anvil with the
//! real Uniswap v3 contracts, local-api reading it through a loopback proxy that counts its
//! JSON-RPC requests: a linked wallet's positions after swaps, a deposit, a partial withdrawal,
//! a collect, a transfer out and a transfer in, followed by the events alone, equal a fresh
//! whole read of the wallet at the same block; a sync costs the same requests for 1 and 50 idle
//! wallets and writes no position after swaps; a reorg is undone, a long gap caught up in
//! chunks; the reconciliation corrects what a scan was made to miss. On memory and on DynamoDB
//! (moto, through a forwarder that keeps each write).

use lambda_http::http::{Method, StatusCode};
use local_api::auth::JwtSettings;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use test_support::client::TestClient;
use test_support::devnet::Devnet;
use test_support::dynamodb::{written_keys, CountingDynamoDb};
use test_support::json::{text, texts};
use test_support::local_api::LocalApi;
use test_support::rpc_stub::RpcStub;
use test_support::wallets::{link_evm, EvmWallet};
use test_support::world;

struct World {
    devnet: Devnet,
    server: LocalApi,
    /// The node local-api reads, counting its requests; while `blind` is set it answers every
    /// `eth_getLogs` with no log (a provider missing events).
    node: RpcStub,
    blind: Arc<AtomicBool>,
    /// While set, every `eth_getLogs` is refused (a provider's outage).
    failing: Arc<AtomicBool>,
    /// `eth_getLogs` calls the node was asked, batched or not.
    log_calls: Arc<AtomicUsize>,
    alice: TestClient,
    ops: TestClient,
    wallet: String,
    dynamodb: Option<CountingDynamoDb>,
}

impl World {
    async fn start(on_dynamodb: bool, log_range: u64) -> World {
        let devnet = Devnet::up(3000).await;
        let wallet = devnet.funded_account(1).await;
        let blind = Arc::new(AtomicBool::new(false));
        let failing = Arc::new(AtomicBool::new(false));
        let log_calls = Arc::new(AtomicUsize::new(0));
        let (blinded, down, counted) = (blind.clone(), failing.clone(), log_calls.clone());
        let node = RpcStub::proxy(&devnet.rpc, move |call| {
            if call["method"] != "eth_getLogs" {
                return None;
            }
            counted.fetch_add(1, Ordering::SeqCst);
            if down.load(Ordering::SeqCst) {
                let outage = json!({"code": -32603, "message": "the provider is unavailable"});
                return Some(Err(outage));
            }
            blinded.load(Ordering::SeqCst).then(|| Ok(json!([])))
        })
        .await;
        let dynamodb = if on_dynamodb {
            Some(CountingDynamoDb::start().await)
        } else {
            None
        };
        let log_range = log_range.to_string();
        let table = format!("follow-{}", ulid::Ulid::new().to_string().to_lowercase());
        let mut args = vec!["--log-range", &log_range];
        if let Some(dynamodb) = &dynamodb {
            args.extend(["--dynamodb-endpoint", &dynamodb.url, "--table", &table]);
        }
        let server = world::local_api(&devnet, &node.url, &args).await;
        let alice = world::user(&server, "alice").await;
        let ops = world::operator(&server).await;
        World {
            devnet,
            server,
            node,
            blind,
            failing,
            log_calls,
            alice,
            ops,
            wallet,
            dynamodb,
        }
    }

    async fn sync_with(&self, query: &str) -> Value {
        let path = format!("/markets/sync{query}");
        let reply = self.ops.send(Method::POST, &path, &[], b"").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        reply.json
    }

    async fn sync(&self) -> Value {
        self.sync_with("").await
    }

    async fn mint(&self, to: &str, offset: i32) -> String {
        let range = self.devnet.range_around(offset).await;
        self.devnet
            .mint_to(to, range, None, "1000000000000000000000")
            .await
    }

    async fn swaps(&self) {
        for (sell, amount) in [("usdc", "20000"), ("weth", "7")] {
            let args = ["--sell", sell, "--amount", amount];
            self.devnet.run("swap", &args).await;
        }
    }

    /// Alice's wallet positions as listed, by token id.
    async fn listed(&self, client: &TestClient) -> std::collections::BTreeMap<String, Value> {
        let reply = client.list("source=wallet&limit=100").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let data = reply.json["data"].as_array().unwrap().clone();
        data.into_iter().map(|p| (text(&p["tokenId"]), p)).collect()
    }

    async fn liquidity(&self, token: &str) -> String {
        let quote = self
            .devnet
            .run("position-quote", &["--token-id", token])
            .await;
        text(&quote["liquidity"])
    }

    /// The position writes (positions, their keys, lists, pages and events) the store was
    /// sent since the last call; `None` on memory. A wallet's own record (`W#`, its last whole
    /// read) is not a position's.
    fn position_writes(&self) -> Option<Vec<(String, String)>> {
        let dynamodb = self.dynamodb.as_ref()?;
        let is_position = |(pk, sk): &(String, String)| {
            let user = pk.starts_with("U#") && (sk.starts_with("P#") || sk.starts_with("H#"));
            user || ["PG#", "IX#", "EV#", "PENDING#"]
                .iter()
                .any(|p| pk.starts_with(p))
        };
        Some(
            dynamodb
                .take()
                .iter()
                .flat_map(|(operation, body)| written_keys(operation, body))
                .filter(is_position)
                .collect(),
        )
    }
}

/// A view without what a second user's read of the same position names differently (its id,
/// when it was stored and read) or what moves with the clock (the APR annualizes to now).
fn comparable(view: &Value) -> Value {
    let mut view = view.clone();
    for own in ["id", "createdAt", "readAt", "refreshedAt", "feeAprPercent"] {
        view.as_object_mut().unwrap().remove(own);
    }
    view
}

async fn events_alone_keep_the_wallet_as_the_chain_holds_it(on_dynamodb: bool) {
    let world = World::start(on_dynamodb, 10_000).await;
    let (devnet, wallet) = (&world.devnet, world.wallet.as_str());
    let stranger = devnet.account(2).await;
    let kept = world.mint(wallet, 3000).await;
    let sent_away = world.mint(wallet, 900).await;
    devnet.link_account(&world.alice, wallet).await;
    world.sync().await;
    world.position_writes();

    // Swaps only: no wallet is read, no position written; the fees shown are still what
    // collect would pay at the synced block.
    world.swaps().await;
    let report = world.sync().await;
    assert_eq!(report["wallets"]["refreshed"], 0, "{report}");
    assert_eq!(report["scans"][0]["events"], 0, "{report}");
    if let Some(writes) = world.position_writes() {
        assert_eq!(writes, [], "a sync after swaps only");
    }
    let view = &world.listed(&world.alice).await[&kept];
    let quote = devnet
        .run(
            "position-quote",
            &["--token-id", &kept, "--block", &text(&view["readHeight"])],
        )
        .await;
    assert_eq!(
        text(&view["readHeight"]),
        text(&report["pools"][0]["block"])
    );
    let fees = |token: &str| text(&view[token]["feesUnclaimed"]);
    assert!(
        quote["fees0"] != "0" && fees("tokenA") != "0",
        "{view} {quote}"
    );

    // Every kind of event, swaps between them.
    let args = |extra: &[&str]| -> Vec<String> {
        let mut all = vec!["--account", wallet, "--token-id", kept.as_str()];
        all.extend_from_slice(extra);
        all.into_iter().map(String::from).collect()
    };
    let run = |command: &'static str, args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        devnet.run(command, &args).await
    };
    let amount = "5000000000000000000";
    run(
        "increase",
        args(&["--amount0", amount, "--amount1", amount]),
    )
    .await;
    world.swaps().await;
    let half = (world.liquidity(&kept).await.parse::<u128>().unwrap() / 2).to_string();
    run("withdraw", args(&["--liquidity", half.as_str()])).await;
    run("collect", args(&[])).await;
    let transfer = [
        "--account",
        wallet,
        "--token-id",
        &sent_away,
        "--to",
        &stranger,
    ];
    devnet.run("transfer", &transfer).await;
    let arrived = world.mint(&stranger, 1500).await;
    let transfer = [
        "--account",
        &stranger,
        "--token-id",
        &arrived,
        "--to",
        wallet,
    ];
    devnet.run("transfer", &transfer).await;
    world.swaps().await;
    let report = world.sync().await;
    assert_eq!(report["wallets"]["refreshed"], 1, "{report}");
    // The deposit, the withdrawal, the collect, the transfer out and the transfer in (the
    // stranger's mint names no linked wallet).
    assert_eq!(report["scans"][0]["events"], 5, "{report}");
    let followed = world.listed(&world.alice).await;
    // The wallet says how far its chain was followed: through the scan's last block.
    let wallets = world
        .alice
        .send(Method::GET, "/wallets", &[], b"")
        .await
        .json;
    let scan = &report["scans"][0];
    assert_eq!(
        wallets["data"][0]["followedThroughBlock"], scan["through"],
        "{wallets}"
    );
    assert!(wallets["data"][0]["followedAt"].is_string(), "{wallets}");
    assert_eq!(followed[&sent_away]["closeReason"], "transferred");
    assert_eq!(followed[&arrived]["status"], "active");
    assert_eq!(
        text(&followed[&kept]["liquidity"]),
        world.liquidity(&kept).await
    );

    // A fresh whole read of the same wallet at the same block (Bob links it): the same
    // figures, field by field; the reconciliation finds nothing to correct and writes nothing.
    let bob = world::user(&world.server, "bob").await;
    devnet.link_account(&bob, wallet).await;
    let fresh = world.listed(&bob).await;
    assert_eq!(fresh.len(), 2, "Bob's read sees what the wallet holds now");
    for (token, view) in &fresh {
        assert_eq!(comparable(&followed[token]), comparable(view), "{token}");
    }
    world.position_writes();
    let report = world.sync_with("?reconcile=all").await;
    assert_eq!(report["wallets"]["corrected"], 0, "{report}");
    assert_eq!(report["wallets"]["refreshed"], 2, "{report}");
    if let Some(writes) = world.position_writes() {
        assert_eq!(writes, [], "a reconciliation that corrects nothing");
    }
    assert_eq!(world.listed(&world.alice).await, followed);
}

#[tokio::test]
async fn events_alone_keep_the_wallet_as_the_chain_holds_it_in_memory() {
    events_alone_keep_the_wallet_as_the_chain_holds_it(false).await;
}

#[tokio::test]
async fn events_alone_keep_the_wallet_as_the_chain_holds_it_on_dynamodb() {
    events_alone_keep_the_wallet_as_the_chain_holds_it(true).await;
}

/// The JSON-RPC requests each of two syncs sends after a swap.
async fn requests_of_syncs(world: &World) -> Vec<usize> {
    let mut each = Vec::new();
    for _ in 0..2 {
        world.swaps().await;
        let before = world.node.requests();
        let report = world.sync().await;
        assert_eq!(report["wallets"]["refreshed"], 0, "{report}");
        each.push(world.node.requests() - before);
    }
    each
}

#[tokio::test]
async fn a_sync_costs_the_same_for_one_and_fifty_idle_wallets() {
    let world = World::start(false, 10_000).await;
    // The pools' points at this boundary are recorded by the next sync, and no other boundary
    // passes (asserted below): a sync that passes one also reads the pools there (decision 66).
    let boundary = world.devnet.clock_past_a_boundary().await;
    world.mint(&world.wallet, 3000).await;
    world.devnet.link_account(&world.alice, &world.wallet).await;
    world.sync().await;
    let one = requests_of_syncs(&world).await;

    for seed in 0..49u64 {
        let wallet = EvmWallet::from_seed(7_000 + seed);
        // The same range as the first wallet's: the pool's tick reads stay as they were (they
        // grow with distinct bounds, not with wallets).
        world.mint(&wallet.address, 3000).await;
        let owner = world.server.client(Some(
            &JwtSettings::local_default().issue(&format!("user-{seed}"), 3600),
        ));
        link_evm(&owner, "ethereum", &wallet).await;
    }
    // Their mints' transfers are events of linked wallets: read once, then idle.
    let report = world.sync().await;
    assert_eq!(report["wallets"]["refreshed"], 49, "{report}");
    let fifty = requests_of_syncs(&world).await;
    println!("requests per sync: {one:?} with 1 linked wallet, {fifty:?} with 50");
    assert_eq!(one, [one[0]; 2]);
    assert_eq!(one, fifty);
    world.devnet.assert_no_boundary_since(boundary).await;
}

#[tokio::test]
async fn reorgs_are_undone_gaps_caught_up_and_misses_reconciled() {
    let world = World::start(false, 50).await;
    let (devnet, wallet) = (&world.devnet, world.wallet.as_str());
    let token = world.mint(wallet, 3000).await;
    devnet.link_account(&world.alice, wallet).await;
    world.sync().await;
    let whole = world.liquidity(&token).await;

    // A withdrawal in a block the chain then replaces: seen, then undone.
    let snapshot = devnet.rpc("evm_snapshot", json!([])).await;
    let half = (whole.parse::<u128>().unwrap() / 2).to_string();
    let args = [
        "--account",
        wallet,
        "--token-id",
        &token,
        "--liquidity",
        &half,
    ];
    devnet.run("withdraw", &args).await;
    world.sync().await;
    let left = world.liquidity(&token).await;
    assert_ne!(left, whole);
    let listed = world.listed(&world.alice).await;
    assert_eq!(text(&listed[&token]["liquidity"]), left);
    let id = text(&listed[&token]["id"]);
    let kinds = || async {
        let path = format!("/positions/{id}/history?limit=100");
        let reply = world.alice.send(Method::GET, &path, &[], b"").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let data = reply.json["data"].as_array().unwrap().clone();
        data.iter().map(|e| text(&e["kind"])).collect::<Vec<_>>()
    };
    assert!(kinds().await.contains(&"withdraw".to_string()));
    devnet.rpc("evm_revert", json!([snapshot])).await;
    for _ in 0..3 {
        devnet.rpc("evm_mine", json!([])).await;
    }
    let report = world.sync().await;
    assert!(report["scans"][0]["rescanned"].is_string(), "{report}");
    assert_eq!(report["wallets"]["refreshed"], 1, "{report}");
    let listed = world.listed(&world.alice).await;
    assert_eq!(text(&listed[&token]["liquidity"]), whole);
    // Its history no longer holds the replaced block's withdrawal, nor its figures.
    assert!(!kinds().await.contains(&"withdraw".to_string()));
    assert_eq!(
        listed[&token]["tokenA"]["withdrawn"], "0",
        "{}",
        listed[&token]
    );

    // A gap of 400 blocks with a deposit in the middle: read in ranges of 50, none skipped.
    devnet.rpc("anvil_mine", json!(["0xc8"])).await;
    devnet.deposit(wallet, &token).await;
    devnet.rpc("anvil_mine", json!(["0xc8"])).await;
    let requests = world.node.requests();
    let report = world.sync().await;
    let scan = &report["scans"][0];
    assert_eq!(scan["through"], scan["head"], "{report}");
    assert!(scan["head"].as_u64().unwrap() - scan["from"].as_u64().unwrap() >= 400);
    assert!(
        world.node.requests() - requests >= 9,
        "one request per range at least"
    );
    assert_eq!(report["wallets"]["refreshed"], 1, "{report}");
    let deposited = world.liquidity(&token).await;
    assert_eq!(
        text(&world.listed(&world.alice).await[&token]["liquidity"]),
        deposited
    );

    // A deposit the scan is made to miss: nothing read; the reconciliation corrects it, logs
    // it with its metric and counts it.
    world.blind.store(true, Ordering::SeqCst);
    devnet.deposit(wallet, &token).await;
    let report = world.sync().await;
    assert_eq!(report["wallets"]["refreshed"], 0, "{report}");
    world.blind.store(false, Ordering::SeqCst);
    assert_eq!(
        text(&world.listed(&world.alice).await[&token]["liquidity"]),
        deposited
    );
    let report = world.sync_with("?reconcile=all").await;
    assert_eq!(report["wallets"]["corrected"], 1, "{report}");
    let now = world.liquidity(&token).await;
    assert_ne!(now, deposited);
    assert_eq!(
        text(&world.listed(&world.alice).await[&token]["liquidity"]),
        now
    );
    let path = "/markets/sync?reconcile=some";
    let refused = world.ops.send(Method::POST, path, &[], b"").await;
    assert_eq!(
        refused.status,
        StatusCode::BAD_REQUEST,
        "{}",
        refused.text()
    );
    let log = world.server.stop_and_read_log().await;
    let corrected: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("wallets.reconciled.corrected"))
        .collect();
    assert_eq!(corrected.len(), 1, "{log:?}");
    assert!(corrected[0].contains("liquidity"), "{}", corrected[0]);
}

/// A position's history stopped by a provider's outage (every `eth_getLogs` refused while the
/// wallet is linked and read) is read on by the next sync, which no event of the wallet
/// touched: the wallet is retried (decision 58), counted in the sync's report, and
/// then costs nothing again.
async fn a_stopped_history_is_retried_by_the_next_sync(on_dynamodb: bool) {
    let world = World::start(on_dynamodb, 10_000).await;
    let (devnet, wallet) = (&world.devnet, world.wallet.as_str());
    let token = world.mint(wallet, 3000).await;
    world.swaps().await;
    let collect = ["--account", wallet, "--token-id", token.as_str()];
    devnet.run("collect", &collect).await;
    // The chain's first scan, before the link: the wallet's events are behind it.
    world.sync().await;

    world.failing.store(true, Ordering::SeqCst);
    devnet.link_account(&world.alice, wallet).await;
    let view = &world.listed(&world.alice).await[&token];
    assert_eq!(view["historyComplete"], false, "{view}");
    world.failing.store(false, Ordering::SeqCst);

    let report = world.sync().await;
    assert_eq!(report["scans"][0]["events"], 0, "{report}");
    assert_eq!(report["wallets"]["retried"], 1, "{report}");
    assert_eq!(report["wallets"]["refreshed"], 1, "{report}");
    let view = &world.listed(&world.alice).await[&token];
    assert_eq!(view["historyComplete"], true, "{view}");
    let path = format!("/positions/{}/history?limit=100", text(&view["id"]));
    let history = world.alice.send(Method::GET, &path, &[], b"").await.json;
    let kinds: Vec<String> = texts(&history["data"], "kind");
    assert_eq!(kinds.first().map(String::as_str), Some("mint"), "{history}");
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("collect"),
        "{history}"
    );

    // Read through: nothing is retried any more.
    let report = world.sync().await;
    assert_eq!(report["wallets"]["retried"], 0, "{report}");
    assert_eq!(report["wallets"]["refreshed"], 0, "{report}");
}

#[tokio::test]
async fn a_stopped_history_is_retried_by_the_next_sync_in_memory() {
    a_stopped_history_is_retried_by_the_next_sync(false).await;
}

#[tokio::test]
async fn a_stopped_history_is_retried_by_the_next_sync_on_dynamodb() {
    a_stopped_history_is_retried_by_the_next_sync(true).await;
}

/// A new position's history starts at its mint (its `Transfer` from the zero address, found
/// by its token id in one call), not at its manager's first block: with 400 blocks before the
/// mint and ranges of 7 blocks, its first history read takes a few `eth_getLogs` calls, not
/// one batch per 7 blocks since the manager's deployment.
#[tokio::test]
async fn a_new_positions_history_starts_at_its_mint() {
    let world = World::start(false, 7).await;
    let (devnet, wallet) = (&world.devnet, world.wallet.as_str());
    devnet.rpc("anvil_mine", json!(["0x190"])).await;
    let token = world.mint(wallet, 3000).await;
    world.sync().await;
    let before = world.log_calls.load(Ordering::SeqCst);
    devnet.link_account(&world.alice, wallet).await;
    let calls = world.log_calls.load(Ordering::SeqCst) - before;
    let view = &world.listed(&world.alice).await[&token];
    assert_eq!(view["historyComplete"], true, "{view}");
    let path = format!("/positions/{}/history?limit=100", text(&view["id"]));
    let history = world.alice.send(Method::GET, &path, &[], b"").await.json;
    assert_eq!(history["data"][0]["kind"], "mint", "{history}");
    println!("eth_getLogs calls of a new position's first history read: {calls}");
    assert!(calls <= 5, "{calls} calls");
}

/// Dust makes no wallet dear to follow: anyone can mint positions to any wallet. With 50
/// positions of a stranger's own pool minted to it, one event of the owner's own (a deposit)
/// costs at most 5 JSON-RPC requests more than with none: the wallet's whole read takes them
/// in its batches, and only the position the event changed has its history read on.
#[tokio::test]
async fn an_owners_event_costs_about_the_same_with_fifty_dust_positions() {
    let world = World::start(false, 10_000).await;
    let (devnet, wallet) = (&world.devnet, world.wallet.as_str());
    let token = world.mint(wallet, 3000).await;
    devnet.link_account(&world.alice, wallet).await;
    world.sync().await;
    let event_cost = || async {
        devnet.deposit(wallet, &token).await;
        let before = world.node.requests();
        let report = world.sync().await;
        assert_eq!(report["wallets"]["refreshed"], 1, "{report}");
        world.node.requests() - before
    };
    let without = event_cost().await;

    let dust = devnet
        .run("new-pool", &["--symbol", "DST", "--fee", "500"])
        .await;
    for _ in 0..50 {
        devnet
            .mint_to(wallet, (-600, 600), Some(&dust), "1000000000000")
            .await;
    }
    let report = world.sync().await;
    assert_eq!(report["wallets"]["refreshed"], 1, "{report}");
    let listed = world.listed(&world.alice).await;
    assert_eq!(listed.len(), 51, "the dust is listed");
    let with = event_cost().await;
    println!(
        "requests of one owner's event: {without} without dust, {with} with 50 dust positions"
    );
    assert!(with <= without + 5, "{without} without dust, {with} with");
}
