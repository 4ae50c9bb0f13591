//! What the sync takes from a chain's answer, and what it refuses. A state is stored only when
//! it is a state the protocol could be in (a sqrt price in range and the tick that goes with
//! it), read at a plausible height (not beyond the head another read sees, a bounded jump past
//! the stored one), and moving forward from the stored state: the values the protocol only
//! ever increases (fee growth globals, each tracked tick's growth below and above it) advance
//! by the protocol's wrapping rule, never backwards. The exception is a stored state the chain
//! no longer has (a reorg replaced its block, or its height lies far beyond the chain's head):
//! the canonical state replaces it whole. A position a node answers (a wallet read, a mint's
//! receipt) is taken only as the position manager could hold it: ticks ordered, within the
//! protocol's bounds and on the pool's spacing; a minted liquidity the same as `positions`
//! answers at its block, and amounts no more than that liquidity can hold over its range.

use crate::domain::catalog::Pool;
use crate::domain::fee_ticks::FeeTick;
use crate::domain::market::{PoolState, Succession};
use crate::domain::math::fees::FeeAccounting;
use crate::domain::math::{Curve, U256};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// The fastest block or slot rate of a supported chain (Arbitrum's 4 blocks a second), with room.
pub const MAX_HEIGHTS_PER_SECOND: u64 = 10;

/// A jump past the stored height always allowed (a devnet mines a block per transaction).
pub const JUMP_ALLOWANCE: u64 = 100_000;

/// How far a stored height may lie beyond the head a node reports before the stored state is
/// taken for a wrong one (a node behind a load balancer lags by a few blocks, not this many).
pub const BEYOND_HEAD: u64 = 10_000;

/// What the chain says of the block a stored state was read at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredBlock {
    /// Not asked (a Solana slot, a state stored without its block hash).
    Unchecked,
    /// The node knows no block at that height.
    Unknown,
    /// The hash of the block the node has at that height.
    Hash(String),
}

/// A sqrt price inside the protocol's range and the tick that goes with it: the sqrt price's
/// own tick, or the one below only when the price lies exactly on a tick (where a swap down
/// leaves it, in both protocols).
pub fn agreeing_tick(pool: &Pool, state: &PoolState) -> Result<(), String> {
    let curve = pool.curve();
    let bound = |tick| curve.sqrt_price_at_tick(tick).map_err(|e| e.0.to_string());
    if state.sqrt_price.is_zero() {
        return Err("the pool is not initialized".into());
    }
    if state.sqrt_price < bound(curve.min_tick())? || state.sqrt_price >= bound(curve.max_tick())? {
        return Err("the sqrt price read lies outside the protocol's range".into());
    }
    let tick = curve.tick_at_or_below(state.sqrt_price);
    let on_boundary = bound(tick)? == state.sqrt_price;
    if state.tick == tick || (on_boundary && state.tick == tick - 1) {
        Ok(())
    } else {
        Err("the tick read does not match the sqrt price read".into())
    }
}

/// How `read` may follow `stored`, given the head the node reports and what it says of the
/// stored state's block; refused when it is not plausible.
pub fn succession(
    stored: Option<&PoolState>,
    read: &PoolState,
    head: u64,
    stored_block: &StoredBlock,
    now: DateTime<Utc>,
) -> Result<Succession, String> {
    let Some(stored) = stored else {
        return Ok(Succession::Next);
    };
    let replaced = match (stored_block, &stored.block_hash) {
        (StoredBlock::Hash(hash), Some(ours)) => hash != ours,
        _ => false,
    };
    let beyond_head = stored.height > head.saturating_add(BEYOND_HEAD)
        && matches!(stored_block, StoredBlock::Unknown | StoredBlock::Unchecked);
    if replaced || beyond_head {
        return Ok(Succession::Replaces {
            height: stored.height,
        });
    }
    if read.height <= stored.height {
        return Err("a state read at the same or a later block or slot is already stored".into());
    }
    let elapsed = now
        .signed_duration_since(stored.observed_at)
        .num_seconds()
        .max(0) as u64;
    let allowed = JUMP_ALLOWANCE.saturating_add(elapsed.saturating_mul(MAX_HEIGHTS_PER_SECOND));
    if read.height - stored.height > allowed {
        return Err(format!(
            "the block or slot read is {} past the stored one, more than the chain can make in {elapsed} s",
            read.height - stored.height
        ));
    }
    Ok(Succession::Next)
}

