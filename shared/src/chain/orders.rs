//! On-chain orders followed on their chains: the allowances an open is built with, then what
//! the chain did with its transaction. A reported hash's receipt, once it has the chain's
//! confirmations, settles the order (a mint opens the position, a withdraw closes it, a revert
//! ends it); a deadline the chain's time passed without a successful one ends it too. A wallet's
//! read settles what it sees without a reported hash: a token seen for the first time that an
//! open of the same wallet, pool and range was waiting for, a position a requested close left
//! empty. Events are read from the position manager's own logs only.

use super::evm::{self, block_hash, hex_bytes, quantity};
use super::rpc::{RpcClient, RpcError};
use crate::app::OrderChain;
use crate::catalog::{Catalog, Pool};
use crate::config::Confirmations;
use crate::holdings::{holding_of, ReadPosition};
use crate::lifecycle::unfunded_close;
use crate::market::PoolState;
use crate::math::U256;
use crate::model::{Chain, ChainOrder, OrderKind, Position, Status};
use crate::orders::settle::{
    holding_at_pool, opened, withdrawn, Minted, Withdrawal, EXPIRED, REVERTED,
};
use crate::store::{PositionStore, StoreError};
use crate::wallets::LinkedWallet;
use alloy_primitives::keccak256;
use alloy_sol_types::{sol, SolCall};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

sol! {
    interface IErc20Allowance {
        function allowance(address owner, address spender) external view returns (uint256);
    }
}

/// The chains' RPC endpoints and the confirmations each takes.
pub struct ChainOrders {
    endpoints: BTreeMap<Chain, Arc<RpcClient>>,
    confirmations: Confirmations,
}

impl ChainOrders {
    pub fn new(
        endpoints: BTreeMap<Chain, Arc<RpcClient>>,
        confirmations: impl Into<Confirmations>,
    ) -> ChainOrders {
        ChainOrders {
            endpoints,
            confirmations: confirmations.into(),
        }
    }

    fn rpc(&self, chain: Chain) -> Result<&RpcClient, String> {
        self.endpoints
            .get(&chain)
            .map(Arc::as_ref)
            .ok_or_else(|| format!("no RPC endpoint is configured for {chain}"))
    }
}

