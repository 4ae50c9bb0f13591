//! Aerodrome Slipstream's own reads: its factory's pools keyed by tick spacing, and a wallet's
//! positions staked in gauges. Staking is custodial: the gauge
//! holds the NFT, so the manager's enumeration no longer lists it, and no farm enumerates
//! by index as MasterChefV3 does. Each pool has its own gauge (`pool.gauge()`, zero where none
//! was created); `gauge.stakedValues(wallet)` lists the wallet's ids there, `gauge.nft()` names
//! the manager they are on, `gauge.rewardToken()` the reward (AERO) and
//! `gauge.earned(wallet, tokenId)` what is pending. One batch at the read's block (one call a
//! gauge), a second where a gauge lists any (two calls a gauge listing some, one a position), a
//! third before them where a pool's gauge is not known from its synced state.

use super::evm::{self, call, decoded, Block};
use super::logs::{decode_log, topic, GAUGE_CLAIM, GAUGE_WITHDRAW, TRANSFER};
use super::rpc::{RpcClient, RpcError};
use super::staking::Stake;
use crate::domain::catalog::Catalog;
use crate::domain::history::{EventKind, PositionEvent};
use crate::domain::math::U256;
use crate::domain::model::{Chain, Position};
use alloy_primitives::Address;
use alloy_sol_types::{sol, SolCall};
use serde_json::Value;
use std::collections::BTreeMap;

sol! {
    /// Slipstream's factory keys its pools by tick spacing.
    interface ISlipstreamFactory {
        function getPool(address tokenA, address tokenB, int24 tickSpacing) external view returns (address);
    }
    interface ISlipstreamGauged {
        function gauge() external view returns (address);
    }
    interface ICLGauge {
        function nft() external view returns (address);
        function rewardToken() external view returns (address);
        function stakedValues(address depositor) external view returns (uint256[]);
        function earned(address account, uint256 tokenId) external view returns (uint256);
        function getReward(uint256 tokenId) external;
    }
}

use ICLGauge::{earnedCall, nftCall, rewardTokenCall, stakedValuesCall};

/// The factory's `getPool` of a Slipstream position's tokens and its fifth word, the pool's
/// tick spacing.
pub fn get_pool(token0: Address, token1: Address, spacing: u32) -> Vec<u8> {
    let spacing = i32::try_from(spacing).unwrap_or(i32::MAX);
    let tick_spacing = alloy_sol_types::private::primitives::aliases::I24::try_from(spacing);
    ISlipstreamFactory::getPoolCall {
        tokenA: token0,
        tokenB: token1,
        tickSpacing: tick_spacing.unwrap_or_default(),
    }
    .abi_encode()
}

/// What a pool without a gauge answers `gauge()`.
pub const NO_GAUGE: &str = "0x0000000000000000000000000000000000000000";

/// The gauge of a Slipstream `pool` at `block` (zero where none was created): where its
/// positions are staked, so that a transfer there is a stake, not a disposal.
pub async fn gauge_of(rpc: &RpcClient, pool: &str, block: &Block) -> Result<String, String> {
    let pool =
        crate::domain::wallets::address::evm_address(pool).map_err(|e| format!("{pool}: {e}"))?;
    let asked = call(pool, ISlipstreamGauged::gaugeCall {}.abi_encode(), block);
    let answer = rpc.call(asked.0, asked.1).await;
    let gauge = decoded::<ISlipstreamGauged::gaugeCall>(answer, 1, "gauge")?;
    Ok(gauge.to_checksum(None))
}

