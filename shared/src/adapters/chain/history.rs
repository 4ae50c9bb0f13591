//! A position's events read from its position manager with `eth_getLogs`: per block range (at
//! most the chain's configured size), one filter on the token id's topic 1 for
//! `IncreaseLiquidity`, `DecreaseLiquidity` and `Collect`, one on topic 3 for `Transfer`, both
//! in one batch; a range the provider refuses as too large or too many results is split in half
//! and read again. A Uniswap v4 position's liquidity changes are its pool manager's
//! `ModifyLiquidity` instead (filtered by pool and by the position manager as sender, its
//! unindexed salt matched to the token id). Each log is decoded strictly (the manager's own address, the event's topic
//! count and data length, this token id, words within their types) and kept only if its block
//! is the canonical one at its number: a reorged log is never kept. A read that fails part way
//! answers what it read before, and from where to go on.

use super::evm::{self, block_hash, hex_bytes, quantity};
use super::logs::block_hash_text;
pub(super) use super::logs::{
    decode_log, topic, word_topic, COLLECT, DECREASE, FARM_WITHDRAW, GAUGE_CLAIM, GAUGE_WITHDRAW,
    HARVEST, INCREASE, TRANSFER,
};
use super::rpc::{RpcClient, RpcError};
use super::slipstream::{gauge_harvests, harvest_filters};
use super::v4::MODIFY_LIQUIDITY;
use crate::domain::history::{EventKind, PositionEvent};
use crate::domain::math::U256;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub use crate::domain::market::DEFAULT_LOG_RANGE;

/// What a read of a position's events found: the events of `[from, through]` in chain order,
/// and why it stopped before the end it was asked for, if it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsRead {
    pub events: Vec<PositionEvent>,
    /// The last block read whole (`from - 1` when none was).
    pub through: u64,
    pub stopped: Option<String>,
}

/// Whether a provider refused a range for its size (its block span or its results), as the
/// common ones word it: then it is read again in halves. A rate limit is not one: halving
/// would only send more.
fn too_large(error: &RpcError) -> bool {
    let RpcError::Rpc { message, .. } = error else {
        return false;
    };
    let message = message.to_ascii_lowercase();
    let hints = [
        "more than",
        "too many results",
        "block range",
        "range too",
        "range is too",
        "too large",
        "response size",
        "max range",
    ];
    !message.contains("rate") && hints.iter().any(|hint| message.contains(hint))
}

/// Halvings one read may make before it stops and says so (a provider refusing every range).
const MAX_SPLITS: u32 = 256;

/// The position's events from block `from` through `to` (a block the sync reads at, its hash
/// known), in ranges of at most `max_range` blocks; with its deployment's `farm`, the farm's
/// harvests of it too (decision 60).
pub async fn position_events(
    rpc: &RpcClient,
    source: &Source<'_>,
    token_id: U256,
    from: u64,
    to: &evm::Block,
    max_range: u64,
) -> EventsRead {
    let ranges = read_ranges(from, to.number, max_range, |range| {
        range_events(rpc, source, token_id, range)
    })
    .await;
    let mut read = EventsRead {
        events: ranges.found,
        through: ranges.through,
        stopped: ranges.stopped,
    };
    // Only logs of canonical blocks: each log's block hash is the one at its number now.
    if let Err(reason) = canonical(rpc, &mut read, to).await {
        read.stopped = Some(reason);
    }
    read.events.sort_by_key(PositionEvent::order);
    read
}

/// The block of the position's mint (its `Transfer` from the zero address, found by its token
/// id's topic in one `eth_getLogs` over `[from, to]`), where the provider answers that in one
/// call; `None` otherwise (the history is then read from `from`, range by range). A new
/// position's history starts there, not at its manager's first block (issue 37).
pub async fn mint_block(
    rpc: &RpcClient,
    manager: &str,
    token_id: U256,
    (from, to): (u64, u64),
) -> Option<u64> {
    let zero = word_topic(U256::ZERO);
    let filter = json!([{
        "address": manager,
        "fromBlock": format!("0x{from:x}"),
        "toBlock": format!("0x{to:x}"),
        "topics": [topic(TRANSFER), zero, null, word_topic(token_id)],
    }]);
    let logs = rpc.call("eth_getLogs", filter).await.ok()?;
    logs.as_array()?
        .iter()
        .filter_map(|log| decode_log(log, (from, to)).ok())
        .filter(|(_, id, event)| *id == token_id && event.kind == EventKind::Mint)
        .map(|(_, _, event)| event.block)
        .min()
}

