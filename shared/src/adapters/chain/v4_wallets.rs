//! A wallet's Uniswap v4 positions (decision 62). The `PositionManager` is not enumerable: a
//! wallet's positions are its stored ones asked `ownerOf`, and where `balanceOf` says it holds
//! more, the ids of the manager's `Transfer` logs to it (a back-scan in log-range chunks from
//! the read's block back towards the manager's first block, stopping once it found them all),
//! each confirmed by `ownerOf`. A position reads as a v3 one: its
//! key and packed ticks (`getPoolAndPositionInfo`), its liquidity, and its fee growth inside at
//! the last modification (`getPositionInfo` of the manager's position, salted by the token
//! id); there is no `tokensOwed`: v4 pays the accrued fees out at every modification. A
//! history's modifications are valued here at their blocks.

use super::evm::{call, decoded, hex_bytes, next_answer, Block};
use super::history::{topic, word_topic, Refused, TRANSFER};
use super::rpc::RpcClient;
use super::tokens::{symbol_of, TokenMeta};
use super::trust::plausible_range;
use super::v4::{
    decode_slot0, decode_state, hook_returns_deltas, id_word, pool_calls, pool_id, slot0_call,
    to_u256, unpack_ticks, view_call, IErc20Meta, IStateView, IV4PositionManager, V4PoolKey,
    STATE_CALLS,
};
use super::wallets::{owners_of, ChainPosition, Unread, MAX_POSITIONS_PER_MANAGER};
use crate::domain::catalog::{Deployment, NATIVE};
use crate::domain::history::{EventKind, Kept, PositionEvent};
use crate::domain::holdings::held_at;
use crate::domain::market::PoolState;
use crate::domain::math::fees::FeeAccounting;
use crate::domain::math::{Curve, U256};
use crate::domain::model::Protocol;
use alloy_primitives::{Address, B256};
use alloy_sol_types::SolCall;
use chrono::Utc;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

use IErc20Meta::{decimalsCall, symbolCall};
use IStateView::getPositionInfoCall;
use IV4PositionManager::{balanceOfCall, getPoolAndPositionInfoCall, getPositionLiquidityCall};

fn parse_address(text: &str) -> Result<Address, String> {
    crate::domain::wallets::address::evm_address(text).map_err(|e| format!("{text}: {e}"))
}

