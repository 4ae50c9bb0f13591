//! On-chain orders followed on their chains: the allowances an open is built with, then what
//! the chain did with its transaction. A reported hash's receipt, once it has the chain's
//! confirmations, settles the order (a mint opens the position, a withdraw closes it, a revert
//! ends it); a deadline the chain's time passed without a successful one ends it too. A wallet's
//! read settles what it sees without a reported hash: a token seen for the first time that an
//! open of the same wallet, pool and range was waiting for, a position a requested close left
//! empty. Events are read from the position manager's own logs only.

use super::allowances;
use super::events::{
    block_times, claimed_in, harvested_in, mint_of, minted_in, modified_in, receipt, sent_in,
    touched_in, v4_minted_in, withdrawal_of, withdrawn_in, Log,
};
use super::evm;
use super::mints::confirmed;
use super::rpc::RpcClient;
use crate::application::alert_ports::Alerts;
use crate::application::app::{Allowed, OrderChain};
use crate::application::ports::{PositionStore, StoreError};
use crate::application::watches::emit_withdrawn;
use crate::domain::catalog::{Catalog, Pool};
use crate::domain::holdings::{holding_of, ReadPosition};
use crate::domain::lifecycle::unfunded_close;
use crate::domain::market::Confirmations;
use crate::domain::market::OrdersSettled;
use crate::domain::market::PoolState;
use crate::domain::math::U256;
use crate::domain::model::WalletHolding;
use crate::domain::model::{Chain, ChainOrder, OrderKind, Position, Status, TransactionRequest};
use crate::domain::orders::settle::{
    holding_at_pool, opened, withdrawn, Minted, Withdrawal, EXPIRED, REVERTED,
};
use crate::domain::orders::simulation::{Credit, Simulated, SimulationError};
use crate::domain::orders::v4::Permit2Allowance;
use crate::domain::orders::zap::{Quote, QuotedPool};
use crate::domain::wallets::proof::ContractProof;
use crate::domain::wallets::LinkedWallet;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The chains' RPC endpoints and the confirmations each takes.
pub struct ChainOrders {
    endpoints: BTreeMap<Chain, Arc<RpcClient>>,
    confirmations: Confirmations,
    /// Where a close it settles is told (decision 61); `None`: nowhere.
    alerts: Option<Alerts>,
}

impl ChainOrders {
    pub fn new(
        endpoints: BTreeMap<Chain, Arc<RpcClient>>,
        confirmations: impl Into<Confirmations>,
    ) -> ChainOrders {
        ChainOrders {
            endpoints,
            confirmations: confirmations.into(),
            alerts: None,
        }
    }

    /// Tells each close it settles (`position.closed`, decision 61).
    pub fn with_alerts(mut self, alerts: Alerts) -> ChainOrders {
        self.alerts = Some(alerts);
        self
    }

