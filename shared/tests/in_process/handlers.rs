//! Handler tests on the in-memory store: every endpoint and every documented decision.

use bigdecimal::BigDecimal;
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use shared::model::Status;
use shared::App;
use std::str::FromStr;
use test_support::bodies::{create_body, solana, ETH_USDC};
use test_support::client::TestClient;

const ALICE: Option<&str> = Some("alice");
const BOB: Option<&str> = Some("bob");

fn dec(v: &Value) -> BigDecimal {
    BigDecimal::from_str(v.to_string().trim_matches('"')).unwrap()
}

#[tokio::test]
async fn every_endpoint_requires_the_callers_claims() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    for (method, uri) in [
        (Method::GET, "/positions"),
        (Method::GET, "/positions/01JD8Z6C6XK4W5S7R9T2V3M1QA"),
        (Method::POST, "/positions"),
        (Method::GET, "/portfolio"),
        (Method::GET, "/pools"),
    ] {
        // No claims at all, and a `sub` that is empty.
        for sub in [None, Some("")] {
            let reply = TestClient::in_process(&app, sub)
                .send(
                    method.clone(),
                    uri,
                    &[("content-type", "application/json")],
                    create_body(json!({})).as_bytes(),
                )
                .await;
            assert_eq!(
                reply.status,
                StatusCode::UNAUTHORIZED,
                "{method} {uri} {sub:?}"
            );
            assert_eq!(
                reply.json,
                json!({"message": "Unauthorized", "statusCode": 401})
            );
        }
    }
    assert_eq!(
        alice.total().await,
        0,
        "the unauthorized create stored nothing"
    );
}

#[tokio::test]
async fn create_answers_201_with_location_and_the_position() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    let reply = alice
        .create(&create_body(
            json!({"pool": "0x88E6A0C2DDD26FEEB64F039A2C41296FCB3F5640"}),
        ))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(reply.headers["content-type"], "application/json");
    let p = &reply.json;
    let id = p["id"].as_str().unwrap();
    assert_eq!(
        reply.headers["location"],
        format!("/positions/{id}").as_str()
    );
    assert_eq!(p["pool"], ETH_USDC, "catalog spelling");
    assert_eq!(p["status"], "active");
    assert_eq!(p["feesEarnedUsd"], json!(0));
    assert_eq!(p["currentPrice"], json!(3000));
    assert_eq!(
        (
            p["tokenA"]["symbol"].as_str(),
            p["tokenB"]["symbol"].as_str()
        ),
        (Some("WETH"), Some("USDC"))
    );
    // Never more than offered, and the binding side nearly all used.
    let (a, b) = (dec(&p["tokenA"]["amount"]), dec(&p["tokenB"]["amount"]));
    assert!(a <= 1 && b <= 3000);
    assert!(a > BigDecimal::from_str("0.99").unwrap() || b > 2990);
    // Snapped outward: contains the requested range.
    assert!(
        p["priceLower"].as_f64().unwrap() <= 2500.0 && p["priceUpper"].as_f64().unwrap() >= 3500.0
    );
    assert!(
        p["priceLower"].as_f64().unwrap() > 2490.0 && p["priceUpper"].as_f64().unwrap() < 3510.0
    );
    let created = p["createdAt"].as_str().unwrap();
    assert_eq!(created.len(), "2026-11-22T06:30:00.000Z".len(), "{created}");
    assert!(created.ends_with('Z') && chrono::DateTime::parse_from_rfc3339(created).is_ok());
    let value_a = dec(&p["tokenA"]["valueUsd"]);
    assert_eq!(
        value_a,
        (a * BigDecimal::from(3000)).with_scale_round(2, bigdecimal::RoundingMode::HalfUp)
    );
    // Reading it back gives the same position.
    let got = alice.get(id).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(&got.json, p);
}

