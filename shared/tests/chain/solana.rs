//! Orca Whirlpools from recorded real accounts (`../shared/fixtures/orca-whirlpool/`), served by
//! a loopback JSON-RPC stub as `getMultipleAccounts` would answer them.

use super::support::{entry, market, pool, sync, syncer};
use base64::Engine;
use serde_json::{json, Value};
use shared::chain::solana::{
    decode_tick_array, decode_whirlpool, tick_array_address, tick_array_start,
};
use shared::market::Freshness;
use shared::math::U256;
use shared::model::Chain;
use shared::store::Market;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use test_support::rpc_stub::{each_call, RpcStub};

const WHIRLPOOL: &str = "EgxU92G34jw6QDG9RuTX9StFg1PmHuDqkRKAE5kVEiZ4";
const WHIRLPOOL_B: &str = "7vWRTPPBq3aNaJZsrfterTz1BSjht4YSHBXJwnbuV6SC";
const LOWER_ARRAY: &str = "AihMywzP74pU2riq1ihFW2YSVcc1itT3yiP7minvkxDs";
const UPPER_ARRAY: &str = "F4h3qr6uBgdLDJyTms4YiebiaiuCEvC5C9LJE8scA1LV";
const SLOT: u64 = 412_345_678;

fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/orca-whirlpool")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} is missing: the handouts sit beside the repository",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

fn data(account: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(account["account"]["data"][0].as_str().unwrap())
        .unwrap()
}

/// The recorded accounts by address.
fn accounts() -> HashMap<String, Value> {
    [
        "whirlpool.json",
        "whirlpool-b.json",
        "fixed_tick_array_lower.json",
        "fixed_tick_array_upper.json",
        "position.json",
    ]
    .iter()
    .map(|name| {
        let f = fixture(name);
        (
            f["pubkey"].as_str().unwrap().to_string(),
            f["account"].clone(),
        )
    })
    .collect()
}

/// A stub answering `getMultipleAccounts` from `accounts` at `SLOT` (and `getSlot` a little
/// past it), recording the addresses and options of every call.
async fn stub(accounts: HashMap<String, Value>) -> (RpcStub, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let stub = RpcStub::start(move |body| {
        log.lock().unwrap().push(body.clone());
        each_call(body, |call| {
            if call["method"] == "getSlot" {
                return Ok(json!(SLOT + 2));
            }
            if call["method"] != "getMultipleAccounts" {
                return Err(json!({"code": -32601, "message": "Method not found"}));
            }
            let value: Vec<Value> = call["params"][0]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    accounts
                        .get(a.as_str().unwrap())
                        .cloned()
                        .unwrap_or(Value::Null)
                })
                .collect();
            Ok(json!({"context": {"apiVersion": "2.2.0", "slot": SLOT}, "value": value}))
        })
    })
    .await;
    (stub, seen)
}

/// A catalog record for a recorded Whirlpool, its mints and spacing as decoded.
fn record(address: &str, file: &str) -> Value {
    let whirlpool = decode_whirlpool(&data(&fixture(file))).unwrap();
    json!({
        "chain": "solana", "protocol": "orca-whirlpools", "pool": address,
        "feeTier": whirlpool.fee_rate, "tickSpacing": whirlpool.tick_spacing,
        "token0": {"symbol": "TKA", "address": whirlpool.token_mint_a, "decimals": 6, "priceUsd": "0"},
        "token1": {"symbol": "USDC", "address": whirlpool.token_mint_b, "decimals": 6, "priceUsd": "1"},
        "base": "token0", "currentPrice": "0.01"
    })
}

