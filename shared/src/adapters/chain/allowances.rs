//! What a wallet lets a position manager take of its tokens, read at a pool state's block in
//! one batch: an ERC-20 `allowance(owner, spender)` (Uniswap v3 and its forks), and for
//! Uniswap v4, whose PositionManager takes payments through Permit2, each token's allowance to
//! Permit2 and Permit2's own `allowance(owner, token, spender)` with its expiration.

use super::evm::{self, hex_bytes};
use super::rpc::RpcClient;
use crate::domain::calldata::PERMIT2;
use crate::domain::catalog::is_native;
use crate::domain::market::PoolState;
use crate::domain::math::U256;
use crate::domain::orders::v4::Permit2Allowance;
use alloy_sol_types::{sol, SolCall};
use serde_json::{json, Value};

sol! {
    interface IErc20Allowance {
        function allowance(address owner, address spender) external view returns (uint256);
    }
    interface IPermit2Allowance {
        function allowance(address user, address token, address spender) external view
            returns (uint160 amount, uint48 expiration, uint48 nonce);
    }
}

fn parse(address: &str) -> Result<alloy_primitives::Address, String> {
    address
        .parse()
        .map_err(|_| format!("{address:?} is not an address"))
}

/// The block a state was read at, as a call's block parameter (by hash where it has one).
pub(super) fn at(state: &PoolState) -> Value {
    match &state.block_hash {
        Some(hash) => json!({ "blockHash": hash }),
        None => json!(format!("0x{:x}", state.height)),
    }
}

/// The answers of `calls` (`to`, data) at the state's block, each as its bytes.
async fn answers(
    rpc: &RpcClient,
    state: &PoolState,
    calls: &[(&str, Vec<u8>)],
) -> Result<Vec<Vec<u8>>, String> {
    let block = at(state);
    let calls: Vec<_> = calls
        .iter()
        .map(|(to, data)| {
            let request = json!({"to": to, "data": evm::hex_data(data)});
            ("eth_call", json!([request, block]))
        })
        .collect();
    rpc.batch(&calls)
        .await
        .into_iter()
        .map(|answer| hex_bytes(&answer.map_err(|e| e.to_string())?))
        .collect()
}

fn word(data: &[u8], i: usize) -> Result<U256, String> {
    data.get(32 * i..32 * (i + 1))
        .map(U256::from_be_slice)
        .ok_or_else(|| "an allowance answered fewer words than it has".into())
}

/// `allowance(owner, spender)` of each token.
pub async fn erc20(
    rpc: &RpcClient,
    state: &PoolState,
    (owner, spender): (&str, &str),
    tokens: [&str; 2],
) -> Result<[U256; 2], String> {
    let data = IErc20Allowance::allowanceCall {
        owner: parse(owner)?,
        spender: parse(spender)?,
    }
    .abi_encode();
    let found = answers(rpc, state, &tokens.map(|t| (t, data.clone()))).await?;
    let mut out = [U256::ZERO; 2];
    for (i, data) in found.iter().enumerate() {
        if data.len() != 32 {
            return Err("allowance answered other than one word".into());
        }
        out[i] = word(data, 0)?;
    }
    Ok(out)
}

/// Each token's allowance to Permit2 and Permit2's to `spender`; the native currency is paid
/// with the transaction's value and needs none (all at their maximum).
pub async fn permit2(
    rpc: &RpcClient,
    state: &PoolState,
    (owner, spender): (&str, &str),
    tokens: [&str; 2],
) -> Result<[Permit2Allowance; 2], String> {
    let unlimited = Permit2Allowance {
        to_permit2: U256::MAX,
        amount: U256::MAX,
        expiration: u64::MAX,
        nonce: 0,
    };
    let mut out = [unlimited.clone(), unlimited];
    let erc20: Vec<(usize, &str)> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !is_native(t))
        .map(|(i, t)| (i, *t))
        .collect();
    let mut calls = Vec::new();
    for (_, token) in &erc20 {
        let to_permit2 = IErc20Allowance::allowanceCall {
            owner: parse(owner)?,
            spender: parse(PERMIT2)?,
        };
        calls.push((*token, to_permit2.abi_encode()));
        let permitted = IPermit2Allowance::allowanceCall {
            user: parse(owner)?,
            token: parse(token)?,
            spender: parse(spender)?,
        };
        calls.push((PERMIT2, permitted.abi_encode()));
    }
    let found = answers(rpc, state, &calls).await?;
    for ((i, _), pair) in erc20.iter().zip(found.chunks(2)) {
        let expiration = u64::try_from(word(&pair[1], 1)?).unwrap_or(u64::MAX);
        out[*i] = Permit2Allowance {
            to_permit2: word(&pair[0], 0)?,
            amount: word(&pair[1], 0)?,
            expiration,
            nonce: u64::try_from(word(&pair[1], 2)?).unwrap_or(u64::MAX),
        };
    }
    Ok(out)
}