#[tokio::test]
async fn ranges_off_the_current_price_hold_one_token() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    let above = alice
        .open(json!({"priceLower": 3500, "priceUpper": 4000}))
        .await;
    assert_ne!(above["tokenA"]["amount"], "0");
    assert_eq!(above["tokenB"]["amount"], "0");
    let below = alice
        .open(json!({"priceLower": 2000, "priceUpper": 2500}))
        .await;
    assert_eq!(below["tokenA"]["amount"], "0");
    assert_eq!(below["tokenB"]["amount"], "3000");
    // Only the other token offered: no liquidity at this price, a 409 (the pool's state, not
    // the request's form, refuses it), nothing stored.
    let reply = alice
        .create(&create_body(
            json!({"amountA": "0", "priceLower": 3500, "priceUpper": 4000}),
        ))
        .await;
    assert_eq!(reply.status, StatusCode::CONFLICT);
    assert_eq!(reply.json["statusCode"], 409);
    assert_eq!(alice.total().await, 2);
    // The two bounds in either order name the same range; equal ones the spacing around it.
    let reversed = alice
        .open(json!({"priceLower": 4000, "priceUpper": 3500}))
        .await;
    assert_eq!(reversed["tickLower"], above["tickLower"]);
    assert_eq!(reversed["tickUpper"], above["tickUpper"]);
    let point = alice
        .open(json!({"priceLower": 3500, "priceUpper": 3500}))
        .await;
    assert!(point["tickLower"].as_i64() < point["tickUpper"].as_i64());
}

#[tokio::test]
async fn bad_create_requests_are_refused_and_store_nothing() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    let big = u128::MAX.to_string();
    let over = "340282366920938463463374607431768211456";
    let cases: Vec<(String, u16)> = vec![
        (create_body(json!({"chain": "polygon"})), 400),
        (create_body(json!({"chain": "Ethereum"})), 400),
        (create_body(json!({"protocol": "sushiswap"})), 400),
        (
            create_body(json!({"pool": "0x0000000000000000000000000000000000000001"})),
            400,
        ),
        (create_body(json!({"chain": "base"})), 400),
        (
            create_body(json!({"amountA": "1.0000000000000000001"})),
            400,
        ),
        (create_body(json!({"amountB": "1.0000001"})), 400),
        (create_body(json!({"amountA": "-1"})), 400),
        (create_body(json!({"amountA": "1e3"})), 400),
        (create_body(json!({"amountA": ""})), 400),
        (create_body(json!({"amountA": 1})), 400),
        (create_body(json!({"amountA": "0", "amountB": "0"})), 400),
        (create_body(json!({"amountB": over})), 400),
        (create_body(json!({"amountA": big, "amountB": big})), 400),
        (create_body(json!({"priceLower": "2500"})), 400),
        (create_body(json!({"priceLower": 0})), 400),
        (create_body(json!({"priceLower": -5})), 400),
        // Past the pool's price bounds (the served document states them).
        (create_body(json!({"priceUpper": 1e60})), 400),
        (create_body(json!({"priceLower": 1e-60})), 400),
        (create_body(json!({"priceLower": null})), 400),
        (create_body(json!({"extra": true})), 400),
        (
            create_body(
                json!({"chain": "solana", "protocol": "orca-whirlpools", "pool": "Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE", "amountA": "18446744073.709551616", "amountB": "0", "priceLower": 150, "priceUpper": 160}),
            ),
            400,
        ),
        (r#"{"chain":"ethereum""#.to_string(), 400),
        ("[]".to_string(), 400),
        ("".to_string(), 400),
        ("null".to_string(), 400),
    ];
    for (body, status) in &cases {
        let reply = alice.create(body).await;
        assert_eq!(reply.status.as_u16(), *status, "{body} -> {}", reply.json);
        assert_eq!(reply.json["statusCode"], json!(status));
        assert!(reply.json["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
        assert_eq!(reply.json.as_object().unwrap().len(), 2);
    }
    // Missing each field in turn.
    for field in [
        "chain",
        "protocol",
        "pool",
        "amountA",
        "amountB",
        "priceLower",
        "priceUpper",
    ] {
        let mut body: Value = serde_json::from_str(&create_body(json!({}))).unwrap();
        body.as_object_mut().unwrap().remove(field);
        let reply = alice.create(&body.to_string()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "missing {field}");
        assert!(
            reply.json["message"].as_str().unwrap().contains(field),
            "{}",
            reply.json
        );
    }
    // Content type and size.
    let body = create_body(json!({}));
    let post = |headers: &'static [(&'static str, &'static str)]| {
        alice.send(Method::POST, "/positions", headers, body.as_bytes())
    };
    let reply = post(&[("content-type", "text/plain")]).await;
    assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let reply = post(&[]).await;
    assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let padded = format!("{}{body}", " ".repeat(64 * 1024));
    let reply = alice.create(&padded).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(reply.json["statusCode"], 413);
    let reply = post(&[("content-type", "Application/JSON; charset=utf-8")]).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(
        alice.total().await,
        1,
        "only the valid request stored a position"
    );
}

#[tokio::test]
async fn positions_of_others_unknown_and_malformed_ids_are_404() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    let bob = TestClient::in_process(&app, BOB);
    let id = alice.open(json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (client, id) in [
        (&bob, id.clone()),
        (&alice, "01JD8Z6C6XK4W5S7R9T2V3M1QB".to_string()),
        (&alice, "not-an-id".to_string()),
        (&alice, id.to_lowercase()),
        (&alice, "%00".to_string()),
    ] {
        let reply = client.get(&id).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{id}");
        assert_eq!(reply.json["statusCode"], 404);
    }
}

#[tokio::test]
async fn list_pages_newest_first_with_total_of_all_matches() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    let bob = TestClient::in_process(&app, BOB);
    let mut ids = Vec::new();
    for i in 0..7 {
        let body = if i % 2 == 0 {
            json!({})
        } else {
            json!({"chain": "solana", "protocol": "orca-whirlpools", "pool": "HJPjoWUrhoZzkNfRpHuieeFk9WcZWjwy6PBjZ81ngndJ", "amountA": "1", "amountB": "140", "priceLower": 100, "priceUpper": 200})
        };
        ids.push(alice.open(body).await["id"].as_str().unwrap().to_string());
    }
    bob.open(json!({})).await;
    // Newest first: createdAt descending, ties by id descending; the id's time prefix is the
    // creation millisecond, so that is plain descending id order.
    let mut newest_first = ids.clone();
    newest_first.sort_by(|a, b| b.cmp(a));
    let list = |query: &'static str| alice.list(query);
    let page = list("limit=3&offset=2").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.json["total"], 7);
    let got: Vec<&str> = page.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        got,
        newest_first[2..5]
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    let solana = list("chain=solana").await;
    assert_eq!(solana.json["total"], 3);
    assert!(solana.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["chain"] == "solana"));
    assert_eq!(
        list("status=closed").await.json,
        json!({"data": [], "total": 0})
    );
    assert_eq!(list("status=active&chain=ethereum").await.json["total"], 4);
    assert_eq!(list("offset=7").await.json, json!({"data": [], "total": 7}));
    assert_eq!(
        list("unknown=1").await.json["data"]
            .as_array()
            .unwrap()
            .len(),
        7
    );
    let default = list("").await;
    assert_eq!(default.json["data"][0]["id"], newest_first[0].as_str());
    for bad in [
        "limit=0",
        "limit=101",
        "limit=-1",
        "limit=1.5",
        "limit=abc",
        "offset=-1",
        "status=Active",
        "status=",
        "chain=polygon",
        "chain=ETHEREUM",
    ] {
        let reply = alice.list(bad).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{bad}");
        let name = bad.split('=').next().unwrap();
        assert!(
            reply.json["message"].as_str().unwrap().contains(name),
            "{}",
            reply.json
        );
    }
}