/// Why a provider did not answer a range: for its size (read again in halves) or otherwise.
pub(super) enum Refused {
    TooLarge(String),
    Other(String),
}

impl From<RpcError> for Refused {
    fn from(e: RpcError) -> Refused {
        if too_large(&e) {
            Refused::TooLarge(e.to_string())
        } else {
            Refused::Other(e.to_string())
        }
    }
}

/// What [`read_ranges`] found: everything of `[from, through]`, and why it stopped before the
/// end, if it did.
pub(super) struct RangesRead<T> {
    pub found: Vec<T>,
    pub through: u64,
    pub stopped: Option<String>,
}

/// Reads blocks `from` through `to` in ranges of at most `max_range` blocks, in order, with
/// `read_range`; a range refused for its size is read again as its two halves.
pub(super) async fn read_ranges<T, F, Fut>(
    from: u64,
    to: u64,
    max_range: u64,
    mut read_range: F,
) -> RangesRead<T>
where
    F: FnMut((u64, u64)) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<T>, Refused>>,
{
    let max_range = max_range.max(1);
    let mut read = RangesRead {
        found: Vec::new(),
        through: from.saturating_sub(1),
        stopped: None,
    };
    // Ranges still to read, nearest first; a refused one comes back as its two halves.
    let mut pending: Vec<(u64, u64)> = Vec::new();
    let mut start = from;
    while start <= to {
        let end = start.saturating_add(max_range - 1).min(to);
        pending.push((start, end));
        let Some(next) = end.checked_add(1) else {
            break;
        };
        start = next;
    }
    pending.reverse();
    let mut splits = 0;
    while let Some((start, end)) = pending.pop() {
        match read_range((start, end)).await {
            Ok(found) => {
                read.found.extend(found);
                read.through = end;
            }
            Err(Refused::TooLarge(_)) if start < end && splits < MAX_SPLITS => {
                splits += 1;
                let middle = start + (end - start) / 2;
                pending.push((middle + 1, end));
                pending.push((start, middle));
            }
            Err(Refused::TooLarge(reason) | Refused::Other(reason)) => {
                read.stopped = Some(format!("blocks {start}-{end}: {reason}"));
                break;
            }
        }
    }
    read
}

/// Where a position's events are: its manager, the farm it may be staked in, and for a
/// Uniswap v4 position its pool manager and pool id (its modifications are the pool
/// manager's `ModifyLiquidity`, not the position manager's events).
pub struct Source<'a> {
    pub manager: &'a str,
    pub farm: Option<&'a str>,
    pub v4: Option<(&'a str, &'a str)>,
    /// Aerodrome Slipstream: its pool's gauge and the position's holder (its harvests are the
    /// gauge's `ClaimRewards` to the holder, [`super::slipstream::gauge_harvests`]).
    pub gauge: Option<(&'a str, &'a str)>,
}

