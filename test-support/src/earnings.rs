//! One scenario of fee accounting through the handlers, run on each store: a position opened on
//! a live pool earns `L × Δ / 2^128` per token as the pool's fee growth moves (its ticks not
//! initialized on chain), its figures follow, and all of it survives a cold start.

use crate::bodies::ETH_USDC;
use crate::client::TestClient;
use bigdecimal::BigDecimal;
use chrono::Utc;
use serde_json::{json, Value};
use shared::catalog::Pool;
use shared::fee_ticks::advance_all;
use shared::market::{PoolState, Succession};
use shared::math::{U256, U512};
use shared::App;
use std::str::FromStr;

pub(crate) async fn pool(app: &App) -> Pool {
    let catalog = app.market.catalog().await.unwrap();
    catalog
        .pools
        .iter()
        .find(|p| p.is_named(ETH_USDC))
        .unwrap()
        .clone()
}

/// Stores `state` as a sync would: the pool's fee records advanced to it.
pub(crate) async fn sync_to(app: &App, state: &PoolState) {
    let pool = pool(app).await;
    let records = advance_all(
        pool.fee_accounting(),
        &pool.tracked_ticks,
        &pool.fee_ticks,
        state,
    );
    app.market
        .save_state(&pool, state, &records, Succession::Next)
        .await
        .unwrap();
}

pub(crate) fn state(pool: &Pool, price: u32, height: u64, growth: [U256; 2]) -> PoolState {
    let sqrt_price = pool.orientation.sqrt_price_of(&BigDecimal::from(price));
    PoolState {
        sqrt_price,
        tick: pool.curve().tick_at_or_below(sqrt_price),
        liquidity: 10u128.pow(20),
        fee_growth_global0: growth[0],
        fee_growth_global1: growth[1],
        height,
        block_hash: None,
        observed_at: Utc::now(),
        ticks: Vec::new(),
        balances: None,
        slipstream: None,
    }
}

pub(crate) fn decimal(value: &Value) -> BigDecimal {
    BigDecimal::from_str(&value.to_string().replace('"', "")).unwrap()
}

/// Whole tokens (a decimal string) in base units.
fn units(value: &Value, decimals: u8) -> U512 {
    let scaled = decimal(value) * BigDecimal::from(10u64.pow(u32::from(decimals)));
    U512::from_str(&scaled.with_scale(0).to_string()).unwrap()
}

/// The scenario on `app` (a live market: states are saved by hand here); `cold` builds a new
/// app on the same storage, as a Lambda cold start would.
pub async fn fees_follow_the_pools_fee_growth(app: &App, owner: &str, cold: impl Fn() -> App) {
    let target = pool(app).await;
    // Growth that already wrapped around once: only differences count.
    let start = [U256::MAX - U256::from(7u8), U256::from(3u8) << 200];
    sync_to(app, &state(&target, 3000, 100, start)).await;
    let client = TestClient::in_process(app, Some(owner));
    let created = client.open(json!({})).await;
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["tokenA"]["feesEarned"], "0", "{created}");
    assert_eq!(created["feesEarnedUsd"], 0);
    assert_eq!(
        created["feeAprPercent"],
        Value::Null,
        "no APR in the first hour"
    );
    let liquidity = U512::from_str(created["liquidity"].as_str().unwrap()).unwrap();

    // The pool earns: Δ per token, chosen to pay about 1.5 USDC and 0.001 WETH.
    let with_liquidity = |whole_units: u64| {
        let l = U256::from_str(created["liquidity"].as_str().unwrap()).unwrap();
        (U256::from(whole_units) << 128) / l + U256::from(12_345u32)
    };
    let (usdc_is_token0, weth_decimals, usdc_decimals) = (
        !target.orientation.base_is_token0,
        target.token_a.decimals,
        target.token_b.decimals,
    );
    let (delta_usdc, delta_weth) = (with_liquidity(1_500_000), with_liquidity(10u64.pow(15)));
    let delta = if usdc_is_token0 {
        [delta_usdc, delta_weth]
    } else {
        [delta_weth, delta_usdc]
    };
    let later = [0, 1].map(|i| start[i].wrapping_add(delta[i]));
    sync_to(app, &state(&target, 3000, 101, later)).await;

    let owed = |d: U256| (liquidity * U512::from_str(&d.to_string()).unwrap()) >> 128;
    let read = client.get(&id).await.json;
    assert_eq!(
        units(&read["tokenA"]["feesEarned"], weth_decimals),
        owed(delta_weth),
        "{read}"
    );
    assert_eq!(
        units(&read["tokenB"]["feesEarned"], usdc_decimals),
        owed(delta_usdc),
        "{read}"
    );
    assert!(decimal(&read["feesEarnedUsd"]) > 4, "{read}");
    // Same price: the principal is the deposit, so no impermanent loss and PnL = fees.
    assert_eq!(read["impermanentLossUsd"], 0, "{read}");
    assert_eq!(read["hodlValueUsd"], read["costBasisUsd"]);
    assert_eq!(read["pnlUsd"], read["feesEarnedUsd"]);
    let portfolio = client.portfolio().await.json;
    assert_eq!(
        portfolio["totalFeesEarnedUsd"], read["feesEarnedUsd"],
        "{portfolio}"
    );
    assert_eq!(portfolio["totalValueUsd"], read["valueUsd"]);
    assert_eq!(portfolio["totalPnlUsd"], read["pnlUsd"]);

    // The price rises inside the range: the position sold WETH on the way, HODL did not.
    sync_to(app, &state(&target, 3300, 102, later)).await;
    let moved = client.get(&id).await.json;
    let loss = decimal(&moved["impermanentLossUsd"]);
    assert!(loss < 0, "{moved}");
    let hodl = decimal(&created["tokenA"]["amount"]) * BigDecimal::from(3300)
        + decimal(&created["tokenB"]["amount"]);
    assert_eq!(
        decimal(&moved["hodlValueUsd"]),
        hodl.with_scale_round(2, bigdecimal::RoundingMode::HalfUp)
    );
    assert_eq!(moved["tokenA"]["feesEarned"], read["tokenA"]["feesEarned"]);
    assert_eq!(
        client.portfolio().await.json["totalImpermanentLossUsd"],
        moved["impermanentLossUsd"]
    );

    // A cold start reads the checkpoint and the tick records back: the same figures.
    let cold = cold();
    let again = TestClient::in_process(&cold, Some(owner))
        .get(&id)
        .await
        .json;
    assert_eq!(again, moved);
}
