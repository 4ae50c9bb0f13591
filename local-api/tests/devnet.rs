//! Black-box on the devnet: local-api with `--catalog` and `--rpc` against anvil running the
//! real Uniswap v3 contracts, in memory and on DynamoDB (moto). Positions opened through the
//! API are compared with identical positions opened on chain through the position manager.

use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use shared::math::U512;
use std::str::FromStr;
use std::time::Duration;
use test_support::client::TestClient;
use test_support::devnet::Devnet;
use test_support::local_api::LocalApi;
use test_support::world;

/// Whole tokens (18 decimals) as raw units.
fn raw(whole: &str) -> u128 {
    let (int, frac) = whole.split_once('.').unwrap_or((whole, ""));
    assert!(frac.len() <= 18, "{whole}");
    format!("{int}{frac:0<18}").parse().unwrap()
}

fn int(value: &Value) -> u128 {
    value.as_str().expect("an integer string").parse().unwrap()
}

async fn start(devnet: &Devnet, extra: &[&str]) -> LocalApi {
    world::local_api(devnet, &devnet.rpc, extra).await
}

/// `POST /markets/sync` as an operator; the devnet pool's report entry.
async fn sync(ops: &TestClient) -> Value {
    let report = world::sync(ops).await;
    assert_eq!(report["pools"].as_array().unwrap().len(), 1, "{report}");
    report["pools"][0].clone()
}

/// The devnet pool as `GET /pools` shows it.
async fn listed_pool(client: &TestClient) -> Value {
    let reply = client.pools().await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json["data"][0].clone()
}

/// What burning `liquidity` of the position manager's position pays now (WETH, USDC).
async fn burn_quote(devnet: &Devnet, lower: &str, upper: &str, liquidity: &str) -> (u128, u128) {
    let args = ["--lower", lower, "--upper", upper, "--liquidity", liquidity];
    let burn = devnet.run("burn-quote", &args).await;
    if devnet.usdc_is_token0() {
        (int(&burn["amount1"]), int(&burn["amount0"]))
    } else {
        (int(&burn["amount0"]), int(&burn["amount1"]))
    }
}

/// The fees of the API's position `id`, per token, in raw units (tokenA, tokenB).
fn fees_of(position: &Value) -> (u128, u128) {
    (
        raw(position["tokenA"]["feesEarned"].as_str().unwrap()),
        raw(position["tokenB"]["feesEarned"].as_str().unwrap()),
    )
}

/// The API's fees for `id` equal, to the unit, what `collect` pays the owner of the identical
/// on-chain position `token_id` now.
async fn assert_fees_match(
    devnet: &Devnet,
    client: &TestClient,
    id: &str,
    token_id: &str,
) -> (u128, u128) {
    let position = client.get(id).await.json;
    let collect = devnet.run("collect-quote", &["--token-id", token_id]).await;
    let (weth, usdc) = if devnet.usdc_is_token0() {
        (int(&collect["amount1"]), int(&collect["amount0"]))
    } else {
        (int(&collect["amount0"]), int(&collect["amount1"]))
    };
    assert_eq!(
        fees_of(&position),
        (weth, usdc),
        "collect pays {collect}: {position}"
    );
    (weth, usdc)
}

/// Mints on chain, through the position manager, the same offer (whole WETH and USDC) in the
/// API position's ticks; checks the liquidity and the amounts paid equal the API's; answers the
/// mint (its `tokenId`).
async fn mint_twin(devnet: &Devnet, position: &Value, weth: &str, usdc: &str) -> Value {
    let (amount0, amount1) = if devnet.usdc_is_token0() {
        (raw(usdc), raw(weth))
    } else {
        (raw(weth), raw(usdc))
    };
    let [lower, upper] =
        ["tickLower", "tickUpper"].map(|f| position[f].as_i64().unwrap().to_string());
    let (amount0, amount1) = (amount0.to_string(), amount1.to_string());
    let args = [
        "--lower",
        &lower,
        "--upper",
        &upper,
        "--amount0",
        &amount0,
        "--amount1",
        &amount1,
    ];
    let minted = devnet.run("mint", &args).await;
    assert_eq!(
        position["liquidity"], minted["liquidity"],
        "the same liquidity as the pool's: {minted}"
    );
    let (paid_weth, paid_usdc) = if devnet.usdc_is_token0() {
        (int(&minted["amount1"]), int(&minted["amount0"]))
    } else {
        (int(&minted["amount0"]), int(&minted["amount1"]))
    };
    assert_eq!(
        raw(position["tokenA"]["amount"].as_str().unwrap()),
        paid_weth
    );
    assert_eq!(
        raw(position["tokenB"]["amount"].as_str().unwrap()),
        paid_usdc
    );
    minted
}

