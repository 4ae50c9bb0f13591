//! Uniswap v4's pools (decision 62): every pool lives in one `PoolManager`, named by its
//! `poolId` (`keccak256(abi.encode(PoolKey))`), and is read through the deployment's
//! `StateView` (`getSlot0`, `getLiquidity`, `getFeeGrowthGlobals`, `getTickInfo`), at one
//! block's hash like a v3 pool (`pools` puts both in one batch). A catalog pool with a
//! `state_view` is one of these. Its positions are read by `v4_wallets`.

use super::evm::{self, decoded, next_decoded, Block};
use super::rpc::RpcError;
use crate::domain::market::{PoolState, TickState};
use crate::domain::math::U256;
use alloy_primitives::{keccak256, B256};
use alloy_sol_types::{sol, SolCall, SolValue};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

sol! {
    struct V4PoolKey {
        address currency0;
        address currency1;
        uint24 fee;
        int24 tickSpacing;
        address hooks;
    }
    interface IV4PositionManager {
        function balanceOf(address owner) external view returns (uint256);
        function ownerOf(uint256 tokenId) external view returns (address);
        function getPoolAndPositionInfo(uint256 tokenId) external view returns (V4PoolKey poolKey, uint256 info);
        function getPositionLiquidity(uint256 tokenId) external view returns (uint128 liquidity);
    }
    interface IStateView {
        function getSlot0(bytes32 poolId) external view returns (uint160 sqrtPriceX96, int24 tick, uint24 protocolFee, uint24 lpFee);
        function getLiquidity(bytes32 poolId) external view returns (uint128 liquidity);
        function getFeeGrowthGlobals(bytes32 poolId) external view returns (uint256 feeGrowthGlobal0, uint256 feeGrowthGlobal1);
        function getTickInfo(bytes32 poolId, int24 tick) external view returns (uint128 liquidityGross, int128 liquidityNet, uint256 feeGrowthOutside0X128, uint256 feeGrowthOutside1X128);
        function getPositionInfo(bytes32 poolId, address owner, int24 tickLower, int24 tickUpper, bytes32 salt) external view returns (uint128 liquidity, uint256 feeGrowthInside0LastX128, uint256 feeGrowthInside1LastX128);
        function getFeeGrowthInside(bytes32 poolId, int24 tickLower, int24 tickUpper) external view returns (uint256 feeGrowthInside0X128, uint256 feeGrowthInside1X128);
    }
    interface IErc20Meta {
        function decimals() external view returns (uint8);
        function symbol() external view returns (string);
    }
}

use IStateView::{getFeeGrowthGlobalsCall, getLiquidityCall, getSlot0Call, getTickInfoCall};

/// `PoolManager.ModifyLiquidity(PoolId indexed id, address indexed sender, int24 tickLower,
/// int24 tickUpper, int256 liquidityDelta, bytes32 salt)`: a position manager's position is
/// `sender` = the manager, `salt` = its token id.
pub(super) const MODIFY_LIQUIDITY: &str =
    "ModifyLiquidity(bytes32,address,int24,int24,int256,bytes32)";

pub use crate::domain::catalog::hook_returns_deltas;

/// The pool's id: `keccak256(abi.encode(key))`, `0x` and 64 lower-case hex digits.
pub fn pool_id(key: &V4PoolKey) -> String {
    format!("{:#x}", keccak256(key.abi_encode()))
}

pub(super) fn id_word(pool_id: &str) -> Result<B256, String> {
    pool_id
        .parse::<B256>()
        .map_err(|_| format!("{pool_id}: not a v4 pool id"))
}

pub(super) fn to_u256<const BITS: usize, const LIMBS: usize>(
    value: alloy_sol_types::private::Uint<BITS, LIMBS>,
) -> U256 {
    U256::from_limbs_slice(value.as_limbs())
}

pub(super) fn view_call(state_view: &str, data: Vec<u8>, at: &Value) -> (&'static str, Value) {
    let data = evm::hex_data(&data);
    ("eth_call", json!([{"to": state_view, "data": data}, at]))
}

/// The calls that read one v4 pool at `at`: `getSlot0`, `getLiquidity`, `getFeeGrowthGlobals`,
/// then `getTickInfo` of each of `ticks` ([`STATE_CALLS`] + one per tick).
pub fn pool_calls(
    state_view: &str,
    pool_id: &str,
    ticks: &[i32],
    at: &Value,
) -> Vec<(&'static str, Value)> {
    // An id that is no word is asked as the zero id, which no pool has (its price answers 0,
    // refused): the batch keeps one answer per call of every pool.
    let id = id_word(pool_id).unwrap_or_default();
    let mut calls = vec![
        view_call(state_view, getSlot0Call { poolId: id }.abi_encode(), at),
        view_call(state_view, getLiquidityCall { poolId: id }.abi_encode(), at),
        view_call(
            state_view,
            getFeeGrowthGlobalsCall { poolId: id }.abi_encode(),
            at,
        ),
    ];
    for tick in ticks {
        let tick =
            alloy_sol_types::private::primitives::aliases::I24::try_from(*tick).unwrap_or_default();
        let data = getTickInfoCall { poolId: id, tick }.abi_encode();
        calls.push(view_call(state_view, data, at));
    }
    calls
}

