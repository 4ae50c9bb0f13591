//! A wallet position's history kept up to date: its position manager's events from where its
//! stored history stops (the deployment's first block for one never read) to the block the
//! wallet was read at (`history::position_events`), each valued at its block (the chain's
//! pools read at that block's hash and priced by the catalog's rules; where the node cannot
//! serve that state, at the state the service has, marked `nearest`), stored once each, then
//! summed for the holder onto the position (`domain::history::summarize`). A read that stops
//! part way keeps what it read and goes on from there when the syncs retry its wallet.

use super::evm::{self, hex_data, Block};
use super::history::{mint_block, position_events, Source};
use super::kept::keep;
use super::pools;
use super::rpc::RpcClient;
use super::scan::REORG_WINDOW;
use super::slipstream::position_gauge;
use super::v4_wallets::{owed_at, value_modifications};
use crate::application::alert_ports::Alerts;
use crate::application::ports::{HistoryStore, PositionStore, SeriesStore, StoreError};
use crate::application::watches::{emit_history, retract_history};
use crate::domain::catalog::{Catalog, Deployment, Pool};
use crate::domain::history::{
    count_end, count_start, counted_for, mark_staking, summarize, EventKind, Handed, Handovers,
    HistoryProgress, HistorySummary, PositionEvent, Priced,
};
use crate::domain::holdings::usd_price;
use crate::domain::market::{PoolKey, PoolState};
use crate::domain::math::{Curve, U256};
use crate::domain::model::{Chain, Position, Protocol, WalletHolding};
use crate::domain::orders::settle::done_by;
use alloy_primitives::Address;
use alloy_sol_types::{sol, SolCall};
use bigdecimal::BigDecimal;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;

sol! {
    interface IPositionCollect {
        struct CollectParams { uint256 tokenId; address recipient; uint128 amount0Max; uint128 amount1Max; }
        function collect(CollectParams params) external returns (uint256 amount0, uint256 amount1);
    }
}

/// Where and how a chain's histories are read.
pub struct HistoryReader<'a> {
    pub rpc: &'a RpcClient,
    pub chain: Chain,
    pub catalog: &'a Catalog,
    pub history: &'a dyn HistoryStore,
    /// Where a position older than the series asks for its pool's past days (decision 66).
    pub series: Option<&'a dyn SeriesStore>,
    pub store: &'a dyn PositionStore,
    /// Where the alerts its new events make go (decision 61).
    pub alerts: &'a Alerts,
    /// Blocks one `eth_getLogs` asks for at most on this chain.
    pub log_range: u64,
    /// The owner's wallets on this chain (lower case): a transfer between two of them starts
    /// no new count (`history::counted_for`).
    pub own: &'a [String],
}

/// What one pass over a wallet's positions did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Backfilled {
    /// Events read and stored.
    pub events: u64,
    /// Positions whose read stopped part way, with why.
    pub stopped: Vec<(String, String)>,
}

/// The chain's pools at one block: their states, and the USD prices of their tokens by the
/// catalog's rules (lower-case addresses).
struct AtBlock {
    states: HashMap<PoolKey, PoolState>,
    prices: BTreeMap<String, BigDecimal>,
}

/// Blocks already read in one pass, per position pool: `None` where the node could not serve
/// the block's state.
type Blocks = HashMap<(u64, String), Option<AtBlock>>;

/// What a reorg replaced in a stored history: the progress back to before its first replaced
/// block, and the events taken back.
struct Replaced {
    back: HistoryProgress,
    gone: Vec<PositionEvent>,
}

/// What a position's events are valued for: its tokens (protocol order) and its pool.
struct Subject {
    tokens: [String; 2],
    pool: String,
}

impl Subject {
    fn of(position: &Position, holding: &WalletHolding) -> Subject {
        Subject {
            tokens: holding.tokens.clone().map(|t| t.address),
            pool: position.pool.clone(),
        }
    }
}

