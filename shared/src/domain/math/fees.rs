//! Fee accounting as the protocols do it: the fee growth inside a range from the pool's global
//! growth and its bound ticks' outside growth, and the fees a position is owed for its
//! liquidity since a checkpoint. All differences wrap, as on chain: mod 2^256 for Uniswap v3 and
//! PancakeSwap v3 (Solidity 0.7, unchecked), mod 2^128 for Orca (`wrapping_sub` on u128). A
//! checkpoint that looks larger than the current growth is therefore no error: the wrapped
//! difference is the growth since. A growth only ever moves forward, and by far less than half
//! the width between two reads; a wrapped difference of half the width or more is a value that
//! went backwards (a reorg, a lagging node), never read as a gain ([`FeeAccounting::advance`]).

use super::num::{mul_div, U256};
use super::Curve;

/// The fixed point of fee growth: Q128.128 on EVM, Q64.64 on Orca.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeeAccounting {
    /// Uniswap v3 and PancakeSwap v3: `Tick.getFeeGrowthInside`, `Position.update`.
    Evm,
    /// Orca Whirlpools: `next_fee_growths_inside`, `calculate_fee_owed_delta`.
    Orca,
}

/// A bound tick's view of fee growth, per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundTick {
    pub tick: i32,
    /// Orca's rule treats an uninitialized tick apart (EVM reads zeros there, which the
    /// formula handles as any other value).
    pub initialized: bool,
    pub outside: U256,
}

impl FeeAccounting {
    pub fn of(curve: Curve) -> FeeAccounting {
        match curve {
            Curve::UniswapV3 => FeeAccounting::Evm,
            Curve::OrcaWhirlpools => FeeAccounting::Orca,
        }
    }

    fn modulus_mask(self) -> U256 {
        match self {
            FeeAccounting::Evm => U256::MAX,
            FeeAccounting::Orca => U256::from(u128::MAX),
        }
    }

    /// `a − b` in the protocol's width.
    pub fn wrapping_sub(self, a: U256, b: U256) -> U256 {
        a.wrapping_sub(b) & self.modulus_mask()
    }

    /// How far a growth moved from `from` to `to`, by the protocol's wrapping rule: `None` when
    /// the wrapped difference is half the width or more, i.e. the value went backwards.
    pub fn advance(self, from: U256, to: U256) -> Option<U256> {
        let delta = self.wrapping_sub(to, from);
        let half = (self.modulus_mask() >> 1) + U256::from(1u8);
        (delta < half).then_some(delta)
    }

    /// `a + b` in the protocol's width.
    pub fn wrapping_add(self, a: U256, b: U256) -> U256 {
        a.wrapping_add(b) & self.modulus_mask()
    }

    /// Fee growth inside `[lower, upper)` with the pool at `tick` and global growth `global`.
    pub fn growth_inside(
        self,
        tick: i32,
        global: U256,
        lower: BoundTick,
        upper: BoundTick,
    ) -> U256 {
        let sub = |a, b| self.wrapping_sub(a, b);
        let below = if self == FeeAccounting::Orca && !lower.initialized {
            // Orca: no fees are earned below a tick that was never initialized.
            global
        } else if tick >= lower.tick {
            lower.outside
        } else {
            sub(global, lower.outside)
        };
        let above = if self == FeeAccounting::Orca && !upper.initialized {
            U256::ZERO
        } else if tick < upper.tick {
            upper.outside
        } else {
            sub(global, upper.outside)
        };
        sub(sub(global, below), above)
    }

    /// What the protocol adds to a position's owed fees when it is updated (a `collect` pokes
    /// it), the growth since its checkpoint wrapping as the protocol's does: Uniswap v3's
    /// `uint128(mulDiv(inside - last, L, 2^128))`; Orca's `(L · Δ) >> 64` with the product in
    /// u128, an overflowing product counting as 0.
    pub fn collect_owed(self, liquidity: u128, last: U256, inside: U256) -> u128 {
        let delta = self.wrapping_sub(inside, last);
        match self {
            FeeAccounting::Evm => {
                let owed = mul_div(delta, U256::from(liquidity), U256::from(1u8) << 128, false)
                    .unwrap_or(U256::ZERO);
                (owed & U256::from(u128::MAX)).to::<u128>()
            }
            FeeAccounting::Orca => liquidity
                .checked_mul(delta.to::<u128>())
                .map_or(0, |product| product >> 64),
        }
    }

