//! The export holds the caller's own movements and nothing a spreadsheet runs, and a look-alike
//! token is its own asset (issue 61), on the devnet (anvil with the real Uniswap v3 contracts),
//! on memory and on DynamoDB (moto): tokens whose symbols are formulas or another token's,
//! positions a stranger minted straight to the wallet, one a stranger used and then sent to
//! it, the wallet's own, and an address only watched.

use lambda_http::http::{Method, StatusCode};
use serde_json::json;
use std::collections::BTreeMap;
use test_support::client::TestClient;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::world;

const HOSTILE: [&str; 3] = [
    "=HYPERLINK(\"http://x.co\",\"a\")",
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)",
];

/// The export in `format` (with `extra` query parameters), parsed: its header, then its rows.
async fn export(alice: &TestClient, format: &str, extra: &str) -> Vec<Vec<String>> {
    let path = format!("/history/export?format={format}{extra}");
    let reply = alice.send(Method::GET, &path, &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let body = reply.text();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(body.as_bytes());
    let rows: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    // No cell a spreadsheet would run, whoever named the token.
    for cell in rows.iter().flatten() {
        assert!(
            !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
            "{format}: {cell:?} in {body}"
        );
    }
    rows
}

async fn the_export_is_the_callers_own(store_args: &[&str]) {
    let devnet = Devnet::up(3000).await;
    let wallet = devnet.funded_account(1).await;
    let stranger = devnet.funded_account(2).await;
    let watched = devnet.funded_account(3).await;
    let tick = devnet.run("pool", &[]).await["tick"].as_i64().unwrap() as i32;
    let at = |offset: i32| (tick + offset).div_euclid(60) * 60;
    let range = (at(-1200), at(1200));
    let thousand = "1000000000000000000000";
    // The wallet's own position; the deployer's mints straight to it of tokens whose symbols
    // are formulas (priced through their pools with WETH); a stranger's position, used (fees
    // collected) and then sent to it; the watched address's own.
    let own = devnet.mint_by(&wallet, range, thousand).await;
    let mut gifts = Vec::new();
    for symbol in HOSTILE {
        let pool = devnet
            .run("new-pool", &["--symbol", symbol, "--fee", "500"])
            .await;
        gifts.push(
            devnet
                .mint_to(&wallet, (-600, 600), Some(&pool), thousand)
                .await,
        );
    }
    let look_alike = devnet
        .run("new-pool", &["--symbol", "USDC", "--fee", "500"])
        .await;
    gifts.push(
        devnet
            .mint_to(&wallet, (-600, 600), Some(&look_alike), thousand)
            .await,
    );
    let used = devnet.mint_by(&stranger, range, thousand).await;
    devnet.swap_both_ways("20", "30000").await;
    devnet.collect(&stranger, &used).await;
    devnet.transfer(&stranger, &used, &wallet).await;
    let theirs = devnet.mint_by(&watched, range, thousand).await;

    let server = world::local_api(&devnet, &devnet.rpc, store_args).await;
    let alice = world::user(&server, "alice").await;
    devnet.link_account(&alice, &wallet).await;
    let watch = json!({"chain": "ethereum", "address": watched, "watch": true});
    let reply = test_support::wallets::post(&alice, "/wallets", &watch).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());

    let positions = alice.list("source=wallet&limit=100").await;
    let id_of: BTreeMap<String, String> = positions.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (text(&p["tokenId"]), text(&p["id"])))
        .collect();
    let id = |token: &str| {
        id_of
            .get(token)
            .cloned()
            .unwrap_or_else(|| panic!("{token}: {id_of:?}"))
    };

    // The ledger: position (5), kind (6), direction (7), symbol (9), wallet (16), watched (17).
    let ledger = export(&alice, "ledger", "").await;
    assert_eq!(ledger[0].join(","), shared::export::LEDGER_HEADER);
    let rows_of = |rows: &[Vec<String>], token: &str| -> Vec<(String, String)> {
        let id = id(token);
        rows.iter()
            .filter(|r| r[5] == id)
            .map(|r| (r[6].clone(), r[7].clone()))
            .collect()
    };
    // Its own: deposits sent (and its gas), nothing arrived.
    let mine = rows_of(&ledger, &own);
    assert!(
        mine.contains(&("deposit".into(), "sent".into())),
        "{mine:?}"
    );
    assert!(!mine.iter().any(|(kind, _)| kind == "arrival"), "{mine:?}");
    // A stranger's mint to the wallet: an arrival received, then in the position.
    for gift in &gifts {
        let rows = rows_of(&ledger, gift);
        assert_eq!(
            rows,
            [
                ("arrival".to_string(), "received".to_string()),
                ("deposit".into(), "sent".into()),
                ("arrival".into(), "received".into()),
                ("deposit".into(), "sent".into()),
            ],
            "{gift}: {ledger:?}"
        );
    }
    // The formulas are there, inert.
    for symbol in HOSTILE {
        let inert = format!("'{symbol}");
        assert!(ledger.iter().any(|r| r[9] == inert), "{inert}: {ledger:?}");
    }
    // Used by a stranger, then sent: only its arrival (what it held there), none of the
    // stranger's deposit and collected fees.
    let came = rows_of(&ledger, &used);
    assert_eq!(
        came.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["arrival", "deposit", "arrival", "deposit"],
        "{ledger:?}"
    );
    let view = alice
        .send(Method::GET, &format!("/positions/{}", id(&used)), &[], b"")
        .await
        .json;
    let arrived: Vec<String> = ledger
        .iter()
        .filter(|r| r[5] == id(&used) && r[6] == "arrival")
        .map(|r| r[12].clone())
        .collect();
    for (t, token) in ["tokenA", "tokenB"].iter().enumerate() {
        let symbol = text(&view[*token]["symbol"]);
        let row = ledger
            .iter()
            .find(|r| r[5] == id(&used) && r[6] == "arrival" && r[9] == symbol)
            .unwrap_or_else(|| panic!("{symbol}: {ledger:?}"));
        // What its count starts from: its deposit as GET /positions/{id} shows it.
        assert_eq!(
            row[12],
            text(&view[*token]["deposited"]),
            "{t}: {view} {arrived:?}"
        );
    }
    // The watched address's position: not in the file unless asked for, and then said so.
    assert!(rows_of(&ledger, &theirs).is_empty(), "{ledger:?}");
    let with_watched = export(&alice, "ledger", "&include=watched").await;
    let theirs_rows: Vec<&Vec<String>> = with_watched
        .iter()
        .filter(|r| r[5] == id(&theirs))
        .collect();
    assert!(!theirs_rows.is_empty(), "{with_watched:?}");
    for row in theirs_rows {
        assert!(row[16].eq_ignore_ascii_case(&watched), "{row:?}");
        assert_eq!(row[17], "true", "{row:?}");
    }
    let bad = alice
        .send(
            Method::GET,
            "/history/export?format=koinly&include=all",
            &[],
            b"",
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text());

    // By asset, the look-alike USDC is its own group, as in the portfolio's assets.
    let grouped = alice
        .send(
            Method::GET,
            "/portfolio/chart?period=1d&groupBy=asset",
            &[],
            b"",
        )
        .await;
    assert_eq!(grouped.status, StatusCode::OK, "{}", grouped.text());
    let mut usdc: Vec<String> = grouped.json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["symbol"] == "USDC")
        .map(|g| {
            assert_eq!(
                text(&g["key"]),
                format!(
                    "{}:{}",
                    text(&g["chain"]),
                    text(&g["address"]).to_lowercase()
                ),
                "{g}"
            );
            text(&g["address"]).to_lowercase()
        })
        .collect();
    usdc.sort();
    let mut assets: Vec<String> = alice.portfolio().await.json["assets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["symbol"] == "USDC")
        .map(|a| text(&a["address"]).to_lowercase())
        .collect();
    assets.sort();
    assert_eq!(usdc.len(), 2, "{}", grouped.json);
    assert_eq!(usdc, assets, "{}", grouped.json);

    // Koinly and CoinTracker label the arrivals as airdrops; no formula in either.
    let koinly = export(&alice, "koinly", "").await;
    assert_eq!(koinly[0].join(","), shared::export::KOINLY_HEADER);
    let airdrops = koinly.iter().filter(|r| r[9] == "Airdrop").count();
    assert_eq!(airdrops, 2 * (gifts.len() + 1), "{koinly:?}");
    let tracker = export(&alice, "cointracker", "").await;
    let airdrops = tracker.iter().filter(|r| r[7] == "airdrop").count();
    assert_eq!(airdrops, 2 * (gifts.len() + 1), "{tracker:?}");
}

test_support::on_both_stores!(the_export_is_the_callers_own => the_export_is_the_callers_own);
