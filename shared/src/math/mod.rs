//! Exact integer concentrated-liquidity math.
//!
//! Each protocol keeps its own fixed-point format and rounding, because "correct to the last
//! token unit" means reproducing what the chain would compute, not an approximation of it:
//! Uniswap v3 and PancakeSwap v3 share Q64.96 ([`uniswap`]), Orca Whirlpools uses Q64.64
//! ([`orca`]). [`Curve`] puts both behind one interface for the rest of the crate.

pub mod orca;
pub mod price;
pub mod uniswap;

pub use ruint::aliases::{U256, U512};

/// A math failure: a value outside the protocol's domain (a tick out of range, an overflow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MathError(pub &'static str);

/// Token amounts in base units, in the protocol's token0/token1 order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Amounts {
    pub amount0: U256,
    pub amount1: U256,
}

/// The operations the API needs from a concentrated-liquidity protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    /// Uniswap v3 and its forks (PancakeSwap v3): Q64.96, ticks ±887272.
    UniswapV3,
    /// Orca Whirlpools: Q64.64, ticks ±443636, token amounts are u64.
    OrcaWhirlpools,
}

impl Curve {
    pub fn min_tick(self) -> i32 {
        match self {
            Curve::UniswapV3 => uniswap::MIN_TICK,
            Curve::OrcaWhirlpools => orca::MIN_TICK,
        }
    }

    pub fn max_tick(self) -> i32 {
        match self {
            Curve::UniswapV3 => uniswap::MAX_TICK,
            Curve::OrcaWhirlpools => orca::MAX_TICK,
        }
    }

    /// Number of fractional bits of the sqrt price (96 or 64).
    pub fn resolution(self) -> usize {
        match self {
            Curve::UniswapV3 => 96,
            Curve::OrcaWhirlpools => 64,
        }
    }

    /// Largest token amount the protocol can move in one deposit.
    pub fn max_amount(self) -> U256 {
        match self {
            Curve::UniswapV3 => U256::from(u128::MAX),
            Curve::OrcaWhirlpools => U256::from(u64::MAX),
        }
    }

    pub fn sqrt_price_at_tick(self, tick: i32) -> Result<U256, MathError> {
        match self {
            Curve::UniswapV3 => uniswap::sqrt_ratio_at_tick(tick).map(U256::from),
            Curve::OrcaWhirlpools => orca::sqrt_price_at_tick(tick).map(U256::from),
        }
    }

    /// The greatest tick whose sqrt price is at or below `sqrt_price` (clamped to the tick range).
    pub fn tick_at_or_below(self, sqrt_price: U256) -> i32 {
        let (mut lo, mut hi) = (self.min_tick(), self.max_tick());
        // Binary search on the monotonic tick -> sqrt price map: exact by construction.
        while lo < hi {
            let mid = lo + (hi - lo + 1) / 2;
            match self.sqrt_price_at_tick(mid) {
                Ok(p) if p <= sqrt_price => lo = mid,
                _ => hi = mid - 1,
            }
        }
        lo
    }

    /// The largest liquidity that `amounts` can fund in `[sqrt_a, sqrt_b]` at `sqrt_price`.
    pub fn liquidity_for_amounts(
        self,
        sqrt_price: U256,
        sqrt_a: U256,
        sqrt_b: U256,
        amounts: Amounts,
    ) -> Result<u128, MathError> {
        match self {
            Curve::UniswapV3 => uniswap::liquidity_for_amounts(
                sqrt_price,
                sqrt_a,
                sqrt_b,
                amounts.amount0,
                amounts.amount1,
            ),
            Curve::OrcaWhirlpools => orca::liquidity_for_amounts(
                to_u128(sqrt_price)?,
                to_u128(sqrt_a)?,
                to_u128(sqrt_b)?,
                to_u64(amounts.amount0)?,
                to_u64(amounts.amount1)?,
            ),
        }
    }

