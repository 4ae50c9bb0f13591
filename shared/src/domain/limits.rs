//! What a create body may hold on each pool, stated once: the create handler enforces these
//! limits and the served OpenAPI document describes them (one JSON Schema alternative per
//! pool), so a body is schema-valid exactly when the handler accepts its form.

use crate::domain::catalog::{Catalog, Pool};
use crate::domain::math::U256;
use bigdecimal::BigDecimal;
use serde_json::{json, Value};
use std::str::FromStr;

/// The slippage tolerance when the request gives none (0.5%, the Uniswap interface's default).
pub const DEFAULT_SLIPPAGE_BPS: u32 = 50;
pub const MAX_SLIPPAGE_BPS: u32 = 5_000;
/// The transactions' deadline when the request gives none: 20 minutes.
pub const DEFAULT_DEADLINE_SECONDS: u32 = 1_200;
pub const MIN_DEADLINE_SECONDS: u32 = 60;
pub const MAX_DEADLINE_SECONDS: u32 = 86_400;

impl Pool {
    /// Digits an amount of a token with `decimals` may have before the point: every amount of
    /// that many digits, with up to `decimals` after the point, fits the protocol's amount type
    /// (uint128 on Uniswap and PancakeSwap, u64 on Orca).
    pub fn amount_digits(&self, decimals: u8) -> usize {
        let total = self.curve().max_amount().to_string().len() - 1;
        total.saturating_sub(usize::from(decimals)).max(1)
    }

    /// The largest amount in base units: `amount_digits` nines before the point.
    pub fn max_amount(&self, decimals: u8) -> U256 {
        let digits = self.amount_digits(decimals) + usize::from(decimals);
        U256::from(10u8).pow(U256::from(digits)) - U256::from(1u8)
    }

    /// The lowest and highest price (tokenB per tokenA) a bound may take: the prices about
    /// 100 ticks (1 %) inside the usable ticks, a margin past any rounding of the doubles, so
    /// that any two prices between them, in either order and even equal, snap outward to a
    /// non-empty range the protocol can hold. Doubles: the document writes them, the handler
    /// compares against their exact decimal.
    pub fn price_bounds(&self) -> (f64, f64) {
        let (min, max) = self.usable_ticks();
        let margin = (100 / self.tick_spacing + 1) * self.tick_spacing;
        let (a, b) = (
            self.price_at_tick(min + margin),
            self.price_at_tick(max - margin),
        );
        (a.min(b), a.max(b))
    }

    /// Whether `price` lies within [`Self::price_bounds`].
    pub fn price_in_bounds(&self, price: &BigDecimal) -> bool {
        let (low, high) = self.price_bounds();
        let exact = |bound: f64| BigDecimal::from_str(&bound.to_string()).ok();
        match (exact(low), exact(high)) {
            (Some(low), Some(high)) => low <= *price && *price <= high,
            _ => false,
        }
    }
}