#[async_trait]
impl OrderChain for ChainOrders {
    async fn allowances(
        &self,
        chain: Chain,
        state: &PoolState,
        owner: &str,
        spender: &str,
        tokens: [&str; 2],
    ) -> Result<[U256; 2], String> {
        let rpc = self.rpc(chain)?;
        let parse = |a: &str| a.parse().map_err(|_| format!("{a:?} is not an address"));
        let call = IErc20Allowance::allowanceCall {
            owner: parse(owner)?,
            spender: parse(spender)?,
        }
        .abi_encode();
        let at = match &state.block_hash {
            Some(hash) => json!({ "blockHash": hash }),
            None => json!(format!("0x{:x}", state.height)),
        };
        let calls: Vec<_> = tokens
            .iter()
            .map(|t| {
                let to = json!({"to": t, "data": evm::hex_data(&call)});
                ("eth_call", json!([to, at]))
            })
            .collect();
        let mut out = [U256::ZERO; 2];
        for (i, answer) in rpc.batch(&calls).await.into_iter().enumerate() {
            let data = hex_bytes(&answer.map_err(|e| e.to_string())?)?;
            if data.len() != 32 {
                return Err("allowance answered other than one word".into());
            }
            out[i] = U256::from_be_slice(&data);
        }
        Ok(out)
    }
}

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
struct Log {
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

/// The mint among `logs`: the manager's `Transfer(0 → wallet)` of a token and its
/// `IncreaseLiquidity` in the same transaction.
fn minted_in(logs: &[Log], manager: &str, wallet: &str) -> Option<Minted> {
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

/// The last withdraw of `token_id` among `logs`: its `DecreaseLiquidity` and the `Collect` of
/// the same transaction (principal, everything collected), and its block.
fn withdrawn_in(
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
fn receipt(answer: Result<Value, RpcError>) -> Result<Option<(u64, bool, Vec<Log>)>, String> {
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
async fn block_times(
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

/// What one pass settled: opens confirmed, orders ended (reverted, expired), closes confirmed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct OrdersSettled {
    pub opened: u32,
    pub ended: u32,
    pub withdrawn: u32,
}

/// What the chain did with one order.
enum Outcome {
    Minted(Minted),
    Withdrawn(Withdrawal),
    Reverted,
    Expired,
    Waiting,
}

impl ChainOrders {
    /// Settles `waiting` (positions with an order, on catalog pools of EVM chains) from their
    /// chains: per chain the head block and every reported hash's receipt, in two batches, and
    /// the blocks of the confirmed withdraws' times.
    pub async fn settle(
        &self,
        store: &dyn PositionStore,
        catalog: &Catalog,
        waiting: Vec<Position>,
        now: DateTime<Utc>,
    ) -> OrdersSettled {
        let mut by_chain: BTreeMap<Chain, Vec<Position>> = BTreeMap::new();
        for p in waiting.into_iter().filter(|p| p.order.is_some()) {
            by_chain.entry(p.chain).or_default().push(p);
        }
        let mut settled = OrdersSettled::default();
        for (chain, positions) in by_chain {
            match self
                .settle_chain(store, catalog, chain, positions, now)
                .await
            {
                Ok(counts) => {
                    settled.opened += counts.opened;
                    settled.ended += counts.ended;
                    settled.withdrawn += counts.withdrawn;
                }
                Err(e) => tracing::warn!(%chain, cause = %e, "orders not followed"),
            }
        }
        settled
    }

    async fn settle_chain(
        &self,
        store: &dyn PositionStore,
        catalog: &Catalog,
        chain: Chain,
        positions: Vec<Position>,
        now: DateTime<Utc>,
    ) -> Result<OrdersSettled, String> {
        let rpc = self.rpc(chain)?;
        let head = evm::block_number(rpc).await.map_err(|e| e.to_string())?;
        let hashes: Vec<_> = positions
            .iter()
            .filter_map(|p| p.order.as_ref()?.hash.clone())
            .collect();
        let calls: Vec<_> = hashes
            .iter()
            .map(|h| ("eth_getTransactionReceipt", json!([h])))
            .collect();
        let mut receipts = HashMap::new();
        for (hash, answer) in hashes.iter().zip(rpc.batch(&calls).await) {
            receipts.insert(hash.clone(), receipt(answer)?);
        }
        let mut numbers = vec![head];
        numbers.extend(receipts.values().flatten().map(|(block, _, _)| *block));
        numbers.sort_unstable();
        numbers.dedup();
        let times = block_times(rpc, &numbers).await?;
        let chain_time = times.get(&head).copied();
        let depth = self.confirmations.of(chain);
        let mut settled = OrdersSettled::default();
        for position in positions {
            let Some(order) = position.order.as_deref() else {
                continue;
            };
            let found = order
                .hash
                .as_ref()
                .and_then(|h| receipts.get(h))
                .cloned()
                .flatten();
            let outcome = judge(&position, order, found, (head, depth), &times, chain_time);
            let Some(pool) = catalog.find(chain, position.protocol, &position.pool) else {
                continue;
            };
            match apply(store, pool, &position, order, outcome, now).await {
                Ok(Some(Outcome::Minted(_))) => settled.opened += 1,
                Ok(Some(Outcome::Withdrawn(_))) => settled.withdrawn += 1,
                Ok(Some(_)) => settled.ended += 1,
                Ok(None) => {}
                Err(e) => tracing::error!(position = %position.id, cause = %e, "order not settled"),
            }
        }
        Ok(settled)
    }
}

/// What the receipt (if any) and the chain's time say of `order`.
fn judge(
    position: &Position,
    order: &ChainOrder,
    found: Option<(u64, bool, Vec<Log>)>,
    (head, depth): (u64, u64),
    times: &HashMap<u64, DateTime<Utc>>,
    chain_time: Option<DateTime<Utc>>,
) -> Outcome {
    let mut mined_ok = false;
    if let Some((block, success, logs)) = found {
        mined_ok = success;
        let confirmed = head.saturating_sub(block) >= depth;
        match (confirmed, success, order.kind) {
            (false, _, _) => {}
            (true, false, _) => return Outcome::Reverted,
            (true, true, OrderKind::Open) => {
                match minted_in(&logs, &order.manager, &order.wallet) {
                    Some(minted) => return Outcome::Minted(minted),
                    None => {
                        tracing::warn!(position = %position.id, "the reported transaction minted no position for the wallet");
                        mined_ok = false;
                    }
                }
            }
            (true, true, OrderKind::Close) => {
                let token = position.holding.as_ref().and_then(|h| h.token.parse().ok());
                let paid = token.and_then(|t| withdrawn_in(&logs, &order.manager, t));
                match (paid, times.get(&block)) {
                    (Some((principal, collected, _)), Some(time)) => {
                        return Outcome::Withdrawn(Withdrawal {
                            principal,
                            collected,
                            time: *time,
                        })
                    }
                    _ => {
                        tracing::warn!(position = %position.id, "the reported transaction withdrew nothing of the position");
                        mined_ok = false;
                    }
                }
            }
        }
    }
    match chain_time {
        Some(time) if !mined_ok && time > order.expires_at => Outcome::Expired,
        _ => Outcome::Waiting,
    }
}

/// Stores what `outcome` makes of the position; the outcome when it changed it, `None` when
/// nothing changed (waiting, or it moved on meanwhile).
async fn apply(
    store: &dyn PositionStore,
    pool: &Pool,
    position: &Position,
    order: &ChainOrder,
    outcome: Outcome,
    now: DateTime<Utc>,
) -> Result<Option<Outcome>, StoreError> {
    let (owner, id) = (&position.owner, &position.id);
    let ended = |reason: &str| unfunded_close(pool, reason.to_string(), now);
    let stored = match (&outcome, order.kind) {
        (Outcome::Waiting, _) => return Ok(None),
        (Outcome::Minted(minted), _) => {
            let ticks = (position.tick_lower, position.tick_upper);
            let holding = holding_at_pool(pool, order, ticks, minted, now)
                .map_err(|e| StoreError::Failure(e.to_string().into()))?;
            store
                .activate(&opened(position, minted, pool, holding))
                .await
        }
        (Outcome::Withdrawn(withdrawal), _) => {
            let closing = withdrawn(position, pool, withdrawal);
            store.close(owner, id, Status::Active, &closing).await
        }
        (Outcome::Reverted, OrderKind::Open) => {
            store
                .close(owner, id, Status::Pending, &ended(REVERTED))
                .await
        }
        (Outcome::Expired, OrderKind::Open) => {
            store
                .close(owner, id, Status::Pending, &ended(EXPIRED))
                .await
        }
        // A close that reverted or expired: the position stays active, closable again.
        (_, OrderKind::Close) => {
            let cleared = Position {
                order: None,
                ..position.clone()
            };
            store.set_order(&cleared, Some(order)).await
        }
    };
    match stored {
        Ok(()) => {
            tracing::info!(position = %id, "order settled");
            Ok(Some(outcome))
        }
        Err(StoreError::Conflict) => Ok(None),
        Err(e) => Err(e),
    }
}

impl ChainOrders {
    /// Settles what one read of `wallet` (at `height`) shows of its orders, before the read is
    /// recorded: each token seen for the first time that the oldest pending open of the same
    /// wallet, pool and range was waiting for (minted after the open was created), and each
    /// position a requested close left without liquidity. Answers whether anything was
    /// settled, and the ids of closes the read shows done but whose events were not found
    /// (the read must not close those without their figures).
    pub async fn settle_seen(
        &self,
        store: &dyn PositionStore,
        catalog: &Catalog,
        wallet: &LinkedWallet,
        (height, read): (u64, &[ReadPosition]),
        stored: &[Position],
        now: DateTime<Utc>,
    ) -> Result<(bool, Vec<String>), String> {
        if wallet.chain == Chain::Solana {
            return Ok((false, Vec::new()));
        }
        let rpc = self.rpc(wallet.chain)?;
        let chain = wallet.chain;
        let known: Vec<String> = stored
            .iter()
            .filter_map(|p| p.holding.as_ref().map(|h| h.key(chain)))
            .collect();
        let key = |r: &ReadPosition| format!("{chain}#{}#{}", r.manager, r.token);
        let fresh: Vec<&ReadPosition> = read.iter().filter(|r| !known.contains(&key(r))).collect();
        let mut settled = false;
        if !fresh.is_empty() {
            let store_error = |e: StoreError| e.to_string();
            let mut offers: Vec<Position> = store
                .open_positions(&wallet.owner)
                .await
                .map_err(store_error)?
                .into_iter()
                .filter(|p| {
                    p.status == Status::Pending
                        && p.chain == chain
                        && p.order.as_ref().is_some_and(|o| {
                            o.kind == OrderKind::Open && o.wallet == wallet.address
                        })
                })
                .collect();
            offers.sort_by(|a, b| a.id.cmp(&b.id));
            for found in fresh {
                let Some(at) = offers.iter().position(|o| {
                    o.tick_lower == found.tick_lower
                        && o.tick_upper == found.tick_upper
                        && o.pool.eq_ignore_ascii_case(&found.pool)
                }) else {
                    continue;
                };
                let offer = &offers[at];
                let order = offer.order.as_deref().cloned().ok_or("no order")?;
                let Some(minted) = mint_of(rpc, &order, found, height).await? else {
                    continue;
                };
                let times = block_times(rpc, &[minted.block]).await?;
                let created = offer.created_at.timestamp();
                if times
                    .get(&minted.block)
                    .is_none_or(|t| t.timestamp() < created)
                {
                    continue;
                }
                let Some(pool) = catalog.find(chain, offer.protocol, &offer.pool) else {
                    continue;
                };
                let holding = holding_of(&wallet.address, found, height, now);
                match store.activate(&opened(offer, &minted, pool, holding)).await {
                    Ok(()) => {
                        settled = true;
                        tracing::info!(position = %offer.id, "open settled by the wallet's read");
                        offers.remove(at);
                    }
                    Err(StoreError::Conflict) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        let mut unsettled = Vec::new();
        for position in stored {
            let Some(order) = position
                .order
                .as_deref()
                .filter(|o| o.kind == OrderKind::Close)
            else {
                continue;
            };
            let Some(holding) = position.holding.as_deref() else {
                continue;
            };
            let emptied = read.iter().any(|r| {
                r.token == holding.token && r.manager == holding.manager && r.liquidity == 0
            });
            if position.status != Status::Active || !emptied {
                continue;
            }
            let done = match withdrawal_of(rpc, order, &holding.token, height).await? {
                Some(withdrawal) => {
                    let Some(pool) = catalog.find(chain, position.protocol, &position.pool) else {
                        unsettled.push(position.id.clone());
                        continue;
                    };
                    let closing = withdrawn(position, pool, &withdrawal);
                    let (owner, id) = (&position.owner, &position.id);
                    match store.close(owner, id, Status::Active, &closing).await {
                        Ok(()) | Err(StoreError::Conflict) => true,
                        Err(e) => return Err(e.to_string()),
                    }
                }
                None => false,
            };
            if done {
                settled = true;
            } else {
                unsettled.push(position.id.clone());
            }
        }
        Ok((settled, unsettled))
    }
}

/// The mint of `found`'s token between the order's block and the read's: its `Transfer` from
/// 0 to the wallet and that transaction's `IncreaseLiquidity`.
async fn mint_of(
    rpc: &RpcClient,
    order: &ChainOrder,
    found: &ReadPosition,
    height: u64,
) -> Result<Option<Minted>, String> {
    let token: U256 = found
        .token
        .parse()
        .map_err(|_| "a token id is not a number")?;
    let range = |topics: Value| {
        json!({
            "address": order.manager,
            "fromBlock": format!("0x{:x}", order.height),
            "toBlock": format!("0x{height:x}"),
            "topics": topics,
        })
    };
    let token_topic = word_topic(token);
    let found_logs = logs(
        rpc,
        &[
            range(json!([
                topic(TRANSFER),
                word_topic(U256::ZERO),
                Value::Null,
                token_topic
            ])),
            range(json!([topic(INCREASE), token_topic])),
        ],
    )
    .await?;
    let all: Vec<Log> = found_logs.into_iter().flatten().collect();
    Ok(minted_in(&all, &order.manager, &order.wallet).filter(|m| m.token_id == token))
}

/// The withdraw of `token` between the order's block and the read's, with its block's time.
async fn withdrawal_of(
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
        time: *time,
    }))
}
