//! The position manager's events as the chain reports them: a receipt's logs, or `eth_getLogs`
//! over a range of blocks, decoded strictly (the manager's own address, the event's topic, three
//! data words): a mint's `Transfer(0 → wallet)` and `IncreaseLiquidity`, a withdraw's
//! `DecreaseLiquidity` and `Collect`, and the times of their blocks.

use super::evm::{self, block_hash, hex_bytes, quantity};
use super::rpc::{RpcClient, RpcError};
use crate::domain::history::PositionEvent;
use crate::domain::holdings::ReadPosition;
use crate::domain::math::U256;
use crate::domain::model::ChainOrder;
use crate::domain::orders::settle::{Minted, Withdrawal};
use alloy_primitives::keccak256;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::collections::HashMap;

fn topic(signature: &str) -> String {
    evm::hex_data(keccak256(signature.as_bytes()).as_slice())
}

fn word_topic(value: U256) -> String {
    evm::hex_data(&value.to_be_bytes::<32>())
}

fn address_topic(address: &str) -> String {
    let digits = address.trim_start_matches("0x").to_ascii_lowercase();
    format!("0x{digits:0>64}")
}

/// One log as the node answered it.
#[derive(Debug, Clone)]
pub(super) struct Log {
    address: String,
    topics: Vec<String>,
    data: Vec<u8>,
    block: u64,
    transaction: String,
}

impl Log {
    fn parse(value: &Value) -> Option<Log> {
        Some(Log {
            address: value.get("address")?.as_str()?.to_ascii_lowercase(),
            topics: value
                .get("topics")?
                .as_array()?
                .iter()
                .map(|t| Some(t.as_str()?.to_ascii_lowercase()))
                .collect::<Option<_>>()?,
            data: hex_bytes(value.get("data")?).ok()?,
            block: quantity(value.get("blockNumber")?)?,
            transaction: block_hash(value.get("transactionHash")?)?,
        })
    }

    fn is(&self, manager: &str, event: &str, first: &str) -> bool {
        self.address.eq_ignore_ascii_case(manager)
            && self.topics.first().is_some_and(|t| *t == topic(event))
            && self.topics.get(1).is_some_and(|t| t == first)
    }

    /// The data's three words (`IncreaseLiquidity`, `DecreaseLiquidity`, `Collect`).
    fn words(&self) -> Option<[U256; 3]> {
        (self.data.len() == 96)
            .then(|| [0, 1, 2].map(|i| U256::from_be_slice(&self.data[32 * i..32 * (i + 1)])))
    }
}

const TRANSFER: &str = "Transfer(address,address,uint256)";
const INCREASE: &str = "IncreaseLiquidity(uint256,uint128,uint256,uint256)";
const DECREASE: &str = "DecreaseLiquidity(uint256,uint128,uint256,uint256)";
const COLLECT: &str = "Collect(uint256,address,uint256,uint256)";
const HARVEST: &str = "Harvest(address,address,uint256,uint256,uint256)";

/// Whether `logs` hold the manager's `IncreaseLiquidity`, `DecreaseLiquidity` or `Collect` of
/// `token`: an action on the position was mined.
pub(super) fn touched_in(logs: &[Log], manager: &str, token: U256) -> bool {
    let id = word_topic(token);
    logs.iter().any(|l| {
        [INCREASE, DECREASE, COLLECT]
            .iter()
            .any(|e| l.is(manager, e, &id))
    })
}

/// Whether `logs` hold the manager's `Transfer` of `token` from `from` to `to`: a stake mined
/// (the NFT sent to its farm).
pub(super) fn sent_in(logs: &[Log], manager: &str, token: U256, (from, to): (&str, &str)) -> bool {
    let topics = [
        topic(TRANSFER),
        address_topic(from),
        address_topic(to),
        word_topic(token),
    ];
    logs.iter().any(|l| {
        l.address.eq_ignore_ascii_case(manager)
            && l.topics.len() == 4
            && l.topics
                .iter()
                .zip(&topics)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    })
}

