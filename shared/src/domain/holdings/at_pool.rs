//! A wallet position valued at its pool's synced state from its own fee state, as a read of
//! the chain at that block would find it (decision 57).

use crate::domain::catalog::Catalog;
use crate::domain::fee_ticks::chain_growth_inside;
use crate::domain::market::PoolState;
use crate::domain::math::fees::{BoundTick, FeeAccounting};
use crate::domain::math::{Curve, U256};
use crate::domain::model::{Position, Status, WalletHolding};
use std::str::FromStr;

/// A wallet position's holding at its pool's synced state (decision 57): where that
/// state is newer than the read and both its bounds' records follow the pool there, what its
/// liquidity holds (rounded down, as a withdrawal pays) and what `collect` would pay, from its
/// own fee state: the integer math of a read of the chain at that block. `None` (the read's
/// figures stand) for Orca, a position without liquidity or fee state, one whose last read
/// failed, or a pool not synced past the read. Its `height` and `readAt` are then the pool
/// state's: the block its figures are of.
pub fn valued_at_pool(
    position: &Position,
    holding: &WalletHolding,
    catalog: &Catalog,
) -> Option<WalletHolding> {
    let fee_state = holding.fee_state.as_ref()?;
    if position.status != Status::Active
        || position.liquidity == 0
        || holding.read_error.is_some()
        || holding.close_reason.is_some()
    {
        return None;
    }
    let pool = catalog.find(position.chain, position.protocol, &position.pool)?;
    let state = pool.state.as_ref().filter(|s| s.height > holding.height)?;
    let curve = pool.curve();
    if curve != Curve::UniswapV3 {
        return None;
    }
    let (lower, upper) = (position.tick_lower, position.tick_upper);
    let accounting = pool.fee_accounting();
    let inside = chain_growth_inside(accounting, state, &pool.fee_ticks, lower, upper)?;
    let held = curve
        .amounts_for_liquidity(
            state.sqrt_price,
            curve.sqrt_price_at_tick(lower).ok()?,
            curve.sqrt_price_at_tick(upper).ok()?,
            position.liquidity,
            false,
        )
        .ok()?;
    let last = fee_state
        .fee_growth_inside_last
        .clone()
        .map(|g| U256::from_str(&g).unwrap_or_default());
    let owed = fee_state
        .tokens_owed
        .clone()
        .map(|o| u128::from_str(&o).unwrap_or_default());
    // A Slipstream position staked in its gauge earns no swap fees (the read's 0 stands).
    let gauged = position.protocol.is_slipstream() && holding.staked.is_some();
    let fees = [0, 1].map(|i| {
        if gauged {
            return "0".to_string();
        }
        let earned = accounting.collect_owed(position.liquidity, last[i], inside[i]);
        owed[i].wrapping_add(earned).to_string()
    });
    Some(WalletHolding {
        amounts: [held.amount0.to_string(), held.amount1.to_string()],
        fees,
        sqrt_price: state.sqrt_price.to_string(),
        tick: state.tick,
        // What its figures are of: the block and the time the pool's state was read.
        height: state.height,
        read_at: state.observed_at,
        ..holding.clone()
    })
}

/// What `liquidity` on `[lower, upper)` holds at the pool's state (rounded down, as a withdrawal
/// pays) and the fees it earned since its fee growth inside was `last`, as the pool computes
/// them (none while it holds no liquidity: the pool is poked only while some remains).
pub fn held_at(
    state: &PoolState,
    (lower, upper): (i32, i32),
    liquidity: u128,
    last: [U256; 2],
) -> Result<([U256; 2], [u128; 2]), crate::domain::math::MathError> {
    let curve = Curve::UniswapV3;
    let amounts = curve.amounts_for_liquidity(
        state.sqrt_price,
        curve.sqrt_price_at_tick(lower)?,
        curve.sqrt_price_at_tick(upper)?,
        liquidity,
        false,
    )?;
    let bound = |tick: i32, token: usize| {
        let read = state.ticks.iter().find(|t| t.tick == tick);
        BoundTick {
            tick,
            initialized: read.is_some_and(|t| t.initialized),
            outside: read.map_or(U256::ZERO, |t| {
                [t.fee_growth_outside0, t.fee_growth_outside1][token]
            }),
        }
    };
    let globals = [state.fee_growth_global0, state.fee_growth_global1];
    let earned = [0, 1].map(|token| {
        let inside = FeeAccounting::Evm.growth_inside(
            state.tick,
            globals[token],
            bound(lower, token),
            bound(upper, token),
        );
        if liquidity > 0 {
            FeeAccounting::Evm.collect_owed(liquidity, last[token], inside)
        } else {
            0
        }
    });
    Ok(([amounts.amount0, amounts.amount1], earned))
}