impl HistoryReader<'_> {
    /// Each of `positions` (one wallet's, EVM) read on to `head` and summed for its holder.
    pub async fn follow(&self, positions: &[Position], head: &Block) -> Backfilled {
        let mut done = Backfilled::default();
        let mut blocks = Blocks::new();
        for position in positions {
            match self.follow_one(position, head, &mut blocks).await {
                Ok((events, stopped)) => {
                    done.events += events;
                    if let Some(why) = stopped {
                        done.stopped.push((position.id.clone(), why));
                    }
                }
                Err(e) => done.stopped.push((position.id.clone(), e.to_string())),
            }
        }
        done
    }

    async fn follow_one(
        &self,
        position: &Position,
        head: &Block,
        blocks: &mut Blocks,
    ) -> Result<(u64, Option<String>), StoreError> {
        let Some(holding) = position.holding.as_deref() else {
            return Ok((0, None));
        };
        let Ok(token_id) = U256::from_str(&holding.token) else {
            return Ok((0, None));
        };
        let (owner, id) = (&position.owner, &position.id);
        let stored = self.history.history_progress(owner, id).await?;
        let replaced = match &stored {
            Some(stored) => self.replaced(owner, id, stored, head).await?,
            None => None,
        };
        let progress = replaced.as_ref().map(|r| r.back).or(stored);
        let rewound = replaced.is_some();
        let from = match progress {
            Some(p) => p.through.saturating_add(1),
            // A new history starts at the mint where one call finds it.
            None => {
                let first = self.first_block(&holding.manager);
                let span = (first, head.number);
                mint_block(self.rpc, &holding.manager, token_id, span)
                    .await
                    .unwrap_or(first)
            }
        };
        let mut next = progress.unwrap_or(HistoryProgress {
            through: from.saturating_sub(1),
            from_mint: false,
            events: 0,
        });
        let mut stopped = None;
        let mut added = 0;
        // The position's waiting action done by the events just read (whatever sent it).
        let mut done = false;
        // A reorg to a shorter chain: its blocks are taken back when the chain is past them;
        // stopped, so that the syncs' retries come back to it (no event may touch it soon).
        if replaced.is_some() && from > head.number {
            let why = "the chain is not yet past the blocks a reorg replaced";
            return Ok((0, Some(why.into())));
        }
        if from <= head.number {
            let v4 = self.v4_contracts(&holding.manager);
            let gauge = match position_gauge(self.rpc, self.catalog, position, head).await {
                Ok(gauge) => gauge,
                Err(why) => return Ok((0, Some(format!("its pool's gauge: {why}")))),
            };
            let source = Source {
                manager: &holding.manager,
                farm: self.farm(&holding.manager),
                v4: v4.map(|(pool_manager, _)| (pool_manager, position.pool.as_str())),
                gauge: gauge.as_deref().map(|g| (g, holding.wallet.as_str())),
            };
            let mut read =
                position_events(self.rpc, &source, token_id, from, head, self.log_range).await;
            if let Some((_, state_view)) = v4 {
                let contracts = (state_view, position.pool.as_str(), holding.manager.as_str());
                let range = (position.tick_lower, position.tick_upper);
                let valued =
                    value_modifications(self.rpc, contracts, range, token_id, &mut read.events);
                if let Err(why) = valued.await {
                    // Nothing stored of this stretch: the next read goes on from before it.
                    read.events.clear();
                    read.through = from.saturating_sub(1);
                    read.stopped = Some(format!("its modifications could not be valued: {why}"));
                }
            }
            if let Some(gauge) = &gauge {
                // The transfers into the gauge and back are stakes, not disposals.
                mark_staking(&mut read.events, gauge, &holding.wallet);
            }
            stopped = read.stopped;
            let mut events = read.events;
            if let Some(farm) = self.farm(&holding.manager) {
                mark_staking(&mut events, farm, &holding.wallet);
            }
            if let (Some(replaced), Some(stored)) = (&replaced, &stored) {
                // Taken back only once the canonical stretch is read whole: its events are
                // what the replaced ones are checked against (a transaction included again
                // is no retraction); until then the next syncs find the same replacement.
                if read.through < head.number {
                    return Ok((
                        0,
                        stopped.or_else(|| {
                            Some("the blocks a reorg replaced are not read through yet".into())
                        }),
                    ));
                }
                let now = chrono::Utc::now();
                retract_history(self.alerts, position, &replaced.gone, &events, now).await?;
                let (from, back) = (replaced.back.through + 1, &replaced.back);
                match self
                    .history
                    .rewind_history(owner, id, stored, from, back)
                    .await
                {
                    Err(StoreError::Conflict) => return Ok((0, None)),
                    other => other?,
                }
            }
            if read.through >= from {
                self.value(&mut events, &Subject::of(position, holding), blocks)
                    .await;
                if v4.is_none() {
                    // Read through the head: its latest values are also the head's.
                    let through = (read.through == head.number).then_some(head);
                    let contract = (holding.manager.as_str(), token_id);
                    keep(self.rpc, contract, through, &mut events).await;
                }
                super::events::read_receipts(self.rpc, &holding.wallet, &mut events).await;
                next = HistoryProgress {
                    through: read.through,
                    from_mint: next.from_mint || events.iter().any(|e| e.kind == EventKind::Mint),
                    events: next.events + events.len() as u64,
                };
                // Told before they are stored (an event's id is its log: a read that stores
                // them after a failure here tells none twice); only events after a first
                // read: linking tells nothing of the past.
                if progress.is_some() {
                    emit_history(self.alerts, position, &events, chrono::Utc::now()).await?;
                }
                match self
                    .history
                    .append_history(owner, id, progress.as_ref(), &events, &next)
                    .await
                {
                    // Another refresh stored this stretch first: its summary stands.
                    Err(StoreError::Conflict) => return Ok((0, None)),
                    other => other?,
                }
                added = events.len() as u64;
                done = position
                    .order
                    .as_deref()
                    .is_some_and(|order| done_by(order, &events));
                if let Some(series) = self.series {
                    let subject = (position.pool.as_str(), holding.token.as_str());
                    let farm = self.farm(&holding.manager).or(gauge.as_deref());
                    let farm = (
                        farm.map(|f| (f, holding.wallet.as_str())),
                        progress.is_none(),
                    );
                    super::series::after_history(series, self.chain, subject, farm, &events).await;
                }
            }
        }
        // Nothing new for a whole history: nothing to sum again, nothing to write.
        let summed = holding.history.as_ref();
        if added == 0 && !rewound && stopped.is_none() && summed.is_some_and(|h| h.complete) {
            return Ok((0, None));
        }
        let events = self.history.history_page(owner, id, 0, next.events).await?;
        let events = counted_for(&events, self.own, &holding.wallet);
        let handed = self.handovers(position, holding, &events, blocks).await;
        let decimals = holding.tokens.clone().map(|t| t.decimals);
        let whole = next.from_mint && stopped.is_none();
        let mut summary = summarize(
            &events,
            &holding.wallet,
            decimals,
            (next.through, whole),
            handed,
        );
        if let Some(why) = &stopped {
            summary.complete = false;
            summary.reason = Some(format!(
                "its events were read through block {}, to be read on when the next syncs retry its wallet: {why}",
                next.through
            ));
        }
        // A summary that only read further (an incomplete one read again) is not written.
        let same = summed.is_some_and(|h| {
            let moved = HistorySummary {
                through: summary.through,
                ..h.clone()
            };
            moved == summary
        });
        // The position as stored now: the order is cleared over it.
        let mut stored = std::borrow::Cow::Borrowed(position);
        if !same {
            let read = Position {
                holding: Some(Box::new(WalletHolding {
                    history: Some(summary),
                    ..holding.clone()
                })),
                ..position.clone()
            };
            match self.store.update_holding(&read, position).await {
                Ok(()) => stored = std::borrow::Cow::Owned(read),
                Err(StoreError::Conflict) => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(order) = position.order.as_deref().filter(|_| done) {
            let cleared = Position {
                order: None,
                ..stored.into_owned()
            };
            // Another settle first (its receipt) leaves nothing to clear.
            match self.store.set_order(&cleared, Some(order)).await {
                Ok(()) => tracing::info!(position = %id, "order settled by its events"),
                Err(StoreError::Conflict) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((added, stopped))
    }

    /// Where a reorg replaced the blocks of the history's recent events (those within
    /// [`REORG_WINDOW`] of the head, checked against the canonical blocks in one batch): the
    /// progress back to before the first replaced block, and the events from it on, to be
    /// taken back and read again at the new blocks. `None` when nothing was replaced, or the
    /// node cannot answer the check (the history stays as it is).
    async fn replaced(
        &self,
        owner: &str,
        id: &str,
        progress: &HistoryProgress,
        head: &Block,
    ) -> Result<Option<Replaced>, StoreError> {
        let recent_from = head.number.saturating_sub(REORG_WINDOW);
        if progress.through <= recent_from || progress.events == 0 {
            return Ok(None);
        }
        let events = self
            .history
            .history_page(owner, id, 0, progress.events)
            .await?;
        let mut recent: Vec<u64> = events
            .iter()
            .filter(|e| e.block > recent_from)
            .map(|e| e.block)
            .collect();
        recent.dedup();
        if recent.is_empty() {
            return Ok(None);
        }
        let canonical = match evm::blocks(self.rpc, &recent).await {
            Ok(blocks) => blocks,
            Err(e) => {
                tracing::warn!(position = %id, cause = %e, "recent events not checked against the chain");
                return Ok(None);
            }
        };
        let hash_at: BTreeMap<u64, String> = canonical
            .into_iter()
            .flatten()
            .map(|b| (b.number, b.hash))
            .collect();
        let replaced = events
            .iter()
            .filter(|e| e.block > recent_from)
            .filter(|e| hash_at.get(&e.block) != Some(&e.block_hash))
            .map(|e| e.block)
            .min();
        let Some(from) = replaced else {
            return Ok(None);
        };
        let (kept, gone): (Vec<PositionEvent>, Vec<PositionEvent>) =
            events.into_iter().partition(|e| e.block < from);
        tracing::warn!(position = %id, block = from, "a reorg replaced the blocks of stored events: taken back, read again");
        Ok(Some(Replaced {
            back: HistoryProgress {
                through: from - 1,
                from_mint: kept.iter().any(|e| e.kind == EventKind::Mint),
                events: kept.len() as u64,
            },
            gone,
        }))
    }

    fn deployment(&self, manager: &str) -> Option<&Deployment> {
        self.catalog.deployment_of_manager(self.chain, manager)
    }

    /// A Uniswap v4 manager's pool manager and state view (its modifications and their values
    /// are read there); `None` for a v3 manager.
    fn v4_contracts(&self, manager: &str) -> Option<(&str, &str)> {
        let d = self
            .deployment(manager)
            .filter(|d| d.protocol == Protocol::UniswapV4)?;
        Some((d.pool_manager.as_deref()?, d.state_view.as_deref()?))
    }

    /// Where the manager's events are looked for from: its deployment's first block.
    fn first_block(&self, manager: &str) -> u64 {
        self.deployment(manager)
            .and_then(|d| d.first_block)
            .unwrap_or(0)
    }

    /// The farm the manager's positions are staked in, where its deployment has one.
    fn farm(&self, manager: &str) -> Option<&str> {
        self.deployment(manager).and_then(|d| d.staking.as_deref())
    }

    /// Each event's USD prices (its position's tokens) at its block; at the service's own
    /// state, marked `nearest`, where the node cannot serve the block's.
    async fn value(&self, events: &mut [PositionEvent], subject: &Subject, blocks: &mut Blocks) {
        let wanted: Vec<(u64, &str)> = events
            .iter()
            .map(|e| (e.block, e.block_hash.as_str()))
            .collect();
        self.read_blocks(&wanted, subject, blocks).await;
        for event in events.iter_mut() {
            let at = blocks
                .get(&(event.block, subject.pool.clone()))
                .and_then(Option::as_ref);
            event.prices = subject.tokens.clone().map(|address| match at {
                Some(at) => at.prices.get(&address.to_ascii_lowercase()).cloned(),
                None => usd_price(self.catalog, self.chain, &address),
            });
            event.priced = Some(if at.is_some() {
                Priced::AtBlock
            } else {
                Priced::Nearest
            });
        }
    }

    /// The pools pricing a position's tokens, and its own pool, at each of `wanted` blocks not
    /// read yet in this pass, all in batches (`pools::prices_at`: v4 pools through their `StateView`), priced by the catalog's rules.
    /// A block whose state the node cannot serve ("missing trie node", "header not found": it
    /// fails every pool) is `None`: valued at the nearest state.
    async fn read_blocks(&self, wanted: &[(u64, &str)], subject: &Subject, blocks: &mut Blocks) {
        let mut new: Vec<Block> = Vec::new();
        for (number, hash) in wanted {
            let key = (*number, subject.pool.clone());
            if !blocks.contains_key(&key) && !new.iter().any(|b| b.number == *number) {
                new.push(Block {
                    number: *number,
                    hash: hash.to_string(),
                    timestamp: None,
                });
            }
        }
        if new.is_empty() {
            return;
        }
        let tokens = [subject.tokens[0].as_str(), subject.tokens[1].as_str()];
        let mut pools = self.catalog.pricing_pools(self.chain, &tokens);
        let own = self
            .catalog
            .pools
            .iter()
            .filter(|p| p.chain == self.chain && p.is_named(&subject.pool));
        for pool in own {
            if !pools.iter().any(|p| p.key() == pool.key()) {
                pools.push(pool);
            }
        }
        let reads: Vec<(&Pool, &Block)> = new
            .iter()
            .flat_map(|block| pools.iter().map(move |pool| (*pool, block)))
            .collect();
        let mut answers = pools::prices_at(self.rpc, &reads).await.into_iter();
        for block in &new {
            let read: Vec<_> = answers.by_ref().take(pools.len()).collect();
            let states: HashMap<PoolKey, PoolState> = pools
                .iter()
                .zip(read)
                .filter_map(|(pool, state)| Some((pool.key(), state.ok()?)))
                .collect();
            let at = (!states.is_empty()).then(|| {
                let priced = self.catalog.at_states(self.chain, &states);
                let prices = priced
                    .pools
                    .iter()
                    .flat_map(|p| [&p.token_a, &p.token_b])
                    .filter(|t| t.priced)
                    .map(|t| (t.address.to_ascii_lowercase(), t.price_usd.clone()))
                    .collect();
                AtBlock { states, prices }
            });
            blocks.insert((block.number, subject.pool.clone()), at);
        }
    }

    /// What the position held at the transfers that start and end its holder's count, where
    /// they are transfers: read at their blocks.
    async fn handovers(
        &self,
        position: &Position,
        holding: &WalletHolding,
        events: &[PositionEvent],
        blocks: &mut Blocks,
    ) -> Handovers {
        let Some(start) = count_start(events, &holding.wallet) else {
            return Handovers::default();
        };
        let arrival = match events[start].kind {
            EventKind::Transfer => self.handed(position, holding, events, start, blocks).await,
            _ => None,
        };
        let departure = match count_end(events, start, &holding.wallet) {
            Some(end) => self.handed(position, holding, events, end, blocks).await,
            None => None,
        };
        Handovers { arrival, departure }
    }

    /// What the position held at the transfer `events[at]`: its principal at that block's
    /// pool state and what `collect` would have paid there (an `eth_call` at the block's hash
    /// from its recipient, the owner then).
    async fn handed(
        &self,
        position: &Position,
        holding: &WalletHolding,
        events: &[PositionEvent],
        at: usize,
        blocks: &mut Blocks,
    ) -> Option<Handed> {
        let (start, transfer) = (at, &events[at]);
        let liquidity = events[..start].iter().fold(0u128, |l, e| match e.kind {
            EventKind::Deposit => l.saturating_add(e.liquidity),
            EventKind::Withdraw => l.saturating_sub(e.liquidity),
            _ => l,
        });
        let key = PoolKey::new(self.chain, position.protocol, &position.pool);
        let subject = Subject::of(position, holding);
        let block = [(transfer.block, transfer.block_hash.as_str())];
        self.read_blocks(&block, &subject, blocks).await;
        let at = blocks.get(&(transfer.block, subject.pool))?.as_ref()?;
        let state = at.states.get(&key)?;
        let curve = Curve::UniswapV3;
        let held = curve
            .amounts_for_liquidity(
                state.sqrt_price,
                curve.sqrt_price_at_tick(position.tick_lower).ok()?,
                curve.sqrt_price_at_tick(position.tick_upper).ok()?,
                liquidity,
                false,
            )
            .ok()?;
        let principal = [held.amount0, held.amount1];
        let token_id = U256::from_str(&holding.token).ok()?;
        if let Some((_, state_view)) = self.v4_contracts(&holding.manager) {
            let contracts = (state_view, position.pool.as_str(), holding.manager.as_str());
            let range = (position.tick_lower, position.tick_upper);
            let at = transfer.block_hash.as_str();
            let owed = owed_at(self.rpc, contracts, range, token_id, at)
                .await
                .ok()?;
            return Some(Handed { principal, owed });
        }
        let recipient = Address::from_str(transfer.to.as_deref()?).ok()?;
        let call = IPositionCollect::collectCall {
            params: IPositionCollect::CollectParams {
                tokenId: token_id,
                recipient,
                amount0Max: u128::MAX,
                amount1Max: u128::MAX,
            },
        };
        let request = json!([
            {"from": recipient.to_string(), "to": holding.manager, "data": hex_data(&call.abi_encode())},
            {"blockHash": transfer.block_hash},
        ]);
        let answer = self.rpc.call("eth_call", request).await.ok()?;
        let bytes = evm::hex_bytes(&answer).ok()?;
        let owed = IPositionCollect::collectCall::abi_decode_returns(&bytes).ok()?;
        Some(Handed {
            principal,
            owed: [owed.amount0, owed.amount1],
        })
    }
}