/// Whether `logs` hold the PoolManager's `ModifyLiquidity` of `manager`'s position `token`
/// (its sender the manager, its salt the token id): a Uniswap v4 action on it was mined.
pub(super) fn modified_in(logs: &[Log], pool_manager: &str, manager: &str, token: U256) -> bool {
    let (event, sender) = (topic(super::v4::MODIFY_LIQUIDITY), address_topic(manager));
    let salt = token.to_be_bytes::<32>();
    logs.iter().any(|l| {
        l.address.eq_ignore_ascii_case(pool_manager)
            && l.topics.first() == Some(&event)
            && l.topics.get(2) == Some(&sender)
            && l.data.len() == 128
            && l.data[96..] == salt
    })
}

/// Whether `logs` hold `farm`'s `Harvest` of `token` (its topic 3): a harvest was mined.
pub(super) fn harvested_in(logs: &[Log], farm: &str, token: U256) -> bool {
    let (id, harvest) = (word_topic(token), topic(HARVEST));
    logs.iter().any(|l| {
        l.address.eq_ignore_ascii_case(farm)
            && l.topics.first() == Some(&harvest)
            && l.topics.get(3) == Some(&id)
    })
}

/// Whether `logs` hold a Slipstream `gauge`'s `ClaimRewards` to `wallet`: its harvest of the
/// position the transaction named (`getReward(tokenId)`, built by us) paid.
pub(super) fn claimed_in(logs: &[Log], gauge: &str, wallet: &str) -> bool {
    let (claim, owner) = (
        topic("ClaimRewards(address,uint256)"),
        address_topic(wallet),
    );
    logs.iter().any(|l| {
        l.address.eq_ignore_ascii_case(gauge)
            && l.topics.first() == Some(&claim)
            && l.topics.get(1) == Some(&owner)
    })
}

/// The mint among `logs`: the manager's `Transfer(0 → wallet)` of a token and its
/// `IncreaseLiquidity` in the same transaction.
pub(super) fn minted_in(logs: &[Log], manager: &str, wallet: &str) -> Option<Minted> {
    let zero = word_topic(U256::ZERO);
    let to = address_topic(wallet);
    let transfer = logs
        .iter()
        .find(|l| l.is(manager, TRANSFER, &zero) && l.topics.len() == 4 && l.topics[2] == to)?;
    let token = &transfer.topics[3];
    let increase = logs
        .iter()
        .find(|l| l.is(manager, INCREASE, token) && l.transaction == transfer.transaction)?;
    let [liquidity, amount0, amount1] = increase.words()?;
    Some(Minted {
        token_id: U256::from_str_radix(token.trim_start_matches("0x"), 16).ok()?,
        liquidity: u128::try_from(liquidity).ok()?,
        amounts: [amount0, amount1],
        block: transfer.block,
    })
}

/// A Uniswap v4 mint among `logs`: the PositionManager's `Transfer(0 → wallet)` of a token and,
/// in the same transaction, the PoolManager's `ModifyLiquidity` adding liquidity to it (its
/// sender the manager, its salt the token id). v4's events carry no amounts: they are zero
/// here, read at the mint's block when it is confirmed (`v4_orders`).
pub(super) fn v4_minted_in(
    logs: &[Log],
    (pool_manager, manager): (&str, &str),
    wallet: &str,
) -> Option<Minted> {
    let (zero, to) = (word_topic(U256::ZERO), address_topic(wallet));
    let (event, sender) = (topic(super::v4::MODIFY_LIQUIDITY), address_topic(manager));
    logs.iter()
        .filter(|l| l.is(manager, TRANSFER, &zero) && l.topics.len() == 4 && l.topics[2] == to)
        .find_map(|transfer| {
            let token = U256::from_str_radix(transfer.topics[3].trim_start_matches("0x"), 16);
            let token = token.ok()?;
            let salt = token.to_be_bytes::<32>();
            let added = logs.iter().find(|l| {
                l.address.eq_ignore_ascii_case(pool_manager)
                    && l.topics.first() == Some(&event)
                    && l.topics.get(2) == Some(&sender)
                    && l.transaction == transfer.transaction
                    && l.data.len() == 128
                    && l.data[96..] == salt
            })?;
            // `liquidityDelta`, an int256: a mint's is positive and fits a u128.
            let liquidity = u128::try_from(U256::from_be_slice(&added.data[64..96])).ok()?;
            (liquidity > 0).then_some(Minted {
                token_id: token,
                liquidity,
                amounts: [U256::ZERO; 2],
                block: transfer.block,
            })
        })
}

