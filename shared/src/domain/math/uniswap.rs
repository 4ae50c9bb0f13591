//! Uniswap v3 math (also PancakeSwap v3, which forked it unchanged): `TickMath`,
//! `SqrtPriceMath` amount deltas and the periphery's `LiquidityAmounts`, on Q64.96 sqrt prices.

use super::num::{div_rounding_up, mul_div, Amounts, MathError};
use ruint::aliases::U256;

pub const MIN_TICK: i32 = -887_272;
pub const MAX_TICK: i32 = 887_272;
const Q96_BITS: usize = 96;

/// `1 / sqrt(1.0001)^(2^i)` in Q128.128 for i = 1.., as in `TickMath.getSqrtRatioAtTick`.
const RATIO_FACTORS: [u128; 19] = [
    0xfff97272373d413259a46990580e213a,
    0xfff2e50f5f656932ef12357cf3c7fdcc,
    0xffe5caca7e10e4e61c3624eaa0941cd0,
    0xffcb9843d60f6159c9db58835c926644,
    0xff973b41fa98c081472e6896dfb254c0,
    0xff2ea16466c96a3843ec78b326b52861,
    0xfe5dee046a99a2a811c461f1969c3053,
    0xfcbe86c7900a88aedcffc83b479aa3a4,
    0xf987a7253ac413176f2b074cf7815e54,
    0xf3392b0822b70005940c7a398e4b70f3,
    0xe7159475a2c29b7443b29c7fa6e889d9,
    0xd097f3bdfd2022b8845ad8f792aa5825,
    0xa9f746462d870fdf8a65dc1f90e061e5,
    0x70d869a156d2a1b890bb3df62baf32f7,
    0x31be135f97d08fd981231505542fcfa6,
    0x9aa508b5b7a84e1c677de54f3e99bc9,
    0x5d6af8dedb81196699c329225ee604,
    0x2216e584f5fa1ea926041bedfe98,
    0x48a170391f7dc42444e8fa2,
];
const RATIO_ODD: u128 = 0xfffcb933bd6fad37aa2d162d1a594001;

/// `TickMath.getSqrtRatioAtTick`: sqrt(1.0001^tick) as Q64.96, rounded up.
pub fn sqrt_ratio_at_tick(tick: i32) -> Result<U256, MathError> {
    if !(MIN_TICK..=MAX_TICK).contains(&tick) {
        return Err(MathError("tick out of range"));
    }
    let abs_tick = tick.unsigned_abs();
    let mut ratio = if abs_tick & 1 != 0 {
        U256::from(RATIO_ODD)
    } else {
        U256::from(1u8) << 128
    };
    for (bit, factor) in RATIO_FACTORS.iter().enumerate() {
        if abs_tick & (2 << bit) != 0 {
            ratio = (ratio * U256::from(*factor)) >> 128;
        }
    }
    if tick > 0 {
        ratio = U256::MAX / ratio;
    }
    let rounded = (ratio >> 32) + U256::from(u8::from(!(ratio & U256::from(u32::MAX)).is_zero()));
    Ok(rounded)
}

fn q96() -> U256 {
    U256::from(1u8) << Q96_BITS
}

fn ordered(a: U256, b: U256) -> (U256, U256) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// `SqrtPriceMath.getAmount0Delta`: token0 held by `liquidity` between two sqrt prices.
pub fn amount0_delta(a: U256, b: U256, liquidity: u128, round_up: bool) -> Result<U256, MathError> {
    let (a, b) = ordered(a, b);
    if a.is_zero() {
        return Err(MathError("sqrt price is zero"));
    }
    let numerator1 = U256::from(liquidity) << Q96_BITS;
    let numerator2 = b - a;
    if round_up {
        Ok(div_rounding_up(
            mul_div(numerator1, numerator2, b, true)?,
            a,
        ))
    } else {
        Ok(mul_div(numerator1, numerator2, b, false)? / a)
    }
}

/// `SqrtPriceMath.getAmount1Delta`: token1 held by `liquidity` between two sqrt prices.
pub fn amount1_delta(a: U256, b: U256, liquidity: u128, round_up: bool) -> Result<U256, MathError> {
    let (a, b) = ordered(a, b);
    mul_div(U256::from(liquidity), b - a, q96(), round_up)
}

