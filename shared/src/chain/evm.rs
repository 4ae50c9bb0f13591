//! Uniswap v3 and PancakeSwap v3 pools read over JSON-RPC: the block number first, then every
//! getter of every pool of the chain at that block, in batches. ABI encoding and decoding by
//! `alloy-sol-types` from the pools' Solidity signatures.

use super::rpc::{RpcClient, RpcError};
use crate::catalog::Pool;
use crate::market::{PoolState, TickState};
use crate::math::U256;
use alloy_sol_types::{sol, SolCall};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

sol! {
    /// The getters both protocols share. PancakeSwap v3's `slot0` has a wider `feeProtocol`
    /// (uint32 for uint8): only the first two words are declared, and decoded.
    interface IConcentratedPool {
        function slot0() external view returns (uint160 sqrtPriceX96, int24 tick);
        function liquidity() external view returns (uint128);
        function feeGrowthGlobal0X128() external view returns (uint256);
        function feeGrowthGlobal1X128() external view returns (uint256);
        function ticks(int24 tick) external view returns (
            uint128 liquidityGross,
            int128 liquidityNet,
            uint256 feeGrowthOutside0X128,
            uint256 feeGrowthOutside1X128,
            int56 tickCumulativeOutside,
            uint160 secondsPerLiquidityOutsideX128,
            uint32 secondsOutside,
            bool initialized
        );
    }
}

use IConcentratedPool::{
    feeGrowthGlobal0X128Call, feeGrowthGlobal1X128Call, liquidityCall, slot0Call, ticksCall,
};

/// A pool's state or why it could not be read whole.
pub type PoolRead = Result<PoolState, String>;

fn hex_data(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 + bytes.len() * 2);
    text.push_str("0x");
    for b in bytes {
        text.push_str(&format!("{b:02x}"));
    }
    text
}

fn hex_bytes(value: &Value) -> Result<Vec<u8>, String> {
    let text = value
        .as_str()
        .and_then(|t| t.strip_prefix("0x"))
        .ok_or("eth_call answered no hex data")?;
    if text.len() % 2 != 0 {
        return Err("eth_call answered odd-length hex".into());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&text[i..i + 2], 16)
                .map_err(|_| "eth_call answered bad hex".to_string())
        })
        .collect()
}

fn quantity(value: &Value) -> Result<u64, RpcError> {
    value
        .as_str()
        .and_then(|t| t.strip_prefix("0x"))
        .and_then(|t| u64::from_str_radix(t, 16).ok())
        .ok_or(RpcError::Malformed(
            "eth_blockNumber answered no hex quantity",
        ))
}

fn to_u256<const BITS: usize, const LIMBS: usize>(
    value: alloy_sol_types::private::Uint<BITS, LIMBS>,
) -> U256 {
    U256::from_limbs_slice(value.as_limbs())
}

/// The latest block number of the chain.
pub async fn block_number(rpc: &RpcClient) -> Result<u64, RpcError> {
    quantity(&rpc.call("eth_blockNumber", json!([])).await?)
}

