//! A whale's book for the cost and valuation benchmarks: open positions over every pool of the
//! embedded catalog, simulated ones with their deposit and fee checkpoint, wallet ones with their
//! last read, some pending; and the catalog at synced states with the ticks they use, so that
//! valuing them runs the fee accounting as a live market does.

use bigdecimal::BigDecimal;
use chrono::DateTime;
use shared::catalog::{Catalog, Pool, PoolMarket};
use shared::fee_ticks::FeeTick;
use shared::history::HistorySummary;
use shared::market::{PoolKey, PoolState};
use shared::math::U256;
use shared::model::{
    Closing, FeeCheckpoint, HeldToken, Position, Status, TokenPair, WalletHolding,
};
use std::collections::HashMap;
use std::str::FromStr;

const WALLET: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const MANAGER: &str = "0xC36442b4a4522E871399CD717aBDD847Ab11FE88";
const HEIGHT: u64 = 21_000_000;

/// The range of the `i`th position on `pool`: one of twenty ranges around its price.
fn range(pool: &Pool, i: usize) -> (i32, i32) {
    let spacing = pool.tick_spacing;
    let centre = pool.tick.div_euclid(spacing) * spacing;
    let width = (1 + (i % 20) as i32) * 10 * spacing;
    (centre - width, centre + width)
}

fn state(pool: &Pool) -> PoolState {
    PoolState {
        sqrt_price: pool.sqrt_price,
        tick: pool.tick,
        liquidity: 10u128.pow(20),
        fee_growth_global0: U256::from(7u8) << 128,
        fee_growth_global1: U256::from(3u8) << 140,
        height: HEIGHT,
        block_hash: None,
        observed_at: DateTime::from_timestamp(1_795_000_000, 0).unwrap(),
        ticks: Vec::new(),
        balances: None,
        slipstream: None,
    }
}

/// The embedded catalog, each pool at a synced state (its catalog price) with the fee records
/// of the twenty ranges [`book`] opens on it.
pub fn catalog() -> Catalog {
    let records = shared::catalog::embedded_records();
    let snapshot = Catalog::from_records(&records).unwrap();
    let markets: HashMap<PoolKey, PoolMarket> = snapshot
        .pools
        .iter()
        .map(|pool| {
            let state = state(pool);
            let ticks: std::collections::BTreeSet<i32> = (0..20)
                .flat_map(|i| {
                    let (lower, upper) = range(pool, i);
                    [lower, upper]
                })
                .collect();
            let fee_ticks = ticks
                .iter()
                .map(|&t| (t, FeeTick::first_use(t, &state, None)))
                .collect();
            let market = PoolMarket {
                state: Some(state),
                tracked_ticks: ticks,
                fee_ticks,
                ..PoolMarket::default()
            };
            (pool.key(), market)
        })
        .collect();
    Catalog::build(&records, markets, shared::market::Freshness::Snapshot).unwrap()
}

/// `count` positions of `owner` over every pool of `catalog`, in creation order
/// ([`position_at`]).
pub fn book(owner: &str, catalog: &Catalog, count: usize, closed: bool) -> Vec<Position> {
    (0..count)
        .map(|i| position_at(owner, catalog, i, closed))
        .collect()
}

