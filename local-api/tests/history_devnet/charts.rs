//! The book over time (issue 50, decision 66) on the devnet, its blocks placed at chosen past
//! times (anvil's genesis a day and more ago, `evm_setNextBlockTimestamp`): a position minted,
//! swaps across its range over hours, a collect, a partial withdrawal left owed, a second
//! position, a deposit; the syncs record each pool's points as they pass the boundaries. Each
//! hourly point of each position is what the position manager answers at the point's block
//! (`decreaseLiquidity` and `collect` as `eth_call`s) to the unit, its USD at that block's price;
//! the portfolio's points are the sum of its positions'; a deposit, and a transfer to the user's
//! other wallet, move the value and the net deposits, not the PnL (the transfer neither); `changes.1d` is the point a day ago against the latest; a point whose
//! block a reorg replaced is recorded again.

use super::{history, number, position, protocol_order, units, weth_usd};
use alloy_primitives::U256;
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use std::str::FromStr;
use test_support::client::TestClient;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::world;

pub(super) const HOUR: i64 = 3_600;
const DAY: i64 = 86_400;

pub(super) fn unix(time: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(&text(time))
        .unwrap()
        .timestamp()
}

pub(super) async fn get(client: &TestClient, path: &str) -> Value {
    let reply = client.send(Method::GET, path, &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text());
    reply.json
}