/// Both filters over one range, in one batch, decoded.
async fn range_events(
    rpc: &RpcClient,
    source: &Source<'_>,
    token_id: U256,
    (start, end): (u64, u64),
) -> Result<Vec<PositionEvent>, Refused> {
    let (manager, farm) = (source.manager, source.farm);
    let token = word_topic(token_id);
    let range = |address: &str, topics: Value| {
        json!([{
            "address": address,
            "fromBlock": format!("0x{start:x}"),
            "toBlock": format!("0x{end:x}"),
            "topics": topics,
        }])
    };
    let own = match source.v4 {
        // The salt (the token id) is not indexed: every modification of the pool by the
        // manager comes, the position's are kept.
        Some((pool_manager, pool_id)) => {
            let sender = format!("0x{:0>64}", manager.trim_start_matches("0x"));
            let topics = json!([
                topic(MODIFY_LIQUIDITY),
                pool_id,
                sender.to_ascii_lowercase()
            ]);
            range(pool_manager, topics)
        }
        None => range(
            manager,
            json!([[topic(INCREASE), topic(DECREASE), topic(COLLECT)], token]),
        ),
    };
    let mut calls = vec![
        ("eth_getLogs", own),
        (
            "eth_getLogs",
            range(manager, json!([topic(TRANSFER), null, null, token])),
        ),
    ];
    if let Some(farm) = farm {
        calls.push((
            "eth_getLogs",
            range(farm, json!([topic(HARVEST), null, null, token])),
        ));
    }
    if let Some(gauge) = source.gauge {
        calls.extend(harvest_filters(gauge, &token, (start, end)));
    }
    let mut answers = rpc.batch(&calls).await;
    let mut events = Vec::new();
    if let Some((gauge, _)) = source.gauge {
        let withdrawals = answers
            .pop()
            .unwrap_or(Err(RpcError::Malformed("no answer")))?;
        let claims = answers
            .pop()
            .unwrap_or(Err(RpcError::Malformed("no answer")))?;
        let list = |logs: &Value| {
            logs.as_array()
                .cloned()
                .ok_or_else(|| Refused::Other("eth_getLogs answered no list".into()))
        };
        let (claims, withdrawals) = (list(&claims)?, list(&withdrawals)?);
        let found = gauge_harvests(
            rpc,
            (&claims, &withdrawals),
            (gauge, token_id),
            (start, end),
        );
        events.extend(
            found
                .await
                .map_err(|e| Refused::Other(format!("a log refused: {e}")))?,
        );
    }
    for answer in answers {
        let logs = answer?;
        let logs = logs
            .as_array()
            .ok_or_else(|| Refused::Other("eth_getLogs answered no list".into()))?;
        for log in logs {
            if let Some((pool_manager, _)) = source.v4 {
                match modification(log, pool_manager, token_id, (start, end)) {
                    Ok(None) => {}
                    Ok(Some(Some(event))) => {
                        events.push(event);
                        continue;
                    }
                    // Another position's modification of the same pool.
                    Ok(Some(None)) => continue,
                    Err(e) => return Err(Refused::Other(format!("a log refused: {e}"))),
                }
            }
            let event = decode(log, (manager, farm), token_id, (start, end))
                .map_err(|e| Refused::Other(format!("a log refused: {e}")))?;
            events.push(event);
        }
    }
    Ok(events)
}

/// A pool manager's `ModifyLiquidity` as the position's deposit (a positive delta), withdrawal
/// (a negative one) or collect (zero: fees only), its amounts still to be read at its block
/// ([`super::v4_wallets::value_modifications`]): `None` for another kind of log, `Some(None)` for
/// another position's. Strict: the emitter, four topics, four words, the delta within int128.
fn modification(
    log: &Value,
    pool_manager: &str,
    token_id: U256,
    (start, end): (u64, u64),
) -> Result<Option<Option<PositionEvent>>, String> {
    let topics = log.get("topics").and_then(Value::as_array);
    let first = topics.and_then(|t| t.first()).and_then(Value::as_str);
    if !first.is_some_and(|t| t.eq_ignore_ascii_case(&topic(MODIFY_LIQUIDITY))) {
        return Ok(None);
    }
    let field = |name: &str| log.get(name).ok_or(format!("no {name}"));
    let address = field("address")?.as_str().unwrap_or_default();
    if !address.eq_ignore_ascii_case(pool_manager) {
        return Err(format!("from {address}, not the pool manager"));
    }
    if log.get("removed") == Some(&Value::Bool(true)) {
        return Err("removed by a reorg".into());
    }
    let data = hex_bytes(field("data")?)?;
    if topics.map_or(0, Vec::len) != 3 || data.len() != 128 {
        return Err("a ModifyLiquidity of another shape".into());
    }
    let word = |i: usize| U256::from_be_slice(&data[32 * i..32 * (i + 1)]);
    if word(3) != token_id {
        return Ok(Some(None));
    }
    let delta = alloy_primitives::I256::from_raw(word(2));
    let liquidity =
        u128::try_from(delta.unsigned_abs()).map_err(|_| "a liquidity delta wider than int128")?;
    let kind = match delta.sign() {
        _ if delta.is_zero() => EventKind::Collect,
        alloy_primitives::Sign::Positive => EventKind::Deposit,
        alloy_primitives::Sign::Negative => EventKind::Withdraw,
    };
    let block = quantity(field("blockNumber")?).ok_or("a malformed blockNumber")?;
    if !(start..=end).contains(&block) {
        return Err(format!("block {block} outside the range asked for"));
    }
    Ok(Some(Some(PositionEvent {
        kind,
        block,
        block_hash: block_hash(field("blockHash")?).ok_or("a malformed blockHash")?,
        transaction: block_hash_text(field("transactionHash")?)?,
        log_index: quantity(field("logIndex")?).ok_or("a malformed logIndex")?,
        liquidity,
        amounts: [U256::ZERO; 2],
        from: None,
        to: None,
        timestamp: None,
        reward: None,
        gas: None,
        acted: None,
        paid: Some([U256::ZERO; 2]),
        prices: [None, None],
        priced: None,
        kept: None,
    })))
}