fn at(block: &Block) -> Value {
    json!({"blockHash": block.hash})
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
/// holds, and, where `balanceOf` says there are more, those the back-scan finds. How many past
/// the cap were not read.
async fn token_ids(
    rpc: &RpcClient,
    c: &Contracts,
    wallet: Address,
    known: &Known<'_>,
    block: &Block,
) -> Result<(Vec<U256>, u64), String> {
    let balance = rpc
        .batch(&[call(
            c.manager,
            balanceOfCall { owner: wallet }.abi_encode(),
            block,
        )])
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
    let mut seen = candidates;
    let scan = (block, known.log_range);
    back_scan(rpc, c, (wallet, held), scan, &mut seen, &mut owned).await?;
    owned.sort_unstable();
    owned.dedup();
    let count = owned.len() as u64;
    let cap = MAX_POSITIONS_PER_MANAGER.min(count);
    // Past the cap, the newest (highest ids) first, as the v3 read does.
    let kept = owned.split_off((count - cap) as usize);
    Ok((kept, held.saturating_sub(cap)))
}

/// Of `ids`, those `wallet` owns at `block` (one batch of `ownerOf`; a burned id has none).
async fn owned_of(
    rpc: &RpcClient,
    manager: Address,
    ids: &BTreeSet<U256>,
    wallet: Address,
    block: &Block,
) -> Result<Vec<U256>, String> {
    let manager = manager.to_checksum(None);
    let tokens: Vec<(String, U256)> = ids.iter().map(|id| (manager.clone(), *id)).collect();
    let wallet = wallet.to_checksum(None);
    let owners = owners_of(rpc, &tokens, block).await?;
    Ok(ids
        .iter()
        .zip(owners)
        .filter(|(_, owner)| owner.as_deref() == Some(wallet.as_str()))
        .map(|(id, _)| *id)
        .collect())
}

/// The back-scan: newest first, the ids of the manager's `Transfer` logs to `wallet` in
/// log-range chunks from `block` back to the manager's first block, each id not `seen` before
/// (a candidate only: whatever a log says, `ownerOf` decides) asked `ownerOf` (added to `owned` where the wallet holds it); it stops as soon as `owned`
/// reaches `held` (a position that arrived last costs one chunk), a chunk refused for its size
/// read again halved.
async fn back_scan(
    rpc: &RpcClient,
    c: &Contracts,
    (wallet, held): (Address, u64),
    (block, log_range): (&Block, u64),
    seen: &mut BTreeSet<U256>,
    owned: &mut Vec<U256>,
) -> Result<(), String> {
    let manager = c.manager.to_checksum(None);
    let to = word_topic(U256::from_be_slice(wallet.as_slice()));
    let mut range = log_range.max(1);
    let mut end = block.number;
    while (owned.len() as u64) < held && end >= c.first_block {
        let start = end.saturating_sub(range - 1).max(c.first_block);
        let filter = json!([{
            "address": manager,
            "fromBlock": format!("0x{start:x}"),
            "toBlock": format!("0x{end:x}"),
            "topics": [topic(TRANSFER), null, to],
        }]);
        let logs = match rpc.call("eth_getLogs", filter).await.map_err(Refused::from) {
            Ok(logs) => logs,
            Err(Refused::TooLarge(_)) if start < end => {
                range = (end - start).div_ceil(2).max(1);
                continue;
            }
            Err(Refused::TooLarge(e) | Refused::Other(e)) => {
                return Err(format!(
                    "the v4 back-scan stopped at blocks {start}-{end}: {e}"
                ));
            }
        };
        let ids = logs
            .as_array()
            .ok_or("the v4 back-scan: eth_getLogs answered no list")?
            .iter()
            .filter_map(|log| log.get("topics")?.as_array()?.get(3)?.as_str())
            .filter_map(|t| hex_bytes(&Value::String(t.to_string())).ok())
            .filter(|b| b.len() == 32)
            .map(|b| U256::from_be_slice(&b));
        let new: BTreeSet<U256> = ids.filter(|id| seen.insert(*id)).collect();
        owned.extend(owned_of(rpc, c.manager, &new, wallet, block).await?);
        let Some(before) = start.checked_sub(1) else {
            break;
        };
        end = before;
    }
    Ok(())
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
        let state =
            decode_state(own, ticks, block, Utc::now()).map_err(|e| format!("pool {id}: {e}"));
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
    let native = deployment.chain.native_symbol();
    metadata.insert(
        Address::ZERO,
        Ok(TokenMeta {
            address: NATIVE.to_string(),
            symbol: native.into(),
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
                    .unwrap_or_else(|_| {
                        format!("{}…{}", &address[..6], &address[address.len() - 4..])
                    }),
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
            let position = position_at(
                (&manager, token_id, id.clone()),
                (fee, spacing, (lower, upper), liquidity),
                [meta(&key.currency0)?, meta(&key.currency1)?],
                last,
                state,
            )?;
            let hooked = key.hooks != Address::ZERO;
            Ok(ChainPosition {
                hooks: hooked.then_some(hooks),
                ..position
            })
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
    events: &mut [PositionEvent],
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
    let mut next = || next_answer(&mut answers);
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
        let paid = [0, 1]
            .map(|t| U256::from(FeeAccounting::Evm.collect_owed(before.liquidity, from[t], to[t])));
        let principal = curve
            .amounts_for_liquidity(
                sqrt_price,
                lower_price,
                upper_price,
                event.liquidity,
                event.kind == EventKind::Deposit,
            )
            .map_err(bad)?;
        event.paid = Some(paid);
        // v4 pays what is owed at every modification: nothing owed after it.
        event.kept = Some(Kept {
            inside_last: to,
            owed: [U256::ZERO; 2],
        });
        event.amounts = match event.kind {
            EventKind::Collect => paid,
            _ => [principal.amount0, principal.amount1],
        };
        if event.kind == EventKind::Collect {
            // A zero decrease pays fees only: its amounts are the payment, as a v3 collect's.
            event.paid = None;
        }
    }
    Ok(())
}

/// What a zero decrease would have paid the position's holder at the block `at` (its hash):
/// the fees accrued since its last modification, `(feeGrowthInside − last) × liquidity / 2^128`
/// (v4 owes no principal: a withdrawal pays it at once). Where a transfer brought the position
/// to its holder, the arrival's `owed`.
pub async fn owed_at(
    rpc: &RpcClient,
    (state_view, pool_id, manager): (&str, &str, &str),
    (lower, upper): (i32, i32),
    token_id: U256,
    at: &str,
) -> Result<[U256; 2], String> {
    let id = id_word(pool_id)?;
    let tick = |t: i32| {
        alloy_sol_types::private::primitives::aliases::I24::try_from(t)
            .map_err(|_| "a tick outside int24".to_string())
    };
    let info = getPositionInfoCall {
        poolId: id,
        owner: parse_address(manager)?,
        tickLower: tick(lower)?,
        tickUpper: tick(upper)?,
        salt: B256::from(token_id.to_be_bytes::<32>()),
    };
    let inside = IStateView::getFeeGrowthInsideCall {
        poolId: id,
        tickLower: tick(lower)?,
        tickUpper: tick(upper)?,
    };
    let at = json!({"blockHash": at});
    let calls = [
        view_call(state_view, info.abi_encode(), &at),
        view_call(state_view, inside.abi_encode(), &at),
    ];
    let mut answers = rpc.batch(&calls).await.into_iter();
    let mut next = || next_answer(&mut answers);
    let position = decoded::<getPositionInfoCall>(next(), 3, "getPositionInfo")?;
    let inside = decoded::<IStateView::getFeeGrowthInsideCall>(next(), 2, "getFeeGrowthInside")?;
    let last = [
        to_u256(position.feeGrowthInside0LastX128),
        to_u256(position.feeGrowthInside1LastX128),
    ];
    let now = [
        to_u256(inside.feeGrowthInside0X128),
        to_u256(inside.feeGrowthInside1X128),
    ];
    Ok([0, 1]
        .map(|t| U256::from(FeeAccounting::Evm.collect_owed(position.liquidity, last[t], now[t]))))
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
    let (amounts, fees) = held_at(&state, (lower, upper), liquidity, last)
        .map_err(|e| format!("position {token_id}: {e}"))?;
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
        amounts,
        fees,
        fee_growth_inside_last: last,
        tokens_owed: [0, 0],
        state,
        staked: None,
        hooks: None,
    })
}
