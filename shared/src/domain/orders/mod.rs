//! Positions opened and closed on chain through the API: the owner's linked wallet signs what
//! the API builds, the chain settles it. Sizing and the SDK's slippage minimums (`slippage`),
//! the transactions (`build`), what their runs before they are answered say of them
//! (`simulation`), what a confirmed mint or withdraw, a revert or an expiry makes of the
//! position (`settle`), and how a position shows its order (`view`). The actions on an open
//! position (collect, increase, decrease a share) are built in `actions`, Uniswap v4's through
//! its `modifyLiquidities` in `v4`, with Permit2's allowances signed as one batch in `permit`.

pub mod actions;
mod answers;
pub mod build;
pub mod permit;
pub mod settle;
pub mod simulation;
pub mod slippage;
pub mod v4;
pub mod view;
pub mod zap;

pub use build::{plan_mint, venue, MintPlan, OrderTerms, Venue};
