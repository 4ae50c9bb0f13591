//! Benchmark (ignored; `scripts/bench-follow.sh`): what one sync costs when it follows the chain
//! instead of polling it (decision 45), on the devnet and DynamoDB (moto, through a
//! forwarder that keeps each write): with 1, 100 and 1,000 linked wallets, each holding a
//! position, and no position event, the JSON-RPC requests and calls of one sync (pools, then
//! the chain's scan) after swaps and its writes (all, and those of positions); then, for one
//! wallet, what one event of each kind costs: the scan, the touched wallet's whole read and its
//! writes. Prints the figures; asserts that the idle sync's requests do not grow with wallets
//! and that it writes no position.

use serde_json::Value;
use shared::app::{ChainFollow, MarketSync, WholeRead};
use shared::catalog::CatalogFile;
use shared::chain::refresh::WalletReader;
use shared::chain::scan::ChainScanner;
use shared::chain::{RpcClient, Syncer, RPC_TIMEOUT};
use shared::market::{Freshness, LogRanges};
use shared::model::Chain;
use shared::store::dynamodb::local_client;
use shared::store::DynamoDbStore;
use shared::wallets::challenge::Challenge;
use shared::wallets::LinkedWallet;
use shared::App;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use test_support::devnet::Devnet;
use test_support::dynamodb::{written_keys, CountingDynamoDb};

struct Bench {
    app: App,
    rpc: Arc<RpcClient>,
    syncer: Syncer,
    scanner: ChainScanner,
    dynamodb: CountingDynamoDb,
}

impl Bench {
    async fn start(devnet: &Devnet) -> Bench {
        let dynamodb = CountingDynamoDb::start().await;
        let table = format!("bench-{}", ulid::Ulid::new().to_string().to_lowercase());
        let store = DynamoDbStore::new(local_client(&dynamodb.url), table);
        store.ensure_table().await.unwrap();
        let file: CatalogFile =
            serde_json::from_str(&std::fs::read_to_string(&devnet.catalog).unwrap()).unwrap();
        store.seed_catalog(&file.pools).await.unwrap();
        store.seed_deployments(&file.deployments).await.unwrap();
        let mut app = App::on_dynamodb(store, std::time::Duration::ZERO, Freshness::Snapshot);
        let rpc = Arc::new(RpcClient::new(&devnet.rpc, RPC_TIMEOUT).unwrap());
        let endpoints = BTreeMap::from([(Chain::Ethereum, rpc.clone())]);
        app.wallet_refresh = Some(Arc::new(WalletReader::new(endpoints.clone(), &app, 0)));
        let syncer = Syncer::new(
            endpoints.clone(),
            app.market.clone(),
            app.store.clone(),
            app.clock.clone(),
        )
        .with_confirmations(0);
        let scanner = ChainScanner::new(
            endpoints,
            (app.wallets.clone(), app.market.clone(), app.clock.clone()),
            0.into(),
            LogRanges::default(),
        );
        Bench {
            app,
            rpc,
            syncer,
            scanner,
            dynamodb,
        }
    }

    /// Links `wallet` for `owner` (a challenge stored and answered in the store).
    async fn link(&self, owner: &str, address: &str) -> LinkedWallet {
        let now = chrono::Utc::now();
        let wallet = LinkedWallet::new(
            owner.into(),
            (Chain::Ethereum, address.into()),
            now,
            shared::wallets::WalletKind::Eoa,
        );
        let challenge = Challenge {
            owner: owner.into(),
            chain: Chain::Ethereum,
            address: address.into(),
            nonce: format!("n-{owner}"),
            message: "m".into(),
            expires_at: now + chrono::Duration::minutes(10),
            used: false,
        };
        self.app.wallets.put_challenge(&challenge).await.unwrap();
        self.app.wallets.link(&challenge, &wallet).await.unwrap();
        wallet
    }

