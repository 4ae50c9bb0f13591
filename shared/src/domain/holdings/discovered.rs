//! A pool a wallet read found outside the catalog, as the catalog records it (decision 43).

use super::ReadPosition;
use crate::domain::catalog::{curve_of, BaseToken, Pool, PoolRecord, TokenRecord};
use crate::domain::math::price::Orientation;
use crate::domain::model::{Chain, HeldToken};

/// The catalog record of a pool a wallet read found outside the catalog: its tokens as their
/// contracts or mints describe them (no USD price of their own: only the pools price them,
/// `crate::domain::pricing`), tokenA its token0, priced at the read. `None` when no valid pool comes of it.
pub fn discovered_record(chain: Chain, read: &ReadPosition) -> Option<PoolRecord> {
    let curve = curve_of(read.protocol);
    let orientation = Orientation {
        curve,
        decimals0: read.tokens[0].decimals,
        decimals1: read.tokens[1].decimals,
        base_is_token0: true,
    };
    let price = orientation.human_price_precise(read.sqrt_price, 20);
    let token = |t: &HeldToken| TokenRecord {
        symbol: t.symbol.clone(),
        address: t.address.clone(),
        decimals: t.decimals,
        price_usd: "0".into(),
    };
    let record = PoolRecord {
        chain,
        protocol: read.protocol,
        pool: read.pool.clone(),
        fee_tier: read.fee_tier,
        tick_spacing: read.tick_spacing,
        token0: token(&read.tokens[0]),
        token1: token(&read.tokens[1]),
        base: BaseToken::Token0,
        current_price: price.to_string(),
        discovered: true,
        hooks: read.hooks.clone(),
    };
    Pool::from_record(&record).ok().map(|_| record)
}