#[test]
fn the_recorded_accounts_decode_to_their_documented_values() {
    let w = decode_whirlpool(&data(&fixture("whirlpool.json"))).unwrap();
    assert_eq!(w.tick_spacing, 64);
    assert_eq!(w.fee_rate, 2000);
    assert_eq!(w.liquidity, 462_271_585_695_307);
    assert_eq!(w.sqrt_price, 58_410_682_143_245_572);
    assert_eq!(w.tick_current_index, -115_109);
    assert_eq!(
        w.token_mint_a,
        "Jd4M8bfJG3sAkd82RsGWyEXoaBXQP7njFzBwEaCTuDa"
    );
    assert_eq!(
        w.token_mint_b,
        "BRjpCHtyQLNCo8gqRUr8jtdAj5AjPYQaoqbvcZiHok1k"
    );
    assert_eq!(w.fee_growth_global_a, 58_012_550_787_034_697_697);
    assert_eq!(w.fee_growth_global_b, 580_254_477_281_516);

    let b = decode_whirlpool(&data(&fixture("whirlpool-b.json"))).unwrap();
    assert_eq!(
        (
            b.tick_spacing,
            b.fee_rate,
            b.liquidity,
            b.sqrt_price,
            b.tick_current_index
        ),
        (
            128,
            10_000,
            61_033_076_338,
            724_843_529_241_286_155_675,
            73_425
        )
    );
    assert_eq!(b.fee_growth_global_a, 233_477_144_286_234_392);
    assert_eq!(b.fee_growth_global_b, 161_495_808_442_428_051_165);

    let lower = decode_tick_array(&data(&fixture("fixed_tick_array_lower.json"))).unwrap();
    assert_eq!(lower.start_tick_index, -444_928);
    assert_eq!(lower.ticks.len(), 88);
    let tick = lower.ticks[21];
    assert!(tick.initialized);
    assert_eq!(tick.liquidity_gross, 5_118_139);
    assert_eq!(tick.fee_growth_outside_a, 57_877_796_150_015_505_712);
    assert_eq!(tick.fee_growth_outside_b, 578_813_422_358_758);
    let upper = decode_tick_array(&data(&fixture("fixed_tick_array_upper.json"))).unwrap();
    assert_eq!(upper.start_tick_index, 439_296);
    let tick = upper.ticks[67];
    assert!(tick.initialized);
    assert_eq!(
        (tick.fee_growth_outside_a, tick.fee_growth_outside_b),
        (0, 0)
    );
}

#[test]
fn fees_inside_the_recorded_range_are_the_programs() {
    use shared::math::fees::{BoundTick, FeeAccounting};
    let w = decode_whirlpool(&data(&fixture("whirlpool.json"))).unwrap();
    let lower = decode_tick_array(&data(&fixture("fixed_tick_array_lower.json")))
        .unwrap()
        .ticks[21];
    let upper = decode_tick_array(&data(&fixture("fixed_tick_array_upper.json")))
        .unwrap()
        .ticks[67];
    let bound = |tick, t: shared::chain::solana::Tick, outside| BoundTick {
        tick,
        initialized: t.initialized,
        outside: U256::from(outside),
    };
    let inside = |global, lo, hi| {
        FeeAccounting::Orca.growth_inside(
            w.tick_current_index,
            U256::from(global),
            bound(-443_584, lower, lo),
            bound(443_584, upper, hi),
        )
    };
    let a = inside(
        w.fee_growth_global_a,
        lower.fee_growth_outside_a,
        upper.fee_growth_outside_a,
    );
    let b = inside(
        w.fee_growth_global_b,
        lower.fee_growth_outside_b,
        upper.fee_growth_outside_b,
    );
    assert_eq!(a, U256::from(134_754_637_019_191_985u128));
    assert_eq!(b, U256::from(1_441_054_922_758u128));
    let owed = |inside| FeeAccounting::Orca.fees_owed(1_000_000_000_000, U256::ZERO, inside);
    assert_eq!((owed(a), owed(b)), (7_305_063_510, 78_119));
}

#[test]
fn tick_arrays_are_found_by_their_program_derived_addresses() {
    assert_eq!(tick_array_start(-443_584, 64), -444_928);
    assert_eq!(tick_array_start(443_584, 64), 439_296);
    assert_eq!(tick_array_start(0, 64), 0);
    assert_eq!(tick_array_start(-1, 64), -5_632);
    assert_eq!(
        tick_array_address(WHIRLPOOL, -444_928).as_deref(),
        Some(LOWER_ARRAY)
    );
    assert_eq!(
        tick_array_address(WHIRLPOOL, 439_296).as_deref(),
        Some(UPPER_ARRAY)
    );
    assert_eq!(tick_array_address("not base58 0OIl", 0), None);
}