/// The `i`th position of `owner`'s book, on the catalog's pools in turn: three in ten read
/// from a wallet (active), one in ten a pending offer, the rest active simulated ones; when
/// `closed`, closed instead, with its frozen figures.
pub fn position_at(owner: &str, catalog: &Catalog, i: usize, closed: bool) -> Position {
    let pool = &catalog.pools[i % catalog.pools.len()];
    let (tick_lower, tick_upper) = range(pool, i / catalog.pools.len());
    let created_at = DateTime::from_timestamp_millis(1_790_000_000_000 + i as i64).unwrap();
    let simulated = Position {
        id: ulid::Ulid::from_datetime(created_at.into()).to_string(),
        owner: owner.to_string(),
        chain: pool.chain,
        protocol: pool.protocol,
        pool: pool.id.clone(),
        status: Status::Active,
        tick_lower,
        tick_upper,
        liquidity: 1_000_000_000_000 + i as u128,
        cost_basis_usd: BigDecimal::from_str("2500.123456").unwrap(),
        deposit: Some(TokenPair {
            a: U256::from(1_234_567_890_123_456_789u128),
            b: U256::from(2_500_123_456u64),
        }),
        fee_checkpoint: Some(FeeCheckpoint {
            height: HEIGHT - 1000,
            growth: [U256::from(5u8) << 128, U256::from(2u8) << 140],
        }),
        closing: None,
        created_at,
        activated_at: Some(created_at),
        holding: None,
        order: None,
    };
    match i % 10 {
        _ if closed => Position {
            status: Status::Closed,
            closing: Some(closing(created_at)),
            ..simulated
        },
        0 => Position {
            status: Status::Pending,
            deposit: None,
            fee_checkpoint: None,
            ..simulated
        },
        1 | 4 | 7 => Position {
            deposit: None,
            fee_checkpoint: None,
            holding: Some(Box::new(holding(pool, i))),
            ..simulated
        },
        _ => simulated,
    }
}

fn holding(pool: &Pool, i: usize) -> WalletHolding {
    let token = |t: &shared::catalog::Token| HeldToken {
        symbol: t.symbol.clone(),
        address: t.address.clone(),
        decimals: t.decimals,
    };
    WalletHolding {
        wallet: WALLET.into(),
        manager: MANAGER.into(),
        token: (400_000 + i).to_string(),
        height: HEIGHT,
        read_at: DateTime::from_timestamp(1_795_000_000, 0).unwrap(),
        tokens: [token(&pool.token_a), token(&pool.token_b)],
        amounts: ["1234567890123456789".into(), "2500123456".into()],
        fees: ["1234567890123".into(), "2500123".into()],
        sqrt_price: pool.sqrt_price.to_string(),
        tick: pool.tick,
        first_value_usd: Some("5000.123456789".into()),
        close_reason: None,
        read_error: None,
        // A history with a withdrawal partly collected: what collect pays holds uncollected
        // principal beside fees.
        history: Some(HistorySummary {
            complete: true,
            through: HEIGHT,
            counted_from: Some(HEIGHT - 1_000),
            deposited: ["2234567890123456789".into(), "4500123456".into()],
            withdrawn: ["1000000000000000000".into(), "2000000000".into()],
            fees_collected: ["1000".into(), "2000".into()],
            uncollected_principal: ["1000000000000".into(), "0".into()],
            deposited_usd: [Some("5000.123456789".into()), Some("4500.123456".into())],
            withdrawn_usd: [Some("2999.5".into()), Some("2000".into())],
            fees_collected_usd: [Some("0.000000000000003".into()), Some("0.002".into())],
            capital_usd_seconds: Some("864000000".into()),
            first_time: Some(1_794_000_000),
            last_time: Some(1_794_500_000),
            ..HistorySummary::default()
        }),
        moved_from: None,
        moved_to: None,
        fee_state: None,
        tracked: false,
        watched: false,
        staked: None,
    }
}

fn closing(at: DateTime<chrono::Utc>) -> Closing {
    let d = |s: &str| BigDecimal::from_str(s).unwrap();
    Closing {
        closed_at: at,
        price: d("3000.5"),
        withdrawn: TokenPair {
            a: U256::from(1_234_567_890_123_456_789u128),
            b: U256::from(2_500_123_456u64),
        },
        fees: TokenPair {
            a: U256::from(1_234_567_890_123u64),
            b: U256::from(2_500_123u64),
        },
        value_a: d("3000.5"),
        value_b: d("2500.123456"),
        fees_usd_a: d("3.70370370037"),
        fees_usd_b: d("2.500123"),
        hodl_usd: Some(d("5400")),
        pnl_usd: d("12.25"),
        cost_basis_usd: d("2500.123456"),
        reason: None,
    }
}