#[tokio::test]
async fn list_defaults_to_twenty_and_caps_at_one_hundred() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    for _ in 0..25 {
        alice.open(json!({})).await;
    }
    let page = alice.list("").await;
    assert_eq!(page.json["data"].as_array().unwrap().len(), 20);
    assert_eq!(page.json["total"], 25);
    let page = alice.list("limit=100").await;
    assert_eq!(page.json["data"].as_array().unwrap().len(), 25);
}

#[tokio::test]
async fn portfolio_sums_open_positions_by_asset() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    let bob = TestClient::in_process(&app, BOB);
    let empty = alice.portfolio().await;
    assert_eq!(
        empty.json,
        json!({"totalValueUsd": 0, "totalPnlUsd": 0, "totalPnlPercent": 0, "unrealizedPnlUsd": 0, "realizedPnlUsd": 0, "totalFeesEarnedUsd": 0, "totalRewardsUsd": 0, "totalImpermanentLossUsd": 0, "positions": 0, "unvaluedPositions": 0, "unpricedPositions": 0, "unpricedRewards": [], "assets": [], "chains": []})
    );
    // The changes only when asked for: one read pass otherwise.
    let asked = alice
        .send(Method::GET, "/portfolio?include=changes", &[], b"")
        .await;
    assert_eq!(
        asked.json["changes"],
        json!({"1d": null, "7d": null, "30d": null}),
        "{}",
        asked.text()
    );
    let bad = alice
        .send(Method::GET, "/portfolio?include=all", &[], b"")
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text());
    let eth = alice.open(json!({})).await;
    let sol = alice.open(solana()).await;
    let closed = alice
        .open(json!({"chain": "base", "pool": "0xd0b53D9277642d899DF5C87A3966A349A798F224"}))
        .await;
    app.store
        .set_status(
            "alice",
            closed["id"].as_str().unwrap(),
            Status::Active,
            Status::Closed,
        )
        .await
        .unwrap();
    bob.open(json!({})).await;

    let reply = alice.portfolio().await;
    assert_eq!(reply.status, StatusCode::OK);
    let p = &reply.json;
    assert_eq!(p["positions"], 2);
    let value = |v: &Value| dec(&v["tokenA"]["valueUsd"]) + dec(&v["tokenB"]["valueUsd"]);
    let expected = value(&eth) + value(&sol);
    // The total is rounded once from exact values; the per-token figures were each rounded.
    assert!((dec(&p["totalValueUsd"]) - expected).abs() <= BigDecimal::from_str("0.02").unwrap());
    assert_eq!(
        p["totalPnlUsd"],
        json!(0),
        "valued at the prices it was opened at"
    );
    assert_eq!(p["totalPnlPercent"], json!(0));
    let assets = p["assets"].as_array().unwrap();
    let symbols: Vec<&str> = assets
        .iter()
        .map(|a| a["symbol"].as_str().unwrap())
        .collect();
    let mut sorted = symbols.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["SOL", "USDC", "USDC", "WETH"],
        "a token is its chain and address: USDC on two chains is two assets"
    );
    let usdc: Vec<&str> = assets
        .iter()
        .filter(|a| a["symbol"] == "USDC")
        .map(|a| a["chain"].as_str().unwrap())
        .collect();
    assert!(
        usdc.contains(&"ethereum") && usdc.contains(&"solana"),
        "{usdc:?}"
    );
    let values: Vec<BigDecimal> = assets.iter().map(|a| dec(&a["valueUsd"])).collect();
    assert!(values.windows(2).all(|w| w[0] >= w[1]), "sorted by value");
    let percent: BigDecimal = assets.iter().map(|a| dec(&a["percentage"])).sum();
    assert_eq!(percent, BigDecimal::from(100));
    // By chain: the closed base position is not open; ethereum and solana share the total.
    let chains = p["chains"].as_array().unwrap();
    let names: Vec<&str> = chains
        .iter()
        .map(|c| c["chain"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, ["ethereum", "solana"], "{p}");
    let by_chain: BigDecimal = chains.iter().map(|c| dec(&c["valueUsd"])).sum();
    assert!((by_chain - dec(&p["totalValueUsd"])).abs() <= BigDecimal::from_str("0.01").unwrap());
    let percent: BigDecimal = chains.iter().map(|c| dec(&c["percentage"])).sum();
    assert_eq!(percent, BigDecimal::from(100));
    assert_eq!(p["unpricedPositions"], 0);
}