/// `LiquidityAmounts.getLiquidityForAmount0`.
pub fn liquidity_for_amount0(a: U256, b: U256, amount0: U256) -> Result<U256, MathError> {
    let (a, b) = ordered(a, b);
    let intermediate = mul_div(a, b, q96(), false)?;
    mul_div(amount0, intermediate, b - a, false)
}

/// `LiquidityAmounts.getLiquidityForAmount1`.
pub fn liquidity_for_amount1(a: U256, b: U256, amount1: U256) -> Result<U256, MathError> {
    let (a, b) = ordered(a, b);
    mul_div(amount1, q96(), b - a, false)
}

/// `LiquidityAmounts.getLiquidityForAmounts`: the most liquidity both amounts can fund.
/// `range` holds the sqrt prices of the range's bounds, in either order.
pub fn liquidity_for_amounts(
    sqrt_price: U256,
    range: (U256, U256),
    (amount0, amount1): (U256, U256),
) -> Result<u128, MathError> {
    let (a, b) = ordered(range.0, range.1);
    if a == b {
        return Err(MathError("empty price range"));
    }
    let liquidity = if sqrt_price <= a {
        liquidity_for_amount0(a, b, amount0)?
    } else if sqrt_price < b {
        liquidity_for_amount0(sqrt_price, b, amount0)?
            .min(liquidity_for_amount1(a, sqrt_price, amount1)?)
    } else {
        liquidity_for_amount1(a, b, amount1)?
    };
    u128::try_from(liquidity).map_err(|_| MathError("liquidity exceeds 128 bits"))
}

/// The amounts `liquidity` holds at `sqrt_price`, with `SqrtPriceMath` rounding
/// (`round_up` as a mint pays, round down as `LiquidityAmounts.getAmountsForLiquidity` reports).
pub fn amounts_for_liquidity(
    sqrt_price: U256,
    a: U256,
    b: U256,
    liquidity: u128,
    round_up: bool,
) -> Result<Amounts, MathError> {
    let (a, b) = ordered(a, b);
    let zero = U256::ZERO;
    let (amount0, amount1) = if sqrt_price <= a {
        (amount0_delta(a, b, liquidity, round_up)?, zero)
    } else if sqrt_price < b {
        (
            amount0_delta(sqrt_price, b, liquidity, round_up)?,
            amount1_delta(a, sqrt_price, liquidity, round_up)?,
        )
    } else {
        (zero, amount1_delta(a, b, liquidity, round_up)?)
    };
    Ok(Amounts { amount0, amount1 })
}