async fn positions_follow_the_chain(devnet: &Devnet, server: &LocalApi) {
    // A scope among others, as OAuth servers issue it.
    let ops = server.client(Some(
        &world::token("ops", Some("openid markets:sync")).await,
    ));
    let carol = world::user(server, "carol").await;

    // The route needs its scope.
    let denied = carol.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN, "{}", denied.text());
    assert_eq!(denied.json["statusCode"], 403);
    assert!(denied.json["message"].is_string());

    // The sync at start read the pool: /pools shows its state at the block read.
    let pool = listed_pool(&carol).await;
    let block = pool["block"].as_u64().expect("a block").to_string();
    let chain = devnet.run("pool", &["--block", &block]).await;
    assert_eq!(pool["sqrtPrice"], chain["sqrtPriceX96"], "{pool}");
    assert_eq!(pool["tick"], chain["tick"]);
    assert_eq!(pool["stale"], false);

    // Open through the API; open the same offer on chain through the position manager.
    let (weth, usdc) = ("2", "5000");
    let created = carol
        .open(json!({
            "chain": "ethereum", "protocol": "uniswap-v3", "pool": devnet.address("pool"),
            "amountA": weth, "amountB": usdc, "priceLower": 2500, "priceUpper": 3600
        }))
        .await;
    let minted = mint_twin(devnet, &created, weth, usdc).await;
    let (lower, upper) = (
        created["tickLower"].as_i64().unwrap().to_string(),
        created["tickUpper"].as_i64().unwrap().to_string(),
    );
    let id = created["id"].as_str().unwrap().to_string();
    let liquidity = created["liquidity"].as_str().unwrap().to_string();
    let token_id = minted["tokenId"].as_str().unwrap().to_string();

    // The mint is a block too: synced, both positions have earned nothing yet.
    assert_eq!(sync(&ops).await["updated"], true);
    assert_fees_match(devnet, &carol, &id, &token_id).await;

    // Move the price out of the range and back, syncing after each swap.
    let mut seen_in_range = Vec::new();
    let mut earned = (0, 0);
    for (sell, amount) in [
        ("weth", "80"),
        ("usdc", "200000"),
        ("usdc", "450000"),
        ("weth", "70"),
    ] {
        devnet
            .run("swap", &["--sell", sell, "--amount", amount])
            .await;
        let synced = sync(&ops).await;
        assert_eq!(synced["updated"], true, "{synced}");
        let block = synced["block"].as_u64().unwrap().to_string();
        let chain = devnet.run("pool", &["--block", &block]).await;
        assert_eq!(synced["sqrtPrice"], chain["sqrtPriceX96"]);
        let tick = chain["tick"].as_i64().unwrap();

        let reply = carol.get(&id).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let position = reply.json;
        let in_range =
            lower.parse::<i64>().unwrap() <= tick && tick < upper.parse::<i64>().unwrap();
        assert_eq!(position["inRange"], in_range, "tick {tick}: {position}");
        assert_eq!(position["stale"], false);
        seen_in_range.push(in_range);
        earned = assert_fees_match(devnet, &carol, &id, &token_id).await;

        // What burning the same liquidity on chain would pay: the API rounds up, a burn down.
        let (burn_weth, burn_usdc) = burn_quote(devnet, &lower, &upper, &liquidity).await;
        let ours_weth = raw(position["tokenA"]["amount"].as_str().unwrap());
        let ours_usdc = raw(position["tokenB"]["amount"].as_str().unwrap());
        assert!(
            ours_weth - burn_weth <= 1 && ours_weth >= burn_weth,
            "{ours_weth} vs {burn_weth}"
        );
        assert!(
            ours_usdc - burn_usdc <= 1 && ours_usdc >= burn_usdc,
            "{ours_usdc} vs {burn_usdc}"
        );

        // Values at the prices derived from the pool: WETH at the pool's price, USDC at 1.
        let pool = listed_pool(&carol).await;
        let price = pool["currentPrice"].as_f64().unwrap();
        assert_eq!(position["currentPrice"], pool["currentPrice"]);
        let weth_usd = pool["tokenA"]["priceUsd"].as_f64().unwrap();
        assert!(
            (weth_usd - price).abs() <= price * 1e-12,
            "{weth_usd} vs {price}"
        );
        let whole = |units: u128| units as f64 / 1e18;
        let value_weth = position["tokenA"]["valueUsd"].as_f64().unwrap();
        let value_usdc = position["tokenB"]["valueUsd"].as_f64().unwrap();
        assert!(
            (value_weth - whole(ours_weth) * weth_usd).abs() <= 0.006,
            "{position}"
        );
        assert!((value_usdc - whole(ours_usdc)).abs() <= 0.006, "{position}");
        let fees_usd = position["feesEarnedUsd"].as_f64().unwrap();
        let fees_weth = position["tokenA"]["feesEarnedUsd"].as_f64().unwrap();
        assert!(
            (fees_weth - whole(earned.0) * weth_usd).abs() <= 0.006,
            "{position}"
        );
        let value = position["valueUsd"].as_f64().unwrap();
        assert!(
            (value - value_weth - value_usdc - fees_usd).abs() <= 0.021,
            "{position}"
        );
        let portfolio = carol.portfolio().await.json;
        assert_eq!(
            portfolio["totalValueUsd"], position["valueUsd"],
            "{portfolio}"
        );
        assert_eq!(portfolio["totalFeesEarnedUsd"], position["feesEarnedUsd"]);
    }
    assert!(
        seen_in_range.contains(&false) && seen_in_range.contains(&true),
        "{seen_in_range:?}"
    );
    assert!(
        earned.0 > 0 && earned.1 > 0,
        "swaps both ways inside the range pay fees in both tokens: {earned:?}"
    );

    // Close at the synced state: the withdrawal equals what burning the same liquidity pays on
    // chain (decreaseLiquidity), the fees what collect pays, to the unit.
    let (burn_weth, burn_usdc) = burn_quote(devnet, &lower, &upper, &liquidity).await;
    let collect = devnet
        .run("collect-quote", &["--token-id", &token_id])
        .await;
    let reply = carol.close(&id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let closed = reply.json;
    let (weth, usdc) = if devnet.usdc_is_token0() {
        ("1", "0")
    } else {
        ("0", "1")
    };
    let amount = |side: &str| format!("amount{side}");
    assert_eq!(raw(closed["tokenA"]["amount"].as_str().unwrap()), burn_weth);
    assert_eq!(raw(closed["tokenB"]["amount"].as_str().unwrap()), burn_usdc);
    assert_eq!(
        fees_of(&closed),
        (int(&collect[&amount(weth)]), int(&collect[&amount(usdc)]))
    );
    assert_eq!(
        closed["pnlUsd"],
        carol.portfolio().await.json["realizedPnlUsd"]
    );
    assert_eq!(carol.close(&id).await.status, StatusCode::CONFLICT);
}