/// Growth below and above `record`'s tick for token `i` with the pool at `state` (its
/// `outside` read at that state).
fn below_and_above(
    accounting: FeeAccounting,
    record: &FeeTick,
    state: &PoolState,
    i: usize,
) -> [U256; 2] {
    let outside = record.outside_at(accounting, state)[i];
    let global = [state.fee_growth_global0, state.fee_growth_global1][i];
    let below = if state.tick >= record.tick {
        outside
    } else {
        accounting.wrapping_sub(global, outside)
    };
    [below, accounting.wrapping_sub(global, below)]
}

/// Refuses a state whose fee growth went backwards from the stored one: either global, or the
/// growth below or above a tracked tick (as the service's records hold it before and after the
/// sync advances them).
pub fn fee_growth_advances(
    accounting: FeeAccounting,
    stored: &PoolState,
    read: &PoolState,
    before: &BTreeMap<i32, FeeTick>,
    after: &[FeeTick],
) -> Result<(), String> {
    let backwards = |what: &str| {
        Err(format!(
            "{what} read is below the stored one (a reorg or a lagging node): the state is not taken"
        ))
    };
    let globals = |s: &PoolState| [s.fee_growth_global0, s.fee_growth_global1];
    for i in 0..2 {
        if accounting
            .advance(globals(stored)[i], globals(read)[i])
            .is_none()
        {
            return backwards(&format!("the fee growth global of token{i}"));
        }
    }
    for record in after {
        let Some(old) = before.get(&record.tick) else {
            continue;
        };
        for i in 0..2 {
            let was = below_and_above(accounting, old, stored, i);
            let is = below_and_above(accounting, record, read, i);
            if (0..2).any(|side| accounting.advance(was[side], is[side]).is_none()) {
                return backwards(&format!("the fee growth around tick {}", record.tick));
            }
        }
    }
    Ok(())
}

/// A position's range as the position manager can hold one: `lower < upper`, both within the
/// protocol's ticks and multiples of the pool's positive `spacing` (the pool's `mint` refuses
/// any other, so a node answering one is lying).
pub fn plausible_range(curve: Curve, lower: i32, upper: i32, spacing: i32) -> Result<(), String> {
    if !(curve.min_tick() <= lower && lower < upper && upper <= curve.max_tick()) {
        return Err(format!(
            "its ticks [{lower}, {upper}] are not an ordered range within the protocol's"
        ));
    }
    if spacing <= 0 || lower % spacing != 0 || upper % spacing != 0 {
        return Err(format!(
            "its ticks [{lower}, {upper}] are not on the pool's tick spacing {spacing}"
        ));
    }
    Ok(())
}