/// The last withdraw of `token_id` among `logs`: its `DecreaseLiquidity` and the `Collect` of
/// the same transaction (principal, everything collected), and its block.
pub(super) fn withdrawn_in(
    logs: &[Log],
    manager: &str,
    token_id: U256,
) -> Option<([U256; 2], [U256; 2], u64)> {
    let token = word_topic(token_id);
    let decrease = logs
        .iter()
        .rev()
        .find(|l| l.is(manager, DECREASE, &token))?;
    let collect = logs
        .iter()
        .find(|l| l.is(manager, COLLECT, &token) && l.transaction == decrease.transaction)?;
    let [_, p0, p1] = decrease.words()?;
    let [_, c0, c1] = collect.words()?;
    Some(([p0, p1], [c0, c1], decrease.block))
}

/// A receipt: its block, whether it succeeded, its logs. `None` while the node has none
/// (not mined, or unknown).
pub(super) fn receipt(
    answer: Result<Value, RpcError>,
) -> Result<Option<(u64, bool, Vec<Log>)>, String> {
    let answer = answer.map_err(|e| e.to_string())?;
    if answer.is_null() {
        return Ok(None);
    }
    let bad = || "eth_getTransactionReceipt answered a malformed receipt".to_string();
    let block = answer
        .get("blockNumber")
        .and_then(quantity)
        .ok_or_else(bad)?;
    let success = match answer.get("status").and_then(quantity) {
        Some(1) => true,
        Some(0) => false,
        _ => return Err(bad()),
    };
    let logs = answer
        .get("logs")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(Log::parse)
        .collect::<Option<Vec<_>>>()
        .ok_or_else(bad)?;
    Ok(Some((block, success, logs)))
}

async fn logs(rpc: &RpcClient, filters: &[Value]) -> Result<Vec<Vec<Log>>, String> {
    let calls: Vec<_> = filters
        .iter()
        .map(|f| ("eth_getLogs", json!([f])))
        .collect();
    rpc.batch(&calls)
        .await
        .into_iter()
        .map(|answer| {
            answer
                .map_err(|e| e.to_string())?
                .as_array()
                .ok_or("eth_getLogs answered no list")?
                .iter()
                .map(|l| {
                    Log::parse(l).ok_or_else(|| "eth_getLogs answered a malformed log".to_string())
                })
                .collect()
        })
        .collect()
}

/// The unix time of each of `numbers`' blocks.
pub(super) async fn block_times(
    rpc: &RpcClient,
    numbers: &[u64],
) -> Result<HashMap<u64, DateTime<Utc>>, String> {
    let blocks = evm::blocks(rpc, numbers).await.map_err(|e| e.to_string())?;
    Ok(blocks
        .into_iter()
        .flatten()
        .filter_map(|b| Some((b.number, DateTime::from_timestamp(b.timestamp? as i64, 0)?)))
        .collect())
}

