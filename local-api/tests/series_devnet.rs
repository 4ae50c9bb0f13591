//! The series keeps up at any schedule (issue 61): one sync every two chain-hours over a day
//! records every 5-minute boundary of it, each point the pool's state at the last block at or
//! before its boundary, on the devnet (anvil with the real Uniswap v3 contracts), on memory and
//! on DynamoDB (moto). Prints what a catch-up sync costs in requests.

use lambda_http::http::{Method, StatusCode};
use serde_json::Value;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::rpc_stub::RpcStub;
use test_support::world;

const HOUR: i64 = 3_600;

fn unix(time: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(&text(time))
        .unwrap()
        .timestamp()
}

async fn a_slow_schedule_keeps_every_point(store_args: &[&str]) {
    let now = chrono::Utc::now().timestamp();
    // The last block at the last 5-minute boundary at least 30 s back (none in the future,
    // and the day's chart, whose window ends at the wall clock's boundary, holds the day).
    let end = (now - 30) - (now - 30).rem_euclid(300);
    let start = end - 26 * HOUR;
    let devnet = Devnet::since(3000, start - 60).await;
    let node = RpcStub::proxy(&devnet.rpc, |_| None).await;
    let server = world::local_api(&devnet, &node.url, store_args).await;
    let ops = world::operator(&server).await;
    let pool = devnet.address("pool");
    let sync = || async {
        let before = node.requests();
        let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
        assert_eq!(report.status, StatusCode::OK, "{}", report.text());
        node.requests() - before
    };
    devnet.mine_at(start).await;
    sync().await;
    // Every two chain-hours a swap and a sync (a block every half hour between): 24 5-minute
    // boundaries due at each.
    let mut costs = Vec::new();
    for k in 1..=13 {
        let at = start + k * 2 * HOUR;
        for half in 1..4 {
            devnet.mine_at(at - 2 * HOUR + half * HOUR / 2).await;
        }
        devnet.next_block_at(at).await;
        let (sell, amount) = if k % 2 == 0 {
            ("weth", "3")
        } else {
            ("usdc", "9000")
        };
        devnet
            .run("swap", &["--sell", sell, "--amount", amount])
            .await;
        costs.push(sync().await);
    }
    println!(
        "figures: a sync every 2 chain-hours (24 boundaries due, 1 pool): {costs:?} requests each"
    );

    // The last day's chart: a point at each of its 5-minute boundaries the chain has passed
    // (its window ends at the wall clock's, a few minutes past the chain's last block).
    let path = format!("/pools/ethereum/{pool}/chart?period=1d");
    let window = (chrono::Utc::now().timestamp().div_euclid(300) - 287) * 300;
    let chart = ops.send(Method::GET, &path, &[], b"").await;
    assert_eq!(chart.status, StatusCode::OK, "{}", chart.text());
    let points = chart.json["points"].as_array().unwrap().clone();
    let last = end;
    let times: Vec<i64> = points.iter().map(|p| unix(&p["time"])).collect();
    let expected: Vec<i64> = (window..=last).step_by(300).collect();
    assert!(expected.len() >= 285, "{window} {last}");
    assert_eq!(times, expected, "{}", chart.json);
    // Each the pool's state at the last block at or before it.
    for point in points.iter().step_by(37) {
        let block = point["block"].as_u64().unwrap();
        let at = devnet
            .rpc(
                "eth_getBlockByNumber",
                serde_json::json!([format!("0x{block:x}"), false]),
            )
            .await;
        let block_time =
            i64::from_str_radix(text(&at["timestamp"]).trim_start_matches("0x"), 16).unwrap();
        assert!(block_time <= unix(&point["time"]), "{point}");
        let next = devnet
            .rpc(
                "eth_getBlockByNumber",
                serde_json::json!([format!("0x{:x}", block + 1), false]),
            )
            .await;
        let next_time =
            i64::from_str_radix(text(&next["timestamp"]).trim_start_matches("0x"), 16).unwrap();
        assert!(next_time > unix(&point["time"]), "{point}");
        let state = devnet.run("pool", &["--block", &block.to_string()]).await;
        assert_eq!(
            text(&point["sqrtPrice"]),
            text(&state["sqrtPriceX96"]),
            "{point} {state}"
        );
    }
}

test_support::on_both_stores!(a_slow_schedule => a_slow_schedule_keeps_every_point);