/// On DynamoDB the table's catalog is the file's: one pool.
async fn positions_follow_the_chain_on(store: &[&str]) {
    let devnet = Devnet::up(3000).await;
    let server = start(&devnet, store).await;
    positions_follow_the_chain(&devnet, &server).await;
    let carol = world::user(&server, "carol").await;
    assert_eq!(carol.pools().await.json["total"], 1);
}

test_support::on_both_stores!(positions_follow_the_chain => positions_follow_the_chain_on);

#[tokio::test]
async fn a_state_older_than_stale_after_is_stale_until_the_next_sync() {
    let devnet = Devnet::up(3000).await;
    let server = start(&devnet, &["--stale-after", "1"]).await;
    let ops = world::operator(&server).await;
    let dave = world::user(&server, "dave").await;
    let created = dave
        .open(json!({
            "chain": "ethereum", "protocol": "uniswap-v3", "pool": devnet.address("pool"),
            "amountA": "1", "amountB": "3000", "priceLower": 2500, "priceUpper": 3600
        }))
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    let pool = listed_pool(&dave).await;
    assert_eq!(pool["stale"], true, "{pool}");
    let position = dave.get(&id).await.json;
    assert_eq!(position["stale"], true, "{position}");
    // Figures still shown, at the last state.
    assert_eq!(position["currentPrice"], pool["currentPrice"]);
    assert!(position["tokenA"]["valueUsd"].as_f64().unwrap() > 0.0);

    devnet
        .run("swap", &["--sell", "weth", "--amount", "1"])
        .await;
    assert_eq!(sync(&ops).await["updated"], true);
    assert_eq!(listed_pool(&dave).await["stale"], false);
    assert_eq!(dave.get(&id).await.json["stale"], false);
}