    /// The token amounts `liquidity` holds in `[sqrt_a, sqrt_b]` at `sqrt_price`.
    pub fn amounts_for_liquidity(
        self,
        sqrt_price: U256,
        sqrt_a: U256,
        sqrt_b: U256,
        liquidity: u128,
        round_up: bool,
    ) -> Result<Amounts, MathError> {
        match self {
            Curve::UniswapV3 => {
                uniswap::amounts_for_liquidity(sqrt_price, sqrt_a, sqrt_b, liquidity, round_up)
            }
            Curve::OrcaWhirlpools => {
                let (a, b) = orca::amounts_for_liquidity(
                    to_u128(sqrt_price)?,
                    to_u128(sqrt_a)?,
                    to_u128(sqrt_b)?,
                    liquidity,
                    round_up,
                )?;
                Ok(Amounts {
                    amount0: U256::from(a),
                    amount1: U256::from(b),
                })
            }
        }
    }
}

fn to_u128(v: U256) -> Result<u128, MathError> {
    u128::try_from(v).map_err(|_| MathError("value exceeds 128 bits"))
}

fn to_u64(v: U256) -> Result<u64, MathError> {
    u64::try_from(v).map_err(|_| MathError("amount exceeds the protocol's u64 limit"))
}

/// `floor(a * b / d)` or `ceil(a * b / d)` with a 512-bit intermediate, as Uniswap's FullMath.
pub(crate) fn mul_div(a: U256, b: U256, d: U256, round_up: bool) -> Result<U256, MathError> {
    if d.is_zero() {
        return Err(MathError("division by zero"));
    }
    let product = widen(a) * widen(b);
    let d = widen(d);
    let (q, r) = product.div_rem(d);
    let q = if round_up && !r.is_zero() {
        q + U512::from(1u8)
    } else {
        q
    };
    narrow(q).ok_or(MathError("result exceeds 256 bits"))
}

pub(crate) fn widen(v: U256) -> U512 {
    let mut limbs = [0u64; 8];
    limbs[..4].copy_from_slice(v.as_limbs());
    U512::from_limbs(limbs)
}

pub(crate) fn narrow(v: U512) -> Option<U256> {
    let limbs = v.as_limbs();
    if limbs[4..].iter().any(|&l| l != 0) {
        return None;
    }
    Some(U256::from_limbs([limbs[0], limbs[1], limbs[2], limbs[3]]))
}

pub(crate) fn div_rounding_up(a: U256, b: U256) -> U256 {
    let (q, r) = a.div_rem(b);
    if r.is_zero() {
        q
    } else {
        q + U256::from(1u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mul_div_keeps_the_full_product() {
        let max = U256::MAX;
        assert_eq!(mul_div(max, max, max, false).unwrap(), max);
        assert_eq!(
            mul_div(U256::from(7u8), U256::from(3u8), U256::from(2u8), false).unwrap(),
            U256::from(10u8)
        );
        assert_eq!(
            mul_div(U256::from(7u8), U256::from(3u8), U256::from(2u8), true).unwrap(),
            U256::from(11u8)
        );
        assert!(mul_div(max, max, U256::from(1u8), false).is_err());
        assert!(mul_div(max, max, U256::ZERO, false).is_err());
    }

    #[test]
    fn tick_search_inverts_sqrt_price_on_both_curves() {
        for curve in [Curve::UniswapV3, Curve::OrcaWhirlpools] {
            for tick in [curve.min_tick(), -74960, -1, 0, 1, 12345, curve.max_tick()] {
                let p = curve.sqrt_price_at_tick(tick).unwrap();
                assert_eq!(curve.tick_at_or_below(p), tick, "{curve:?} {tick}");
                if tick < curve.max_tick() {
                    assert_eq!(curve.tick_at_or_below(p + U256::from(1u8)), tick);
                }
                if tick > curve.min_tick() {
                    assert_eq!(curve.tick_at_or_below(p - U256::from(1u8)), tick - 1);
                }
            }
        }
    }
}