#[test]
fn accounts_of_another_kind_or_too_short_are_refused() {
    let whirlpool = data(&fixture("whirlpool.json"));
    let array = data(&fixture("fixed_tick_array_lower.json"));
    let position = data(&fixture("position.json"));
    assert!(
        decode_whirlpool(&position).is_err(),
        "a Position is no Whirlpool"
    );
    assert!(
        decode_whirlpool(&array).is_err(),
        "a TickArray is no Whirlpool"
    );
    assert!(decode_whirlpool(&whirlpool[..600]).is_err());
    assert!(
        decode_tick_array(&whirlpool).is_err(),
        "a Whirlpool is no TickArray"
    );
    assert!(decode_tick_array(&array[..9_000]).is_err());
    assert!(decode_tick_array(&[]).is_err());
}

#[tokio::test]
async fn one_request_reads_every_whirlpool_and_the_arrays_of_tracked_ticks() {
    let market = market(&[
        record(WHIRLPOOL, "whirlpool.json"),
        record(WHIRLPOOL_B, "whirlpool-b.json"),
    ]);
    let tracked = pool(&market, WHIRLPOOL).await;
    market
        .track_ticks(&tracked, [-443_584, 443_584], &[])
        .await
        .unwrap();
    let (stub, seen) = stub(accounts()).await;
    let syncer = syncer(
        market.clone(),
        &[(Chain::Solana, &stub.url)],
        Duration::from_secs(5),
    );
    let report = sync(&syncer).await;

    assert_eq!(report["updated"], 2, "{report}");
    assert_eq!(
        stub.requests(),
        2,
        "one getMultipleAccounts for the whole chain, then getSlot"
    );
    let call = seen.lock().unwrap()[0].clone();
    assert_eq!(call["method"], "getMultipleAccounts");
    assert_eq!(
        call["params"][1],
        json!({"encoding": "base64", "commitment": "confirmed"})
    );
    let asked: Vec<&str> = call["params"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(asked, [WHIRLPOOL, WHIRLPOOL_B, LOWER_ARRAY, UPPER_ARRAY]);

    let first = entry(&report, WHIRLPOOL);
    assert_eq!(first["slot"], SLOT);
    assert!(first.get("block").is_none());
    assert_eq!(first["sqrtPrice"], "58410682143245572");
    assert_eq!(first["tick"], -115_109);

    let synced = pool(&market, WHIRLPOOL).await;
    let state = synced.state.clone().expect("a state");
    assert_eq!(state.height, SLOT);
    assert_eq!(state.sqrt_price, U256::from(58_410_682_143_245_572u128));
    assert_eq!(state.liquidity, 462_271_585_695_307);
    assert_eq!(
        state.fee_growth_global0,
        U256::from(58_012_550_787_034_697_697u128)
    );
    assert_eq!(
        state.fee_growth_global1,
        U256::from(580_254_477_281_516u128)
    );
    let lower = &state.ticks[0];
    assert_eq!(lower.tick, -443_584);
    assert!(lower.initialized);
    assert_eq!(
        lower.fee_growth_outside0,
        U256::from(57_877_796_150_015_505_712u128)
    );
    assert_eq!(
        lower.fee_growth_outside1,
        U256::from(578_813_422_358_758u128)
    );
    let upper = &state.ticks[1];
    assert_eq!((upper.tick, upper.initialized), (443_584, true));
    assert_eq!(upper.fee_growth_outside0, U256::ZERO);
    assert_eq!(synced.tick, -115_109);

    // The sync started the fee records from the pool's own values (both ticks initialized on
    // chain): the growth inside the recorded position's range is the program's, and a
    // position of liquidity 10^12 with zero checkpoints is owed the documented fees.
    assert!(synced
        .fee_ticks
        .values()
        .all(|r| r.on_chain && r.offset0.is_zero()));
    assert_eq!(
        synced.fee_growth_inside(-443_584, 443_584),
        Some([
            U256::from(134_754_637_019_191_985u128),
            U256::from(1_441_054_922_758u128)
        ])
    );
    let position = shared::model::Position {
        liquidity: 1_000_000_000_000,
        tick_lower: -443_584,
        tick_upper: 443_584,
        fee_checkpoint: Some(shared::model::FeeCheckpoint {
            height: SLOT,
            growth: [U256::ZERO; 2],
        }),
        ..test_support::fixtures::position("orca", shared::model::Status::Active, Chain::Solana, 0)
    };
    let owed = synced.fees_owed(&position);
    let (a, b) = if synced.orientation.base_is_token0 {
        (owed.a, owed.b)
    } else {
        (owed.b, owed.a)
    };
    assert_eq!(
        (a, b),
        (U256::from(7_305_063_510u64), U256::from(78_119u64))
    );

    let view = serde_json::to_value(synced.view(
        Freshness::Live {
            stale_after: Duration::from_secs(300),
        },
        chrono::Utc::now(),
    ))
    .unwrap();
    assert_eq!(view["slot"], SLOT);
    assert_eq!(view["stale"], false);
    assert_eq!(view["sqrtPrice"], "58410682143245572");
}

#[tokio::test]
async fn a_tracked_tick_whose_array_does_not_exist_is_uninitialized() {
    let market = market(&[record(WHIRLPOOL, "whirlpool.json")]);
    let tracked = pool(&market, WHIRLPOOL).await;
    market.track_ticks(&tracked, [-64, 64], &[]).await.unwrap();
    let (stub, _) = stub(accounts()).await;
    let report = sync(&syncer(
        market.clone(),
        &[(Chain::Solana, &stub.url)],
        Duration::from_secs(5),
    ))
    .await;
    assert_eq!(report["updated"], 1, "{report}");
    let state = pool(&market, WHIRLPOOL).await.state.unwrap();
    assert!(state
        .ticks
        .iter()
        .all(|t| !t.initialized && t.fee_growth_outside0.is_zero()));
}

/// Syncs the recorded Whirlpool with its account changed by `alter`; the report's entry.
async fn sync_altered(alter: impl Fn(&mut Value)) -> Value {
    let market = market(&[record(WHIRLPOOL, "whirlpool.json")]);
    let mut recorded = accounts();
    alter(recorded.get_mut(WHIRLPOOL).unwrap());
    let (stub, _) = stub(recorded).await;
    let report = sync(&syncer(
        market.clone(),
        &[(Chain::Solana, &stub.url)],
        Duration::from_secs(5),
    ))
    .await;
    assert!(
        pool(&market, WHIRLPOOL).await.state.is_none(),
        "nothing is stored"
    );
    entry(&report, WHIRLPOOL).clone()
}

fn with_data(account: &mut Value, bytes: &[u8]) {
    account["data"][0] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
}

#[tokio::test]
async fn a_wrong_short_foreign_or_missing_account_updates_nothing() {
    let recorded = data(&fixture("whirlpool.json"));
    let mut flipped = recorded.clone();
    flipped[0] ^= 0xff;
    type Alteration = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Alteration, &str)> = vec![
        (Box::new(move |a| with_data(a, &flipped)), "discriminator"),
        (
            Box::new(move |a| with_data(a, &recorded[..400])),
            "too short",
        ),
        (
            Box::new(|a| a["owner"] = json!("11111111111111111111111111111111")),
            "not owned",
        ),
        (Box::new(|a| *a = Value::Null), "does not exist"),
        (Box::new(|a| a["data"][1] = json!("base58")), "not base64"),
    ];
    for (alter, expected) in cases {
        let entry = sync_altered(alter).await;
        assert_eq!(entry["updated"], false, "{entry}");
        let reason = entry["reason"].as_str().unwrap();
        assert!(reason.contains(expected), "{expected}: {reason}");
    }
}

#[tokio::test]
async fn a_catalog_entry_that_is_not_the_account_on_chain_is_not_updated() {
    let mut wrong_mints = record(WHIRLPOOL, "whirlpool.json");
    wrong_mints["token0"]["address"] = json!("So11111111111111111111111111111111111111112");
    let mut wrong_spacing = record(WHIRLPOOL_B, "whirlpool-b.json");
    wrong_spacing["tickSpacing"] = json!(64);
    let market = market(&[wrong_mints, wrong_spacing]);
    let (stub, _) = stub(accounts()).await;
    let report = sync(&syncer(
        market,
        &[(Chain::Solana, &stub.url)],
        Duration::from_secs(5),
    ))
    .await;
    assert_eq!(report["updated"], 0, "{report}");
    assert!(entry(&report, WHIRLPOOL)["reason"]
        .as_str()
        .unwrap()
        .contains("mints"));
    assert!(entry(&report, WHIRLPOOL_B)["reason"]
        .as_str()
        .unwrap()
        .contains("tick spacing"));
}
