//! Uniswap v4 (decision 62): every pool lives in one `PoolManager`, named by its `poolId`
//! (`keccak256(abi.encode(PoolKey))`), read through the deployment's `StateView`; every
//! position is an NFT of one `PositionManager`, which is not enumerable. A wallet's positions
//! are its stored ones asked `ownerOf`, and where `balanceOf` says it holds more, the ids of the
//! manager's `Transfer` logs to it (a back-scan from the manager's first block, in log-range
//! chunks), each confirmed by `ownerOf`. A position reads as a v3 one: its key and packed ticks
//! (`getPoolAndPositionInfo`), its liquidity, and its fee growth inside at the last
//! modification (`getPositionInfo` of the manager's position, salted by the token id); there
//! is no `tokensOwed`: v4 pays the accrued fees out at every modification.

use super::evm::{self, call, decoded, hex_bytes, strict, Block};
use super::history::{read_ranges, topic, Refused, TRANSFER};
use super::rpc::{RpcClient, RpcError};
use super::tokens::{symbol_of, TokenMeta};
use super::trust::plausible_range;
use super::wallets::{ChainPosition, Unread, MAX_POSITIONS_PER_MANAGER};
use crate::domain::catalog::{Deployment, NATIVE};
use crate::domain::market::{PoolState, TickState};
use crate::domain::math::fees::{BoundTick, FeeAccounting};
use crate::domain::math::{Curve, U256};
use crate::domain::model::Protocol;
use alloy_primitives::{keccak256, Address, B256};
use alloy_sol_types::{sol, SolCall, SolValue};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

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
    }
    interface IErc20Meta {
        function decimals() external view returns (uint8);
        function symbol() external view returns (string);
    }
}

use IErc20Meta::{decimalsCall, symbolCall};
use IStateView::{
    getFeeGrowthGlobalsCall, getLiquidityCall, getPositionInfoCall, getSlot0Call, getTickInfoCall,
};
use IV4PositionManager::{
    balanceOfCall, getPoolAndPositionInfoCall, getPositionLiquidityCall, ownerOfCall,
};

/// `PoolManager.ModifyLiquidity(PoolId indexed id, address indexed sender, int24 tickLower,
/// int24 tickUpper, int256 liquidityDelta, bytes32 salt)`: a position manager's position is
/// `sender` = the manager, `salt` = its token id.
pub(super) const MODIFY_LIQUIDITY: &str =
    "ModifyLiquidity(bytes32,address,int24,int24,int256,bytes32)";

/// The fee that means a hook sets it (`LPFeeLibrary.DYNAMIC_FEE_FLAG`).
pub const DYNAMIC_FEE: u32 = 0x80_0000;

/// A hook may return deltas (its address's permission bits 0–3: after remove and add
/// liquidity, after and before swap): what a withdrawal pays is then the hook's to say, and
/// the pure math's figures are not the position's.
pub fn hook_returns_deltas(hooks: &str) -> bool {
    let bits = u16::from_str_radix(&hooks[hooks.len().saturating_sub(4)..], 16).unwrap_or(0xffff);
    !crate::domain::catalog::is_native(hooks) && bits & 0b1111 != 0
}

/// The pool's id: `keccak256(abi.encode(key))`, `0x` and 64 lower-case hex digits.
pub fn pool_id(key: &V4PoolKey) -> String {
    format!("{:#x}", keccak256(key.abi_encode()))
}

fn id_word(pool_id: &str) -> Result<B256, String> {
    pool_id
        .parse::<B256>()
        .map_err(|_| format!("{pool_id}: not a v4 pool id"))
}

fn parse_address(text: &str) -> Result<Address, String> {
    crate::domain::wallets::address::evm_address(text).map_err(|e| format!("{text}: {e}"))
}

fn to_u256<const BITS: usize, const LIMBS: usize>(
    value: alloy_sol_types::private::Uint<BITS, LIMBS>,
) -> U256 {
    U256::from_limbs_slice(value.as_limbs())
}

fn at(block: &Block) -> Value {
    json!({"blockHash": block.hash})
}

