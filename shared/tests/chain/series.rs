//! The pools' series (decision 66) recorded by the sync on the devnet, blocks at chosen times:
//! a first sync records the latest boundary only; one a quarter hour of blocks later records the
//! three boundaries passed, each at the last block at or before it, its state the pool's there;
//! a sync with nothing due costs one request for the series (its recent blocks checked). Prints
//! the requests per boundary (`docs/figures/charts.md`).

use super::support::{market, syncer};
use serde_json::json;
use shared::app::MarketSync;
use shared::chart::{Tier, FIVE_MINUTES};
use shared::model::Chain;
use shared::store::{MemorySeries, SeriesStore};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use test_support::devnet::Devnet;
use test_support::json::text;

#[tokio::test]
async fn a_sync_records_each_boundary_it_passed_at_its_block() {
    let now = chrono::Utc::now().timestamp();
    let start = now - now.rem_euclid(3_600) - 2 * 3_600;
    let devnet = Devnet::since(3000, start - 600).await;
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&devnet.catalog).unwrap()).unwrap();
    let market = market(file["pools"].as_array().unwrap());
    let series = Arc::new(MemorySeries::default());
    let syncer = syncer(
        market,
        &[(Chain::Ethereum, &devnet.rpc)],
        Duration::from_secs(8),
    )
    .with_series(series.clone());
    let rpc = syncer.endpoints()[&Chain::Ethereum].clone();
    let pool = devnet.address("pool");
    devnet.mine_at(start + 10).await;
    syncer.sync().await.unwrap();
    let first = series
        .points(Chain::Ethereum, &pool, (0, i64::MAX), &Tier::ALL)
        .await
        .unwrap();
    assert_eq!(first.iter().map(|p| p.time).collect::<Vec<_>>(), [start]);

    // Blocks over a quarter hour, a swap between them: three boundaries passed.
    devnet.mine_at(start + 290).await;
    devnet.next_block_at(start + 420).await;
    devnet
        .run("swap", &["--sell", "weth", "--amount", "5"])
        .await;
    devnet.mine_at(start + 899).await;
    devnet.mine_at(start + 950).await;
    // The sync's own requests, then with the series.
    let bare = syncer_requests(&devnet, None).await;
    let before = rpc.stats.requests.load(Ordering::Relaxed);
    syncer.sync().await.unwrap();
    let used = rpc.stats.requests.load(Ordering::Relaxed) - before;
    let points = series
        .points(Chain::Ethereum, &pool, (start + 1, i64::MAX), &Tier::ALL)
        .await
        .unwrap();
    let times: Vec<i64> = points.iter().map(|p| p.time).collect();
    assert_eq!(times, [start + 300, start + 600, start + 900]);
    for point in &points {
        // The last block at or before the boundary, and the pool's state there.
        let block = devnet
            .rpc(
                "eth_getBlockByNumber",
                json!([format!("0x{:x}", point.block()), false]),
            )
            .await;
        let time = |b: &serde_json::Value| {
            i64::from_str_radix(text(&b["timestamp"]).trim_start_matches("0x"), 16).unwrap()
        };
        assert!(time(&block) <= point.time && point.block_time == time(&block));
        let next = devnet
            .rpc(
                "eth_getBlockByNumber",
                json!([format!("0x{:x}", point.block() + 1), false]),
            )
            .await;
        assert!(time(&next) > point.time, "{point:?}");
        let read = devnet
            .run("pool", &["--block", &point.block().to_string()])
            .await;
        assert_eq!(
            point.state.sqrt_price.to_string(),
            text(&read["sqrtPriceX96"])
        );
        assert!(point.prices.iter().all(Option::is_some), "{point:?}");
    }
    assert_ne!(
        points[0].state.sqrt_price, points[2].state.sqrt_price,
        "the swap moved it"
    );
    let extra = used - bare;
    println!(
        "series: {extra} requests for {} boundaries ({:.1} per boundary), beside the sync's own {bare}",
        points.len(),
        extra as f64 / points.len() as f64
    );
    let size = serde_json::to_string(&points[0]).unwrap().len();
    println!("series: a point of a pool with no tracked tick is {size} bytes of JSON");
    // Nothing due: the recent blocks checked, one request.
    let before = rpc.stats.requests.load(Ordering::Relaxed);
    syncer.sync().await.unwrap();
    let idle = rpc.stats.requests.load(Ordering::Relaxed) - before;
    println!(
        "series: {} request(s) of a sync with no boundary due",
        idle - bare
    );
    assert_eq!(idle, bare + 1, "one request: the recent boundaries' blocks");
    assert_eq!(FIVE_MINUTES, 300);
}

/// What a sync of the same catalog costs without the series, in requests.
async fn syncer_requests(devnet: &Devnet, _: Option<()>) -> u64 {
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&devnet.catalog).unwrap()).unwrap();
    let bare = syncer(
        market(file["pools"].as_array().unwrap()),
        &[(Chain::Ethereum, &devnet.rpc)],
        Duration::from_secs(8),
    );
    bare.sync().await.unwrap();
    let rpc = bare.endpoints()[&Chain::Ethereum].clone();
    let before = rpc.stats.requests.load(Ordering::Relaxed);
    bare.sync().await.unwrap();
    rpc.stats.requests.load(Ordering::Relaxed) - before
}
