//! Wallet data no stranger moves, on the devnet (anvil with the real Uniswap v3 contracts) and
//! through local-api, on memory and on DynamoDB (moto). A token of the test's own, OWN, has a
//! deep pool with WETH at 1:1 where two users hold positions; an attacker creates a second
//! OWN/WETH pool at 1,000 WETH per OWN, deep enough to price a token on its own, holds a
//! position on it and links that wallet between the two users; the attacker also mints a
//! sliver of a position on a pool of a token of its own at a price of its choosing into the
//! first user's wallet. Neither moves a user's figures. A position moved between two of a
//! user's wallets keeps its id and its figures.

use lambda_http::http::{Method, StatusCode};
use serde_json::Value;
use test_support::client::TestClient;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::world;

/// `[tick - 600, tick + 600)` snapped to a spacing of 60, around a new pool's tick.
fn around(pool: &Value) -> (i32, i32) {
    let tick = pool["tick"].as_i64().unwrap() as i32;
    (
        (tick - 600).div_euclid(60) * 60,
        (tick + 600).div_euclid(60) * 60,
    )
}

/// The USD price `/pools` gives the token at `address` on every pool holding it: one price, or
/// `None` for a token no pool prices.
fn price_of(pools: &Value, address: &str) -> Option<Value> {
    let mut prices = Vec::new();
    for pool in pools["data"].as_array().unwrap() {
        for side in ["tokenA", "tokenB"] {
            if text(&pool[side]["address"]).eq_ignore_ascii_case(address) {
                prices.push(pool[side]["priceUsd"].clone());
            }
        }
    }
    assert!(!prices.is_empty(), "no pool holds {address}: {pools}");
    assert!(prices.windows(2).all(|w| w[0] == w[1]), "{prices:?}");
    Some(prices[0].clone()).filter(|p| !p.is_null())
}

/// The caller's wallet position with this token id.
async fn position(client: &TestClient, token_id: &str) -> Value {
    let reply = client.list("source=wallet&limit=100").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| text(&p["tokenId"]) == token_id)
        .cloned()
        .unwrap_or_else(|| panic!("token {token_id} not listed: {}", reply.json))
}

async fn sync(ops: &TestClient) -> Value {
    let report = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text());
    report.json
}

