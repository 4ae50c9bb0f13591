//! Benchmark, run by hand (`scripts/bench-sync-ticks.sh`): the sync of the devnet pool with
//! 10,000 tracked ticks on DynamoDB (moto): RPC requests and calls, time, records written, for
//! the first sync (every record started) and the next one after a swap (only what changed).

use serde_json::Value;
use shared::app::MarketSync;
use shared::catalog::{CatalogFile, Pool};
use shared::chain::rpc::RpcClient;
use shared::chain::sync::Syncer;
use shared::clock::SystemClock;
use shared::fee_ticks::FeeTick;
use shared::market::Freshness;
use shared::model::Chain;
use shared::store::{DynamoDbMarket, Market};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::devnet::Devnet;
use test_support::dynamodb::dynamodb_store;

const TICKS: i32 = 10_000;

async fn pool(market: &DynamoDbMarket, address: &str) -> Pool {
    let catalog = market.catalog().await.unwrap();
    catalog
        .pools
        .iter()
        .find(|p| p.is_named(address))
        .unwrap()
        .clone()
}

/// Records that differ between two reads, as the store decides what to write.
fn changed(before: &BTreeMap<i32, FeeTick>, after: &BTreeMap<i32, FeeTick>) -> usize {
    let key = |r: &FeeTick| {
        (
            r.at_tick >= r.tick,
            r.outside0,
            r.outside1,
            r.on_chain,
            r.offset0,
            r.offset1,
        )
    };
    after
        .values()
        .filter(|r| before.get(&r.tick).is_none_or(|old| key(old) != key(r)))
        .count()
}

#[tokio::test]
#[ignore = "a benchmark: scripts/bench-sync-ticks.sh runs it and prints its figures"]
async fn sync_of_a_pool_with_ten_thousand_tracked_ticks() {
    // Warnings and errors on stderr: why a sync did not store, should it not.
    shared::telemetry::init_with("warn", std::io::stderr);
    let devnet = Devnet::up(3000).await;
    let file: CatalogFile =
        serde_json::from_str(&std::fs::read_to_string(&devnet.catalog).unwrap()).unwrap();
    let store = dynamodb_store().await;
    store.seed_catalog(&file.pools).await.unwrap();
    let market = Arc::new(DynamoDbMarket::new(
        store.clone(),
        Duration::ZERO,
        Freshness::live(Duration::from_secs(300)),
    ));
    let address = devnet.address("pool");
    let target = pool(&market, &address).await;
    let spacing = target.tick_spacing;
    let center = target.tick - target.tick.rem_euclid(spacing);
    let started = Instant::now();
    let half = TICKS / 2;
    for chunk in (0..half).collect::<Vec<_>>().chunks(25) {
        let tracks = chunk.iter().map(|i| {
            let ticks = [center - (i + 1) * spacing, center + (half - i) * spacing];
            let (market, target) = (market.clone(), target.clone());
            async move { market.track_ticks(&target, ticks, &[]).await }
        });
        for result in futures_util::future::join_all(tracks).await {
            result.unwrap();
        }
    }
    println!(
        "tracked {TICKS} ticks in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let rpc = Arc::new(RpcClient::new(&devnet.rpc, Duration::from_secs(30)).unwrap());
    let syncer = Syncer::new(
        [(Chain::Ethereum, rpc.clone())].into(),
        market.clone(),
        Arc::new(store.clone()),
        Arc::new(SystemClock),
    );
    for (run, swap) in [("first sync", None), ("after a swap", Some("40"))] {
        if let Some(amount) = swap {
            devnet
                .run("swap", &["--sell", "weth", "--amount", amount])
                .await;
        }
        let before = pool(&market, &address).await;
        let (requests, calls) = (
            rpc.stats.requests.load(Ordering::SeqCst),
            rpc.stats.calls.load(Ordering::SeqCst),
        );
        let started = Instant::now();
        let report = syncer.sync().await.unwrap();
        let elapsed = started.elapsed();
        let entry: Value = serde_json::to_value(&report).unwrap()["pools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pool"].as_str().unwrap().eq_ignore_ascii_case(&address))
            .unwrap()
            .clone();
        assert_eq!(entry["updated"], true, "{entry}");
        let after = pool(&market, &address).await;
        assert_eq!(after.tracked_ticks.len(), TICKS as usize);
        let written = changed(&before.fee_ticks, &after.fee_ticks);
        println!(
            "{run}: {} RPC requests, {} calls, {:.2} s, records written {written} ({} in the state's transaction, {} alone), tick now {}",
            rpc.stats.requests.load(Ordering::SeqCst) - requests,
            rpc.stats.calls.load(Ordering::SeqCst) - calls,
            elapsed.as_secs_f64(),
            written.min(99),
            written.saturating_sub(99),
            entry["tick"],
        );
    }
}