    /// One sync as the stack runs it: the pools, the chain's scan, the touched wallets read
    /// whole. Its JSON-RPC requests and calls, its write requests and those of positions, and
    /// the scan's report.
    async fn sync(&self) -> (u64, u64, usize, usize, Value) {
        self.dynamodb.take();
        let stats = &self.rpc.stats;
        let (requests, calls) = (
            stats.requests.load(Ordering::SeqCst),
            stats.calls.load(Ordering::SeqCst),
        );
        self.syncer.sync().await.unwrap();
        let linked = self.app.wallets.linked().await.unwrap();
        let (scans, touched) = self.scanner.follow(&linked).await;
        let read = self.app.read_wallets(touched, WholeRead::Refresh).await;
        assert!(read.failed.is_empty(), "{:?}", read.failed);
        let writes: Vec<(String, String)> = self
            .dynamodb
            .take()
            .iter()
            .flat_map(|(operation, body)| written_keys(operation, body))
            .collect();
        let position = |(pk, sk): &&(String, String)| {
            (pk.starts_with("U#") && (sk.starts_with("P#") || sk.starts_with("H#")))
                || ["PG#", "IX#", "EV#"].iter().any(|p| pk.starts_with(p))
        };
        (
            stats.requests.load(Ordering::SeqCst) - requests,
            stats.calls.load(Ordering::SeqCst) - calls,
            writes.len(),
            writes.iter().filter(position).count(),
            serde_json::to_value(&scans[0]).unwrap(),
        )
    }
}

async fn swap(devnet: &Devnet) {
    devnet
        .run("swap", &["--sell", "usdc", "--amount", "5000"])
        .await;
}

#[tokio::test]
#[ignore = "a benchmark: scripts/bench-follow.sh runs it and prints its figures"]
async fn bench_follow() {
    let devnet = Devnet::up(3000).await;
    let manager = devnet.address("manager");
    println!("| linked wallets | JSON-RPC requests | calls | write items | position write items |");
    println!("|---:|---:|---:|---:|---:|");
    let mut idle = Vec::new();
    for wallets in [1usize, 100, 250, 1_000] {
        let bench = Bench::start(&devnet).await;
        link_synthetic(&bench, &manager, wallets).await;
        // The first scan starts at the head; the next ones are the idle syncs.
        bench.sync().await;
        swap(&devnet).await;
        let (requests, calls, writes, position_writes, _) = bench.sync().await;
        println!("| {wallets} | {requests} | {calls} | {writes} | {position_writes} |");
        assert_eq!(position_writes, 0, "an idle sync writes no position");
        idle.push(requests);
    }
    assert!(
        idle.windows(2).all(|w| w[0] == w[1]),
        "requests per idle sync: {idle:?}"
    );

    // One wallet with a real position: each event's cost.
    let bench = Bench::start(&devnet).await;
    let wallet = devnet.funded_account(1).await;
    let range = devnet.range_around(3000).await;
    let token = devnet
        .mint_to(&wallet, range, None, "1000000000000000000000")
        .await;
    let linked = bench.link("bench-events", &wallet).await;
    bench.app.refresh_wallet(linked).await;
    bench.sync().await;
    let stranger = devnet.account(2).await;
    let amount = "1000000000000000000";
    let by = |extra: &[&str]| {
        let mut all = vec!["--account".to_string(), wallet.clone()];
        all.extend(["--token-id".to_string(), token.clone()]);
        all.extend(extra.iter().map(|s| s.to_string()));
        all
    };
    let events: Vec<(&str, &str, Vec<String>)> = vec![
        (
            "a deposit",
            "increase",
            by(&["--amount0", amount, "--amount1", amount]),
        ),
        (
            "a withdrawal",
            "withdraw",
            by(&["--liquidity", "1000000000000000"]),
        ),
        ("a collect", "collect", by(&[])),
        ("a transfer out", "transfer", by(&["--to", &stranger])),
    ];
    println!();
    println!("| one event | JSON-RPC requests | calls | write items | position write items |");
    println!("|---|---:|---:|---:|---:|");
    swap(&devnet).await;
    let (requests, calls, writes, position_writes, _) = bench.sync().await;
    println!("| none (a swap) | {requests} | {calls} | {writes} | {position_writes} |");
    for (name, command, args) in events {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        devnet.run(command, &args).await;
        let (requests, calls, writes, position_writes, scan) = bench.sync().await;
        assert_eq!(scan["touched"], 1, "{name}: {scan}");
        println!("| {name} | {requests} | {calls} | {writes} | {position_writes} |");
    }
}

