//! Exact integer concentrated-liquidity math.
//!
//! Each protocol keeps its own fixed-point format and rounding, because "correct to the last
//! token unit" means reproducing what the chain would compute, not an approximation of it:
//! Uniswap v3 and PancakeSwap v3 share Q64.96 ([`uniswap`]), Orca Whirlpools uses Q64.64
//! ([`orca`]). [`Curve`] puts both behind one interface for the rest of the crate.

pub mod curve;
pub mod fees;
pub mod num;
pub mod orca;
pub mod price;
pub mod uniswap;

pub use curve::Curve;
pub use num::{Amounts, MathError, U256, U512};