/// With `--stale-after 2`: a create once the state went stale waits (`pending`, no liquidity);
/// the next sync activates it at the state it read, sized exactly as the position manager
/// mints the same offer at that state; its fees then equal `collect`'s.
#[tokio::test]
async fn a_create_on_a_stale_state_waits_and_the_next_sync_activates_it() {
    let devnet = Devnet::up(3000).await;
    let server = start(&devnet, &["--stale-after", "2"]).await;
    let ops = world::operator(&server).await;
    let frank = world::user(&server, "frank").await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(listed_pool(&frank).await["stale"], true);
    // The price moves after the last sync: sizing now would use the old price.
    devnet
        .run("swap", &["--sell", "weth", "--amount", "2"])
        .await;
    let (weth, usdc) = ("2", "5000");
    let offer = frank
        .open(json!({
            "chain": "ethereum", "protocol": "uniswap-v3", "pool": devnet.address("pool"),
            "amountA": weth, "amountB": usdc, "priceLower": 2500, "priceUpper": 3600
        }))
        .await;
    assert_eq!(offer["status"], "pending", "{offer}");
    assert_eq!(offer["liquidity"], Value::Null);
    assert_eq!(offer["inRange"], Value::Null);
    assert_eq!(offer["tokenA"]["amount"], weth);
    assert_eq!(offer["tokenB"]["amount"], usdc);
    let id = offer["id"].as_str().unwrap().to_string();
    assert_eq!(frank.list("status=pending").await.json["total"], 1);

    let synced = sync(&ops).await;
    assert_eq!(synced["updated"], true, "{synced}");
    assert_eq!(synced["activated"], 1, "{synced}");
    let active = frank.get(&id).await.json;
    assert_eq!(active["status"], "active", "{active}");
    assert_eq!(active["stale"], false);
    assert_eq!(frank.list("status=pending").await.json["total"], 0);
    assert_eq!(frank.list("status=active").await.json["total"], 1);

    // The same offer minted on chain at the same state: the same liquidity, the same amounts.
    let minted = mint_twin(&devnet, &active, weth, usdc).await;

    // Fees from the activation's checkpoint: what collect pays the twin.
    let token_id = minted["tokenId"].as_str().unwrap().to_string();
    for (sell, amount) in [("usdc", "3000"), ("weth", "1")] {
        devnet
            .run("swap", &["--sell", sell, "--amount", amount])
            .await;
        assert_eq!(sync(&ops).await["updated"], true);
        assert_fees_match(&devnet, &frank, &id, &token_id).await;
    }
    let (weth_fees, usdc_fees) = fees_of(&frank.get(&id).await.json);
    assert!(weth_fees > 0 && usdc_fees > 0);
}

/// A decimal integer string as a 512-bit integer, apart from the service's own math.
fn big(value: &Value) -> U512 {
    U512::from_str(value.as_str().expect("an integer string")).unwrap()
}