    /// Tells that `position` closed at `block`; a store that fails costs the alert, never the
    /// settlement.
    async fn tell_closed(&self, position: &Position, block: u64, now: DateTime<Utc>) {
        if let Some(alerts) = &self.alerts {
            if let Err(e) = emit_withdrawn(alerts, position, block, now).await {
                tracing::warn!(position = %position.id, cause = %e, "close not told");
            }
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
    async fn allowances(&self, asked: &Allowed<'_>) -> Result<[U256; 2], String> {
        let rpc = self.rpc(asked.chain)?;
        allowances::erc20(rpc, asked.state, (asked.owner, asked.spender), asked.tokens).await
    }

    async fn permit2_allowances(
        &self,
        asked: &Allowed<'_>,
    ) -> Result<[Permit2Allowance; 2], String> {
        let rpc = self.rpc(asked.chain)?;
        allowances::permit2(rpc, asked.state, (asked.owner, asked.spender), asked.tokens).await
    }

    async fn signed_by(
        &self,
        chain: Chain,
        wallet: &str,
        proof: &ContractProof,
    ) -> Result<bool, String> {
        super::signatures::signed_by(self.rpc(chain)?, wallet, proof).await
    }

    async fn simulate(
        &self,
        chain: Chain,
        transactions: &[TransactionRequest],
        credits: &[Credit],
    ) -> Result<Vec<Simulated>, SimulationError> {
        let rpc = self.rpc(chain).map_err(SimulationError::Unavailable)?;
        super::simulation::simulate(rpc, transactions, credits).await
    }

    async fn quote(
        &self,
        pool: &QuotedPool<'_>,
        state: &PoolState,
        sell: (usize, U256),
    ) -> Result<Quote, SimulationError> {
        let rpc = self.rpc(pool.chain).map_err(SimulationError::Unavailable)?;
        super::quotes::quote(rpc, pool, state, sell).await
    }
}

/// How far a block's timestamp (its producer's clock) may lag ours when a wallet read takes a
/// fresh token for a pending open's mint: a mint sent right after the answer can carry a time
/// before it (a devnet's clock set back does, by design), and the search for it starts at the
/// open's own state block anyway. Without it, that mint is read as a position of its own and
/// the open never settles.
const BLOCK_CLOCK_LAG_SECONDS: i64 = 120;

/// The farm a stake's `safeTransferFrom(from, to, tokenId)` sends the NFT to (its second word).
fn stake_farm(data: &str) -> Option<String> {
    let digits = data.strip_prefix("0x")?;
    let word = digits.get(8 + 64..8 + 128)?;
    Some(format!("0x{}", word.get(24..)?))
}

/// What the chain did with one order.
enum Outcome {
    Minted(Minted),
    Withdrawn(Withdrawal),
    /// A collect, increase or decrease confirmed: the position stays open, its next read takes
    /// what changed.
    Applied,
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
                    settled.applied += counts.applied;
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
            let mined = (found, catalog.pool_manager_of(chain, &order.manager));
            let outcome = judge(&position, order, mined, (head, depth), &times, chain_time);
            let Some(pool) = catalog.find(chain, position.protocol, &position.pool) else {
                continue;
            };
            // A reported hash that minted another position of the wallet (another pool or range)
            // is not this open's mint: it waits on, until its own or its deadline.
            let outcome = match outcome {
                Outcome::Minted(minted) => {
                    match confirmed(rpc, pool, &position, order, &minted).await {
                        Some(confirmed) => Outcome::Minted(confirmed),
                        None => {
                            tracing::warn!(position = %position.id, token = %minted.token_id, "the reported mint is of another position");
                            Outcome::Waiting
                        }
                    }
                }
                other => other,
            };
            match apply(store, pool, &position, order, outcome, now).await {
                Ok(Some(Outcome::Minted(_))) => settled.opened += 1,
                Ok(Some(Outcome::Withdrawn(withdrawal))) => {
                    settled.withdrawn += 1;
                    self.tell_closed(&position, withdrawal.block, now).await;
                }
                Ok(Some(Outcome::Applied)) => {
                    settled.applied += 1;
                    // A v4 move: the wallet's next read closes the burnt position, moved.
                    name_the_move(store, &position, order).await;
                }
                Ok(Some(_)) => settled.ended += 1,
                Ok(None) => {}
                Err(e) => tracing::error!(position = %position.id, cause = %e, "order not settled"),
            }
        }
        Ok(settled)
    }
}

/// A confirmed range move names, on the position it closed, the one its mint opened: a second
/// write after the close (whose own transaction keeps the holding as the last read left it);
/// if it fails, the move is still told by the new position's `movedFrom`.
async fn name_the_move(store: &dyn PositionStore, position: &Position, order: &ChainOrder) {
    let Some(to) = order
        .moved
        .as_ref()
        .filter(|_| order.kind == OrderKind::Rebalance)
    else {
        return;
    };
    let named = async {
        let closed = store
            .get(&position.owner, &position.id)
            .await?
            .ok_or(StoreError::Conflict)?;
        let holding = closed.holding.as_deref().map(|h| WalletHolding {
            moved_to: Some(to.clone()),
            ..h.clone()
        });
        let named = Position {
            holding: holding.map(Box::new),
            ..closed.clone()
        };
        store.update_holding(&named, &closed).await
    };
    if let Err(e) = named.await {
        tracing::warn!(position = %position.id, cause = %e, "the moved position does not name its new one");
    }
}

type Mined = (u64, bool, Vec<Log>);