/// Calls of [`pool_calls`] before the ticks'.
pub const STATE_CALLS: usize = 3;

/// The answers of [`pool_calls`] as the pool's state at `block`. A pool the manager does not
/// have (never initialized) answers a zero price: refused.
pub fn decode_state(
    answers: Vec<Result<Value, RpcError>>,
    tick_list: &[i32],
    block: &Block,
    observed_at: DateTime<Utc>,
) -> Result<PoolState, String> {
    let next = &mut answers.into_iter();
    let slot0 = next_decoded::<getSlot0Call>(next, 4, "getSlot0")?;
    if slot0.sqrtPriceX96.is_zero() {
        return Err("getSlot0: the pool manager has no such pool".into());
    }
    let liquidity = next_decoded::<getLiquidityCall>(next, 1, "getLiquidity")?;
    let growth = next_decoded::<getFeeGrowthGlobalsCall>(next, 2, "getFeeGrowthGlobals")?;
    let mut ticks = Vec::with_capacity(tick_list.len());
    for tick in tick_list {
        let info = next_decoded::<getTickInfoCall>(next, 4, "getTickInfo")?;
        ticks.push(TickState {
            tick: *tick,
            initialized: info.liquidityGross > 0,
            fee_growth_outside0: to_u256(info.feeGrowthOutside0X128),
            fee_growth_outside1: to_u256(info.feeGrowthOutside1X128),
        });
    }
    Ok(PoolState {
        sqrt_price: to_u256(slot0.sqrtPriceX96),
        tick: slot0.tick.as_i32(),
        liquidity,
        fee_growth_global0: to_u256(growth.feeGrowthGlobal0),
        fee_growth_global1: to_u256(growth.feeGrowthGlobal1),
        height: block.number,
        block_hash: Some(block.hash.clone()),
        observed_at,
        ticks,
        balances: None,
        slipstream: None,
    })
}

/// The price alone at `at` (a history's valuation): `getSlot0`.
pub fn slot0_call(state_view: &str, pool_id: &str, at: &Value) -> (&'static str, Value) {
    let id = id_word(pool_id).unwrap_or_default();
    view_call(state_view, getSlot0Call { poolId: id }.abi_encode(), at)
}

/// [`slot0_call`]'s answer: the sqrt price and the tick (a pool the manager does not have
/// answers a zero price: refused).
pub fn decode_slot0(answer: Result<Value, RpcError>) -> Result<(U256, i32), String> {
    let slot0 = decoded::<getSlot0Call>(answer, 4, "getSlot0")?;
    if slot0.sqrtPriceX96.is_zero() {
        return Err("getSlot0: the pool manager has no such pool".into());
    }
    Ok((to_u256(slot0.sqrtPriceX96), slot0.tick.as_i32()))
}

/// The ticks packed in a `PositionInfo`: lower at bits 8–31, upper at bits 32–55, each a
/// sign-extended `int24`.
pub fn unpack_ticks(info: U256) -> (i32, i32) {
    let int24 = |shift: usize| {
        let raw = ((info >> shift) & U256::from(0xff_ffffu32)).to::<u32>();
        ((raw << 8) as i32) >> 8
    };
    (int24(8), int24(32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::catalog::NATIVE;
    use alloy_primitives::Address;

    #[test]
    fn packed_ticks_unpack_sign_extended() {
        // PositionInfo: poolId (200 bits) | tickUpper (24) | tickLower (24) | hasSubscriber (8).
        let pack = |lower: i32, upper: i32| {
            let t = |v: i32| U256::from((v as u32) & 0xff_ffff);
            (t(upper) << 32) | (t(lower) << 8) | U256::from(1u8) | (U256::from(0xabcdu32) << 56)
        };
        for (lower, upper) in [
            (-887_220, 887_220),
            (79_020, 81_060),
            (-81_000, -79_000),
            (-1, 0),
        ] {
            assert_eq!(unpack_ticks(pack(lower, upper)), (lower, upper));
        }
    }

    #[test]
    fn a_pool_id_is_the_hash_of_its_encoded_key() {
        // The devnet's ETH/USDC pool (devnet/v4.mjs computes it with ethers' abi coder).
        let key = V4PoolKey {
            currency0: Address::ZERO,
            currency1: "0x5FbDB2315678afecb367f032d93F642f64180aa3"
                .parse()
                .unwrap(),
            fee: alloy_sol_types::private::primitives::aliases::U24::from(3000u32),
            tickSpacing: alloy_sol_types::private::primitives::aliases::I24::try_from(60).unwrap(),
            hooks: Address::ZERO,
        };
        assert_eq!(
            pool_id(&key),
            "0xa24346159d0526da8dac757a49e25754cc97445e2fd5fa9d27fe4d0e24619f99"
        );
    }

    #[test]
    fn hooks_that_may_return_deltas_are_told_apart() {
        assert!(!hook_returns_deltas(NATIVE));
        // Permission bits 0–3 (…RETURNS_DELTA) set or not in the address's low bits.
        assert!(hook_returns_deltas(
            "0x0000000000000000000000000000000000000001"
        ));
        assert!(hook_returns_deltas(
            "0x000000000000000000000000000000000000000c"
        ));
        assert!(!hook_returns_deltas(
            "0x0000000000000000000000000000000000000c00"
        ));
    }
}