/// A Slipstream position's pool's gauge, as the pool's sync read it, else from the chain at
/// `block` (`None` where the pool has none, or the position is no Slipstream one).
pub async fn position_gauge(
    rpc: &RpcClient,
    catalog: &Catalog,
    position: &Position,
    block: &Block,
) -> Result<Option<String>, String> {
    if !position.protocol.is_slipstream() {
        return Ok(None);
    }
    let pool = catalog.find(position.chain, position.protocol, &position.pool);
    if let Some(own) = pool.and_then(|p| p.state.as_ref()?.slipstream.as_ref()) {
        return Ok(own.gauge.clone());
    }
    let gauge = gauge_of(rpc, &position.pool, block).await?;
    Ok((!gauge.eq_ignore_ascii_case(NO_GAUGE)).then_some(gauge))
}

/// What the gauges of the asked pools hold for a wallet.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GaugeStakes {
    /// By `(manager, tokenId)`: the gauge (as the stake's farm) and `earned` at the block.
    pub stakes: BTreeMap<(Address, U256), Stake>,
    /// Each gauge's reward token.
    pub reward_tokens: BTreeMap<Address, Address>,
    /// Ids past the per-manager cap, not read.
    pub not_read: u64,
}

/// A Slipstream pool a wallet's positions may be staked in the gauge of: the gauge where its
/// synced state names it (`None`: asked of the pool).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GaugedPool<'a> {
    pub pool: &'a str,
    pub gauge: Option<&'a str>,
}

/// The gauges a Slipstream position on `chain` may be staked in: those of its Slipstream pools,
/// the catalog's and those a wallet's read found (held before it was staked), as their synced
/// states name them (a pool not read yet is asked; one without a gauge is not).
pub fn gauged_pools(catalog: &Catalog, chain: Chain) -> Vec<GaugedPool<'_>> {
    catalog
        .pools
        .iter()
        .filter(|p| p.chain == chain && p.protocol.is_slipstream())
        .filter_map(|p| {
            let pool = p.id.as_str();
            match p.state.as_ref().and_then(|s| s.slipstream.as_ref()) {
                Some(own) => own.gauge.as_deref().map(|g| GaugedPool {
                    pool,
                    gauge: Some(g),
                }),
                None => Some(GaugedPool { pool, gauge: None }),
            }
        })
        .collect()
}