/// What the receipt (if any) and the chain's time say of `order`; a Uniswap v4 action's done
/// where `pool_manager`'s `ModifyLiquidity` of the position is among its logs.
fn judge(
    position: &Position,
    order: &ChainOrder,
    (found, pool_manager): (Option<Mined>, Option<&str>),
    (head, depth): (u64, u64),
    times: &HashMap<u64, DateTime<Utc>>,
    chain_time: Option<DateTime<Utc>>,
) -> Outcome {
    let token: Option<U256> = position.holding.as_ref().and_then(|h| h.token.parse().ok());
    let modified = |logs: &[Log]| {
        token
            .zip(pool_manager)
            .is_some_and(|(t, pm)| modified_in(logs, pm, &order.manager, t))
    };
    let mut mined_ok = false;
    if let Some((block, success, logs)) = found {
        mined_ok = success;
        let confirmed = head.saturating_sub(block) >= depth;
        match (confirmed, success, order.kind) {
            (false, _, _) => {}
            (true, false, _) => return Outcome::Reverted,
            (true, true, OrderKind::Open) => {
                let minted = match pool_manager {
                    Some(pm) => v4_minted_in(&logs, (pm, &order.manager), &order.wallet),
                    None => minted_in(&logs, &order.manager, &order.wallet),
                };
                match minted {
                    Some(minted) => return Outcome::Minted(minted),
                    None => {
                        tracing::warn!(position = %position.id, "the reported transaction minted no position for the wallet");
                        mined_ok = false;
                    }
                }
            }
            (true, true, OrderKind::Collect | OrderKind::Increase | OrderKind::Decrease) => {
                if token.is_some_and(|t| touched_in(&logs, &order.manager, t)) || modified(&logs) {
                    return Outcome::Applied;
                }
                tracing::warn!(position = %position.id, "the reported transaction did not touch the position");
                mined_ok = false;
            }
            (true, true, OrderKind::Stake) => {
                // The NFT sent from the wallet to the farm the transaction names (a Slipstream
                // gauge's deposit: the gauge it calls).
                let last = order.transactions.last();
                let farm = last.and_then(|t| stake_farm(&t.data).or_else(|| Some(t.to.clone())));
                let sent = token
                    .zip(farm)
                    .is_some_and(|(t, f)| sent_in(&logs, &order.manager, t, (&order.wallet, &f)));
                if sent {
                    return Outcome::Applied;
                }
                tracing::warn!(position = %position.id, "the reported transaction staked nothing of the position");
                mined_ok = false;
            }
            (true, true, OrderKind::Harvest) => {
                // Sent to the farm: the transaction's `to`.
                let farm = order.transactions.last().map(|t| t.to.as_str());
                let harvested =
                    |(t, f)| harvested_in(&logs, f, t) || claimed_in(&logs, f, &order.wallet);
                if token.zip(farm).is_some_and(harvested) {
                    return Outcome::Applied;
                }
                tracing::warn!(position = %position.id, "the reported transaction harvested nothing of the position");
                mined_ok = false;
            }
            (true, true, OrderKind::Close | OrderKind::Rebalance) => {
                let paid = token.and_then(|t| withdrawn_in(&logs, &order.manager, t));
                // A v4 close: done; the wallet's next read finds it empty and closes it, its
                // figures from its history (v4's events carry no amounts).
                if paid.is_none() && modified(&logs) {
                    return Outcome::Applied;
                }
                match (paid, times.get(&block)) {
                    (Some((principal, collected, _)), Some(time)) => {
                        return Outcome::Withdrawn(Withdrawal {
                            principal,
                            collected,
                            block,
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
            let closed = store.close(owner, id, Status::Active, &closing).await;
            if closed.is_ok() {
                name_the_move(store, position, order).await;
            }
            closed
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
        // A close or an action that reverted or expired, or an action done: the position
        // stays active, its order cleared (the next read takes what an action changed).
        (_, _) => {
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
                let Some(pool) = catalog.find(chain, offer.protocol, &offer.pool) else {
                    continue;
                };
                let pool_manager = catalog.pool_manager_of(chain, &order.manager);
                let minted = mint_of(rpc, (&order, pool_manager), found, height).await?;
                let Some(minted) = minted else {
                    continue;
                };
                let Some(minted) = confirmed(rpc, pool, offer, &order, &minted).await else {
                    continue;
                };
                let times = block_times(rpc, &[minted.block]).await?;
                let created = offer.created_at.timestamp() - BLOCK_CLOCK_LAG_SECONDS;
                if times
                    .get(&minted.block)
                    .is_none_or(|t| t.timestamp() < created)
                {
                    continue;
                }
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
                .filter(|o| matches!(o.kind, OrderKind::Close | OrderKind::Rebalance))
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
                        Ok(()) => {
                            name_the_move(store, position, order).await;
                            self.tell_closed(position, withdrawal.block, now).await;
                            true
                        }
                        Err(StoreError::Conflict) => true,
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