#[tokio::test]
async fn pools_lists_the_catalog() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    let reply = alice.pools().await;
    assert_eq!(reply.status, StatusCode::OK);
    let data = reply.json["data"].as_array().unwrap();
    assert_eq!(reply.json["total"], json!(data.len()));
    assert!(data.len() >= 10);
    let eth = data.iter().find(|p| p["pool"] == ETH_USDC).unwrap();
    assert_eq!(eth["feeTier"], 500);
    assert_eq!(eth["tickSpacing"], 10);
    assert_eq!(
        eth["tokenA"],
        json!({"symbol": "WETH", "address": "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2", "decimals": 18, "priceUsd": 3000})
    );
    assert_eq!(eth["tokenB"]["symbol"], "USDC");
    assert_eq!(eth["currentPrice"], 3000);
    let protocols: std::collections::BTreeSet<&str> = data
        .iter()
        .map(|p| p["protocol"].as_str().unwrap())
        .collect();
    assert_eq!(
        protocols.into_iter().collect::<Vec<_>>(),
        [
            "aerodrome-slipstream",
            "orca-whirlpools",
            "pancakeswap-v3",
            "uniswap-v3"
        ]
    );
    // A Slipstream pool's fee is its own, dynamic: none until a state of it is read.
    let slipstream = data
        .iter()
        .find(|p| p["protocol"] == "aerodrome-slipstream")
        .unwrap();
    assert!(slipstream["feeTier"].is_null(), "{slipstream}");
    assert_eq!(slipstream["tickSpacing"], 100, "{slipstream}");
}

