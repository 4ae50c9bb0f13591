//! Positions opened and closed on chain through the API: the owner's linked wallet signs what
//! the API builds, the chain settles it. Sizing and the SDK's slippage minimums (`slippage`),
//! the transactions (`build`), what a confirmed mint or withdraw, a revert or an expiry makes
//! of the position (`settle`), and how a position shows its order (`view`).

pub mod build;
pub mod settle;
pub mod slippage;
pub mod view;

pub use build::{plan_mint, venue, MintPlan, OrderTerms, Venue};

/// The slippage tolerance when the request gives none (0.5%, the Uniswap interface's default).
pub const DEFAULT_SLIPPAGE_BPS: u32 = 50;
pub const MAX_SLIPPAGE_BPS: u32 = 5_000;
/// The transactions' deadline when the request gives none: 20 minutes.
pub const DEFAULT_DEADLINE_SECONDS: u32 = 1_200;
pub const MIN_DEADLINE_SECONDS: u32 = 60;
pub const MAX_DEADLINE_SECONDS: u32 = 86_400;
