//! [`Curve`]: Uniswap v3's and Orca's math behind one interface for the rest of the crate.

use super::num::{to_u128, to_u64, Amounts, MathError, U256};
use super::{orca, uniswap};

/// The operations the API needs from a concentrated-liquidity protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
                (sqrt_a, sqrt_b),
                (amounts.amount0, amounts.amount1),
            ),
            Curve::OrcaWhirlpools => orca::liquidity_for_amounts(
                to_u128(sqrt_price)?,
                (to_u128(sqrt_a)?, to_u128(sqrt_b)?),
                [to_u64(amounts.amount0)?, to_u64(amounts.amount1)?],
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

#[cfg(test)]
mod tests {
    use super::*;

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