fn view_call(state_view: &str, data: Vec<u8>, at: &Value) -> (&'static str, Value) {
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
    let Ok(id) = id_word(pool_id) else {
        // An id that is no word is asked nothing that could answer for it: each call fails.
        return vec![("eth_call", json!([]))];
    };
    let mut calls = vec![
        view_call(state_view, getSlot0Call { poolId: id }.abi_encode(), at),
        view_call(state_view, getLiquidityCall { poolId: id }.abi_encode(), at),
        view_call(state_view, getFeeGrowthGlobalsCall { poolId: id }.abi_encode(), at),
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
    let mut answers = answers.into_iter();
    let mut next = |what: &str| -> Result<Vec<u8>, String> {
        let answer = answers
            .next()
            .ok_or_else(|| format!("{what}: no answer"))?
            .map_err(|e| format!("{what}: {e}"))?;
        hex_bytes(&answer).map_err(|e| format!("{what}: {e}"))
    };
    let bad = |what: &str| format!("{what}: undecodable answer");
    let slot0 = strict::<getSlot0Call>(&next("getSlot0")?, 4).map_err(|_| bad("getSlot0"))?;
    if slot0.sqrtPriceX96.is_zero() {
        return Err("getSlot0: the pool manager has no such pool".into());
    }
    let liquidity =
        strict::<getLiquidityCall>(&next("getLiquidity")?, 1).map_err(|_| bad("getLiquidity"))?;
    let growth = strict::<getFeeGrowthGlobalsCall>(&next("getFeeGrowthGlobals")?, 2)
        .map_err(|_| bad("getFeeGrowthGlobals"))?;
    let mut ticks = Vec::with_capacity(tick_list.len());
    for tick in tick_list {
        let info = strict::<getTickInfoCall>(&next("getTickInfo")?, 4)
            .map_err(|_| bad("getTickInfo"))?;
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
    })
}

/// The price alone at `at` (a history's valuation): `getSlot0`.
pub fn slot0_call(state_view: &str, pool_id: &str, at: &Value) -> (&'static str, Value) {
    let id = id_word(pool_id).unwrap_or_default();
    view_call(state_view, getSlot0Call { poolId: id }.abi_encode(), at)
}

/// [`slot0_call`]'s answer: the sqrt price and the tick.
pub fn decode_slot0(answer: Result<Value, RpcError>) -> Result<(U256, i32), String> {
    let slot0 = decoded::<getSlot0Call>(answer, 4, "getSlot0")?;
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

/// A v4 deployment's addresses, parsed.
struct Contracts {
    manager: Address,
    state_view: String,
    first_block: u64,
}

impl Contracts {
    fn of(d: &Deployment) -> Result<Contracts, String> {
        let manager = d.position_manager.as_deref().ok_or("no position manager")?;
        Ok(Contracts {
            manager: parse_address(manager)?,
            state_view: d.state_view.clone().ok_or("no state view")?,
            first_block: d.first_block.unwrap_or(0),
        })
    }
}

/// What the enumeration may start from: the ids a wallet's last read found on the manager.
pub struct Known<'a> {
    pub tokens: &'a [String],
    /// Blocks one `eth_getLogs` of the back-scan asks for at most.
    pub log_range: u64,
}

/// The ids of the manager's positions `wallet` holds at `block`: its known ones it still
/// holds, and, where `balanceOf` says there are more, those of the `Transfer` logs to it since
/// the manager's first block that it still holds. How many past the cap were not read.
async fn token_ids(
    rpc: &RpcClient,
    c: &Contracts,
    wallet: Address,
    known: &Known<'_>,
    block: &Block,
) -> Result<(Vec<U256>, u64), String> {
    let balance = rpc
        .batch(&[call(c.manager, balanceOfCall { owner: wallet }.abi_encode(), block)])
        .await
        .pop()
        .ok_or("balanceOf: no answer")?;
    let held = decoded::<balanceOfCall>(balance, 1, "balanceOf")?;
    let held = u64::try_from(held).unwrap_or(u64::MAX);
    if held == 0 {
        return Ok((Vec::new(), 0));
    }
    let manager = c.manager.to_checksum(None);
    let candidates: BTreeSet<U256> = known
        .tokens
        .iter()
        .filter_map(|key| key.split_once('#'))
        .filter(|(m, _)| m.eq_ignore_ascii_case(&manager))
        .filter_map(|(_, id)| id.parse().ok())
        .collect();
    let mut owned = owned_of(rpc, c.manager, &candidates, wallet, block).await?;
    if (owned.len() as u64) < held {
        let arrived = transfers_to(rpc, c, wallet, block, known.log_range).await?;
        let new: BTreeSet<U256> = arrived.difference(&candidates).copied().collect();
        owned.extend(owned_of(rpc, c.manager, &new, wallet, block).await?);
    }
    owned.sort_unstable();
    owned.dedup();
    let count = owned.len() as u64;
    let cap = MAX_POSITIONS_PER_MANAGER.min(count);
    // Past the cap, the newest (highest ids) first, as the v3 read does.
    let kept = owned.split_off((count - cap) as usize);
    Ok((kept, held.saturating_sub(cap)))
}