/// `value` fits `schema` of the contract (`openapi.yaml`, as local-api serves it): every field
/// declared (`additionalProperties: false` holds for every object of the answers), every
/// required one present, through `$ref`, `oneOf`, properties and items; `null` only where the
/// schema allows it.
fn fits(document: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if let Some(name) = schema.get("$ref").and_then(Value::as_str) {
        let name = name.trim_start_matches("#/components/schemas/");
        return fits(
            document,
            &document["components"]["schemas"][name],
            value,
            at,
        );
    }
    if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
        let fitted: Vec<Result<(), String>> = options
            .iter()
            .map(|o| fits(document, o, value, at))
            .collect();
        return match fitted.iter().find(|f| f.is_ok()) {
            Some(_) => Ok(()),
            None => Err(format!("{at}: no oneOf fits: {fitted:?}")),
        };
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    match value {
        Value::Null if types.contains(&"null") || types.is_empty() => Ok(()),
        Value::Null => Err(format!("{at}: null where {types:?}")),
        Value::Object(fields) => {
            let properties = schema["properties"].as_object();
            for (key, field) in fields {
                let Some(declared) = properties.and_then(|p| p.get(key)) else {
                    return Err(format!("{at}.{key}: not in the schema"));
                };
                fits(document, declared, field, &format!("{at}.{key}"))?;
            }
            for required in schema["required"].as_array().into_iter().flatten() {
                let key = required.as_str().unwrap_or_default();
                if !fields.contains_key(key) {
                    return Err(format!("{at}.{key}: required, missing"));
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| {
            fits(document, &schema["items"], item, &format!("{at}[{i}]"))
        }),
        _ => Ok(()),
    }
}

/// The answer fits the contract's schema `name`.
pub(super) fn assert_fits(name: &str, value: &Value) {
    let document = local_api::openapi::document().expect("the contract parses");
    let schema = json!({ "$ref": format!("#/components/schemas/{name}") });
    if let Err(why) = fits(&document, &schema, value, name) {
        panic!("the answer does not fit {name}: {why}");
    }
}

/// Syncs until the pool's series reaches `time` (each sync records what its time budget allows): its
/// 5-minute point within the last day, its hourly one before.
pub(super) async fn sync_through(ops: &TestClient, alice: &TestClient, pool: &str, time: i64) {
    let recent = time > chrono::Utc::now().timestamp() - 23 * HOUR;
    let (period, step) = if recent { ("1d", 300) } else { ("7d", HOUR) };
    let path = format!("/pools/ethereum/{pool}/chart?period={period}");
    for _ in 0..60 {
        let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
        assert_eq!(report.status, StatusCode::OK, "{}", report.text());
        let chart = get(alice, &path).await;
        let last = chart["points"]
            .as_array()
            .unwrap()
            .last()
            .map(|p| unix(&p["time"]));
        if last.is_some_and(|t| t >= time - time.rem_euclid(step)) {
            return;
        }
    }
    panic!(
        "the series did not reach {time}: {}",
        get(alice, &path).await
    );
}

/// One sync, then until the wallet read that follows it has stored the position `token` (its
/// ticks followed from then on: the points recorded after it hold them).
pub(super) async fn found(ops: &TestClient, alice: &TestClient, token: &str) {
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    for _ in 0..100 {
        let listed = alice.list("source=wallet&limit=100").await.json;
        if listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["tokenId"] == token)
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("position {token} was not read");
}

/// The withdrawn principal not collected yet at `block`, per protocol token, from the history.
fn uncollected_at(events: &[Value], order: [&str; 2], block: u64) -> [U256; 2] {
    let mut owed = [U256::ZERO; 2];
    for e in events
        .iter()
        .filter(|e| e["block"].as_u64().unwrap() <= block)
    {
        for (t, side) in order.iter().enumerate() {
            match text(&e["kind"]).as_str() {
                "withdraw" => owed[t] += units(&e[side]["amount"]),
                "collect" => owed[t] -= units(&e[side]["principal"]),
                _ => {}
            }
        }
    }
    owed
}

/// Each point of the position's hourly chart against the chain at its block.
async fn assert_points_are_the_chains(
    devnet: &Devnet,
    alice: &TestClient,
    (view, until): (&Value, i64),
) -> Vec<Value> {
    let id = text(&view["id"]);
    let chart = get(alice, &format!("/positions/{id}/chart?period=7d")).await;
    assert_fits("PositionChart", &chart);
    assert_eq!(chart["intervalSeconds"], 3600, "{chart}");
    let points = chart["points"].as_array().unwrap().clone();
    assert!(points.len() >= 2, "{chart}");
    let events = history(alice, &id).await;
    let order = protocol_order(view, devnet);
    let token = text(&view["tokenId"]);
    let mut previous = 0;
    // Points from `until` on may have been recorded before the position's ticks were followed
    // (a first sync at an hour's boundary, before the link's read): said so, not checked here.
    for point in points.iter().filter(|p| unix(&p["time"]) < until) {
        let (time, block) = (unix(&point["time"]), point["block"].as_u64().unwrap());
        assert_eq!(time % HOUR, 0, "{point}");
        assert!(
            time > previous && unix(&point["blockTime"]) <= time,
            "{point}"
        );
        previous = time;
        // The last block at or before the boundary: the next one is after it.
        let next = devnet
            .rpc(
                "eth_getBlockByNumber",
                json!([format!("0x{:x}", block + 1), false]),
            )
            .await;
        if !next.is_null() {
            let next_time =
                i64::from_str_radix(text(&next["timestamp"]).trim_start_matches("0x"), 16).unwrap();
            assert!(
                next_time > time,
                "{point}: block {} is at {next_time}",
                block + 1
            );
        }
        assert_eq!(point["exact"], true, "{point}");
        let quote = devnet
            .run(
                "position-quote",
                &["--token-id", &token, "--block", &block.to_string()],
            )
            .await;
        let owed_principal = uncollected_at(&events, order, block);
        let weth = weth_usd(devnet, block).await;
        let mut value = 0.0;
        for (t, side) in order.iter().enumerate() {
            let chain = |field: &str| {
                U256::from_str(&text(&quote[format!("{field}{t}").as_str()])).unwrap()
            };
            assert_eq!(
                units(&point[side]["amount"]),
                chain("amount"),
                "{point}: {quote}"
            );
            assert_eq!(
                units(&point[side]["feesUnclaimed"]) + owed_principal[t],
                chain("fees"),
                "{point}: {quote}"
            );
            let usdc = text(&view[side]["address"]).eq_ignore_ascii_case(&devnet.address("usdc"));
            let whole = |v: U256| f64::from_str(&v.to_string()).unwrap() / 1e18;
            value += whole(chain("amount") + chain("fees")) * if usdc { 1.0 } else { weth };
        }
        assert!(
            (number(&point["valueUsd"]) - value).abs() < 0.011,
            "{point}: {value}"
        );
        // The formula at the point: value less the net deposits.
        let pnl = number(&point["valueUsd"]) - number(&point["netDepositsUsd"]);
        assert!((number(&point["pnlUsd"]) - pnl).abs() < 0.011, "{point}");
    }
    points
}

async fn book_over_time(store_args: &[&str]) {
    let now = chrono::Utc::now().timestamp();
    // An hour at least ten minutes back: the last block placed (five minutes after it) is
    // never in the future, whenever the test starts.
    let top = (now - 600) - (now - 600).rem_euclid(HOUR);
    let devnet = Devnet::since(3000, top - 27 * HOUR).await;
    let wallet = text(&devnet.run("account", &["--index", "1"]).await["address"]);
    devnet.run("fund", &["--account", &wallet]).await;
    let max = U256::MAX.to_string();
    for token in ["usdc", "weth"] {
        let args = ["--account", &wallet, "--token", token, "--amount", &max];
        devnet.run("approve", &args).await;
    }
    let pool = devnet.address("pool");
    let server = world::local_api(&devnet, &devnet.rpc, store_args).await;
    let alice = world::user(&server, "alice").await;
    let ops = world::operator(&server).await;
    devnet.link_account(&alice, &wallet).await;
    // The user's other wallet: a position moved to it stays the user's, its count going on.
    let other = devnet.account(2).await;
    devnet.link_account(&alice, &other).await;

    let (lower, upper) = devnet.range_around(1200).await;
    let mint = |at: i64, offset: i32| {
        let (devnet, wallet) = (&devnet, &wallet);
        async move {
            devnet.next_block_at(at).await;
            let (l, u) = ((lower - offset).to_string(), (upper + offset).to_string());
            let args = [
                "--account",
                wallet.as_str(),
                "--lower",
                &l,
                "--upper",
                &u,
                "--amount0",
                "1000000000000000000000",
                "--amount1",
                "1000000000000000000000",
            ];
            text(&devnet.run("mint", &args).await["tokenId"])
        }
    };
    let first = mint(top - 26 * HOUR + 100, 0).await;
    let sent = mint(top - 26 * HOUR + 200, 300).await;
    found(&ops, &alice, &first).await;
    devnet.next_block_at(top - 26 * HOUR + 1_800).await;
    devnet.swap_both_ways("20", "30000").await;
    devnet.next_block_at(top - 25 * HOUR + 100).await;
    devnet
        .run("swap", &["--sell", "weth", "--amount", "15"])
        .await;
    sync_through(&ops, &alice, &pool, top - 25 * HOUR + 100).await;
    devnet.next_block_at(top - 4 * HOUR + 100).await;
    let part = [
        "--account",
        wallet.as_str(),
        "--token-id",
        &first,
        "--amount0",
        "1000000000000000",
        "--amount1",
        "1000000000000000",
    ];
    devnet.run("collect", &part).await;
    devnet.next_block_at(top - 3 * HOUR + 100).await;
    let quote = devnet.run("position-quote", &["--token-id", &first]).await;
    let third = (text(&quote["liquidity"]).parse::<u128>().unwrap() / 3).to_string();
    devnet.withdraw(&wallet, &first, Some(&third)).await;
    devnet.next_block_at(top - 3 * HOUR + 1_900).await;
    devnet.swap_both_ways("10", "20000").await;
    let second = mint(top - 2 * HOUR + 100, 600).await;
    found(&ops, &alice, &second).await;
    sync_through(&ops, &alice, &pool, top - 2 * HOUR + 100).await;
    devnet.next_block_at(top - HOUR + 100).await;
    let added = [
        "--account",
        wallet.as_str(),
        "--token-id",
        &first,
        "--amount0",
        "300000000000000000000",
        "--amount1",
        "300000000000000000000",
    ];
    devnet.run("increase", &added).await;
    devnet.next_block_at(top - HOUR + 200).await;
    devnet.transfer(&wallet, &second, &other).await;
    // Sent to a stranger, who then collects from it: none of that is the user's.
    let stranger = devnet.account(3).await;
    devnet.next_block_at(top - HOUR + 300).await;
    devnet.transfer(&wallet, &sent, &stranger).await;
    devnet.next_block_at(top - HOUR + 400).await;
    let theirs = [
        "--account",
        stranger.as_str(),
        "--token-id",
        &sent,
        "--amount0",
        "1000000000000000",
        "--amount1",
        "1000000000000000",
    ];
    devnet.run("collect", &theirs).await;
    devnet.mine_at(top).await;
    sync_through(&ops, &alice, &pool, top).await;

    let (one, two) = (
        position(&alice, &first).await,
        position(&alice, &second).await,
    );
    assert!(
        text(&two["wallet"]).eq_ignore_ascii_case(&other),
        "moved: {two}"
    );
    let points_one = assert_points_are_the_chains(&devnet, &alice, (&one, i64::MAX)).await;
    let points_two = assert_points_are_the_chains(&devnet, &alice, (&two, i64::MAX)).await;
    // Sent away: its points the chain's until then, after it all it held at the transfer
    // taken out (issue 61): nothing held, its PnL kept, as GET shows it.
    let three = position(&alice, &sent).await;
    assert_eq!(
        (&three["status"], &three["closeReason"]),
        (&json!("closed"), &json!("transferred")),
        "{three}"
    );
    let points_three =
        assert_points_are_the_chains(&devnet, &alice, (&three, top - HOUR + 300)).await;
    let gone = points_three.last().unwrap();
    assert_eq!(unix(&gone["time"]), top, "{gone}");
    assert_eq!(number(&gone["valueUsd"]), 0.0, "{gone}");
    assert_eq!(number(&three["valueUsd"]), 0.0, "{three}");
    assert_eq!(text(&three["tokenA"]["amount"]), "0", "{three}");
    assert!(
        (number(&three["pnlUsd"]) - number(&gone["pnlUsd"])).abs() < 0.011,
        "{three} {gone}"
    );
    // No swap between the last hour and the transfer: its PnL then is the one it kept.
    let before = &points_three[points_three.len() - 2];
    assert_eq!(unix(&before["time"]), top - HOUR, "{before}");
    assert!(
        (number(&before["pnlUsd"]) - number(&gone["pnlUsd"])).abs() < 0.011,
        "{before} {gone}"
    );
    assert_eq!(
        unix(&points_one[0]["time"]),
        top - 25 * HOUR,
        "before its mint: none"
    );
    assert_eq!(unix(&points_two[0]["time"]), top - HOUR);
    // Moved between the owner's wallets: no arrival, in GET as in the chart (issue 61): its
    // count from its mint, the chart's last point its figures.
    let last_two = points_two.last().unwrap();
    assert_eq!(unix(&last_two["time"]), top, "{last_two}");
    for field in ["pnlUsd", "valueUsd"] {
        assert!(
            (number(&two[field]) - number(&last_two[field])).abs() < 0.011,
            "{field}: {two} {last_two}"
        );
    }
    // Opened at its mint (where its count starts), not at the move.
    assert_eq!(unix(&two["createdAt"]), top - 2 * HOUR + 100, "{two}");

    // The portfolio's points are the sum of its positions'.
    let portfolio = get(&alice, "/portfolio/chart?period=7d").await;
    assert_fits("PortfolioChart", &portfolio);
    let at =
        |points: &[Value], time: i64| points.iter().find(|p| unix(&p["time"]) == time).cloned();
    for point in portfolio["points"].as_array().unwrap() {
        let time = unix(&point["time"]);
        let parts: Vec<Value> = [
            at(&points_one, time),
            at(&points_two, time),
            at(&points_three, time),
        ]
        .into_iter()
        .flatten()
        .collect();
        assert_eq!(point["positions"], parts.len(), "{point}");
        // A position without a figure there is counted apart, never as zero.
        let (priced, unpriced): (Vec<Value>, Vec<Value>) =
            parts.into_iter().partition(|p| !p["valueUsd"].is_null());
        assert_eq!(point["unpricedPositions"], unpriced.len(), "{point}");
        assert_eq!(point["exact"], unpriced.is_empty(), "{point}");
        let parts = priced;
        for field in ["valueUsd", "pnlUsd", "feesEarnedUsd", "netDepositsUsd"] {
            let sum: f64 = parts.iter().map(|p| number(&p[field])).sum();
            assert!(
                (number(&point[field]) - sum).abs() < 0.011 * parts.len() as f64,
                "{field}: {point}"
            );
        }
    }
    // A deposit (between these two hours, no swap) moves the value and the net deposits alike.
    let points = portfolio["points"].as_array().unwrap();
    let (before, after) = (at(points, top - HOUR).unwrap(), at(points, top).unwrap());
    let moved = |f: &str| number(&after[f]) - number(&before[f]);
    assert!(moved("valueUsd") > 1_000.0, "{before} {after}");
    assert!(
        (moved("valueUsd") - moved("netDepositsUsd")).abs() < 0.03,
        "{before} {after}"
    );
    assert!(moved("pnlUsd").abs() < 0.03, "{before} {after}");
    // Grouped by chain: one series, the same sums.
    let grouped = get(&alice, "/portfolio/chart?period=7d&groupBy=chain").await;
    assert_fits("GroupedPortfolioChart", &grouped);
    assert_eq!(grouped["groups"][0]["key"], "ethereum", "{grouped}");
    assert_eq!(grouped["groups"][0]["points"], portfolio["points"]);

    // The changes: the latest point (the top of the hour) against the one a day before it.
    let bare = get(&alice, "/portfolio").await;
    assert!(bare.get("changes").is_none(), "asked for apart: {bare}");
    // The chart's last point is the portfolio, the position sent away's PnL in both.
    for (total, field) in [("totalValueUsd", "valueUsd"), ("totalPnlUsd", "pnlUsd")] {
        assert!(
            (number(&bare[total]) - number(&after[field])).abs() < 0.03,
            "{total}: {bare} {after}"
        );
    }
    let overview = get(&alice, "/portfolio?include=changes").await;
    assert_fits("Portfolio", &overview);
    assert_eq!(overview["totalValueUsd"], bare["totalValueUsd"]);
    let day = &overview["changes"]["1d"];
    assert_eq!(unix(&day["to"]), top, "{overview}");
    assert_eq!(unix(&day["from"]), top - 24 * HOUR, "{overview}");
    let then = at(points, top - 24 * HOUR).unwrap();
    let change = |f: &str| number(&after[f]) - number(&then[f]);
    assert!(
        (number(&day["valueUsd"]) - change("valueUsd")).abs() < 0.021,
        "{day} {then} {after}"
    );
    assert!(
        (number(&day["pnlUsd"]) - change("pnlUsd")).abs() < 0.021,
        "{day}"
    );
    assert!(
        overview["changes"]["30d"].is_null(),
        "the series does not reach back a month"
    );

    // A reorg replaces the block of the latest point: the next sync records it again.
    let snapshot = devnet.rpc("evm_snapshot", json!([])).await;
    devnet.next_block_at(top + 300).await;
    devnet
        .run("swap", &["--sell", "weth", "--amount", "5"])
        .await;
    sync_through(&ops, &alice, &pool, top + 300).await;
    devnet.rpc("evm_revert", json!([snapshot])).await;
    devnet.next_block_at(top + 300).await;
    devnet
        .run("swap", &["--sell", "usdc", "--amount", "9000"])
        .await;
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    let chart = get(&alice, &format!("/pools/ethereum/{pool}/chart?period=1d")).await;
    let last = chart["points"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(unix(&last["time"]), top + 300, "{last}");
    let block = last["block"].as_u64().unwrap();
    let read = devnet.run("pool", &["--block", &block.to_string()]).await;
    assert_eq!(
        text(&last["sqrtPrice"]),
        text(&read["sqrtPriceX96"]),
        "{last}"
    );

    // Another caller: the position's chart is not found.
    let bob = world::user(&server, "bob").await;
    let reply = bob
        .send(
            Method::GET,
            &format!("/positions/{}/chart", text(&one["id"])),
            &[],
            b"",
        )
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.text());
}

test_support::on_both_stores!(the_book_over_time => book_over_time);

/// A devnet whose clock started `days + 1` days before today, a wallet (anvil's account 1)
/// holding a position minted `days` days before today (an hour before the day's boundary), a
/// swap each day since: a position older than the series, which starts when local-api first
/// syncs. Answers the devnet, the wallet, the token and today's boundary.
/// The last 5-minute boundary at least 30 s before `now`.
fn last_boundary(now: i64) -> i64 {
    (now - 30) - (now - 30).rem_euclid(300)
}

async fn older_than_the_series(days: i64) -> (Devnet, String, String, i64) {
    let now = chrono::Utc::now().timestamp();
    let today = now - now.rem_euclid(DAY);
    let devnet = Devnet::since(3000, today - (days + 1) * DAY).await;
    let wallet = devnet.account(1).await;
    let range = devnet.range_around(1200).await;
    devnet.next_block_at(today - days * DAY - HOUR).await;
    let token = devnet
        .mint_to(&wallet, range, None, "1000000000000000000000")
        .await;
    for day in (1..=days).rev() {
        devnet.next_block_at(today - day * DAY + HOUR).await;
        devnet.swap_both_ways("10", "20000").await;
    }
    // The head exactly at a 5-minute boundary before the last the wall clock passed (a block at
    // that one is then possible), never an hour's: the first sync records the head's boundary
    // before the position's ticks are followed, and no hourly or daily chart may show it.
    let head = last_boundary(now) - 300;
    devnet
        .mine_at(if head % HOUR == 0 { head - 300 } else { head })
        .await;
    (devnet, wallet, token, today)
}

/// local-api reading the chain at `rpc`, `wallet` linked to alice, its position `token` found,
/// then one sync more (the one that backfills its pool's past days); the position as listed.
async fn linked_and_synced(
    devnet: &Devnet,
    (rpc, store_args): (&str, &[&str]),
    wallet: &str,
    token: &str,
) -> (test_support::local_api::LocalApi, TestClient, Value) {
    let server = world::local_api(devnet, rpc, store_args).await;
    let alice = world::user(&server, "alice").await;
    let ops = world::operator(&server).await;
    devnet.link_account(&alice, wallet).await;
    found(&ops, &alice, token).await;
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    let view = position(&alice, token).await;
    (server, alice, view)
}

/// A position older than the series (minted three days before local-api first synced): its
/// pool's daily points since its mint are backfilled by the syncs from the chain, each exact at
/// its block as the position manager answers there.
async fn past_days_backfilled(store_args: &[&str]) {
    let (devnet, wallet, token, today) = older_than_the_series(3).await;
    let pool = devnet.address("pool");
    let linked = chrono::Utc::now().timestamp();
    let (_server, alice, view) =
        linked_and_synced(&devnet, (&devnet.rpc, store_args), &wallet, &token).await;
    let first_sync = linked - linked.rem_euclid(300);
    let points = assert_points_are_the_chains(&devnet, &alice, (&view, first_sync)).await;
    let days: Vec<i64> = points
        .iter()
        .map(|p| unix(&p["time"]))
        .filter(|t| t % DAY == 0)
        .collect();
    for day in [3, 2, 1] {
        assert!(
            days.contains(&(today - day * DAY)),
            "day -{day}: {points:?}"
        );
    }
    let pool_chart = get(&alice, &format!("/pools/ethereum/{pool}/chart?period=7d")).await;
    assert_fits("PoolChart", &pool_chart);
    assert!(
        pool_chart["points"].as_array().unwrap().len() >= 3,
        "{pool_chart}"
    );
}

test_support::on_both_stores!(past_days_are_backfilled => past_days_backfilled);

/// The same from a node that keeps no state older than its last blocks: the past days are
/// points not read, each saying why, their figures `null`, never zero.
#[tokio::test]
async fn past_days_from_a_pruned_node_are_marked_not_exact() {
    use test_support::rpc_stub::RpcStub;
    let (devnet, wallet, token, today) = older_than_the_series(2).await;
    let head = devnet.rpc("eth_blockNumber", json!([])).await;
    let head = u64::from_str_radix(text(&head).trim_start_matches("0x"), 16).unwrap();
    let mut hashes = std::collections::BTreeMap::new();
    for n in 0..=head {
        let block = devnet
            .rpc("eth_getBlockByNumber", json!([format!("0x{n:x}"), false]))
            .await;
        hashes.insert(text(&block["hash"]).to_lowercase(), n);
    }
    // State is served at the head only.
    let proxy = RpcStub::proxy(&devnet.rpc, move |call| {
        if call["method"].as_str()? != "eth_call" {
            return None;
        }
        let hash = call["params"][1]["blockHash"].as_str()?.to_lowercase();
        (*hashes.get(&hash)? < head).then(|| {
            Err(json!({"code": -32000, "message": "missing trie node 4f1c (path ) state is not available"}))
        })
    })
    .await;
    let (_server, alice, view) =
        linked_and_synced(&devnet, (&proxy.url, &[]), &wallet, &token).await;
    let id = text(&view["id"]);
    let chart = get(&alice, &format!("/positions/{id}/chart?period=1y")).await;
    assert_fits("PositionChart", &chart);
    let points = chart["points"].as_array().unwrap();
    let past: Vec<&Value> = points.iter().filter(|p| unix(&p["time"]) < today).collect();
    assert_eq!(past.len(), 2, "{chart}");
    for point in past {
        assert_eq!(point["exact"], false, "{point}");
        assert!(
            text(&point["reason"]).contains("not an archive node"),
            "{point}"
        );
        for field in ["valueUsd", "pnlUsd", "feesEarnedUsd"] {
            assert!(point[field].is_null(), "{field}: {point}");
        }
        assert!(point["tokenA"]["amount"].is_null(), "never zero: {point}");
    }
    // A point recorded live, at a block the node serves, has its figures: the manager's values
    // at the mint's block were refused, but they are the head's until the position's next
    // event (issue 61: a pruned node blanks only the points whose own state it refused).
    let boundary = last_boundary(chrono::Utc::now().timestamp());
    devnet.mine_at(boundary).await;
    let ops = world::operator(&_server).await;
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    let live = get(&alice, &format!("/positions/{id}/chart?period=1d")).await;
    let point = live["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| unix(&p["time"]) == boundary)
        .unwrap_or_else(|| panic!("{boundary}: {live}"));
    assert!(point["block"].as_u64() > Some(head), "{point}");
    for field in ["valueUsd", "pnlUsd", "feesEarnedUsd"] {
        assert!(point[field].is_number(), "{field}: {point}");
    }
}
