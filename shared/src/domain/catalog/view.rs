//! What `GET /pools` shows of a pool (`Pool::view`).

use crate::domain::json::Exact;
use crate::domain::market::Height;
use crate::domain::model::{Chain, Protocol};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenView {
    pub symbol: String,
    pub address: String,
    pub decimals: u8,
    /// `null` for a discovered pool's token no route prices.
    pub price_usd: Option<Exact>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolView {
    pub chain: Chain,
    pub protocol: Protocol,
    pub pool: String,
    /// An Aerodrome Slipstream pool's is its current fee (dynamic), `null` until a state of it
    /// is read.
    pub fee_tier: Option<u32>,
    pub tick_spacing: i32,
    pub token_a: TokenView,
    pub token_b: TokenView,
    pub current_price: Exact,
    pub tick: i32,
    /// The sqrt price in the protocol's fixed point (Q64.96, Q64.64), an integer string.
    pub sqrt_price: String,
    pub observed_at: Option<String>,
    #[serde(skip_serializing_if = "Height::is_hidden")]
    pub block: Height,
    #[serde(skip_serializing_if = "Height::is_hidden")]
    pub slot: Height,
    pub stale: bool,
    /// Read because a linked wallet holds a position on it; not one to open positions on.
    pub discovered: bool,
    /// Uniswap v4: the pool's hook contract, where it has one (a hooked pool: its figures are
    /// the pure math's only where the hook may return no deltas, decision 62).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks: Option<String>,
}