/// Of `ids`, those `wallet` owns at `block` (one batch of `ownerOf`; a burned id reverts).
async fn owned_of(
    rpc: &RpcClient,
    manager: Address,
    ids: &BTreeSet<U256>,
    wallet: Address,
    block: &Block,
) -> Result<Vec<U256>, String> {
    let calls: Vec<_> = ids
        .iter()
        .map(|id| {
            let token_id = alloy_primitives::U256::from_limbs(*id.as_limbs());
            call(manager, ownerOfCall { tokenId: token_id }.abi_encode(), block)
        })
        .collect();
    let mut owned = Vec::new();
    for (id, answer) in ids.iter().zip(rpc.batch(&calls).await) {
        match answer {
            Err(RpcError::Rpc { message, .. })
                if message.to_ascii_lowercase().contains("revert") => {}
            answer => {
                if decoded::<ownerOfCall>(answer, 1, "ownerOf")? == wallet {
                    owned.push(*id);
                }
            }
        }
    }
    Ok(owned)
}

/// The token ids of every manager `Transfer` to `wallet` from the manager's first block to
/// `block`, in log-range chunks (a chunk refused for its size read again in halves).
async fn transfers_to(
    rpc: &RpcClient,
    c: &Contracts,
    wallet: Address,
    block: &Block,
    log_range: u64,
) -> Result<BTreeSet<U256>, String> {
    let manager = c.manager.to_checksum(None);
    let to = super::history::word_topic(U256::from_be_slice(wallet.as_slice()));
    let read = read_ranges(c.first_block, block.number, log_range, |(start, end)| {
        let filter = json!([{
            "address": manager,
            "fromBlock": format!("0x{start:x}"),
            "toBlock": format!("0x{end:x}"),
            "topics": [topic(TRANSFER), null, to],
        }]);
        async move {
            let logs = rpc.call("eth_getLogs", filter).await.map_err(Refused::from)?;
            let logs = logs
                .as_array()
                .ok_or_else(|| Refused::Other("eth_getLogs answered no list".into()))?;
            Ok(logs
                .iter()
                .filter_map(|log| log.get("topics")?.as_array()?.get(3)?.as_str().map(str::to_string))
                .filter_map(|t| hex_bytes(&Value::String(t)).ok())
                .filter(|b| b.len() == 32)
                .map(|b| U256::from_be_slice(&b))
                .collect::<Vec<_>>())
        }
    })
    .await;
    match read.stopped {
        Some(reason) => Err(format!("the v4 back-scan stopped: {reason}")),
        None => Ok(read.found.into_iter().collect()),
    }
}