/// Every pool's state at `block`, in one run of batches: per pool `slot0`, `liquidity`, both
/// fee growth globals and `ticks(t)` for each tracked tick.
pub async fn read_pools(
    rpc: &RpcClient,
    pools: &[&Pool],
    block: u64,
    observed_at: DateTime<Utc>,
) -> Vec<PoolRead> {
    let at = format!("0x{block:x}");
    let call = |pool: &Pool, data: Vec<u8>| {
        (
            "eth_call",
            json!([{"to": pool.id, "data": hex_data(&data)}, at]),
        )
    };
    let mut calls = Vec::new();
    for pool in pools {
        calls.push(call(pool, slot0Call {}.abi_encode()));
        calls.push(call(pool, liquidityCall {}.abi_encode()));
        calls.push(call(pool, feeGrowthGlobal0X128Call {}.abi_encode()));
        calls.push(call(pool, feeGrowthGlobal1X128Call {}.abi_encode()));
        for tick in &pool.tracked_ticks {
            let tick = alloy_sol_types::private::primitives::aliases::I24::try_from(*tick)
                .unwrap_or_default();
            calls.push(call(pool, ticksCall { tick }.abi_encode()));
        }
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    pools
        .iter()
        .map(|pool| {
            let own: Vec<_> = answers
                .by_ref()
                .take(4 + pool.tracked_ticks.len())
                .collect();
            decode_pool(pool, own, block, observed_at)
        })
        .collect()
}

fn decode_pool(
    pool: &Pool,
    answers: Vec<Result<Value, RpcError>>,
    block: u64,
    observed_at: DateTime<Utc>,
) -> PoolRead {
    let mut answers = answers.into_iter();
    let mut next = |what: &str| -> Result<Vec<u8>, String> {
        let answer = answers
            .next()
            .ok_or_else(|| format!("{what}: no answer"))?
            .map_err(|e| format!("{what}: {e}"))?;
        hex_bytes(&answer).map_err(|e| format!("{what}: {e}"))
    };
    let bad = |what: &str| format!("{what}: undecodable answer");
    let slot0 = slot0Call::abi_decode_returns(&next("slot0")?).map_err(|_| bad("slot0"))?;
    let liquidity =
        liquidityCall::abi_decode_returns(&next("liquidity")?).map_err(|_| bad("liquidity"))?;
    let growth0 = feeGrowthGlobal0X128Call::abi_decode_returns(&next("feeGrowthGlobal0X128")?)
        .map_err(|_| bad("feeGrowthGlobal0X128"))?;
    let growth1 = feeGrowthGlobal1X128Call::abi_decode_returns(&next("feeGrowthGlobal1X128")?)
        .map_err(|_| bad("feeGrowthGlobal1X128"))?;
    let mut ticks = Vec::with_capacity(pool.tracked_ticks.len());
    for tick in &pool.tracked_ticks {
        let info = ticksCall::abi_decode_returns(&next("ticks")?).map_err(|_| bad("ticks"))?;
        ticks.push(TickState {
            tick: *tick,
            initialized: info.initialized,
            fee_growth_outside0: to_u256(info.feeGrowthOutside0X128),
            fee_growth_outside1: to_u256(info.feeGrowthOutside1X128),
        });
    }
    Ok(PoolState {
        sqrt_price: to_u256(slot0.sqrtPriceX96),
        tick: slot0.tick.as_i32(),
        liquidity,
        fee_growth_global0: to_u256(growth0),
        fee_growth_global1: to_u256(growth1),
        height: block,
        observed_at,
        ticks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(value: u128, negative: bool) -> Vec<u8> {
        let mut w = if negative {
            vec![0xff; 32]
        } else {
            vec![0; 32]
        };
        if negative {
            let v = (-(value as i128)) as u128;
            w[16..].copy_from_slice(&v.to_be_bytes());
        } else {
            w[16..].copy_from_slice(&value.to_be_bytes());
        }
        w
    }

    #[test]
    fn a_pancakeswap_slot0_decodes_its_first_two_words() {
        // Uniswap's seven words and PancakeSwap's (its feeProtocol a uint32 word) decode alike.
        let sqrt = 79228162514264337593543950336u128;
        for fee_protocol in [0u128, 0x0213_0213] {
            let mut data = word(sqrt, false);
            data.extend(word(12, true));
            for extra in [1, 2, 3, fee_protocol, 1] {
                data.extend(word(extra, false));
            }
            let decoded = slot0Call::abi_decode_returns(&data).unwrap();
            assert_eq!(to_u256(decoded.sqrtPriceX96), U256::from(sqrt));
            assert_eq!(decoded.tick.as_i32(), -12);
        }
        assert!(slot0Call::abi_decode_returns(&word(sqrt, false)).is_err());
    }

    #[test]
    fn calls_encode_as_the_selectors_solidity_computes() {
        assert_eq!(hex_data(&slot0Call {}.abi_encode()), "0x3850c7bd");
        assert_eq!(hex_data(&liquidityCall {}.abi_encode()), "0x1a686502");
        let tick = alloy_sol_types::private::primitives::aliases::I24::try_from(-60).unwrap();
        let encoded = ticksCall { tick }.abi_encode();
        assert_eq!(hex_data(&encoded[..4]), "0xf30dba93");
        assert_eq!(encoded[4..], word(60, true)[..]);
    }
}