/// The mint of `found`'s token between the order's block and the read's: the manager's
/// `Transfer` of it from 0 to the wallet and that transaction's `IncreaseLiquidity`; for a
/// Uniswap v4 manager (its `pool_manager` given), the PoolManager's `ModifyLiquidity` by the
/// manager on the token's pool instead ([`v4_minted_in`]).
pub(super) async fn mint_of(
    rpc: &RpcClient,
    (order, pool_manager): (&ChainOrder, Option<&str>),
    found: &ReadPosition,
    height: u64,
) -> Result<Option<Minted>, String> {
    let token: U256 = found
        .token
        .parse()
        .map_err(|_| "a token id is not a number")?;
    let range = |address: &str, topics: Value| {
        json!({
            "address": address,
            "fromBlock": format!("0x{:x}", order.height),
            "toBlock": format!("0x{height:x}"),
            "topics": topics,
        })
    };
    let token_topic = word_topic(token);
    let transfer = json!([
        topic(TRANSFER),
        word_topic(U256::ZERO),
        Value::Null,
        token_topic
    ]);
    let added = match pool_manager {
        Some(pm) => {
            let by_manager = address_topic(&order.manager);
            let modified = topic(super::v4::MODIFY_LIQUIDITY);
            range(
                pm,
                json!([modified, found.pool.to_ascii_lowercase(), by_manager]),
            )
        }
        None => range(&order.manager, json!([topic(INCREASE), token_topic])),
    };
    let found_logs = logs(rpc, &[range(&order.manager, transfer), added]).await?;
    let all: Vec<Log> = found_logs.into_iter().flatten().collect();
    let minted = match pool_manager {
        Some(pm) => v4_minted_in(&all, (pm, &order.manager), &order.wallet),
        None => minted_in(&all, &order.manager, &order.wallet),
    };
    Ok(minted.filter(|m| m.token_id == token))
}

/// The withdraw of `token` between the order's block and the read's, with its block's time.
pub(super) async fn withdrawal_of(
    rpc: &RpcClient,
    order: &ChainOrder,
    token: &str,
    height: u64,
) -> Result<Option<Withdrawal>, String> {
    let token: U256 = token.parse().map_err(|_| "a token id is not a number")?;
    let range = |event: &str| {
        json!({
            "address": order.manager,
            "fromBlock": format!("0x{:x}", order.height),
            "toBlock": format!("0x{height:x}"),
            "topics": [topic(event), word_topic(token)],
        })
    };
    let found = logs(rpc, &[range(DECREASE), range(COLLECT)]).await?;
    let all: Vec<Log> = found.into_iter().flatten().collect();
    let Some((principal, collected, block)) = withdrawn_in(&all, &order.manager, token) else {
        return Ok(None);
    };
    let times = block_times(rpc, &[block]).await?;
    Ok(times.get(&block).map(|time| Withdrawal {
        principal,
        collected,
        block,
        time: *time,
    }))
}

/// A receipt's whole cost to its sender, in wei: `gasUsed × effectiveGasPrice`, and the L1
/// data fee an OP-stack chain (Base) charges apart (`l1Fee`).
fn cost_of(receipt: &Value) -> Option<U256> {
    let number = |name: &str| {
        let digits = receipt.get(name)?.as_str()?.strip_prefix("0x")?;
        U256::from_str_radix(digits, 16).ok()
    };
    let execution = number("gasUsed")?.checked_mul(number("effectiveGasPrice")?)?;
    let l1 = receipt
        .get("l1Fee")
        .map_or(Some(U256::ZERO), |_| number("l1Fee"))?;
    execution.checked_add(l1)
}

/// What a receipt says of `holder`: whether it sent the transaction, and whether it acted in
/// it otherwise (the account the transaction called, as a Safe's `execTransaction` is, or the
/// sender of a token `Transfer` in its logs: it paid). `None` for a malformed receipt.
fn holder_in(receipt: &Value, holder: &str) -> Option<(bool, bool)> {
    let field = |name: &str| receipt.get(name).and_then(Value::as_str);
    let sent = field("from")?.eq_ignore_ascii_case(holder);
    let called = field("to").is_some_and(|to| to.eq_ignore_ascii_case(holder));
    let (transfer, from) = (topic(TRANSFER), address_topic(holder));
    let paid = receipt
        .get("logs")?
        .as_array()?
        .iter()
        .filter_map(Log::parse)
        .any(|l| l.topics.first() == Some(&transfer) && l.topics.get(1) == Some(&from));
    Some((sent, called || paid))
}

