//! The life cycle's figures: what a close pays and freezes, and how the sync sizes a pending
//! offer when it activates it (see decision 32's state diagram). Storing them is the
//! application's `settling`.

use crate::domain::catalog::{Catalog, Pool};
use crate::domain::model::{Closing, FeeCheckpoint, Position, Status, TokenPair};
use crate::domain::valuation::{nothing, pool_of, token_value, ValuationError};
use bigdecimal::{BigDecimal, RoundingMode, Zero};
use chrono::{DateTime, Utc};

/// Decimal places a realized PnL is kept to (10^-12 USD): running totals then stay within
/// DynamoDB's 38 significant digits, exact.
pub const REALIZED_PLACES: i64 = 12;

/// A realized USD figure, rounded once as it is frozen.
pub(crate) fn realized(value: BigDecimal) -> BigDecimal {
    value.with_scale_round(REALIZED_PLACES, RoundingMode::HalfEven)
}

/// Why a pending position closed without ever holding liquidity.
pub const CANCELLED: &str = "cancelled by its owner before it was activated";

/// The close of an offer that never held liquidity: nothing withdrawn, PnL 0, `reason` kept.
pub fn unfunded_close(pool: &Pool, reason: String, now: DateTime<Utc>) -> Closing {
    Closing {
        closed_at: DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now),
        price: pool.current_price.clone(),
        withdrawn: nothing(),
        fees: nothing(),
        value_a: BigDecimal::zero(),
        value_b: BigDecimal::zero(),
        fees_usd_a: BigDecimal::zero(),
        fees_usd_b: BigDecimal::zero(),
        hodl_usd: None,
        pnl_usd: BigDecimal::zero(),
        cost_basis_usd: BigDecimal::zero(),
        reason: Some(reason),
    }
}

/// What closing `position` at the pool's state pays, frozen. An active position withdraws its
/// whole liquidity (amounts rounded down, as a burn pays) and collects its fees; a pending
/// offer (no liquidity yet) is cancelled: nothing withdrawn, PnL 0.
pub fn close_position(
    position: &Position,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<Closing, ValuationError> {
    let pool = pool_of(position, catalog)?;
    if position.status != Status::Active {
        return Ok(unfunded_close(pool, CANCELLED.to_string(), now));
    }
    let withdrawn =
        pool.withdrawal(position.tick_lower, position.tick_upper, position.liquidity)?;
    let fees = pool.fees_owed(position);
    Ok(frozen_close(pool, position, (withdrawn, fees), now, None))
}

/// The figures of a close that paid `withdrawn` and `fees` (tokenA, tokenB), frozen at the
/// pool's prices: values, the deposit's value then, and the PnL it realizes.
pub fn frozen_close(
    pool: &Pool,
    position: &Position,
    (withdrawn, fees): (TokenPair, TokenPair),
    closed_at: DateTime<Utc>,
    reason: Option<String>,
) -> Closing {
    let value_a = token_value(&pool.token_a, withdrawn.a);
    let value_b = token_value(&pool.token_b, withdrawn.b);
    let fees_usd_a = token_value(&pool.token_a, fees.a);
    let fees_usd_b = token_value(&pool.token_b, fees.b);
    let pnl_usd =
        realized(&value_a + &value_b + &fees_usd_a + &fees_usd_b - &position.cost_basis_usd);
    Closing {
        closed_at: DateTime::from_timestamp_millis(closed_at.timestamp_millis())
            .unwrap_or(closed_at),
        price: pool.current_price.clone(),
        withdrawn,
        fees,
        value_a,
        value_b,
        fees_usd_a,
        fees_usd_b,
        hodl_usd: position.deposit.as_ref().map(|d| pool.value_of(d)),
        pnl_usd,
        cost_basis_usd: realized(position.cost_basis_usd.clone()),
        reason,
    }
}

/// What a sync makes of a pending position at its pool's new state.
#[derive(Debug, Clone, PartialEq)]
pub enum Activation {
    /// Sized as a create at this state would be: the position to store, `active`.
    Active(Box<Position>),
    /// The offer funds no liquidity at this state: closed with PnL 0 and the reason.
    Unfunded(Box<Closing>),
    /// The pool's records lack the position's ticks at this state (tracked after the sync
    /// read them): left pending for the next sync.
    NotYet,
}

/// Sizes a pending position at its pool's state in `catalog`: the largest liquidity its offer
/// funds (amounts rounded up, never more than offered), the cost basis at the catalog's USD
/// prices and the fee checkpoint from the pool's tick records.
pub fn activate(
    position: &Position,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<Activation, ValuationError> {
    let pool = pool_of(position, catalog)?;
    let (Some(state), Some(offered)) = (&pool.state, position.deposit) else {
        return Ok(Activation::NotYet);
    };
    let Some(growth) = pool.fee_growth_inside(position.tick_lower, position.tick_upper) else {
        return Ok(Activation::NotYet);
    };
    match pool.size_deposit(position.tick_lower, position.tick_upper, offered) {
        Ok(deposit) => Ok(Activation::Active(Box::new(Position {
            status: Status::Active,
            liquidity: deposit.liquidity,
            cost_basis_usd: deposit.value_usd,
            deposit: Some(deposit.amounts),
            fee_checkpoint: Some(FeeCheckpoint {
                height: state.height,
                growth,
            }),
            activated_at: Some(now),
            ..position.clone()
        }))),
        Err(ValuationError::Rejected(reason)) => Ok(Activation::Unfunded(Box::new(
            unfunded_close(pool, reason, now),
        ))),
        Err(e) => Err(e),
    }
}