#[tokio::test]
async fn on_ticks_no_chain_position_uses_fees_are_the_global_growth() {
    let devnet = Devnet::up(3000).await;
    let server = start(&devnet, &[]).await;
    let ops = world::operator(&server).await;
    let erin = world::user(&server, "erin").await;
    let created = erin
        .open(json!({
            "chain": "ethereum", "protocol": "uniswap-v3", "pool": devnet.address("pool"),
            "amountA": "3", "amountB": "9000", "priceLower": 2700, "priceUpper": 3400
        }))
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    let (lower, upper) = (
        created["tickLower"].as_i64().unwrap(),
        created["tickUpper"].as_i64().unwrap(),
    );
    let ticks = format!("{lower},{upper}");
    let liquidity = big(&created["liquidity"]);
    // The checkpoint's state: the one synced at start, with neither tick initialized on chain.
    let block = listed_pool(&erin).await["block"]
        .as_u64()
        .unwrap()
        .to_string();
    let opened = devnet
        .run("pool", &["--block", &block, "--ticks", &ticks])
        .await;
    for tick in opened["ticks"].as_array().unwrap() {
        assert_eq!(tick["initialized"], false, "{opened}");
    }

    let mut last = (0, 0);
    for (sell, amount) in [
        ("weth", "0.5"),
        ("usdc", "4000"),
        ("weth", "1"),
        ("usdc", "700"),
    ] {
        devnet
            .run("swap", &["--sell", sell, "--amount", amount])
            .await;
        let synced = sync(&ops).await;
        let block = synced["block"].as_u64().unwrap().to_string();
        let now = devnet
            .run("pool", &["--block", &block, "--ticks", &ticks])
            .await;
        let tick = now["tick"].as_i64().unwrap();
        assert!(
            lower <= tick && tick < upper,
            "the swaps stay inside the range"
        );
        let owed = |token: &str| {
            let key = format!("feeGrowthGlobal{token}X128");
            let delta = big(&now[&key]) - big(&opened[&key]);
            let fees: U512 = (liquidity * delta) >> 128;
            u128::try_from(fees).unwrap()
        };
        let (owed0, owed1) = (owed("0"), owed("1"));
        let expected = if devnet.usdc_is_token0() {
            (owed1, owed0)
        } else {
            (owed0, owed1)
        };
        let position = erin.get(&id).await.json;
        assert_eq!(fees_of(&position), expected, "{now}: {position}");
        assert!(expected.0 >= last.0 && expected.1 >= last.1);
        last = expected;
    }
    assert!(last.0 > 0 && last.1 > 0, "{last:?}");
}

/// A reorg on anvil (`evm_snapshot` / `evm_revert`, then other blocks at the same heights):
/// the stored state's block is no longer the chain's, the next sync replaces it whole, and the
/// API's fees are again exactly what `collect` pays on the canonical chain.
#[tokio::test]
async fn a_reorg_replaces_the_stored_state_and_fees_follow_the_canonical_chain() {
    use shared::chain::RpcClient;
    let devnet = Devnet::up(3000).await;
    let server = start(&devnet, &[]).await;
    let ops = world::operator(&server).await;
    let grace = world::user(&server, "grace").await;
    let (weth, usdc) = ("2", "5000");
    let created = grace
        .open(json!({
            "chain": "ethereum", "protocol": "uniswap-v3", "pool": devnet.address("pool"),
            "amountA": weth, "amountB": usdc, "priceLower": 2500, "priceUpper": 3600
        }))
        .await;
    let minted = mint_twin(&devnet, &created, weth, usdc).await;
    let id = created["id"].as_str().unwrap().to_string();
    let token_id = minted["tokenId"].as_str().unwrap().to_string();
    assert_eq!(sync(&ops).await["updated"], true);

    let rpc = RpcClient::new(&devnet.rpc, Duration::from_secs(10)).unwrap();
    let snapshot = rpc.call("evm_snapshot", json!([])).await.unwrap();
    devnet
        .run("swap", &["--sell", "weth", "--amount", "10"])
        .await;
    let orphan = sync(&ops).await;
    assert_eq!(orphan["updated"], true, "{orphan}");
    let orphaned = assert_fees_match(&devnet, &grace, &id, &token_id).await;

    // The chain forgets that block and makes others at its height and past it.
    assert_eq!(
        rpc.call("evm_revert", json!([snapshot])).await.unwrap(),
        true
    );
    for (sell, amount) in [("usdc", "20000"), ("usdc", "1000")] {
        devnet
            .run("swap", &["--sell", sell, "--amount", amount])
            .await;
    }
    let canonical = sync(&ops).await;
    assert_eq!(canonical["updated"], true, "{canonical}");
    assert_eq!(
        canonical["block"].as_u64(),
        orphan["block"].as_u64().map(|b| b + 1),
        "{canonical}"
    );
    let fees = assert_fees_match(&devnet, &grace, &id, &token_id).await;
    assert_ne!(
        fees, orphaned,
        "the canonical chain's swaps earned other fees"
    );
    assert!(
        fees.1 > 0,
        "USDC sold on the canonical chain pays USDC fees"
    );
    let closed = grace.close(&id).await;
    assert_eq!(closed.status, StatusCode::OK, "{}", closed.text());
    assert_eq!(fees_of(&closed.json), fees);
}