    /// The fees owed to `liquidity` for the growth from `checkpoint` to `inside`, in the
    /// token's base units; 0 when the growth went backwards since the checkpoint (a state
    /// older than it, or one a reorg replaced): fees are never negative, nor a wrapped gain.
    pub fn fees_owed(self, liquidity: u128, checkpoint: U256, inside: U256) -> u128 {
        let Some(delta) = self.advance(checkpoint, inside) else {
            return 0;
        };
        match self {
            // uint128(FullMath.mulDiv(Δ, L, 2^128)): exact, then truncated to 128 bits.
            FeeAccounting::Evm => {
                let owed = mul_div(delta, U256::from(liquidity), U256::from(1u8) << 128, false)
                    .unwrap_or(U256::ZERO);
                (owed & U256::from(u128::MAX)).to::<u128>()
            }
            // (L · Δ) >> 64 with the product in u128; an overflowing product counts as 0.
            FeeAccounting::Orca => {
                let delta = delta.to::<u128>();
                liquidity
                    .checked_mul(delta)
                    .map_or(0, |product| product >> 64)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(v: u128) -> U256 {
        U256::from(v)
    }

    fn bound(tick: i32, outside: u128) -> BoundTick {
        BoundTick {
            tick,
            initialized: true,
            outside: u(outside),
        }
    }

    #[test]
    fn growth_inside_follows_the_side_of_each_bound() {
        for accounting in [FeeAccounting::Evm, FeeAccounting::Orca] {
            let inside = |tick, lower, upper| accounting.growth_inside(tick, u(100), lower, upper);
            // Inside: below = outside(lower), above = outside(upper): 100 − 30 − 20.
            assert_eq!(inside(0, bound(-10, 30), bound(10, 20)), u(50));
            // Below the range: below = global − outside(lower): 100 − 70 − 20.
            assert_eq!(inside(-20, bound(-10, 30), bound(10, 20)), u(10));
            // Above (the upper bound itself counts as above): above = global − outside(upper):
            // 100 − 20 − 70.
            assert_eq!(inside(10, bound(-10, 20), bound(10, 30)), u(10));
        }
    }

    #[test]
    fn differences_wrap_in_each_protocols_width() {
        // Outside values larger than global: "negative" growth wraps.
        let (lower, upper) = (bound(-10, 150), bound(10, 0));
        let evm = FeeAccounting::Evm.growth_inside(0, u(100), lower, upper);
        assert_eq!(evm, U256::MAX - u(49));
        let orca = FeeAccounting::Orca.growth_inside(0, u(100), lower, upper);
        assert_eq!(orca, u(u128::MAX - 49));
        // A checkpoint "above" the current growth: the wrapped difference is what accrued.
        let checkpoint = U256::MAX - u(9);
        assert_eq!(
            FeeAccounting::Evm.fees_owed(1 << 64, checkpoint, u(5)),
            0,
            "Δ = 5 − (2^256 − 10) = 15; 15 × 2^64 / 2^128 rounds down to 0"
        );
        assert_eq!(
            FeeAccounting::Evm.fees_owed(1 << 127, checkpoint, u(5)),
            7,
            "15 × 2^127 / 2^128 = 7.5, truncated"
        );
        assert_eq!(
            FeeAccounting::Orca.fees_owed(1 << 64, u(u128::MAX - 9), u(5)),
            15
        );
    }

    #[test]
    fn orca_treats_uninitialized_bounds_by_its_convention() {
        let lower = BoundTick {
            tick: -10,
            initialized: false,
            outside: u(999),
        };
        let upper = BoundTick {
            tick: 10,
            initialized: false,
            outside: u(999),
        };
        // below = global, above = 0: inside = 0 whatever the outside values say.
        assert_eq!(
            FeeAccounting::Orca.growth_inside(0, u(100), lower, upper),
            u(0)
        );
        // EVM has no such rule: zeros read for an uninitialized tick are used as they are.
        assert_eq!(
            FeeAccounting::Evm.growth_inside(0, u(100), bound(-10, 0), bound(10, 0)),
            u(100)
        );
    }

    #[test]
    fn fees_owed_truncate_and_overflow_as_on_chain() {
        // EVM: mulDiv exact, result truncated to uint128 (Position.update's cast).
        // floor((2^255 − 1)(2^128 − 1) / 2^128) mod 2^128 = 2^127 − 1.
        let below_half = (U256::from(1u8) << 255) - U256::from(1u8);
        assert_eq!(
            FeeAccounting::Evm.fees_owed(u128::MAX, U256::ZERO, below_half),
            u128::MAX >> 1
        );
        // 2^254 · 2^127 / 2^128 = 2^253: its low 128 bits are 0.
        assert_eq!(
            FeeAccounting::Evm.fees_owed(1 << 127, U256::ZERO, U256::from(1u8) << 254),
            0
        );
        assert_eq!(FeeAccounting::Evm.fees_owed(1 << 127, U256::ZERO, u(6)), 3);
        // Orca: a product past u128 owes nothing.
        assert_eq!(
            FeeAccounting::Orca.fees_owed(1 << 70, U256::ZERO, u(1 << 60)),
            0
        );
        assert_eq!(FeeAccounting::Orca.fees_owed(3, U256::ZERO, u(1 << 64)), 3);
        assert_eq!(
            FeeAccounting::Orca.fees_owed(0, U256::ZERO, u(u128::MAX)),
            0
        );
    }

    #[test]
    fn growth_that_went_backwards_owes_nothing() {
        // Liquidity for which 5 units of growth owe 4 (EVM: 5·(2^128 − 1)/2^128) or 5 (Orca).
        for (accounting, width, liquidity, owed) in [
            (FeeAccounting::Evm, 256, u128::MAX, 4),
            (FeeAccounting::Orca, 128, 1 << 64, 5),
        ] {
            let half = U256::from(1u8) << (width - 1);
            // Forward across the wrap: 5 units past the top of the width.
            let top = if width == 256 {
                U256::MAX
            } else {
                u(u128::MAX)
            };
            assert_eq!(accounting.advance(top, u(4)), Some(u(5)));
            assert_eq!(accounting.fees_owed(liquidity, top, u(4)), owed);
            // One unit back is not 2^width − 1 units forward.
            assert_eq!(accounting.advance(u(10), u(9)), None);
            assert_eq!(accounting.fees_owed(liquidity, u(10), u(9)), 0);
            assert_eq!(
                accounting.advance(U256::ZERO, half - u(1)),
                Some(half - u(1))
            );
            assert_eq!(accounting.advance(U256::ZERO, half), None);
        }
    }
}
