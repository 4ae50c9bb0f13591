//! The standard request bodies.

use serde_json::{json, Value};

/// Uniswap v3 WETH/USDC 0.05% on ethereum, the pool most tests open positions on.
pub const ETH_USDC: &str = "0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640";
/// Orca SOL/USDC on solana.
pub const SOL_USDC: &str = "Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE";

/// A create body: 1 WETH and 3000 USDC between 2500 and 3500 on [`ETH_USDC`], with `overrides`
/// replacing or adding fields.
pub fn create_body(overrides: Value) -> String {
    let mut body = json!({
        "chain": "ethereum",
        "protocol": "uniswap-v3",
        "pool": ETH_USDC,
        "amountA": "1",
        "amountB": "3000",
        "priceLower": 2500,
        "priceUpper": 3500
    });
    for (k, v) in overrides.as_object().expect("overrides are an object") {
        body[k] = v.clone();
    }
    body.to_string()
}

/// The overrides that make [`create_body`] a position on Orca's SOL/USDC pool.
pub fn solana() -> Value {
    json!({
        "chain": "solana",
        "protocol": "orca-whirlpools",
        "pool": SOL_USDC,
        "amountA": "10",
        "amountB": "1400",
        "priceLower": 100,
        "priceUpper": 200
    })
}