/// What `events`' transactions' receipts say of `holder` (one batch): on every event, whether
/// the holder acted in its transaction ([`PositionEvent::acted`]); on a transaction's first
/// event, what it cost the holder where the holder sent it. A receipt the node does not answer
/// (or answers malformed) leaves both unset: the export's fee columns stay empty there, and
/// its deposits count as the holder's own.
pub async fn read_receipts(rpc: &RpcClient, holder: &str, events: &mut [PositionEvent]) {
    let mut hashes: Vec<String> = events.iter().map(|e| e.transaction.clone()).collect();
    hashes.dedup();
    if hashes.is_empty() {
        return;
    }
    let calls: Vec<_> = hashes
        .iter()
        .map(|h| ("eth_getTransactionReceipt", json!([h])))
        .collect();
    let answers = rpc.batch(&calls).await;
    for (hash, answer) in hashes.iter().zip(answers) {
        let Ok(receipt) = answer else { continue };
        let Some((sent, acted)) = holder_in(&receipt, holder) else {
            continue;
        };
        let cost = cost_of(&receipt).filter(|_| sent);
        let mut first = true;
        for event in events.iter_mut().filter(|e| &e.transaction == hash) {
            event.acted = Some(sent || acted);
            if std::mem::take(&mut first) {
                event.gas = cost;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANAGER: &str = "0xc36442b4a4522e871399cd717abdd847ab11fe88";
    const WALLET: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

    fn log(address: &str, topics: Vec<String>, words: &[u64], tx: u8) -> Value {
        let data: String = words.iter().map(|w| format!("{w:064x}")).collect();
        json!({
            "address": address, "topics": topics, "data": format!("0x{data}"),
            "blockNumber": "0x10", "transactionHash": format!("0x{}", format!("{tx:02x}").repeat(32)),
        })
    }

    fn mint_logs(manager: &str, data: &[u64], increase_tx: u8) -> Vec<Log> {
        let token = word_topic(U256::from(7u8));
        [
            log(
                manager,
                vec![
                    topic(TRANSFER),
                    word_topic(U256::ZERO),
                    address_topic(WALLET),
                    token.clone(),
                ],
                &[],
                1,
            ),
            log(manager, vec![topic(INCREASE), token], data, increase_tx),
        ]
        .iter()
        .map(|l| Log::parse(l).unwrap())
        .collect()
    }

    #[test]
    fn a_mint_is_the_managers_transfer_from_zero_and_its_increase() {
        let minted = minted_in(&mint_logs(MANAGER, &[500, 11, 12], 1), MANAGER, WALLET).unwrap();
        assert_eq!(minted.token_id, U256::from(7u8));
        assert_eq!(minted.liquidity, 500);
        assert_eq!(minted.amounts, [U256::from(11u8), U256::from(12u8)]);
        assert_eq!(minted.block, 16);
        // Another contract's events, another transaction's increase, or data that is not three
        // words make no mint.
        let other = "0x0000000000000000000000000000000000000001";
        assert!(minted_in(&mint_logs(other, &[500, 11, 12], 1), MANAGER, WALLET).is_none());
        assert!(minted_in(&mint_logs(MANAGER, &[500, 11, 12], 2), MANAGER, WALLET).is_none());
        assert!(minted_in(&mint_logs(MANAGER, &[500, 11], 1), MANAGER, WALLET).is_none());
        let to_someone_else = "0x0000000000000000000000000000000000000002";
        assert!(minted_in(
            &mint_logs(MANAGER, &[500, 11, 12], 1),
            MANAGER,
            to_someone_else
        )
        .is_none());
    }

    #[test]
    fn a_withdraw_pairs_the_decrease_with_the_collect_of_its_transaction() {
        let token = word_topic(U256::from(7u8));
        let logs: Vec<Log> = [
            log(
                MANAGER,
                vec![topic(DECREASE), token.clone()],
                &[500, 10, 20],
                3,
            ),
            log(
                MANAGER,
                vec![topic(COLLECT), token.clone()],
                &[1, 99, 99],
                4,
            ),
            log(MANAGER, vec![topic(COLLECT), token], &[1, 13, 26], 3),
        ]
        .iter()
        .map(|l| Log::parse(l).unwrap())
        .collect();
        let (principal, collected, block) = withdrawn_in(&logs, MANAGER, U256::from(7u8)).unwrap();
        assert_eq!(principal, [U256::from(10u8), U256::from(20u8)]);
        assert_eq!(collected, [U256::from(13u8), U256::from(26u8)]);
        assert_eq!(block, 16);
        assert!(withdrawn_in(&logs, MANAGER, U256::from(8u8)).is_none());
    }

    #[test]
    fn receipts_are_taken_only_in_their_shape() {
        assert!(receipt(Ok(Value::Null)).unwrap().is_none());
        let good = json!({"blockNumber": "0x10", "status": "0x1", "logs": []});
        assert_eq!(receipt(Ok(good)).unwrap().unwrap().0, 16);
        for bad in [
            json!({"blockNumber": "0x10", "status": "0x2", "logs": []}),
            json!({"blockNumber": "0x010", "status": "0x1", "logs": []}),
            json!({"blockNumber": "0x10", "status": "0x1"}),
            json!({"blockNumber": "0x10", "status": "0x0", "logs": [{"address": 1}]}),
        ] {
            assert!(receipt(Ok(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_receipts_cost_counts_an_op_stack_l1_fee() {
        let mut receipt = json!({
            "from": WALLET,
            "gasUsed": "0x5208",
            "effectiveGasPrice": "0x3b9aca00",
        });
        let l2 = U256::from(21_000u64 * 1_000_000_000);
        assert_eq!(cost_of(&receipt), Some(l2));
        receipt["l1Fee"] = json!("0x10");
        assert_eq!(cost_of(&receipt), Some(l2 + U256::from(16u8)));
        receipt["l1Fee"] = json!(null);
        assert_eq!(cost_of(&receipt), None, "a malformed fee is no figure");
    }

    #[test]
    fn a_holder_acts_in_what_it_sent_called_or_paid_in() {
        const STRANGER: &str = "0x00000000000000000000000000000000000000aa";
        let transfer = |from: &str| {
            json!({
                "address": "0x0000000000000000000000000000000000000001",
                "topics": [topic(TRANSFER), address_topic(from), address_topic(STRANGER)],
                "data": format!("0x{:064x}", 5),
                "blockNumber": "0x1",
                "transactionHash": format!("0x{:064x}", 1),
            })
        };
        let receipt =
            |from: &str, to: &str, logs: Vec<Value>| json!({"from": from, "to": to, "logs": logs});
        let cases = [
            (receipt(WALLET, MANAGER, vec![]), (true, false)),
            // A Safe's execTransaction: an owner sent it, to the Safe.
            (receipt(STRANGER, WALLET, vec![]), (false, true)),
            // A relayer's transaction in which the wallet paid a token.
            (
                receipt(STRANGER, MANAGER, vec![transfer(WALLET)]),
                (false, true),
            ),
            // A stranger's mint to the wallet: the stranger paid.
            (
                receipt(STRANGER, MANAGER, vec![transfer(STRANGER)]),
                (false, false),
            ),
        ];
        for (receipt, expected) in cases {
            assert_eq!(holder_in(&receipt, WALLET), Some(expected), "{receipt}");
        }
        assert_eq!(holder_in(&json!({"to": WALLET}), WALLET), None);
    }
}
