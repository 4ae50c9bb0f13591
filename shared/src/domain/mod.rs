//! The domain: what the service knows, with no I/O at all (no store, no chain, no HTTP, nothing
//! awaited). The protocols' exact math, the model and its exact JSON numbers, the pools and
//! their market state, fee records, valuation and figures, the life cycle's figures, wallet
//! positions and the portfolio, on-chain orders' sizing and calldata, wallet addresses and
//! signatures, the limits of a request.

// First: the modules after it use its macro.
#[macro_use]
mod named_enum;
pub mod alerts;
pub mod calldata;
pub mod catalog;
pub mod chart;
pub mod clock;
pub mod export;
pub mod fee_ticks;
pub mod figures;
pub mod history;
pub mod holdings;
pub mod json;
pub mod keys;
pub mod lifecycle;
pub mod limits;
pub mod market;
pub mod math;
pub mod model;
pub mod orders;
pub mod portfolio;
pub mod pricing;
pub mod transactions;
pub mod valuation;
pub mod wallets;
pub mod webhooks;
