//! Chain answers that must never become figures, replayed through local-api over HTTP against a
//! loopback chain (`test_support::fake_chain`), in memory and on DynamoDB (moto): fee growth
//! going down, a far-ahead head (and a stored height beyond the chain), tick and price that
//! disagree, dirty ABI words, repeated batch ids, a reorg replacing the stored block. Fees stay
//! exactly the protocol's: L × Δgrowth / 2^128 for the growth the canonical chain shows. Also
//! scopes read as API Gateway reads them, and an Orca offer that would overflow u64.

use lambda_http::http::StatusCode;
use local_api::auth::JwtSettings;
use serde_json::{json, Value};
use shared::math::U256;
use test_support::client::TestClient;
use test_support::dynamodb::dynamodb_endpoint;
use test_support::fake_chain::{slot0, tick_word, word, ChainState, FakeChain};
use test_support::local_api::LocalApi;
use test_support::world;

const BIN: &str = env!("CARGO_BIN_EXE_local-api");
const POOL: &str = "0x00000000000000000000000000000000000000c1";
const Q96: u128 = 1 << 96;
/// The fee growth at the first sync, and one step of it.
const G0: u128 = 1 << 100;
const STEP: u128 = 1 << 110;

/// A catalog file of one Uniswap v3 USDC/USDT pool (6 decimals both, spacing 1) at `POOL`.
fn catalog_file() -> tempfile_path::Path {
    let catalog = json!({"asOf": "2026-11-23T00:00:00Z", "pools": [{
        "chain": "ethereum", "protocol": "uniswap-v3", "pool": POOL,
        "feeTier": 100, "tickSpacing": 1,
        "token0": {"symbol": "USDC", "address": "0x00000000000000000000000000000000000000a0", "decimals": 6, "priceUsd": "1"},
        "token1": {"symbol": "USDT", "address": "0x00000000000000000000000000000000000000b0", "decimals": 6, "priceUsd": "1"},
        "base": "token0", "currentPrice": "1"
    }]});
    tempfile_path::Path::with(&catalog.to_string())
}

/// A file removed when dropped.
mod tempfile_path {
    pub struct Path(pub std::path::PathBuf);

    impl Path {
        pub fn with(text: &str) -> Path {
            let path = std::env::temp_dir().join(format!("catalog-{}.json", ulid::Ulid::new()));
            std::fs::write(&path, text).unwrap();
            Path(path)
        }
    }