/// A mint's receipt as `positions(tokenId)` answers the token at the mint's block: the same
/// liquidity (a mint's `IncreaseLiquidity` is the token's first and, in its block, its whole
/// liquidity), and amounts (protocol order) no more than that liquidity holds over the range at
/// either end of it, rounded up as the pool charges.
pub fn plausible_mint(
    (lower, upper): (i32, i32),
    liquidity: u128,
    amounts: [U256; 2],
    on_chain_liquidity: u128,
) -> Result<(), String> {
    if liquidity != on_chain_liquidity {
        return Err(format!(
            "the receipt's liquidity {liquidity} is not the token's {on_chain_liquidity}"
        ));
    }
    let curve = Curve::UniswapV3;
    let at = |tick| curve.sqrt_price_at_tick(tick).map_err(|e| e.0.to_string());
    let (a, b) = (at(lower)?, at(upper)?);
    // Below the range the liquidity is all token0, above it all token1: the most of each.
    let most0 = curve
        .amounts_for_liquidity(a, a, b, liquidity, true)
        .map_err(|e| e.0.to_string())?
        .amount0;
    let most1 = curve
        .amounts_for_liquidity(b, a, b, liquidity, true)
        .map_err(|e| e.0.to_string())?
        .amount1;
    if amounts[0] > most0 || amounts[1] > most1 {
        return Err(format!(
            "the receipt's amounts {} and {} are more than its liquidity holds",
            amounts[0], amounts[1]
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::math::U256;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    fn state(height: u64, hash: Option<&str>, age_seconds: i64) -> PoolState {
        PoolState {
            sqrt_price: U256::from(1u8) << 96,
            tick: 0,
            liquidity: 0,
            fee_growth_global0: U256::ZERO,
            fee_growth_global1: U256::ZERO,
            height,
            block_hash: hash.map(str::to_string),
            observed_at: now() - chrono::Duration::seconds(age_seconds),
            ticks: Vec::new(),
            balances: None,
            slipstream: None,
        }
    }

    #[test]
    fn a_state_follows_the_stored_one_only_forward_and_by_a_plausible_jump() {
        let now = now();
        let stored = state(1_000, Some("0xa"), 60);
        let same = StoredBlock::Hash("0xa".into());
        let next = |height| {
            succession(
                Some(&stored),
                &state(height, None, 0),
                2_000_000,
                &same,
                now,
            )
        };
        assert_eq!(next(1_001), Ok(Succession::Next));
        assert!(next(1_000).is_err() && next(999).is_err());
        // 100,000 + 10 a second for the 60 s since the stored read.
        assert_eq!(next(1_000 + 100_600), Ok(Succession::Next));
        assert!(next(1_000 + 100_601)
            .unwrap_err()
            .contains("past the stored one"));
        let first = succession(
            None,
            &state(u64::MAX, None, 0),
            0,
            &StoredBlock::Unchecked,
            now,
        );
        assert_eq!(first, Ok(Succession::Next));
    }

    #[test]
    fn a_stored_state_the_chain_no_longer_has_is_replaced() {
        let now = now();
        let read = state(1_000, None, 0);
        let stored = state(1_000, Some("0xa"), 10);
        let replaced = StoredBlock::Hash("0xb".into());
        assert_eq!(
            succession(Some(&stored), &read, 1_000, &replaced, now),
            Ok(Succession::Replaces { height: 1_000 })
        );
        // Far beyond the head and unknown there: a wrong height once stored.
        let bogus = state(u64::MAX, None, 10);
        for block in [StoredBlock::Unknown, StoredBlock::Unchecked] {
            assert_eq!(
                succession(Some(&bogus), &read, 1_000, &block, now),
                Ok(Succession::Replaces { height: u64::MAX })
            );
        }
        // A few blocks ahead of a lagging node: the node is behind, the state stays.
        let ahead = state(1_005, Some("0xa"), 10);
        assert!(succession(Some(&ahead), &read, 1_000, &StoredBlock::Unknown, now).is_err());
    }

    #[test]
    fn a_position_range_is_ordered_in_bounds_and_on_spacing() {
        assert_eq!(plausible_range(Curve::UniswapV3, -600, 600, 60), Ok(()));
        assert_eq!(
            plausible_range(Curve::UniswapV3, -887_220, 887_220, 60),
            Ok(())
        );
        for (lower, upper, spacing) in [
            (600, -600, 60),
            (600, 600, 60),
            (-887_280, 0, 60),
            (0, 887_280, 60),
            (-590, 600, 60),
            (-600, 610, 60),
            (-600, 600, 0),
            (-600, 600, -60),
        ] {
            assert!(
                plausible_range(Curve::UniswapV3, lower, upper, spacing).is_err(),
                "[{lower}, {upper}] on {spacing}"
            );
        }
    }

    #[test]
    fn a_mint_receipt_holds_the_tokens_liquidity_and_no_more_than_it_can_hold() {
        let liquidity = 1_000_000_000_000u128;
        let curve = Curve::UniswapV3;
        let at = |tick| curve.sqrt_price_at_tick(tick).unwrap();
        // What the pool charges at price 1 (tick 0) for this liquidity: both within bounds.
        let paid = curve
            .amounts_for_liquidity(at(0), at(-600), at(600), liquidity, true)
            .unwrap();
        let amounts = [paid.amount0, paid.amount1];
        assert_eq!(
            plausible_mint((-600, 600), liquidity, amounts, liquidity),
            Ok(())
        );
        // Another liquidity than the token's, or 2^128 - 1 claimed by the receipt.
        assert!(plausible_mint((-600, 600), liquidity, amounts, liquidity + 1).is_err());
        assert!(plausible_mint((-600, 600), u128::MAX, amounts, liquidity).is_err());
        // Amounts beyond what the range can hold: the whole range's token0 plus one.
        let most0 = curve
            .amounts_for_liquidity(at(-600), at(-600), at(600), liquidity, true)
            .unwrap()
            .amount0;
        let inflated = [most0 + U256::from(1u8), U256::ZERO];
        assert!(plausible_mint((-600, 600), liquidity, inflated, liquidity).is_err());
        assert_eq!(
            plausible_mint((-600, 600), liquidity, [most0, U256::ZERO], liquidity),
            Ok(())
        );
    }
}