/// Every v4 position `wallet` holds on the deployment at `block`, read as v3 ones are; those
/// whose pool or currencies cannot be read (or whose hook may change what they pay) left out
/// with the reason.
pub async fn read_positions(
    rpc: &RpcClient,
    deployment: &Deployment,
    wallet: &str,
    known: &Known<'_>,
    block: &Block,
) -> Result<(Vec<ChainPosition>, Vec<Unread>, u64), String> {
    let c = Contracts::of(deployment)?;
    let wallet = parse_address(wallet)?;
    let (ids, not_read) = token_ids(rpc, &c, wallet, known, block).await?;
    let manager = c.manager.to_checksum(None);
    // Each position's key, ticks and liquidity.
    let mut calls = Vec::with_capacity(ids.len() * 2);
    for id in &ids {
        let token_id = alloy_primitives::U256::from_limbs(*id.as_limbs());
        let info = getPoolAndPositionInfoCall { tokenId: token_id };
        calls.push(call(c.manager, info.abi_encode(), block));
        let liquidity = getPositionLiquidityCall { tokenId: token_id };
        calls.push(call(c.manager, liquidity.abi_encode(), block));
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    let mut held = Vec::with_capacity(ids.len());
    for id in &ids {
        let (info, liquidity) = (answers.next(), answers.next());
        let info = decoded::<getPoolAndPositionInfoCall>(
            info.ok_or("no answer")?,
            6,
            "getPoolAndPositionInfo",
        )?;
        let liquidity = decoded::<getPositionLiquidityCall>(
            liquidity.ok_or("no answer")?,
            1,
            "getPositionLiquidity",
        )?;
        let ticks = unpack_ticks(to_u256(info.info));
        held.push((*id, info.poolKey, ticks, liquidity));
    }
    // Per pool its state with its positions' bounds; per position its fee growth at the last
    // modification; per currency its metadata (native: ETH, 18 decimals): one batch.
    let mut bounds: BTreeMap<String, (V4PoolKey, Vec<i32>)> = BTreeMap::new();
    for (_, key, (lower, upper), _) in &held {
        let entry = bounds
            .entry(pool_id(key))
            .or_insert_with(|| (key.clone(), Vec::new()));
        entry.1.extend([*lower, *upper]);
    }
    let mut currencies: Vec<Address> = held
        .iter()
        .flat_map(|(_, k, _, _)| [k.currency0, k.currency1])
        .filter(|a| *a != Address::ZERO)
        .collect();
    currencies.sort_unstable();
    currencies.dedup();
    let here = at(block);
    let mut calls = Vec::new();
    for (id, (_, ticks)) in &mut bounds {
        ticks.sort_unstable();
        ticks.dedup();
        calls.extend(pool_calls(&c.state_view, id, ticks, &here));
    }
    for (id, key, (lower, upper), _) in &held {
        let data = getPositionInfoCall {
            poolId: id_word(&pool_id(key))?,
            owner: c.manager,
            tickLower: alloy_sol_types::private::primitives::aliases::I24::try_from(*lower)
                .unwrap_or_default(),
            tickUpper: alloy_sol_types::private::primitives::aliases::I24::try_from(*upper)
                .unwrap_or_default(),
            salt: B256::from(id.to_be_bytes::<32>()),
        };
        calls.push(view_call(&c.state_view, data.abi_encode(), &here));
    }
    for currency in &currencies {
        calls.push(call(*currency, decimalsCall {}.abi_encode(), block));
        calls.push(call(*currency, symbolCall {}.abi_encode(), block));
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    let mut states = BTreeMap::new();
    for (id, (_, ticks)) in &bounds {
        let own: Vec<_> = answers.by_ref().take(STATE_CALLS + ticks.len()).collect();
        let state = decode_state(own, ticks, block, Utc::now())
            .map_err(|e| format!("pool {id}: {e}"));
        states.insert(id.clone(), state);
    }
    let mut lasts = Vec::with_capacity(held.len());
    for _ in &held {
        let answer = answers.next().ok_or("getPositionInfo: no answer")?;
        let info = decoded::<getPositionInfoCall>(answer, 3, "getPositionInfo")?;
        lasts.push([
            to_u256(info.feeGrowthInside0LastX128),
            to_u256(info.feeGrowthInside1LastX128),
        ]);
    }
    let mut metadata: BTreeMap<Address, Result<TokenMeta, String>> = BTreeMap::new();
    metadata.insert(
        Address::ZERO,
        Ok(TokenMeta {
            address: NATIVE.to_string(),
            symbol: "ETH".into(),
            decimals: 18,
        }),
    );
    for currency in &currencies {
        let (decimals, symbol) = (answers.next(), answers.next());
        let address = currency.to_checksum(None);
        let meta = decimals
            .ok_or("decimals: no answer".to_string())
            .and_then(|a| decoded::<decimalsCall>(a, 1, "decimals"))
            .map(|decimals| TokenMeta {
                symbol: symbol
                    .ok_or("no answer".to_string())
                    .and_then(symbol_of)
                    .unwrap_or_else(|_| format!("{}…{}", &address[..6], &address[address.len() - 4..])),
                address: address.clone(),
                decimals,
            })
            .map_err(|e| format!("token {address}: {e}"));
        metadata.insert(*currency, meta);
    }
    let mut positions = Vec::new();
    let mut unread = Vec::new();
    for ((token_id, key, (lower, upper), liquidity), last) in held.into_iter().zip(lasts) {
        let id = pool_id(&key);
        let read = (|| -> Result<ChainPosition, String> {
            let hooks = key.hooks.to_checksum(None);
            if hook_returns_deltas(&hooks) {
                return Err(format!(
                    "pool {id}: its hook {hooks} may return deltas, so what the position pays is the hook's to say"
                ));
            }
            let state = states[&id].clone()?;
            let meta = |a: &Address| metadata[a].clone();
            let spacing = key.tickSpacing.as_i32();
            plausible_range(Curve::UniswapV3, lower, upper, spacing)
                .map_err(|e| format!("position {token_id}: {e}"))?;
            let fee = key.fee.to::<u32>();
            Ok(position_at(
                (&manager, token_id, id.clone()),
                (fee, spacing, (lower, upper), liquidity),
                [meta(&key.currency0)?, meta(&key.currency1)?],
                last,
                state,
            )?)
        })();
        match read {
            Ok(position) => positions.push(position),
            Err(reason) => {
                tracing::warn!(token = %token_id, %reason, "a v4 position left out of its read");
                unread.push(Unread {
                    manager: manager.clone(),
                    token_id,
                    reason,
                });
            }
        }
    }
    Ok((positions, unread, not_read))
}

/// What each of the position's modifications (`events` with `paid`, from
/// `history::position_events`) moved, read at its block in one batch: the fees it paid out,
/// `(feeGrowthInsideLast after − before) × liquidity before / 2^128` from the manager's
/// position in the pool manager at the block before and at its own (exact while one
/// modification of the position is in a block), and the principal its liquidity delta holds
/// at the pool's price at its block (rounded up for a deposit, down for a withdrawal, as the
/// pool does).
pub async fn value_modifications(
    rpc: &RpcClient,
    (state_view, pool_id, manager): (&str, &str, &str),
    (lower, upper): (i32, i32),
    token_id: U256,
    events: &mut [crate::domain::history::PositionEvent],
) -> Result<(), String> {
    let id = id_word(pool_id)?;
    let info = getPositionInfoCall {
        poolId: id,
        owner: parse_address(manager)?,
        tickLower: alloy_sol_types::private::primitives::aliases::I24::try_from(lower)
            .map_err(|_| "a tick outside int24")?,
        tickUpper: alloy_sol_types::private::primitives::aliases::I24::try_from(upper)
            .map_err(|_| "a tick outside int24")?,
        salt: B256::from(token_id.to_be_bytes::<32>()),
    }
    .abi_encode();
    let modifications: Vec<usize> = (0..events.len())
        .filter(|i| events[*i].paid.is_some())
        .collect();
    let mut calls = Vec::with_capacity(modifications.len() * 3);
    for i in &modifications {
        let e = &events[*i];
        let before = json!({"blockNumber": format!("0x{:x}", e.block.saturating_sub(1))});
        let own = json!({"blockHash": e.block_hash});
        calls.push(view_call(state_view, info.clone(), &before));
        calls.push(view_call(state_view, info.clone(), &own));
        calls.push(slot0_call(state_view, pool_id, &own));
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    let mut next = || answers.next().unwrap_or(Err(RpcError::Malformed("no answer")));
    let curve = Curve::UniswapV3;
    let bad = |e: crate::domain::math::MathError| e.to_string();
    let (lower_price, upper_price) = (
        curve.sqrt_price_at_tick(lower).map_err(bad)?,
        curve.sqrt_price_at_tick(upper).map_err(bad)?,
    );
    for i in modifications {
        let before = decoded::<getPositionInfoCall>(next(), 3, "getPositionInfo")?;
        let after = decoded::<getPositionInfoCall>(next(), 3, "getPositionInfo")?;
        let (sqrt_price, _) = decode_slot0(next())?;
        let event = &mut events[i];
        let lasts = |p: &IStateView::getPositionInfoReturn| {
            [
                to_u256(p.feeGrowthInside0LastX128),
                to_u256(p.feeGrowthInside1LastX128),
            ]
        };
        let (from, to) = (lasts(&before), lasts(&after));
        let paid = [0, 1].map(|t| {
            U256::from(FeeAccounting::Evm.collect_owed(before.liquidity, from[t], to[t]))
        });
        let principal = curve
            .amounts_for_liquidity(
                sqrt_price,
                lower_price,
                upper_price,
                event.liquidity,
                event.kind == crate::domain::history::EventKind::Deposit,
            )
            .map_err(bad)?;
        event.paid = Some(paid);
        event.amounts = match event.kind {
            crate::domain::history::EventKind::Collect => paid,
            _ => [principal.amount0, principal.amount1],
        };
        if event.kind == crate::domain::history::EventKind::Collect {
            // A zero decrease pays fees only: its amounts are the payment, as a v3 collect's.
            event.paid = None;
        }
    }
    Ok(())
}

/// The position's amounts and fees at the pool's state: what a full decrease and what a zero
/// decrease would pay (no tokens owed: v4 pays fees out at each modification).
fn position_at(
    (manager, token_id, pool): (&str, U256, String),
    (fee, spacing, (lower, upper), liquidity): (u32, i32, (i32, i32), u128),
    [token0, token1]: [TokenMeta; 2],
    last: [U256; 2],
    state: PoolState,
) -> Result<ChainPosition, String> {
    let curve = Curve::UniswapV3;
    let bad = |e: crate::domain::math::MathError| format!("position {token_id}: {e}");
    let amounts = curve
        .amounts_for_liquidity(
            state.sqrt_price,
            curve.sqrt_price_at_tick(lower).map_err(bad)?,
            curve.sqrt_price_at_tick(upper).map_err(bad)?,
            liquidity,
            false,
        )
        .map_err(bad)?;
    let bound = |tick: i32, token: usize| {
        let read = state.ticks.iter().find(|t| t.tick == tick);
        BoundTick {
            tick,
            initialized: read.is_some_and(|t| t.initialized),
            outside: read.map_or(U256::ZERO, |t| {
                [t.fee_growth_outside0, t.fee_growth_outside1][token]
            }),
        }
    };
    let globals = [state.fee_growth_global0, state.fee_growth_global1];
    let fees = [0, 1].map(|token| {
        let inside = FeeAccounting::Evm.growth_inside(
            state.tick,
            globals[token],
            bound(lower, token),
            bound(upper, token),
        );
        FeeAccounting::Evm.collect_owed(liquidity, last[token], inside)
    });
    Ok(ChainPosition {
        protocol: Protocol::UniswapV4,
        manager: manager.to_string(),
        token_id,
        pool,
        fee,
        token0,
        token1,
        tick_lower: lower,
        tick_upper: upper,
        tick_spacing: spacing,
        liquidity,
        amounts: [amounts.amount0, amounts.amount1],
        fees,
        fee_growth_inside_last: last,
        tokens_owed: [0, 0],
        state,
        staked: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_ticks_unpack_sign_extended() {
        // PositionInfo: poolId (200 bits) | tickUpper (24) | tickLower (24) | hasSubscriber (8).
        let pack = |lower: i32, upper: i32| {
            let t = |v: i32| U256::from((v as u32) & 0xff_ffff);
            (t(upper) << 32) | (t(lower) << 8) | U256::from(1u8) | (U256::from(0xabcdu32) << 56)
        };
        for (lower, upper) in [(-887_220, 887_220), (79_020, 81_060), (-81_000, -79_000), (-1, 0)] {
            assert_eq!(unpack_ticks(pack(lower, upper)), (lower, upper));
        }
    }

    #[test]
    fn a_pool_id_is_the_hash_of_its_encoded_key() {
        // The devnet's ETH/USDC pool (devnet/v4.mjs computes it with ethers' abi coder).
        let key = V4PoolKey {
            currency0: Address::ZERO,
            currency1: "0x5FbDB2315678afecb367f032d93F642f64180aa3".parse().unwrap(),
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
        assert!(hook_returns_deltas("0x0000000000000000000000000000000000000001"));
        assert!(hook_returns_deltas("0x000000000000000000000000000000000000000c"));
        assert!(!hook_returns_deltas("0x0000000000000000000000000000000000000c00"));
    }
}