    impl Drop for Path {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// A create body on the pool: `amount` of each token between 0.99 and 1.01.
fn stable_body(amount: &str) -> String {
    json!({"chain": "ethereum", "protocol": "uniswap-v3", "pool": POOL,
        "amountA": amount, "amountB": amount, "priceLower": 0.99, "priceUpper": 1.01})
    .to_string()
}

/// Where the store runs: memory (no arguments) or a fresh table on moto.
fn store_args(on_dynamodb: bool) -> Vec<String> {
    if !on_dynamodb {
        return Vec::new();
    }
    let table = format!("trust-{}", ulid::Ulid::new().to_string().to_lowercase());
    vec![
        "--dynamodb-endpoint".into(),
        dynamodb_endpoint(),
        "--table".into(),
        table,
    ]
}

async fn start(chain: &FakeChain, catalog: &tempfile_path::Path, on_dynamodb: bool) -> LocalApi {
    let store = store_args(on_dynamodb);
    let store: Vec<&str> = store.iter().map(String::as_str).collect();
    world::local_api_on(&catalog.0, &chain.stub.url, &store).await
}

/// `POST /markets/sync`; the pool's report entry.
async fn sync(ops: &TestClient) -> Value {
    let reply = ops
        .send(lambda_http::http::Method::POST, "/markets/sync", &[], b"")
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json["pools"][0].clone()
}

async fn refused(ops: &TestClient, because: &str) {
    let entry = sync(ops).await;
    assert_eq!(entry["updated"], false, "{entry}");
    let reason = entry["reason"].as_str().unwrap_or_default();
    assert!(reason.contains(because), "{because}: {entry}");
}

async fn taken(ops: &TestClient) -> Value {
    let entry = sync(ops).await;
    assert_eq!(entry["updated"], true, "{entry}");
    entry
}

/// Whole tokens with 6 decimals as base units.
fn base_units(text: &str) -> u128 {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let fraction = format!("{fraction:0<6}");
    whole.parse::<u128>().unwrap() * 1_000_000 + fraction.parse::<u128>().unwrap()
}

/// Fees owed to `liquidity` for `growth` (Q128.128), in base units: L × Δ / 2^128.
fn owed(liquidity: u128, growth: u128) -> u128 {
    let product = U256::from(liquidity) * U256::from(growth);
    let owed: U256 = product >> 128;
    owed.to::<u128>()
}

async fn fees_of(alice: &TestClient, id: &str) -> [u128; 2] {
    let position = alice.get(id).await.json;
    ["tokenA", "tokenB"].map(|t| {
        base_units(
            position[t]["feesEarned"]
                .as_str()
                .unwrap_or_else(|| panic!("{position}")),
        )
    })
}

/// A fault in one answer of the chain.
enum Fault {
    Slot0(String),
    Liquidity(String),
    RepeatIds,
}

async fn chain_faults_never_become_figures(on_dynamodb: bool) {
    let chain = FakeChain::start(ChainState::at_price_one(G0)).await;
    let catalog = catalog_file();
    let server = start(&chain, &catalog, on_dynamodb).await;
    let ops = world::operator(&server).await;
    let alice = world::user(&server, "alice").await;
    let created = alice.create(&stable_body("1000")).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    assert_eq!(created.json["status"], "active");
    let id = created.json["id"].as_str().unwrap().to_string();
    let liquidity: u128 = created.json["liquidity"].as_str().unwrap().parse().unwrap();

    // Honest growth: the fees are the protocol's.
    chain.set(|c| {
        c.mine();
        c.growth = [word(G0 + STEP), word(G0 + STEP)];
    });
    taken(&ops).await;
    let earned = owed(liquidity, STEP);
    assert!(earned > 0);
    assert_eq!(fees_of(&alice, &id).await, [earned, earned]);

    // 1. Fee growth one unit below the stored one, at a higher block: refused, fees unchanged.
    chain.set(|c| {
        c.mine();
        c.growth[0] = word(G0 + STEP - 1);
    });
    refused(&ops, "below the stored one").await;
    assert_eq!(fees_of(&alice, &id).await, [earned, earned]);

    // 2. A far-ahead head: the node knows no such block; nothing stored, the next sync fine.
    chain.set(|c| {
        c.growth[0] = word(G0 + STEP);
        c.head = u64::MAX;
    });
    refused(&ops, "knows no block").await;
    chain.set(|c| c.head = c.known_up_to);

    // 3. A tick one below the sqrt price's, off a tick boundary: refused; on it: taken.
    chain.set(|c| {
        c.mine();
        c.slot0 = slot0(Q96 + 1_000_000, -1);
    });
    refused(&ops, "does not match").await;
    chain.set(|c| c.slot0 = slot0(Q96, -1));
    assert_eq!(taken(&ops).await["tick"], -1);

    // 4. Dirty words and repeated ids: refused whole.
    // int24 with a stray bit, uint160 with a bit above 160, uint128 with a bit above 128.
    let dirty_tick = format!("7{}", &tick_word(-1)[1..]);
    let dirty_sqrt = format!("01{}", &word(Q96)[2..]);
    let rest = word(0).repeat(5);
    let faults: [(Fault, &str); 4] = [
        (
            Fault::Slot0(format!("{}{dirty_tick}{rest}", word(Q96))),
            "slot0: undecodable",
        ),
        (
            Fault::Slot0(format!("{dirty_sqrt}{}{rest}", word(0))),
            "slot0: undecodable",
        ),
        (
            Fault::Liquidity(format!("{:032x}{:032x}", 1, 1_000_000_000_000u128)),
            "liquidity: undecodable",
        ),
        (Fault::RepeatIds, "ids"),
    ];
    for (fault, because) in faults {
        chain.set(|c| {
            c.mine();
            match fault {
                Fault::Slot0(words) => c.slot0 = words,
                Fault::Liquidity(words) => c.liquidity = words,
                Fault::RepeatIds => c.repeat_ids = true,
            }
        });
        refused(&ops, because).await;
        chain.set(|c| {
            *c = ChainState {
                head: c.head,
                known_up_to: c.known_up_to,
                ..ChainState::at_price_one(G0 + STEP)
            };
        });
    }
    chain.set(|c| {
        c.mine();
        c.growth = [word(G0 + 2 * STEP), word(G0 + 2 * STEP)];
    });
    let stored = taken(&ops).await["block"].as_u64().unwrap();
    let earned = owed(liquidity, 2 * STEP);
    assert_eq!(fees_of(&alice, &id).await, [earned, earned]);

    // 5. A reorg replaces the stored block: the canonical chain has less growth there and one
    // block more. Its state replaces the stored one whole; fees are the canonical chain's.
    chain.set(|c| {
        c.fork = 1;
        c.fork_from = stored;
        c.mine();
        c.growth = [word(G0 + STEP + 5), word(G0 + STEP + 7)];
    });
    assert_eq!(taken(&ops).await["block"], stored + 1);
    assert_eq!(
        fees_of(&alice, &id).await,
        [owed(liquidity, STEP + 5), owed(liquidity, STEP + 7)]
    );
    let closed = alice.close(&id).await;
    assert_eq!(closed.status, StatusCode::OK, "{}", closed.text());
    assert_eq!(
        base_units(closed.json["tokenB"]["feesEarned"].as_str().unwrap()),
        owed(liquidity, STEP + 7)
    );
    let portfolio = alice.portfolio().await.json;
    let pnl = portfolio["realizedPnlUsd"].as_f64().unwrap();
    assert!(
        pnl.abs() < 10.0,
        "no wrapped gain was ever realized: {portfolio}"
    );
}

#[tokio::test]
async fn chain_faults_never_become_figures_in_memory() {
    chain_faults_never_become_figures(false).await;
}

#[tokio::test]
async fn chain_faults_never_become_figures_on_dynamodb() {
    chain_faults_never_become_figures(true).await;
}

/// A state once stored from a hostile node at a height far beyond the chain (here the first
/// one ever read) is replaced by the next honest read: the pool never stays stale for good.
async fn a_stored_height_beyond_the_chain_is_replaced(on_dynamodb: bool) {
    let chain = FakeChain::start(ChainState {
        head: u64::MAX - 10,
        known_up_to: u64::MAX - 10,
        ..ChainState::at_price_one(G0)
    })
    .await;
    let catalog = catalog_file();
    let server = start(&chain, &catalog, on_dynamodb).await;
    let ops = world::operator(&server).await;
    let pools = world::user(&server, "alice").await.pools().await.json;
    assert_eq!(pools["data"][0]["block"], u64::MAX - 10, "{pools}");
    chain.set(|c| {
        c.head = 200;
        c.known_up_to = 200;
    });
    assert_eq!(taken(&ops).await["block"], 200);
    chain.set(|c| c.mine());
    assert_eq!(taken(&ops).await["block"], 201);
    // The pool is fresh: a create is active and closes.
    let alice = world::user(&server, "alice").await;
    let created = alice.create(&stable_body("10")).await;
    assert_eq!(created.json["status"], "active", "{}", created.text());
    let id = created.json["id"].as_str().unwrap();
    assert_eq!(alice.close(id).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_stored_height_beyond_the_chain_is_replaced_in_memory() {
    a_stored_height_beyond_the_chain_is_replaced(false).await;
}

#[tokio::test]
async fn a_stored_height_beyond_the_chain_is_replaced_on_dynamodb() {
    a_stored_height_beyond_the_chain_is_replaced(true).await;
}

#[tokio::test]
async fn scopes_are_read_as_api_gateway_reads_them() {
    let server = LocalApi::start(BIN, &[]).await;
    let now = chrono::Utc::now().timestamp();
    let token = |claims: Value| {
        let mut base = json!({"sub": "ops", "iss": "local-dev", "aud": "positions-api",
            "iat": now, "exp": now + 600});
        base.as_object_mut()
            .unwrap()
            .extend(claims.as_object().unwrap().clone());
        JwtSettings::local_default().sign(&base)
    };
    let cases = [
        (json!({"scope": "openid markets:sync"}), StatusCode::OK),
        (json!({"scp": "markets:sync"}), StatusCode::OK),
        (json!({"scp": ["openid", "markets:sync"]}), StatusCode::OK),
        (json!({"scope": ["markets:sync"]}), StatusCode::OK),
        (
            json!({"scope": {"granted": "markets:sync"}}),
            StatusCode::FORBIDDEN,
        ),
        (
            json!({"scope": {"a": "x markets:sync y"}}),
            StatusCode::FORBIDDEN,
        ),
        (
            json!({"scp": ["openid", 7, "markets:sync"]}),
            StatusCode::FORBIDDEN,
        ),
        (
            json!({"scope": "markets:sync2 openid"}),
            StatusCode::FORBIDDEN,
        ),
        (json!({"scope": "openid"}), StatusCode::FORBIDDEN),
        (json!({"scope": 1}), StatusCode::FORBIDDEN),
    ];
    for (claims, status) in cases {
        let ops = server.client(Some(&token(claims.clone())));
        let reply = ops
            .send(lambda_http::http::Method::POST, "/markets/sync", &[], b"")
            .await;
        assert_eq!(reply.status, status, "{claims}: {}", reply.text());
    }
}

/// An Orca offer within the form's digits whose range end would hold more SOL than u64 can:
/// refused at create, so no later price breaks the list (embedded catalog, SOL at 140).
async fn an_orca_offer_that_could_overflow_is_refused(on_dynamodb: bool) {
    let args = store_args(on_dynamodb);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = LocalApi::start(BIN, &args).await;
    let alice = server.client(Some(
        &JwtSettings::local_default().issue(&format!("orca-{}", ulid::Ulid::new()), 600),
    ));
    let body = |a: &str, b: &str| {
        json!({"chain": "solana", "protocol": "orca-whirlpools",
            "pool": "Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE",
            "amountA": a, "amountB": b, "priceLower": 100, "priceUpper": 200})
        .to_string()
    };
    let refused = alice.create(&body("9999999999", "9999999999999")).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text());
    assert!(refused.json["message"]
        .as_str()
        .unwrap()
        .contains("amount type"));
    let kept = alice.create(&body("10", "1000")).await;
    assert_eq!(kept.status, StatusCode::CREATED, "{}", kept.text());
    assert_eq!(alice.list("").await.json["total"], 1);
    assert_eq!(alice.portfolio().await.json["unvaluedPositions"], 0);
}

#[tokio::test]
async fn an_orca_offer_that_could_overflow_is_refused_in_memory() {
    an_orca_offer_that_could_overflow_is_refused(false).await;
}

#[tokio::test]
async fn an_orca_offer_that_could_overflow_is_refused_on_dynamodb() {
    an_orca_offer_that_could_overflow_is_refused(true).await;
}
