//! One position as a wallet read found it, and the pool it found outside the catalog as the
//! catalog records it (decision 43).

use crate::domain::catalog::{curve_of, BaseToken, Pool, PoolRecord, TokenRecord};
use crate::domain::math::price::Orientation;
use crate::domain::math::U256;
use crate::domain::model::{Chain, FeeState, HeldToken, Protocol, Staked};

/// One position as a wallet read found it, at the read's block or slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPosition {
    pub protocol: Protocol,
    /// The pool (EVM address or Whirlpool account).
    pub pool: String,
    /// The position manager or the Whirlpool program.
    pub manager: String,
    /// The NFT's id (EVM) or the position mint (Solana).
    pub token: String,
    pub tokens: [HeldToken; 2],
    /// The pool's fee tier (hundredths of a basis point) and tick spacing.
    pub fee_tier: u32,
    pub tick_spacing: i32,
    pub tick_lower: i32,
    pub tick_upper: i32,
    pub liquidity: u128,
    /// Base units, protocol order: held (rounded down) and what collect would pay.
    pub amounts: [U256; 2],
    pub fees: [U256; 2],
    pub sqrt_price: U256,
    pub tick: i32,
    /// EVM: the position's own fee state at the read.
    pub fee_state: Option<FeeState>,
    /// EVM: staked in its deployment's farm at the read.
    pub staked: Option<Staked>,
    /// Uniswap v4: its pool's hook contract, where the pool has one.
    pub hooks: Option<String>,
}

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
        // A Slipstream pool's fee is read with its state, never recorded.
        fee_tier: if read.protocol.is_slipstream() {
            0
        } else {
            read.fee_tier
        },
        tick_spacing: read.tick_spacing,
        token0: token(&read.tokens[0]),
        token1: token(&read.tokens[1]),
        base: BaseToken::Token0,
        current_price: price.to_string(),
        discovered: true,
        hooks: read.hooks.clone(),
        // Never opened on: a position on it acts through its own manager.
        position_manager: None,
    };
    Pool::from_record(&record).ok().map(|_| record)
}
