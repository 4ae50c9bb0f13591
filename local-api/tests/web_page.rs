//! The page (`web/`) in a real browser: Debian's chromium driven by playwright-core
//! (`web/tests/page.mjs`) against local-api on the devnet. What the page shows is compared with
//! what the API answers: the portfolio's figures, every position over every page, each range
//! bar's marker against the position's `inRange`; the wallet flows run through an injected
//! `window.ethereum` that forwards to anvil (which signs for its unlocked account), and the
//! position they open and close is checked on the API. The run takes the README's pictures
//! (`docs/screenshots/`: the page, an action's transactions, a position's history, a phone), so
//! they show the page as it is.

use lambda_http::http::{Method, StatusCode};
use local_api::auth::JwtSettings;
use serde_json::{json, Value};
use std::path::PathBuf;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::wallets::post;
use test_support::world;

/// What the page shows for USD (`$1,234.56`, `+$1.00`, `-$2.50`) as a number.
fn shown_usd(shown: &str) -> f64 {
    let negative = shown.starts_with('-');
    let digits: String = shown
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let value: f64 = digits.parse().unwrap_or_else(|_| panic!("{shown:?}"));
    if negative {
        -value
    } else {
        value
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[tokio::test]
async fn the_page_shows_what_the_api_answers_and_acts_through_the_wallet() {
    let started = std::time::SystemTime::now();
    // The chain's clock starts two hours back: a position held since then has points to chart.
    let now = chrono::Utc::now().timestamp();
    let devnet = Devnet::since(3000, now - 2 * 3600).await;
    let wallet = text(&devnet.run("account", &["--index", "1"]).await["address"]);
    devnet.run("fund", &["--account", &wallet]).await;
    // The wallet also holds a position on a pool of two tokens no route prices.
    let lone = devnet
        .run(
            "new-pool",
            &["--symbol", "AAA", "--fee", "500", "--with", "BBB"],
        )
        .await;
    let units = "1000000000000000000000";
    let (token0, token1) = (text(&lone["token0"]), text(&lone["token1"]));
    let mint_args = [
        "--lower",
        "-600",
        "--upper",
        "600",
        "--amount0",
        units,
        "--amount1",
        units,
        "--recipient",
        &wallet,
        "--token0",
        &token0,
        "--token1",
        &token1,
        "--fee",
        "500",
    ];
    devnet.run("mint", &mint_args).await;
    // Another of the user's wallets holds a position on the catalog pool from then on.
    let keeper = text(&devnet.run("account", &["--index", "2"]).await["address"]);
    devnet.run("fund", &["--account", &keeper]).await;
    let max = alloy_primitives::U256::MAX.to_string();
    for token in ["usdc", "weth"] {
        let args = ["--account", &keeper, "--token", token, "--amount", &max];
        devnet.run("approve", &args).await;
    }
    let (lower, upper) = devnet.range_around(1200).await;
    let (lower, upper) = (lower.to_string(), upper.to_string());
    let kept = [
        "--account",
        &keeper,
        "--lower",
        &lower,
        "--upper",
        &upper,
        "--amount0",
        units,
        "--amount1",
        units,
    ];
    devnet.run("mint", &kept).await;
    let server = world::local_api(&devnet, &devnet.rpc, &[]).await;
    let token = JwtSettings::local_default().issue("paula", 3600);
    let paula = server.client(Some(&token));
    let ops = JwtSettings::local_default().issue_with_scope("ops", 3600, Some("markets:sync"));
    devnet.link_account(&paula, &keeper).await;
    let pool = devnet.address("pool");
    // Found by a sync (its ticks followed), then the chain's clock catches up with the wall's:
    // the syncs record the boundaries passed (12 a sync).
    let operator = server.client(Some(&ops));
    operator.send(Method::POST, "/markets/sync", &[], b"").await;
    devnet.mine_at(now - 30).await;
    for _ in 0..3 {
        let report = operator.send(Method::POST, "/markets/sync", &[], b"").await;
        assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    }
    let day_chart = paula
        .send(Method::GET, "/portfolio/chart?period=1d", &[], b"")
        .await
        .json;
    let charted = day_chart["points"].as_array().unwrap().len();
    let pool_chart = paula
        .send(
            Method::GET,
            &format!("/pools/ethereum/{pool}/chart?period=1d"),
            &[],
            b"",
        )
        .await
        .json;
    assert!(
        charted >= 20,
        "two hours of 5-minute points: {day_chart} {pool_chart}"
    );

    // 23 simulated positions: in range, and out of it on either side (more than two pages).
    let pool = devnet.address("pool");
    for i in 0..23 {
        let (lower, upper) = match i % 3 {
            0 => (2500, 3600),
            1 => (3500, 4500),
            _ => (1500, 2400),
        };
        let body = json!({
            "chain": "ethereum", "protocol": "uniswap-v3", "pool": pool,
            "amountA": format!("0.{}", 10 + i), "amountB": "1000",
            "priceLower": lower, "priceUpper": upper,
        });
        let reply = post(&paula, "/positions", &body).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    }
    let portfolio = paula.portfolio().await.json;
    let listed = paula.list("limit=100").await.json;

    let screenshots = root().join("docs/screenshots");
    let config = std::env::temp_dir().join(format!("page-{}.json", ulid::Ulid::new()));
    std::fs::write(
        &config,
        json!({
            "base": server.base, "token": token, "opsToken": ops,
            "badToken": JwtSettings::local_default().issue("paula", -60), "rpc": devnet.rpc, "wallet": wallet,
            "watched": devnet.address("owner"),
            "screenshots": screenshots,
        })
        .to_string(),
    )
    .unwrap();
    let run = tokio::process::Command::new("node")
        .arg(root().join("web/tests/page.mjs"))
        .arg(&config)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(300), run)
        .await
        .expect("the browser run ends in time")
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown.get("failure"), None, "{shown}");
    assert_eq!(shown["errors"], json!([]), "the page logged errors");
    assert_eq!(
        shown["closedOffers"],
        json!({"actions": false, "close": false}),
        "a closed position offers no action"
    );
    // A watched address: listed as such, its position shown without actions.
    assert!(
        text(&shown["watchedItem"]).contains("watched (read only)"),
        "{shown}"
    );
    assert!(
        shown["watchedPosition"].is_string(),
        "the deployer's position: {shown}"
    );
    let watched = &shown["watchedDetail"];
    assert!(
        text(&watched["note"]).contains("link it by signature"),
        "{shown}"
    );
    assert_eq!(
        (&watched["actions"], &watched["close"]),
        (&json!(false), &json!(false))
    );

    // The portfolio, figure by figure.
    for field in [
        "totalValueUsd",
        "unrealizedPnlUsd",
        "realizedPnlUsd",
        "totalFeesEarnedUsd",
        "totalImpermanentLossUsd",
    ] {
        let on_page = shown_usd(&text(&shown["portfolio"][field]));
        let answered = portfolio[field].as_f64().unwrap();
        assert!(
            (on_page - answered).abs() < 0.005,
            "{field}: {on_page} vs {answered}"
        );
    }
    assert_eq!(
        text(&shown["portfolio"]["positions"]),
        text(&portfolio["positions"])
    );
    let assets = portfolio["assets"].as_array().unwrap();
    assert_eq!(shown["assets"].as_array().unwrap().len(), assets.len());
    for (on_page, answered) in shown["assets"].as_array().unwrap().iter().zip(assets) {
        // The symbol, with the chain where two assets share it.
        let label = text(&on_page["label"]);
        let symbol = text(&answered["symbol"]);
        assert!(
            label == symbol || label == format!("{symbol} · {}", text(&answered["chain"])),
            "{label} for {answered}"
        );
        assert!(
            (shown_usd(&text(&on_page["usd"])) - answered["valueUsd"].as_f64().unwrap()).abs()
                < 0.005
        );
        assert_eq!(
            text(&on_page["percent"]),
            format!("{:.2}%", answered["percentage"].as_f64().unwrap())
        );
    }
    assert_eq!(shown["chains"][0]["label"], "ethereum");

    // The portfolio over the last day: a point drawn for each of the API's, the hovered one's
    // figures in the readout; the changes beside the total (none reaches back a day yet).
    assert_eq!(shown["chart"]["points"], charted, "{shown}");
    assert_eq!(shown["chart"]["columns"], charted, "{shown}");
    assert_eq!(shown["chart"]["lines"], json!(["value", "pnl"]), "{shown}");
    let readout = text(&shown["chart"]["readout"]);
    let first = &day_chart["points"][0];
    assert!(readout.contains("value $"), "{readout}");
    assert!(
        readout.contains(&format!("{} position(s)", first["positions"])),
        "{readout} for {first}"
    );
    assert_eq!(shown["changes"]["1d"], "—", "{shown}");

    // Every position, in the API's order, over three pages of ten.
    let data = listed["data"].as_array().unwrap();
    let rows = shown["rows"].as_array().unwrap();
    assert_eq!(shown["pages"], 3);
    // The 23 simulated positions and the one the other wallet holds.
    assert_eq!(shown["pageInfo"], "1–10 of 24");
    assert_eq!(rows.len(), data.len());
    let (mut inside, mut outside) = (0, 0);
    for (row, position) in rows.iter().zip(data) {
        assert_eq!(row["id"], position["id"]);
        assert_eq!(row["status"], position["status"]);
        let value = position["valueUsd"].as_f64().unwrap();
        assert!(
            (shown_usd(&text(&row["value"])) - value).abs() < 0.005,
            "{row}"
        );
        let in_range = position["inRange"].as_bool().unwrap();
        assert_eq!(
            row["marker"],
            if in_range { "between" } else { "outside" },
            "{row} {position}"
        );
        assert_eq!(row["side"] == "in", in_range);
        if in_range {
            inside += 1;
        } else {
            outside += 1;
        }
    }
    assert!(inside > 0 && outside > 0);
    assert!(shown["firstFocus"].is_string());

    // The wallet flows: the position the page opened from the wallet, then closed.
    let id = text(&shown["openedId"]);
    assert!(
        text(&shown["opened"]).contains(": active, token "),
        "{shown}"
    );
    assert!(shown["detailBefore"]["tokenId"].is_string(), "{shown}");
    // It was opened from one token alone, swapped to fit: the page showed the swap and its
    // price impact before the wallet signed.
    let terms = text(&shown["openTerms"]);
    assert!(
        terms.contains("zap") && terms.contains("swaps 0.") && terms.contains("price impact"),
        "{terms}"
    );
    // The actions from the detail: their transactions shown with gas and amounts before they
    // were signed, each followed to the end; removing half halved the liquidity.
    let actions = shown["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 2, "{shown}");
    let first = text(&actions[0]["shown"][0]);
    assert!(
        first.starts_with("collect") && first.contains("gas") && first.contains("receives"),
        "{first}"
    );
    let second = text(&actions[1]["shown"][0]);
    assert!(
        second.starts_with("decrease") && second.contains("receives"),
        "{second}"
    );
    for action in actions {
        assert_eq!(text(&action["done"]), "active: done", "{action}");
    }
    let liquidity = |v: &Value| text(v).replace(',', "").parse::<u128>().unwrap();
    let before = liquidity(&shown["detailBefore"]["liquidity"]);
    assert_eq!(
        liquidity(&actions[1]["liquidity"]),
        before - before / 2,
        "{shown}"
    );
    // Every transaction went out with the gas limit the API's simulation gave (approvals,
    // mint, withdraw), and was mined with it.
    let sent_gas = shown["sentGas"].as_array().unwrap();
    assert!(sent_gas.len() >= 2, "{shown}");
    assert!(
        sent_gas
            .iter()
            .all(|g| g.as_str().is_some_and(|g| g.starts_with("0x"))),
        "{shown}"
    );
    // Its history in its detail: as many rows as the total says, a mint first where read.
    let kinds = shown["historyKinds"].as_array().unwrap();
    assert_eq!(
        text(&shown["historyTotal"]),
        format!(
            "{} event{}",
            kinds.len(),
            if kinds.len() == 1 { "" } else { "s" }
        ),
        "{shown}"
    );
    assert!(kinds.is_empty() || kinds[0] == "mint", "{shown}");
    assert!(
        text(&shown["closed"]).starts_with("closed: withdrawn"),
        "{shown}"
    );
    // As the page showed it closed: holding nothing, its history holding the close's
    // withdrawal beside the half taken out before (issue 61).
    let after = &shown["detailAfter"];
    assert_eq!(text(&after["valueUsd"]), "0", "{after}");
    let kinds_after = shown["historyKindsAfter"].as_array().unwrap();
    let withdrawals = kinds_after.iter().filter(|k| *k == "withdraw").count();
    assert_eq!(withdrawals, 2, "{shown}");
    let closed = paula.get(&id).await.json;
    assert_eq!(closed["status"], "closed", "{closed}");
    assert_eq!(closed["valueUsd"], 0.0, "{closed}");
    for side in ["tokenA", "tokenB"] {
        assert_eq!(text(&closed[side]["amount"]), "0", "{closed}");
    }
    assert_eq!(closed["source"], "wallet");
    assert_eq!(closed["closeReason"], "withdrawn");
    assert_eq!(
        text(&closed["tokenId"]),
        text(&shown["detailBefore"]["tokenId"])
    );
    let quote = devnet
        .run("position-quote", &["--token-id", &text(&closed["tokenId"])])
        .await;
    assert_eq!(text(&quote["liquidity"]), "0", "emptied on chain");
    // A closed position's history holds its close (issue 61): after a sync, the close's
    // withdrawal beside the half taken out before it.
    operator.send(Method::POST, "/markets/sync", &[], b"").await;
    let history = paula
        .send(Method::GET, &format!("/positions/{id}/history"), &[], b"")
        .await
        .json;
    let withdrawals = history["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "withdraw")
        .count();
    assert_eq!(withdrawals, 2, "{history}");
    assert_eq!(text(&quote["owner"]), wallet);
    // No swap moved the price or paid a fee while it was open: its close realized nothing,
    // whatever it had withdrawn before (the half taken out counts as taken out, decision 44).
    let pnl = closed["pnlUsd"].as_f64().expect("a realized PnL");
    assert!(pnl.abs() <= 0.02, "{closed}");
    assert_eq!(
        closed["costBasisUsd"],
        shown_cost(&shown["detailBefore"]),
        "{closed}"
    );

    // Unpriced: said so on the page, never 0.
    let wallet_positions = paula.list("source=wallet").await.json;
    let unpriced = wallet_positions["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["valueUsd"].is_null())
        .expect("the AAA/BBB position")
        .clone();
    let row = shown["walletRows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == unpriced["id"])
        .unwrap_or_else(|| panic!("{shown}"));
    assert_eq!(row["value"], "no USD price", "{row}");
    assert!(
        text(&shown["unpriced"]).starts_with("1 position"),
        "{shown}"
    );

    // Alerts (decision 61): the feed as the API answers it, newest first (the wallet's collect,
    // withdrawal and close told); the position's own in its detail; the settings as saved
    // through the form.
    let events = paula
        .send(Method::GET, "/events?limit=20", &[], b"")
        .await
        .json;
    let listed: Vec<Value> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!({"id": e["id"], "type": e["type"]}))
        .collect();
    assert!(!listed.is_empty(), "{events}");
    assert_eq!(shown["feed"], json!(listed), "{shown}");
    // Amounts in whole tokens with their symbols, the pool by its tokens: no base units, no ids.
    let cells = shown["feedCells"].as_array().unwrap();
    for row in cells {
        let text: Vec<&str> = row
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(!text.iter().any(|c| c.contains("base units")), "{text:?}");
        assert!(
            text.iter()
                .any(|c| c.contains("WETH/USDC") || c.contains("USDC/WETH")),
            "{text:?}"
        );
    }
    let collected = cells.iter().find(|r| r[1] == "fees collected").unwrap();
    assert!(
        collected[3].as_str().unwrap().contains(" WETH"),
        "{collected}"
    );
    let types: Vec<Value> = listed.iter().map(|e| e["type"].clone()).collect();
    assert!(types.contains(&json!("position.closed")), "{types:?}");
    let opened = text(&shown["openedId"]);
    let path = format!("/events?positionId={opened}&limit=5");
    let own = paula.send(Method::GET, &path, &[], b"").await.json;
    let own: Vec<Value> = own["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    assert_eq!(shown["detailAlerts"], json!(own), "{shown}");
    let settings = &shown["settings"];
    assert_eq!(settings["cooldownMinutes"], 15, "{settings}");
    assert_eq!(settings["feeThresholdUsd"], "2.5", "{settings}");
    let told: Vec<&str> = settings["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        !told.contains(&"position.range.approaching") && told.contains(&"position.closed"),
        "{settings}"
    );

    // The phone layout fits 375 px; a refused token is back to signing in, with the reason.
    assert!(shown["phoneWidth"].as_u64().unwrap() <= 375, "{shown}");
    assert_eq!(shown["signinShown"], true);
    assert!(text(&shown["refused"]).contains("refused"), "{shown}");
    // The README's pictures are the ones this run took.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for name in [
        "page-desktop.png",
        "page-actions.png",
        "page-history.png",
        "page-phone.png",
        "page-alerts.png",
    ] {
        let modified = std::fs::metadata(screenshots.join(name))
            .and_then(|m| m.modified())
            .unwrap();
        assert!(modified >= started, "{name} was not taken by this run");
        let size = std::fs::metadata(screenshots.join(name)).unwrap().len();
        assert!(size > 10_000, "{name}: {size} bytes");
        assert!(
            readme.contains(&format!("docs/screenshots/{name}")),
            "the README shows {name}"
        );
    }
}

/// The cost basis the detail showed, as the API's JSON number.
fn shown_cost(detail: &Value) -> Value {
    serde_json::from_str(&text(&detail["costBasisUsd"])).unwrap()
}