async fn strangers_move_nothing(store_args: &[&str]) {
    let devnet = Devnet::up(3000).await;
    let mut accounts = Vec::new();
    for index in ["1", "2", "3", "4"] {
        let account = devnet.run("account", &["--index", index]).await;
        accounts.push(text(&account["address"]));
    }
    let [alice_wallet, attacker_wallet, carol_wallet, alice_second] = &accounts[..] else {
        unreachable!()
    };
    const THOUSAND: &str = "1000000000000000000000";
    const TEN: &str = "10000000000000000000";
    const MILLI: &str = "1000000000000000";

    // OWN and its fair pool at 1:1 with WETH, holding about 2,000 WETH.
    let own = devnet
        .run("new-pool", &["--symbol", "OWN", "--fee", "500"])
        .await;
    let own_token = text(&own["token"]);
    let alices = devnet
        .mint_to(alice_wallet, (-600, 600), Some(&own), THOUSAND)
        .await;
    let carols = devnet
        .mint_to(carol_wallet, (-600, 600), Some(&own), THOUSAND)
        .await;
    // The attacker's OWN/WETH pool at 1,000 WETH per OWN, holding 10 WETH (30,000 USD).
    let rigged = devnet
        .run(
            "new-pool",
            &[
                "--symbol", "OWN", "--token", &own_token, "--fee", "3000", "--price", "1000",
            ],
        )
        .await;
    devnet
        .mint_to(attacker_wallet, around(&rigged), Some(&rigged), TEN)
        .await;
    // DUST at 1,000 WETH per DUST, its pool holding a thousandth of a WETH, and a sliver of a
    // position on it sent to Alice's wallet.
    let dust = devnet
        .run(
            "new-pool",
            &["--symbol", "DUST", "--fee", "3000", "--price", "1000"],
        )
        .await;
    let dust_id = devnet
        .mint_to(alice_wallet, around(&dust), Some(&dust), MILLI)
        .await;

    let server = world::local_api(&devnet, &devnet.rpc, store_args).await;
    let alice = world::user(&server, "alice").await;
    let attacker = world::user(&server, "mallory").await;
    let carol = world::user(&server, "carol").await;
    let ops = world::operator(&server).await;

    // Alice links before the attacker, Carol after.
    devnet.link_account(&alice, alice_wallet).await;
    let before = alice.portfolio().await.json;
    devnet.link_account(&attacker, attacker_wallet).await;
    devnet.link_account(&carol, carol_wallet).await;
    let report = sync(&ops).await;
    // The rigged pool is read like the catalog's; so is the dust pool, too shallow to price
    // anything: a followed position is on it (one pool, one price: decision 63).
    let synced: Vec<String> = report["pools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| text(&p["pool"]).to_lowercase())
        .collect();
    assert!(
        synced.contains(&text(&rigged["pool"]).to_lowercase()),
        "{report}"
    );
    assert!(
        synced.contains(&text(&dust["pool"]).to_lowercase()),
        "{report}"
    );

    // OWN is priced by its deepest pool, whoever linked first: at WETH's price (1:1).
    let pools = alice.pools().await.json;
    let weth = price_of(&pools, &devnet.address("weth")).expect("WETH has a price");
    assert_eq!(price_of(&pools, &own_token), Some(weth), "{pools}");
    assert_eq!(price_of(&pools, &text(&dust["token"])), None, "{pools}");
    for (client, token) in [(&alice, &alices), (&carol, &carols)] {
        let view = position(client, token).await;
        assert!(view["valueUsd"].is_number(), "{view}");
        // 1,000 OWN and 1,000 WETH at most, at about 3,000 USD each: not billions.
        assert!(view["valueUsd"].as_f64().unwrap() < 6_000_001.0, "{view}");
    }
    // The rigged pool's own position is valued at the same price as everyone's.
    let rigged_view = attacker.list("source=wallet").await.json["data"][0].clone();
    assert!(
        rigged_view["valueUsd"].as_f64().unwrap() < 100_000.0,
        "{rigged_view}"
    );

    // The dust shows, unpriced, and moves no total.
    let dust_view = position(&alice, &dust_id).await;
    assert_eq!(dust_view["status"], "active", "{dust_view}");
    assert!(dust_view["valueUsd"].is_null(), "{dust_view}");
    let after = alice.portfolio().await.json;
    assert_eq!(after["unpricedPositions"], 1, "{after}");
    assert_eq!(after["totalValueUsd"], before["totalValueUsd"], "{after}");
    assert_eq!(
        after["totalValueUsd"],
        position(&alice, &alices).await["valueUsd"],
        "{after}"
    );

    // Alice's position moves to her second wallet: the same position, shown in its new wallet.
    devnet.link_account(&alice, alice_second).await;
    let first = position(&alice, &alices).await;
    devnet.transfer(alice_wallet, &alices, alice_second).await;
    // Only the two wallets the transfer names are read whole: its sender and its recipient.
    let report = sync(&ops).await;
    assert_eq!(report["wallets"]["refreshed"], 2, "{report}");
    assert_eq!(report["wallets"]["corrected"], 0, "{report}");
    let moved = position(&alice, &alices).await;
    assert_eq!(moved["id"], first["id"], "{moved}");
    assert_eq!(moved["status"], "active", "{moved}");
    assert!(
        text(&moved["wallet"]).eq_ignore_ascii_case(alice_second),
        "{moved}"
    );
    assert_eq!(moved["costBasisUsd"], first["costBasisUsd"], "{moved}");
    let listed = alice.list("source=wallet&limit=100").await.json;
    assert_eq!(listed["total"], 2, "{listed}");
    let portfolio = alice.portfolio().await.json;
    assert_eq!(portfolio["positions"], 2, "{portfolio}");
    assert_eq!(
        portfolio["totalValueUsd"], before["totalValueUsd"],
        "{portfolio}"
    );
}

test_support::on_both_stores!(strangers_move_nothing => strangers_move_nothing);