/// `Tick.tickSpacingToMaxLiquidityPerTick`: the pool refuses a position above this.
pub fn max_liquidity_per_tick(tick_spacing: i32) -> u128 {
    let min_tick = (MIN_TICK / tick_spacing) * tick_spacing;
    let max_tick = (MAX_TICK / tick_spacing) * tick_spacing;
    let num_ticks = ((max_tick - min_tick) / tick_spacing) as u128 + 1;
    u128::MAX / num_ticks
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn u(s: &str) -> U256 {
        U256::from_str(s).unwrap()
    }

    #[test]
    fn sqrt_ratio_bounds_match_tick_math_constants() {
        assert_eq!(sqrt_ratio_at_tick(MIN_TICK).unwrap(), u("4295128739"));
        assert_eq!(
            sqrt_ratio_at_tick(MAX_TICK).unwrap(),
            u("1461446703485210103287273052203988822378723970342")
        );
        assert_eq!(sqrt_ratio_at_tick(0).unwrap(), q96());
        assert!(sqrt_ratio_at_tick(MIN_TICK - 1).is_err());
        assert!(sqrt_ratio_at_tick(MAX_TICK + 1).is_err());
    }

    #[test]
    fn tick_for_a_price_of_one_over_1800() {
        // Both tokens with 18 decimals: raw price token1/token0 = 1/1800.
        let sqrt = sqrt_ratio_at_tick(-74959).unwrap();
        let price = (sqrt.to_string().parse::<f64>().unwrap() / 2f64.powi(96)).powi(2);
        assert!(
            (price - 1.0 / 1800.0).abs() / (1.0 / 1800.0) < 1e-4,
            "{price}"
        );
        // floor(sqrt(1/1800) * 2^96) = isqrt(2^192 / 1800).
        let target: U256 = (U256::from(1u8) << 192) / U256::from(1800u32);
        let sqrt_target = target.root(2);
        assert_eq!(
            crate::domain::math::curve::Curve::UniswapV3.tick_at_or_below(sqrt_target),
            -74960
        );
    }

    // v3-periphery LiquidityAmounts tests: encodePriceSqrt(1,1) within [19/20, 21/20 ... ].
    const SQRT_A: &str = "75541088972021052632782079082";
    const SQRT_B: &str = "83095197869223157896060286990";

    /// The liquidity 100 token0 and 200 token1 fund at sqrt price `p` is `want`, and what it
    /// holds, rounded down, is `back`.
    fn assert_liquidity_round_trip(p: &str, want: u128, back: [u8; 2]) {
        let (a, b, p) = (u(SQRT_A), u(SQRT_B), u(p));
        let l = liquidity_for_amounts(p, (a, b), (U256::from(100u8), U256::from(200u8))).unwrap();
        assert_eq!(l, want);
        let held = amounts_for_liquidity(p, a, b, l, false).unwrap();
        assert_eq!([held.amount0, held.amount1], back.map(U256::from));
    }

    #[test]
    fn liquidity_amounts_inside_the_range() {
        assert_liquidity_round_trip("79228162514264337593543950336", 2148, [99, 99]);
    }

    #[test]
    fn liquidity_amounts_below_the_range() {
        assert_liquidity_round_trip("75162434512514379355924140470", 1048, [99, 0]);
    }

    #[test]
    fn liquidity_amounts_above_the_range() {
        assert_liquidity_round_trip("83472048772503575395058907992", 2097, [0, 199]);
    }

    /// v3-sdk Position tests: DAI(18)/USDC(6) pool at sqrt price 79228162514264337593543,
    /// L = 100e18; the amounts in `[lower, upper]` rounded down, then up.
    fn assert_dai_usdc(lower: i32, upper: i32, down: [&str; 2], up: [&str; 2]) {
        let p = u("79228162514264337593543");
        let l = 100_000_000_000_000_000_000u128;
        let a = sqrt_ratio_at_tick(lower).unwrap();
        let b = sqrt_ratio_at_tick(upper).unwrap();
        for (round_up, want) in [(false, down), (true, up)] {
            let amounts = amounts_for_liquidity(p, a, b, l, round_up).unwrap();
            let got = [amounts.amount0.to_string(), amounts.amount1.to_string()];
            assert_eq!(got, want, "[{lower}, {upper}] round up: {round_up}");
        }
    }

    #[test]
    fn position_amounts_above_the_current_price() {
        let (down, up) = ("49949961958869841754181", "49949961958869841754182");
        assert_dai_usdc(-276310, -276300, [down, "0"], [up, "0"]);
    }

    #[test]
    fn position_amounts_below_the_current_price() {
        assert_dai_usdc(-276340, -276330, ["0", "49970077052"], ["0", "49970077053"]);
    }

    #[test]
    fn position_amounts_around_the_current_price() {
        let down = ["120054069145287995769396", "79831926242"];
        let up = ["120054069145287995769397", "79831926243"];
        assert_dai_usdc(-276340, -276300, down, up);
    }

    #[test]
    fn amount_deltas_round_in_the_requested_direction() {
        let a = q96();
        let b = sqrt_ratio_at_tick(100).unwrap();
        for l in [1u128, 7, 1_000_003, u128::MAX >> 1] {
            let down0 = amount0_delta(a, b, l, false).unwrap();
            let up0 = amount0_delta(a, b, l, true).unwrap();
            assert!(up0 == down0 || up0 == down0 + U256::from(1u8));
            let down1 = amount1_delta(a, b, l, false).unwrap();
            let up1 = amount1_delta(a, b, l, true).unwrap();
            assert!(up1 == down1 || up1 == down1 + U256::from(1u8));
        }
    }

    #[test]
    fn max_liquidity_per_tick_matches_the_pool_factory_values() {
        // Values from v3-core Tick tests for the factory's fee tiers.
        assert_eq!(
            max_liquidity_per_tick(10),
            1917569901783203986719870431555990
        );
        assert_eq!(
            max_liquidity_per_tick(60),
            11505743598341114571880798222544994
        );
        assert_eq!(
            max_liquidity_per_tick(200),
            38350317471085141830651933667504588
        );
    }
}
