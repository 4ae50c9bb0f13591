//! The catalog's file: its pool records and the protocols' deployments (with the checks a
//! file passes), and the file shipped with the code.

use crate::domain::model::{Chain, Protocol};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Debug, thiserror::Error)]
#[error("invalid catalog entry {pool}: {reason}")]
pub struct CatalogError {
    pub(super) pool: String,
    pub(super) reason: &'static str,
}

/// The catalog shipped with the code, used by the in-memory setup and to seed DynamoDB.
pub const EMBEDDED_CATALOG: &str = include_str!("../../../data/pools.json");

/// A token as stored in the catalog data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenRecord {
    pub symbol: String,
    pub address: String,
    pub decimals: u8,
    /// USD price of one whole token, a decimal string.
    pub price_usd: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BaseToken {
    Token0,
    Token1,
}

/// A pool as stored: protocol order (token0/token1) plus which one is the API's base asset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolRecord {
    pub chain: Chain,
    pub protocol: Protocol,
    pub pool: String,
    /// The swap fee in hundredths of a basis point; none (0) for an Aerodrome Slipstream pool,
    /// whose fee is the pool's own and dynamic (read with its state).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fee_tier: u32,
    pub tick_spacing: i32,
    pub token0: TokenRecord,
    pub token1: TokenRecord,
    pub base: BaseToken,
    /// tokenB per one tokenA, in whole tokens, a decimal string.
    pub current_price: String,
    /// Added because a linked wallet holds a position on it (not one of the supported pools:
    /// no position is opened on it through the API); its tokens' `priceUsd` is `"0"` where
    /// none was known, and only the pools price them (`crate::domain::pricing`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub discovered: bool,
    /// Uniswap v4: the pool's hook contract, where it has one (its `PoolKey.hooks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<String>,
    /// The position manager of the deployment the pool belongs to, where its chain has more
    /// than one deployment of its protocol (Aerodrome Slipstream's two generations on Base):
    /// where its positions are opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position_manager: Option<String>,
}

fn is_zero(fee: &u32) -> bool {
    *fee == 0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogFile {
    pub as_of: String,
    pub pools: Vec<PoolRecord>,
    /// Where each protocol lives on each chain (what wallet positions are read from).
    #[serde(default)]
    pub deployments: Vec<Deployment>,
}

/// One protocol's contracts on one chain: EVM `chainId`, `factory` and `positionManager`;
/// Orca its Whirlpool `program`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deployment {
    pub chain: Chain,
    pub protocol: Protocol,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position_manager: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// A block at or before the position manager's deployment: where a position's history is
    /// looked for from (0 where not said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_block: Option<u64>,
    /// Uniswap v4: the singleton holding every pool, and the lens its state is read through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_manager: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_view: Option<String>,
    /// Uniswap v4: the wrapped native token (WETH, WBNB) native-currency pools are priced as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrapped_native: Option<String>,
    /// The farm its position NFTs are staked in (PancakeSwap's MasterChefV3), where it has one:
    /// a wallet's staked positions are enumerated there and stay the wallet's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staking: Option<String>,
    /// Uniswap's SwapRouter02 on the chain, where the deployment's pools can be swapped on
    /// through it: what a zap's swap and mint go through in one transaction (issue 63).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_router: Option<String>,
    /// Uniswap's QuoterV2 on the chain: the quotes a zap's swap is searched by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quoter: Option<String>,
}

impl Deployment {
    /// A v3-compatible deployment: its chain id, factory and position manager, nothing else.
    pub fn v3(
        (chain, protocol): (Chain, Protocol),
        chain_id: u64,
        (factory, manager): (&str, &str),
    ) -> Deployment {
        Deployment {
            chain,
            protocol,
            chain_id: Some(chain_id),
            factory: Some(factory.into()),
            position_manager: Some(manager.into()),
            program: None,
            first_block: None,
            staking: None,
            pool_manager: None,
            state_view: None,
            wrapped_native: None,
            swap_router: None,
            quoter: None,
        }
    }

    /// Refuses an entry missing what its chain needs, Orca off Solana or an EVM protocol on
    /// it, or one deployment given twice (a chain may have two of a protocol, each its own
    /// position manager: Slipstream's generations).
    pub fn check_all(deployments: &[Deployment]) -> Result<(), CatalogError> {
        let mut seen = BTreeSet::new();
        for d in deployments {
            let fail = |reason| CatalogError {
                pool: format!("deployment {} {}", d.chain, d.protocol),
                reason,
            };
            let contract = d.position_manager.as_ref().or(d.program.as_ref());
            let named = contract.map(|c| c.to_ascii_lowercase());
            if !seen.insert((d.chain, d.protocol, named)) {
                return Err(fail("given twice"));
            }
            let solana = d.chain == Chain::Solana;
            if solana != (d.protocol == Protocol::OrcaWhirlpools) {
                return Err(fail("the protocol does not run on that chain"));
            }
            if solana && d.staking.is_some() {
                return Err(fail("staking is read on EVM deployments only"));
            }
            // SwapRouter02 swaps on v3 pools (a v4 pool's swap goes through another router).
            let v3 = !solana && d.protocol != Protocol::UniswapV4;
            if (d.swap_router.is_some() || d.quoter.is_some()) && !v3 {
                return Err(fail(
                    "swapRouter and quoter are a v3 deployment's (SwapRouter02, QuoterV2)",
                ));
            }
            let complete = if solana {
                d.program.is_some()
            } else if d.protocol == Protocol::UniswapV4 {
                d.chain_id.is_some()
                    && d.position_manager.is_some()
                    && d.pool_manager.is_some()
                    && d.state_view.is_some()
                    && d.wrapped_native.is_some()
            } else {
                d.chain_id.is_some() && d.factory.is_some() && d.position_manager.is_some()
            };
            if !complete {
                return Err(fail(
                    "needs chainId, factory and positionManager (EVM; Uniswap v4: chainId, positionManager, poolManager, stateView and wrappedNative) or program (Solana)",
                ));
            }
        }
        Ok(())
    }
}

pub fn embedded_records() -> Vec<PoolRecord> {
    embedded_file().pools
}

/// The protocols' mainnet deployments shipped with the code.
pub fn embedded_deployments() -> Vec<Deployment> {
    embedded_file().deployments
}

fn embedded_file() -> CatalogFile {
    serde_json::from_str::<CatalogFile>(EMBEDDED_CATALOG).expect("data/pools.json parses")
}
