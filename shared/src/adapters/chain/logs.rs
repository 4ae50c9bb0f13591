//! The logs a position's history and the scan read, by their Solidity signatures: the
//! position managers' (`Transfer`, `IncreaseLiquidity`, `DecreaseLiquidity`, `Collect`),
//! MasterChefV3's (`Harvest`, `Withdraw`) and a Slipstream gauge's (`ClaimRewards`,
//! `Withdraw`), and one log decoded strictly as the event of a position.

use super::evm::{self, block_hash, hex_bytes, quantity};
use crate::domain::history::{EventKind, PositionEvent};
use crate::domain::math::U256;
use alloy_primitives::keccak256;
use serde_json::Value;

pub(super) const TRANSFER: &str = "Transfer(address,address,uint256)";
/// MasterChefV3's reward payment: `Harvest(address indexed sender, address to, uint256 indexed
/// pid, uint256 indexed tokenId, uint256 reward)`.
pub(super) const HARVEST: &str = "Harvest(address,address,uint256,uint256,uint256)";
/// MasterChefV3's unstake: `Withdraw(address indexed from, address to, uint256 indexed pid,
/// uint256 indexed tokenId)`; `to` may be anyone, the staker's position leaving it then.
pub(super) const FARM_WITHDRAW: &str = "Withdraw(address,address,uint256,uint256)";
/// A Slipstream gauge's reward payment: `ClaimRewards(address indexed from, uint256 amount)`,
/// at a `getReward(tokenId)` and at a `withdraw(tokenId)` (no token id in it).
pub(super) const GAUGE_CLAIM: &str = "ClaimRewards(address,uint256)";
/// A Slipstream gauge's unstake: `Withdraw(address indexed user, uint256 indexed tokenId,
/// uint128 indexed liquidityToStake)`.
pub(super) const GAUGE_WITHDRAW: &str = "Withdraw(address,uint256,uint128)";
pub(super) const INCREASE: &str = "IncreaseLiquidity(uint256,uint128,uint256,uint256)";
pub(super) const DECREASE: &str = "DecreaseLiquidity(uint256,uint128,uint256,uint256)";
pub(super) const COLLECT: &str = "Collect(uint256,address,uint256,uint256)";

pub(super) fn topic(signature: &str) -> String {
    evm::hex_data(keccak256(signature.as_bytes()).as_slice())
}

pub(super) fn word_topic(value: U256) -> String {
    evm::hex_data(&value.to_be_bytes::<32>())
}

/// One log of a position manager's as the event of a position: the emitting contract, the
/// token id and the event; or why it is none (strictly: the event's topic count and data
/// length, words within their types, its block within the range asked for).
pub(super) fn decode_log(
    log: &Value,
    (start, end): (u64, u64),
) -> Result<(String, U256, PositionEvent), String> {
    let field = |name: &str| log.get(name).ok_or(format!("no {name}"));
    let address = field("address")?
        .as_str()
        .ok_or("an address that is no text")?
        .to_string();
    if log.get("removed") == Some(&Value::Bool(true)) {
        return Err("removed by a reorg".into());
    }
    let topics: Vec<String> = field("topics")?
        .as_array()
        .ok_or("topics are no list")?
        .iter()
        .map(|t| {
            t.as_str()
                .map(str::to_ascii_lowercase)
                .ok_or("a topic is no text")
        })
        .collect::<Result<_, _>>()?;
    let data = hex_bytes(field("data")?)?;
    let block = quantity(field("blockNumber")?).ok_or("a malformed blockNumber")?;
    if !(start..=end).contains(&block) {
        return Err(format!("block {block} outside the range asked for"));
    }
    let block_hash = block_hash(field("blockHash")?).ok_or("a malformed blockHash")?;
    let transaction = block_hash_text(field("transactionHash")?)?;
    let log_index = quantity(field("logIndex")?).ok_or("a malformed logIndex")?;
    let word = |i: usize| U256::from_be_slice(&data[32 * i..32 * (i + 1)]);
    let topic_word = |i: usize| -> Result<U256, String> {
        let bytes = hex_bytes(&Value::String(topics[i].clone()))?;
        (bytes.len() == 32)
            .then(|| U256::from_be_slice(&bytes))
            .ok_or("a topic is not one word".into())
    };
    let address_of = |value: U256| -> Result<String, String> {
        (value >> 160 == U256::ZERO)
            .then(|| evm::hex_data(&value.to_be_bytes::<32>()[12..]))
            .ok_or("an address word with high bits".into())
    };
    let first = topics.first().ok_or("no topics")?.as_str();
    let mut reward = None;
    let (kind, liquidity, amounts, from, to, token_topic) = if first == topic(HARVEST) {
        // Harvest(address indexed sender, address to, uint256 indexed pid, uint256 indexed
        // tokenId, uint256 reward)
        if topics.len() != 4 || data.len() != 64 {
            return Err("a Harvest of another shape".into());
        }
        reward = Some(word(1));
        let paid_to = Some(address_of(word(0))?);
        (EventKind::Harvest, 0, [U256::ZERO; 2], None, paid_to, 3)
    } else if first == topic(TRANSFER) {
        if topics.len() != 4 || !data.is_empty() {
            return Err("a Transfer of another shape".into());
        }
        let (sender, recipient) = (address_of(topic_word(1)?)?, address_of(topic_word(2)?)?);
        let zero = address_of(U256::ZERO)?;
        let kind = if sender == zero {
            EventKind::Mint
        } else if recipient == zero {
            EventKind::Burn
        } else {
            EventKind::Transfer
        };
        (kind, 0, [U256::ZERO; 2], Some(sender), Some(recipient), 3)
    } else {
        let kind = [
            (INCREASE, EventKind::Deposit),
            (DECREASE, EventKind::Withdraw),
            (COLLECT, EventKind::Collect),
        ]
        .into_iter()
        .find(|(signature, _)| first == topic(signature))
        .map(|(_, kind)| kind)
        .ok_or("not an event of a position")?;
        if topics.len() != 2 || data.len() != 96 {
            return Err(format!("a {kind:?} of another shape"));
        }
        let amounts = [word(1), word(2)];
        if kind == EventKind::Collect {
            (kind, 0, amounts, None, Some(address_of(word(0))?), 1)
        } else {
            let liquidity =
                u128::try_from(word(0)).map_err(|_| "a liquidity wider than uint128")?;
            (kind, liquidity, amounts, None, None, 1)
        }
    };
    let token = topic_word(token_topic)?;
    let event = PositionEvent {
        kind,
        block,
        block_hash,
        transaction,
        log_index,
        liquidity,
        amounts,
        from,
        to,
        timestamp: None,
        reward,
        gas: None,
        acted: None,
        paid: None,
        prices: [None, None],
        priced: None,
        kept: None,
    };
    Ok((address, token, event))
}

/// A transaction hash: one 32-byte word, as a block hash is written.
pub(super) fn block_hash_text(value: &Value) -> Result<String, String> {
    block_hash(value).ok_or("a malformed transactionHash".into())
}
