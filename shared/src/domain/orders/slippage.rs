//! The Uniswap v3 SDK's slippage bounds (`Position.mintAmountsWithSlippage`,
//! `Position.burnAmountsWithSlippage`), in the protocol's integer math: the pool's price moved
//! by the tolerance either way (`ratiosAfterSlippage`: `encodeSqrtRatioX96` of the price times
//! `1 ∓ bps/10000`, floored, kept strictly inside the protocol's sqrt price bounds), and the
//! smaller amount of each token over the two: token0 at the upper price, token1 at the lower.

use crate::domain::math::uniswap::{
    amounts_for_liquidity, liquidity_for_amounts, sqrt_ratio_at_tick, MAX_TICK, MIN_TICK,
};
use crate::domain::math::{Amounts, MathError, U256, U512};

/// The slippage tolerance's denominator: basis points.
pub const BPS: u32 = 10_000;

/// `floor(sqrt(n))` by Newton's method from a power of two above the root.
fn isqrt(n: U512) -> U512 {
    if n < U512::from(2u8) {
        return n;
    }
    let mut x = U512::from(1u8) << n.bit_len().div_ceil(2);
    loop {
        let y = (x + n / x) >> 1;
        if y >= x {
            return x;
        }
        x = y;
    }
}

/// `encodeSqrtRatioX96` of the pool's price `sqrtPrice² / 2^192` times `factor / 10000`: the
/// 2^192 cancels, leaving `floor(sqrt(floor(sqrtPrice² · factor / 10000)))`.
fn scaled_sqrt_price(sqrt_price: U256, factor: u32) -> U256 {
    let wide = U512::from(sqrt_price);
    let ratio = wide * wide * U512::from(factor) / U512::from(BPS);
    U256::from(isqrt(ratio))
}

/// The sqrt prices `bps` below and above the pool's (`ratiosAfterSlippage`).
pub fn ratios_after_slippage(sqrt_price: U256, bps: u32) -> Result<(U256, U256), MathError> {
    let (min, max) = (sqrt_ratio_at_tick(MIN_TICK)?, sqrt_ratio_at_tick(MAX_TICK)?);
    let mut lower = scaled_sqrt_price(sqrt_price, BPS.saturating_sub(bps));
    if lower <= min {
        lower = min + U256::from(1u8);
    }
    let mut upper = scaled_sqrt_price(sqrt_price, BPS + bps);
    if upper >= max {
        upper = max - U256::from(1u8);
    }
    Ok((lower, upper))
}

fn bounds(tick_lower: i32, tick_upper: i32) -> Result<(U256, U256), MathError> {
    Ok((
        sqrt_ratio_at_tick(tick_lower)?,
        sqrt_ratio_at_tick(tick_upper)?,
    ))
}

/// The minimums of a mint of `desired` (token0, token1) at `sqrt_price`: the liquidity the
/// position manager will mint of them (`getLiquidityForAmounts`), and what that liquidity
/// takes, rounded up as a mint charges, token0 at the upper price and token1 at the lower.
pub fn mint_minimums(
    sqrt_price: U256,
    (tick_lower, tick_upper): (i32, i32),
    desired: [U256; 2],
    bps: u32,
) -> Result<[U256; 2], MathError> {
    let (a, b) = bounds(tick_lower, tick_upper)?;
    let liquidity = liquidity_for_amounts(sqrt_price, (a, b), (desired[0], desired[1]))?;
    let ticks = (tick_lower, tick_upper);
    let (at_lower, at_upper) = at_slippage(ticks, sqrt_price, (liquidity, true), bps)?;
    Ok([at_upper.amount0, at_lower.amount1])
}

/// The minimums of burning `liquidity` at `sqrt_price`: what it holds, rounded down as a burn
/// pays, token0 at the upper price and token1 at the lower.
pub fn burn_minimums(
    sqrt_price: U256,
    (tick_lower, tick_upper): (i32, i32),
    liquidity: u128,
    bps: u32,
) -> Result<[U256; 2], MathError> {
    let ticks = (tick_lower, tick_upper);
    let (at_lower, at_upper) = at_slippage(ticks, sqrt_price, (liquidity, false), bps)?;
    Ok([at_upper.amount0, at_lower.amount1])
}

/// What `liquidity` holds in the range at the pool's price moved by `bps` down and up (a
/// burn's rounding down; an add's up, as v4 takes it where `round_up`).
fn at_slippage(
    (tick_lower, tick_upper): (i32, i32),
    sqrt_price: U256,
    (liquidity, round_up): (u128, bool),
    bps: u32,
) -> Result<(Amounts, Amounts), MathError> {
    let (a, b) = bounds(tick_lower, tick_upper)?;
    let (lower, upper) = ratios_after_slippage(sqrt_price, bps)?;
    Ok((
        amounts_for_liquidity(lower, a, b, liquidity, round_up)?,
        amounts_for_liquidity(upper, a, b, liquidity, round_up)?,
    ))
}