/// The wallet's positions staked in the gauges of `pools`, at `block`. A pool whose gauge is not
/// known is asked (`gauge()`); one that answers none, or reverts (no Slipstream pool), is passed
/// over. A node that fails to answer, or a gauge that fails, fails the read (the caller fails
/// the Slipstream deployments: a staked position missing from a read would close as
/// transferred).
pub async fn staked_in_gauges(
    rpc: &RpcClient,
    pools: &[GaugedPool<'_>],
    wallet: Address,
    block: &Block,
    cap: u64,
) -> Result<GaugeStakes, String> {
    let mut found = GaugeStakes::default();
    let address = |text: &str| {
        crate::domain::wallets::address::evm_address(text).map_err(|e| format!("{text}: {e}"))
    };
    let mut gauges = Vec::new();
    let mut unknown = Vec::new();
    for pool in pools {
        match pool.gauge {
            Some(gauge) => gauges.push(address(gauge)?),
            None => unknown.push(address(pool.pool)?),
        }
    }
    let calls: Vec<_> = unknown
        .iter()
        .map(|p| call(*p, ISlipstreamGauged::gaugeCall {}.abi_encode(), block))
        .collect();
    if !calls.is_empty() {
        for answer in rpc.batch(&calls).await {
            if let Err(e) = &answer {
                if super::simulation::reverted(e).is_none() {
                    return Err(format!("gauge: {e}"));
                }
            }
            if let Ok(gauge) = decoded::<ISlipstreamGauged::gaugeCall>(answer, 1, "gauge") {
                gauges.push(gauge);
            }
        }
    }
    gauges.retain(|gauge| *gauge != Address::ZERO);
    gauges.sort_unstable();
    gauges.dedup();
    if gauges.is_empty() {
        return Ok(found);
    }
    // What each gauge lists for the wallet (one call a gauge), then only where it lists any:
    // the gauge's manager, its reward token and what each listed position has earned.
    let calls: Vec<_> = gauges
        .iter()
        .map(|g| {
            call(
                *g,
                stakedValuesCall { depositor: wallet }.abi_encode(),
                block,
            )
        })
        .collect();
    let mut listed = Vec::new();
    for (gauge, answer) in gauges.iter().zip(rpc.batch(&calls).await) {
        let ids =
            staked_ids(answer).map_err(|e| format!("gauge {}: {e}", gauge.to_checksum(None)))?;
        // The newest first past the cap, as a manager's enumeration.
        let skip = (ids.len() as u64).saturating_sub(cap);
        found.not_read += skip;
        let ids: Vec<U256> = ids.into_iter().skip(skip as usize).collect();
        if !ids.is_empty() {
            listed.push((*gauge, ids));
        }
    }
    let mut calls = Vec::new();
    for (gauge, ids) in &listed {
        calls.push(call(*gauge, nftCall {}.abi_encode(), block));
        calls.push(call(*gauge, rewardTokenCall {}.abi_encode(), block));
        for id in ids {
            let token_id = alloy_primitives::U256::from_limbs(*id.as_limbs());
            let data = earnedCall {
                account: wallet,
                tokenId: token_id,
            };
            calls.push(call(*gauge, data.abi_encode(), block));
        }
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    for (gauge, ids) in listed {
        let why = |e: String| format!("gauge {}: {e}", gauge.to_checksum(None));
        let manager = decoded::<nftCall>(evm::next_answer(&mut answers), 1, "nft").map_err(why)?;
        let reward = decoded::<rewardTokenCall>(evm::next_answer(&mut answers), 1, "rewardToken")
            .map_err(why)?;
        found.reward_tokens.insert(gauge, reward);
        for id in ids {
            let earned =
                decoded::<earnedCall>(evm::next_answer(&mut answers), 1, "earned").map_err(why)?;
            let stake = Stake {
                farm: gauge,
                rewards_pending: U256::from_limbs(*earned.as_limbs()),
            };
            found.stakes.insert((manager, id), stake);
        }
    }
    Ok(found)
}

/// `stakedValues`' answer: a dynamic array of ids, decoded strictly (its offset, its length,
/// then exactly that many words).
fn staked_ids(answer: Result<Value, RpcError>) -> Result<Vec<U256>, String> {
    let answer = answer.map_err(|e| format!("stakedValues: {e}"))?;
    let data = evm::hex_bytes(&answer).map_err(|e| format!("stakedValues: {e}"))?;
    let length = data
        .get(32..64)
        .map(|w| alloy_primitives::U256::from_be_slice(w));
    let words = length
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| n.checked_add(2))
        .ok_or("stakedValues: undecodable answer")?;
    let ids = evm::strict::<stakedValuesCall>(&data, words)
        .map_err(|_| "stakedValues: undecodable answer".to_string())?;
    Ok(ids
        .into_iter()
        .map(|id| U256::from_limbs(*id.as_limbs()))
        .collect())
}

/// The position's harvests among a gauge's `ClaimRewards` to its holder over a range, as
/// `Harvest` events (the reward in AERO's base units): a claim names no token id, so it is the
/// position's where its transaction withdrew the position from the gauge (the gauge's
/// `Withdraw` of the token id after it, the nearest), or where its transaction is the holder's
/// own `getReward(tokenId)` call of the gauge (its input read, one batch for the claims left).
/// A claim made through another contract's call is not told apart: it is left out.
pub(super) async fn gauge_harvests(
    rpc: &RpcClient,
    (claims, withdrawals): (&[Value], &[Value]),
    (gauge, token_id): (&str, U256),
    range: (u64, u64),
) -> Result<Vec<PositionEvent>, String> {
    let field = |log: &Value, name: &str| {
        log.get(name)
            .and_then(Value::as_str)
            .map(str::to_ascii_lowercase)
    };
    let index = |log: &Value| log.get("logIndex").and_then(evm::quantity);
    let mut harvests = Vec::new();
    let mut asked = Vec::new();
    for claim in claims {
        let event = claim_event(claim, gauge, range)?;
        let transaction = field(claim, "transactionHash");
        // The gauge's withdrawal of this token in the same transaction, right after the claim.
        let withdrawn = withdrawals.iter().any(|w| {
            field(w, "transactionHash") == transaction
                && index(w) > index(claim)
                && !claims.iter().any(|c| {
                    field(c, "transactionHash") == transaction
                        && index(c) > index(claim)
                        && index(c) < index(w)
                })
        });
        if withdrawn {
            harvests.push(event);
        } else {
            asked.push(event);
        }
    }
    if asked.is_empty() {
        return Ok(harvests);
    }
    let calls: Vec<_> = asked
        .iter()
        .map(|e| {
            (
                "eth_getTransactionByHash",
                serde_json::json!([e.transaction]),
            )
        })
        .collect();
    let token_id = alloy_primitives::U256::from_limbs(*token_id.as_limbs());
    let own = ICLGauge::getRewardCall { tokenId: token_id }.abi_encode();
    for (event, answer) in asked.into_iter().zip(rpc.batch(&calls).await) {
        let answer = answer.map_err(|e| format!("eth_getTransactionByHash: {e}"))?;
        let to = answer.get("to").and_then(Value::as_str).unwrap_or_default();
        let input = answer.get("input").map(evm::hex_bytes).transpose()?;
        if to.eq_ignore_ascii_case(gauge) && input.as_deref() == Some(own.as_slice()) {
            harvests.push(event);
        }
    }
    Ok(harvests)
}

/// A gauge's `ClaimRewards(owner, amount)` as a `Harvest` paid to its owner (strictly: two
/// topics, one word, its block within the range).
fn claim_event(log: &Value, gauge: &str, range: (u64, u64)) -> Result<PositionEvent, String> {
    let emitter = log
        .get("address")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !emitter.eq_ignore_ascii_case(gauge) {
        return Err(format!(
            "a ClaimRewards from {emitter}, not the position's gauge"
        ));
    }
    // Read as a Transfer-shaped log for its common fields, then made the harvest it is.
    let topics = log
        .get("topics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let data = log
        .get("data")
        .map(evm::hex_bytes)
        .transpose()?
        .unwrap_or_default();
    if topics.len() != 2 || data.len() != 32 {
        return Err("a ClaimRewards of another shape".into());
    }
    let mut shaped = log.clone();
    let zero = format!("0x{:064x}", 0);
    shaped["topics"] = serde_json::json!([topic(TRANSFER), topics[1], zero, zero]);
    shaped["data"] = Value::String("0x".into());
    let (_, _, mut event) = decode_log(&shaped, range)?;
    event.kind = EventKind::Harvest;
    event.reward = Some(U256::from_be_slice(&data));
    (event.from, event.to) = (None, event.from.take());
    Ok(event)
}

/// The filters of a gauge's logs the position's harvests are found among over a range: its
/// `ClaimRewards` to the holder, its `Withdraw`s of the token.
pub(super) fn harvest_filters(
    (gauge, holder): (&str, &str),
    token: &str,
    (start, end): (u64, u64),
) -> [(&'static str, Value); 2] {
    let holder = format!(
        "0x{:0>64}",
        holder.trim_start_matches("0x").to_ascii_lowercase()
    );
    let range = |topics: Value| {
        (
            "eth_getLogs",
            serde_json::json!([{
                "address": gauge,
                "fromBlock": format!("0x{start:x}"),
                "toBlock": format!("0x{end:x}"),
                "topics": topics,
            }]),
        )
    };
    [
        range(serde_json::json!([topic(GAUGE_CLAIM), holder])),
        range(serde_json::json!([topic(GAUGE_WITHDRAW), null, token])),
    ]
}
