//! The series keeps up at any schedule (issue 61): one sync every two chain-hours over a day
//! records every 5-minute boundary of it, each point the pool's state at the last block at or
//! before its boundary, on the devnet (anvil with the real Uniswap v3 contracts), on memory and
//! on DynamoDB (moto). A position that closes while the series lags (a sync whose series the
//! node failed) keeps exact points up to its close: its ticks are read until the series has
//! recorded past it. Prints what a catch-up sync costs in requests.

use lambda_http::http::{Method, StatusCode};
use serde_json::Value;
use std::sync::{Arc, Mutex};
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
    let devnet = Devnet::since(3000, start - 600).await;
    // While `lagging` holds a block's hash, the node serves calls at that block only: the
    // series' reads at its boundaries fail (it records nothing), the pools' and the wallets'
    // reads at the head go on.
    let lagging: Arc<Mutex<Option<String>>> = Arc::default();
    let head_only = lagging.clone();
    let node = RpcStub::proxy(&devnet.rpc, move |call| {
        let head = head_only.lock().unwrap().clone()?;
        let at = call["params"][1]["blockHash"].as_str()?;
        let old = call["method"] == "eth_call" && at != head;
        old.then(|| Err(serde_json::json!({"code": -32000, "message": "missing trie node"})))
    })
    .await;
    let server = world::local_api(&devnet, &node.url, store_args).await;
    let ops = world::operator(&server).await;
    // A linked wallet's position, closed on chain while the series lags.
    let alice = world::user(&server, "alice").await;
    let wallet = devnet.funded_account(1).await;
    devnet.link_account(&alice, &wallet).await;
    let pool = devnet.address("pool");
    let sync = || async {
        let before = node.requests();
        let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
        assert_eq!(report.status, StatusCode::OK, "{}", report.text());
        node.requests() - before
    };
    let range = devnet.range_around(1200).await;
    devnet.next_block_at(start - 60).await;
    let token = devnet
        .mint_by(&wallet, range, "1000000000000000000000")
        .await;
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
        if k == 12 {
            // Emptied 20 minutes before this sync, whose series the node then fails: the
            // wallet read closes it before its last points are recorded.
            devnet.next_block_at(at - 1_200).await;
            devnet.withdraw(&wallet, &token, None).await;
            devnet.collect(&wallet, &token).await;
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
        if k == 12 {
            let head = devnet
                .rpc("eth_getBlockByNumber", serde_json::json!(["latest", false]))
                .await;
            *lagging.lock().unwrap() = Some(text(&head["hash"]));
        }
        costs.push(sync().await);
        *lagging.lock().unwrap() = None;
    }
    println!(
        "figures: a sync every 2 chain-hours (24 boundaries due, 1 pool; the 12th's series \
         refused, the 13th's 48 due): {costs:?} requests each"
    );

    // The position closed while the series lagged: every point up to its close exact, its
    // ticks recorded in them (issue 61), the points after it its close's figures.
    let listed = alice.list("source=wallet&limit=100").await.json;
    let position = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| text(&p["tokenId"]) == token)
        .cloned()
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(position["status"], "closed", "{position}");
    let id = text(&position["id"]);
    let chart = alice
        .send(
            Method::GET,
            &format!("/positions/{id}/chart?period=1d"),
            &[],
            b"",
        )
        .await;
    assert_eq!(chart.status, StatusCode::OK, "{}", chart.text());
    let closed_at = start + 24 * HOUR - 1_200;
    let points = chart.json["points"].as_array().unwrap();
    let before: Vec<&Value> = points
        .iter()
        .filter(|p| unix(&p["time"]) < closed_at)
        .collect();
    assert!(before.len() > 200, "{}", chart.json);
    for point in &before {
        assert_eq!(point["exact"], true, "{point}");
        assert!(!point["valueUsd"].is_null(), "{point}");
    }
    let after = points.last().unwrap();
    assert_eq!(text(&after["liquidity"]), "0", "{after}");

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