#[tokio::test]
async fn every_pool_accepts_a_deposit_around_its_price() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    let pools = alice.pools().await.json["data"].clone();
    for pool in pools.as_array().unwrap() {
        let price = pool["currentPrice"].as_f64().unwrap();
        let body = json!({
            "chain": pool["chain"], "protocol": pool["protocol"], "pool": pool["pool"],
            "amountA": "1", "amountB": format!("{}", price.ceil()),
            "priceLower": price * 0.8, "priceUpper": price * 1.25,
        });
        let reply = alice.create(&body.to_string()).await;
        assert_eq!(
            reply.status,
            StatusCode::CREATED,
            "{} {}",
            pool["pool"],
            reply.json
        );
        let p = &reply.json;
        assert_ne!(p["tokenA"]["amount"], "0");
        assert_ne!(p["tokenB"]["amount"], "0");
        assert!(p["priceLower"].as_f64().unwrap() <= price * 0.8 + 1e-12);
        assert!(p["priceUpper"].as_f64().unwrap() >= price * 1.25 - 1e-12);
    }
}

/// The standard body with `field` set to the JSON number `text`, exactly as written.
fn with_number(field: &str, text: &str) -> String {
    create_body(json!({ field: "NUMBER" })).replace("\"NUMBER\"", text)
}

#[tokio::test]
async fn messages_say_what_is_wrong_and_never_name_internal_types() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, ALICE);
    let arbitrum = json!({
        "chain": "arbitrum",
        "pool": "0xC6962004f452bE9203591991D15f6b388e09E8D0",
        "priceLower": 3.402227645566053e50,
        "priceUpper": 1e60
    });
    let cases: Vec<(String, &str)> = vec![
        ("null".into(), "request body must be a JSON object"),
        ("[1]".into(), "request body must be a JSON object"),
        ("{".into(), "request body is not valid JSON"),
        (
            with_number("priceLower", "1e-400"),
            "priceLower is below the smallest price",
        ),
        (
            with_number("priceUpper", "1e400"),
            "priceUpper is above the largest price",
        ),
        (create_body(arbitrum), "must lie between"),
        (
            create_body(json!({"amountA": 1})),
            "invalid type: integer `1`, expected a string",
        ),
    ];
    for (body, want) in cases {
        let reply = alice.create(&body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        let message = reply.json["message"].as_str().unwrap();
        assert!(message.contains(want), "{body}: {message}");
        assert!(
            !message.contains("struct") && !message.contains("Create"),
            "{message}"
        );
    }
    let reply = alice.list("offset=18446744073709551616").await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply.json["message"],
        "offset must be an integer from 0 to 18446744073709551615"
    );
    let body = create_body(json!({}));
    for encoding in ["gzip", "br", "identity, gzip"] {
        let reply = alice.create_encoded(&body, encoding).await;
        assert_eq!(
            reply.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{encoding}"
        );
        let message = reply.json["message"].as_str().unwrap();
        assert!(
            message.contains(encoding.trim_start_matches("identity, ")),
            "{message}"
        );
    }
    let reply = alice.create_encoded(&body, "identity").await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(
        alice.total().await,
        1,
        "only the identity-encoded body was stored"
    );
}

#[tokio::test]
async fn a_caller_id_longer_than_256_bytes_is_unauthorized() {
    let app = App::in_memory();
    let long = "x".repeat(257);
    let reply = TestClient::in_process(&app, Some(&long)).list("").await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    let longest = "x".repeat(256);
    let reply = TestClient::in_process(&app, Some(&longest)).list("").await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn tracked_ticks_follow_open_positions_in_memory() {
    test_support::tracked_ticks::tracked_ticks_follow_open_positions(&App::in_memory()).await;
}