/// One log as this token's event, or why it is not one.
fn decode(
    log: &Value,
    (manager, farm): (&str, Option<&str>),
    token_id: U256,
    range: (u64, u64),
) -> Result<PositionEvent, String> {
    let (address, token, event) = decode_log(log, range)?;
    let emitter = match event.kind {
        EventKind::Harvest => farm.unwrap_or_default(),
        _ => manager,
    };
    if !address.eq_ignore_ascii_case(emitter) {
        return Err(format!(
            "from {address}, not the position's manager or farm"
        ));
    }
    if token != token_id {
        return Err(format!("a {:?} of another token", event.kind));
    }
    Ok(event)
}

/// Keeps the read's events only if each log's block is the canonical block at its number (read
/// in one batch, which also gives the blocks' times); a log of a replaced block fails the read
/// from that block on, to be read again.
async fn canonical(rpc: &RpcClient, read: &mut EventsRead, to: &evm::Block) -> Result<(), String> {
    let mut numbers: Vec<u64> = read.events.iter().map(|e| e.block).collect();
    numbers.sort_unstable();
    numbers.dedup();
    if numbers.is_empty() {
        return Ok(());
    }
    let blocks = evm::blocks(rpc, &numbers)
        .await
        .map_err(|e| format!("eth_getBlockByNumber: {e}"))?;
    let by_number: BTreeMap<u64, evm::Block> = blocks
        .into_iter()
        .flatten()
        .map(|b| (b.number, b))
        .collect();
    let replaced = read.events.iter().filter_map(|e| {
        let same = by_number
            .get(&e.block)
            .is_some_and(|b| b.hash == e.block_hash);
        let beyond = e.block > to.number;
        (!same || beyond).then_some(e.block)
    });
    if let Some(first) = replaced.min() {
        read.events.retain(|e| e.block < first);
        read.through = read.through.min(first.saturating_sub(1));
        return Err(format!(
            "block {first} is no longer the chain's: read again"
        ));
    }
    for event in &mut read.events {
        event.timestamp = by_number[&event.block].timestamp;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_refused_for_their_size_are_split_and_rate_limits_are_not() {
        let rpc = |code, message: &str| RpcError::Rpc {
            code,
            message: message.into(),
            data: None,
        };
        for refused in [
            rpc(-32005, "query returned more than 10000 results"),
            rpc(-32602, "eth_getLogs block range is too large, max is 2000"),
            rpc(-32600, "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range"),
            rpc(-32000, "exceed maximum block range: 5000"),
        ] {
            assert!(too_large(&refused), "{refused}");
        }
        for other in [
            rpc(-32005, "daily request count exceeded, request rate limited"),
            rpc(-32000, "header not found"),
            RpcError::Status(429),
        ] {
            assert!(!too_large(&other), "{other}");
        }
    }
}