/// Links `count` synthetic wallets, each holding a position of its own (an id in the scan's
/// filters), as their whole reads would have recorded them.
async fn link_synthetic(bench: &Bench, manager: &str, count: usize) {
    for i in 0..count {
        let address = format!("0x{:040x}", 0xbe00_0000u64 + i as u64);
        let wallet = bench.link(&format!("bench-{i}"), &address).await;
        let held = LinkedWallet {
            refreshed_at: Some(chrono::Utc::now()),
            positions: Some(1),
            tokens: vec![format!("{manager}#{}", 1_000_000 + i)],
            ..wallet
        };
        bench.app.wallets.record_refresh(&held).await.unwrap();
    }
}

/// The scan's calls stay flat with wallets (issue 37): past a few filtered calls a range asks
/// for every log of the managers' four events and matches them itself. An idle sync with 250
/// linked wallets (and their 250 positions) makes at most 2 calls more than with 1, and a real
/// event of one of them is still found and touches that wallet only.
#[tokio::test]
async fn an_idle_sync_costs_the_same_calls_for_one_and_250_wallets() {
    let devnet = Devnet::up(3000).await;
    let manager = devnet.address("manager");
    let wallet = devnet.funded_account(1).await;
    let range = devnet.range_around(3000).await;
    let token = devnet
        .mint_to(&wallet, range, None, "1000000000000000000000")
        .await;
    let mut idle_calls = Vec::new();
    for synthetic in [0usize, 249] {
        let bench = Bench::start(&devnet).await;
        link_synthetic(&bench, &manager, synthetic).await;
        let linked = bench.link("bench-real", &wallet).await;
        bench.app.refresh_wallet(linked).await;
        bench.sync().await;
        swap(&devnet).await;
        let (_, calls, _, _, scan) = bench.sync().await;
        assert_eq!(scan["events"], 0, "{scan}");
        idle_calls.push(calls);
        // A collect of the real wallet's position: found among a swap's logs, and only its
        // wallet touched.
        swap(&devnet).await;
        let collect = ["--account", wallet.as_str(), "--token-id", token.as_str()];
        devnet.run("collect", &collect).await;
        let (_, _, _, _, scan) = bench.sync().await;
        assert_eq!(
            (scan["events"].as_u64(), scan["touched"].as_u64()),
            (Some(1), Some(1)),
            "{scan}"
        );
    }
    println!(
        "calls per idle sync: {} with 1 linked wallet, {} with 250",
        idle_calls[0], idle_calls[1]
    );
    assert!(idle_calls[1] <= idle_calls[0] + 2, "{idle_calls:?}");
}

/// Issue 39: with a farm on the chain (PancakeSwap's MasterChefV3 beside Uniswap on the devnet),
/// an idle sync costs the same requests for 1 and 50 linked wallets, one of them staking; the
/// staker's harvest is found and touches its wallet alone.
#[tokio::test]
async fn an_idle_sync_costs_the_same_requests_with_a_farm_for_one_and_50_wallets() {
    let devnet = Devnet::with_pancake(3000).await;
    let manager = devnet.state["pancake"]["manager"]
        .as_str()
        .unwrap()
        .to_string();
    let wallet = devnet.account(1).await;
    let range = devnet.pancake_range_around(2000).await;
    let token = devnet
        .mint_pancake_to(&wallet, range, "1000000000000000000000")
        .await;
    let staker = ["--account", wallet.as_str(), "--token-id", token.as_str()];
    devnet.run("stake", &staker).await;
    let mut idle = Vec::new();
    for synthetic in [0usize, 49] {
        let bench = Bench::start(&devnet).await;
        link_synthetic(&bench, &manager, synthetic).await;
        let linked = bench.link("bench-real", &wallet).await;
        bench.app.refresh_wallet(linked).await;
        bench.sync().await;
        swap(&devnet).await;
        let (requests, calls, _, _, scan) = bench.sync().await;
        assert_eq!(scan["events"], 0, "{scan}");
        idle.push((requests, calls));
        devnet.advance_time(10).await;
        devnet.run("harvest", &staker).await;
        let (_, _, _, _, scan) = bench.sync().await;
        assert_eq!(
            (scan["events"].as_u64(), scan["touched"].as_u64()),
            (Some(1), Some(1)),
            "{scan}"
        );
    }
    println!(
        "an idle sync with a farm: {:?} (requests, calls) with 1 linked wallet, {:?} with 50",
        idle[0], idle[1]
    );
    assert_eq!(idle[0].0, idle[1].0, "{idle:?}");
}