/// The maximums a Uniswap v4 add of `liquidity` may take (the v4 SDK's
/// `mintAmountsWithSlippage`): what it takes, rounded up as an add charges, token0 at the
/// lower price and token1 at the upper, each the most it takes within the tolerance.
pub fn mint_maximums(
    sqrt_price: U256,
    (tick_lower, tick_upper): (i32, i32),
    liquidity: u128,
    bps: u32,
) -> Result<[U256; 2], MathError> {
    let ticks = (tick_lower, tick_upper);
    let (at_lower, at_upper) = at_slippage(ticks, sqrt_price, (liquidity, true), bps)?;
    let (a, b) = bounds(tick_lower, tick_upper)?;
    let now = amounts_for_liquidity(sqrt_price, a, b, liquidity, true)?;
    Ok([
        at_lower.amount0.max(now.amount0),
        at_upper.amount1.max(now.amount1),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maximums_cover_what_an_add_takes_within_the_tolerance() {
        let sqrt_price = sqrt_ratio_at_tick(-200).unwrap();
        let (ticks, liquidity) = ((-600, 600), 10u128.pow(21));
        let (a, b) = bounds(ticks.0, ticks.1).unwrap();
        let now = amounts_for_liquidity(sqrt_price, a, b, liquidity, true).unwrap();
        let max = mint_maximums(sqrt_price, ticks, liquidity, 50).unwrap();
        assert!(max[0] > now.amount0 && max[1] > now.amount1, "{max:?}");
        assert_eq!(
            mint_maximums(sqrt_price, ticks, liquidity, 0).unwrap(),
            [now.amount0, now.amount1]
        );
    }

    #[test]
    fn isqrt_floors() {
        for n in [
            0u64,
            1,
            2,
            3,
            4,
            15,
            16,
            17,
            1 << 40,
            (1 << 40) + 1,
            u64::MAX,
        ] {
            let root = isqrt(U512::from(n));
            assert!(root * root <= U512::from(n), "{n}");
            let next = root + U512::from(1u8);
            assert!(next * next > U512::from(n), "{n}");
        }
        let big = U512::from(U256::MAX);
        let root = isqrt(big * big);
        assert_eq!(root, big);
    }

    #[test]
    fn zero_slippage_keeps_the_price_and_the_bounds_stay_inside_the_protocol() {
        let price = sqrt_ratio_at_tick(1234).unwrap();
        let (lower, upper) = ratios_after_slippage(price, 0).unwrap();
        // sqrt(p²) floors back to p exactly.
        assert_eq!((lower, upper), (price, price));
        let (lower, upper) = ratios_after_slippage(price, 50).unwrap();
        assert!(lower < price && price < upper);
        let min = sqrt_ratio_at_tick(MIN_TICK).unwrap();
        let (lower, _) = ratios_after_slippage(min, 5000).unwrap();
        assert_eq!(lower, min + U256::from(1u8));
        let max = sqrt_ratio_at_tick(MAX_TICK).unwrap();
        let (_, upper) = ratios_after_slippage(max - U256::from(1u8), 5000).unwrap();
        assert_eq!(upper, max - U256::from(1u8));
    }

    #[test]
    fn minimums_never_exceed_what_the_position_takes_or_pays() {
        let price = sqrt_ratio_at_tick(100).unwrap();
        let desired = [U256::from(10u64.pow(18)), U256::from(10u64.pow(18))];
        let mins = mint_minimums(price, (-600, 600), desired, 50).unwrap();
        assert!(mins[0] < desired[0] && mins[1] < desired[1]);
        assert!(mins[0] > U256::ZERO && mins[1] > U256::ZERO);
        // No tolerance: the minimums are the mint's own amounts (of the minted liquidity).
        let exact = mint_minimums(price, (-600, 600), desired, 0).unwrap();
        assert!(exact[0] <= desired[0] && exact[1] <= desired[1]);
        assert!(exact[0] >= mins[0] && exact[1] >= mins[1]);
        let burn = burn_minimums(price, (-600, 600), 10u128.pow(20), 100).unwrap();
        let held = amounts_for_liquidity(
            price,
            sqrt_ratio_at_tick(-600).unwrap(),
            sqrt_ratio_at_tick(600).unwrap(),
            10u128.pow(20),
            false,
        )
        .unwrap();
        assert!(burn[0] < held.amount0 && burn[1] < held.amount1);
    }
}