/// A regular expression matching `text`, ignoring ASCII case (JSON Schema patterns have no
/// flags).
fn any_case(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
            } else if c.is_ascii_alphanumeric() {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

fn amount_schema(pool: &Pool, decimals: u8) -> Value {
    let digits = pool.amount_digits(decimals);
    let fraction = if decimals == 0 {
        String::new()
    } else {
        format!("(\\.[0-9]{{1,{decimals}}})?")
    };
    json!({
        "type": "string",
        "description": format!(
            "Whole tokens: at most {digits} digits before the point (leading zeros aside) and \
             {decimals} after it."
        ),
        "pattern": format!("^0*(0|[1-9][0-9]{{0,{}}}){fraction}$", digits - 1),
    })
}

/// The create body's optional fields that open the position on chain from a linked wallet.
fn on_chain_properties() -> Value {
    json!({
        "wallet": {
            "type": "string",
            "description": "One of your linked wallets on the pool's chain (EVM only): the \
                            position is opened on chain, by transactions this wallet signs.",
        },
        "slippageBps": {
            "type": "integer", "minimum": 0, "maximum": MAX_SLIPPAGE_BPS,
            "description": format!("With a wallet: the price move the mint tolerates, in basis \
                                    points (default {DEFAULT_SLIPPAGE_BPS})."),
        },
        "deadlineSeconds": {
            "type": "integer", "minimum": MIN_DEADLINE_SECONDS, "maximum": MAX_DEADLINE_SECONDS,
            "description": format!("With a wallet: how long the transactions stay valid \
                                    (default {DEFAULT_DEADLINE_SECONDS})."),
        },
    })
}

/// The create body's schema on `pool`.
fn pool_alternative(pool: &Pool) -> Value {
    let (low, high) = pool.price_bounds();
    let price = json!({ "type": "number", "minimum": low, "maximum": high });
    let name = if pool.chain.addresses_ignore_case() {
        json!({ "type": "string", "pattern": format!("^{}$", any_case(&pool.id)) })
    } else {
        json!({ "const": pool.id })
    };
    let zero = json!({ "type": "string", "pattern": "^0+(\\.0+)?$" });
    let on_chain = on_chain_properties();
    json!({
        "type": "object",
        "title": format!("{} {}/{} on {} ({})", pool.protocol, pool.token_a.symbol, pool.token_b.symbol, pool.chain, pool.id),
        "additionalProperties": false,
        "required": ["chain", "protocol", "pool", "amountA", "amountB", "priceLower", "priceUpper"],
        "properties": {
            "chain": { "const": pool.chain.as_str() },
            "protocol": { "const": pool.protocol.as_str() },
            "pool": name,
            "amountA": amount_schema(pool, pool.token_a.decimals),
            "amountB": amount_schema(pool, pool.token_b.decimals),
            "priceLower": price,
            "priceUpper": price,
            "wallet": on_chain["wallet"],
            "slippageBps": on_chain["slippageBps"],
            "deadlineSeconds": on_chain["deadlineSeconds"],
        },
        // Something must be offered.
        "not": {
            "required": ["amountA", "amountB"],
            "properties": { "amountA": zero, "amountB": zero },
        },
    })
}

/// The create body's schema for this catalog: exactly one alternative per pool.
pub fn create_request_schema(catalog: &Catalog) -> Value {
    json!({
        "description": "One of the catalog's pools (GET /pools), with amounts and a price range \
                        it can take. The range is the one between the two prices, in either \
                        order, snapped outward to the pool's tick grid.",
        "oneOf": catalog.pools.iter().filter(|p| !p.discovered).map(pool_alternative).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::{Chain, Protocol};

    #[test]
    fn digits_fit_the_protocols_amount_types() {
        let catalog = Catalog::embedded();
        for pool in &catalog.pools {
            for decimals in [pool.token_a.decimals, pool.token_b.decimals] {
                let max = pool.max_amount(decimals);
                assert!(max <= pool.curve().max_amount());
                // One more digit would not fit.
                let next = (max + U256::from(1u8)) * U256::from(10u8);
                assert!(next > pool.curve().max_amount(), "{} {decimals}", pool.id);
            }
        }
        let orca = catalog
            .find(
                Chain::Solana,
                Protocol::OrcaWhirlpools,
                "Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE",
            )
            .unwrap();
        assert_eq!(orca.amount_digits(9), 10);
    }

    #[test]
    fn every_price_within_the_bounds_snaps_to_a_range() {
        for pool in &Catalog::embedded().pools {
            let (low, high) = pool.price_bounds();
            assert!(0.0 < low && low < high, "{}", pool.id);
            for (a, b) in [(low, low), (high, high), (low, high), (high, low)] {
                let (a, b) = (
                    BigDecimal::from_str(&a.to_string()).unwrap(),
                    BigDecimal::from_str(&b.to_string()).unwrap(),
                );
                assert!(pool.price_in_bounds(&a) && pool.price_in_bounds(&b));
                let (lower, upper) = if a <= b { (a, b) } else { (b, a) };
                assert!(pool.snap_range(&lower, &upper).is_ok(), "{}", pool.id);
            }
        }
    }

    #[test]
    fn evm_pool_names_match_in_any_case() {
        assert_eq!(any_case("0xAb1"), "0[xX][aA][bB]1");
    }
}
