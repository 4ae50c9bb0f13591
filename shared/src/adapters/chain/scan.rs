//! Following the chain instead of polling it (decision 45): each sync reads, per EVM
//! chain, the position managers' logs of the confirmed blocks since the last scan, in ranges of
//! at most the chain's log range (a range refused for its size read again in halves): a
//! `Transfer` from or to a linked wallet, and `IncreaseLiquidity`, `DecreaseLiquidity` or
//! `Collect` of a position a linked wallet holds (on a chain with Uniswap v4, its pool
//! manager's `ModifyLiquidity` by its position manager, matched by salt: one filter more), each
//! filter's OR-list at most [`TOPIC_LIST`] entries, every filter of a range in one batch. The wallets they touch are read whole (the
//! refresh); the others cost nothing. The scan's end is stored by number and hash: a later scan
//! that finds another block there goes back [`REORG_WINDOW`] blocks and reads again the
//! wallets touched there. A gap is caught up [`MAX_SCAN_BLOCKS`] at a time, in order.

use super::evm::{self, Block};
use super::history::{
    decode_log, read_ranges, topic, word_topic, Refused, COLLECT, DECREASE, FARM_WITHDRAW,
    GAUGE_CLAIM, GAUGE_WITHDRAW, HARVEST, INCREASE, TRANSFER,
};
use super::rpc::RpcClient;
use super::v4::MODIFY_LIQUIDITY;
use crate::application::app::ChainFollow;
use crate::application::ports::{Market, WalletStore};
use crate::domain::clock::Clock;
use crate::domain::history::EventKind;
use crate::domain::market::{ChainScan, Confirmations, LogRanges};
use crate::domain::math::U256;
use crate::domain::model::{Chain, Protocol};
use crate::domain::wallets::{LinkedWallet, ScanProgress, Touch};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;
use std::sync::Arc;

/// Entries of one filter's OR-list (wallets as `Transfer` senders or recipients, position ids):
/// providers take at least this many; more wallets make more filters in the same batch, not
/// more requests.
pub const TOPIC_LIST: usize = 100;

/// The most filtered calls a range takes (one more on a chain with a farm: its harvests): past
/// them (over [`TOPIC_LIST`] linked wallets or followed positions on a chain), one call asks for
/// every log of the managers' four events (and the farms' `Harvest`) and the scan matches them
/// against the linked set itself (issue 37: the calls stay flat
/// with wallets; the answer grows with the managers' own activity instead).
pub const MAX_FILTERED_CALLS: usize = 3;

/// Blocks one sync scans at most per chain; a longer gap (the service was down) goes on at the
/// next syncs, in order, never skipped.
pub const MAX_SCAN_BLOCKS: u64 = 10_000;

/// Blocks a scan goes back when the block its last scan ended at was replaced: deeper than any
/// reorg behind the confirmations (a deeper one is corrected by the reconciliation).
pub const REORG_WINDOW: u64 = 128;

pub struct ChainScanner {
    endpoints: BTreeMap<Chain, Arc<RpcClient>>,
    wallets: Arc<dyn WalletStore>,
    market: Arc<dyn Market>,
    clock: Arc<dyn Clock>,
    confirmations: Confirmations,
    log_ranges: LogRanges,
}

impl ChainScanner {
    pub fn new(
        endpoints: BTreeMap<Chain, Arc<RpcClient>>,
        (wallets, market, clock): (Arc<dyn WalletStore>, Arc<dyn Market>, Arc<dyn Clock>),
        confirmations: Confirmations,
        log_ranges: LogRanges,
    ) -> ChainScanner {
        ChainScanner {
            endpoints,
            wallets,
            market,
            clock,
            confirmations,
            log_ranges,
        }
    }
}

/// What a chain's logs are matched against: the linked wallets by address, and the positions
/// they hold by (manager, token id).
struct Watched<'a> {
    by_address: HashMap<String, Vec<&'a LinkedWallet>>,
    by_position: HashMap<(String, U256), Vec<&'a LinkedWallet>>,
    /// Uniswap v4 on the chain: its pool manager and position manager (lower case). Its
    /// positions' modifications are the pool manager's `ModifyLiquidity` by the position
    /// manager, the token id in its unindexed salt: one more filter per range, matched here.
    v4: Option<(String, String)>,
}

impl<'a> Watched<'a> {
    fn of(wallets: &'a [LinkedWallet]) -> Watched<'a> {
        let mut watched = Watched {
            by_address: HashMap::new(),
            by_position: HashMap::new(),
            v4: None,
        };
        for wallet in wallets {
            let address = wallet.address.to_ascii_lowercase();
            watched.by_address.entry(address).or_default().push(wallet);
            for key in &wallet.tokens {
                let Some((manager, token)) = key.split_once('#') else {
                    continue;
                };
                let Ok(token) = U256::from_str(token) else {
                    continue;
                };
                let position = (manager.to_ascii_lowercase(), token);
                watched
                    .by_position
                    .entry(position)
                    .or_default()
                    .push(wallet);
            }
        }
        watched
    }

    /// The filters of one block range of the managers and farms: senders, recipients, stakers
    /// harvesting (where the chain has a farm), positions' ids, each OR-list at most
    /// [`TOPIC_LIST`] entries; or, where those take more than [`MAX_FILTERED_CALLS`], one filter
    /// of every kind, matched here.
    fn filters(
        &self,
        (managers, farms): (&[String], bool),
        (start, end): (u64, u64),
    ) -> Vec<(&'static str, Value)> {
        let filter = |topics: Value| {
            (
                "eth_getLogs",
                json!([{
                    "address": managers,
                    "fromBlock": format!("0x{start:x}"),
                    "toBlock": format!("0x{end:x}"),
                    "topics": topics,
                }]),
            )
        };
        let addresses: BTreeSet<String> = self
            .by_address
            .keys()
            .map(|a| format!("0x{:0>64}", a.trim_start_matches("0x")))
            .collect();
        let ids: BTreeSet<String> = self
            .by_position
            .keys()
            .map(|(_, id)| word_topic(*id))
            .collect();
        let addresses: Vec<String> = addresses.into_iter().collect();
        let ids: Vec<String> = ids.into_iter().collect();
        let per_address = if farms { 3 } else { 2 };
        let filtered =
            per_address * addresses.len().div_ceil(TOPIC_LIST) + ids.len().div_ceil(TOPIC_LIST);
        if filtered > MAX_FILTERED_CALLS + usize::from(farms) {
            let kinds = [
                TRANSFER,
                INCREASE,
                DECREASE,
                COLLECT,
                HARVEST,
                FARM_WITHDRAW,
                GAUGE_CLAIM,
                GAUGE_WITHDRAW,
            ]
            .map(topic);
            let mut calls = vec![filter(json!([kinds]))];
            calls.extend(self.v4_filter((start, end)));
            return calls;
        }
        let mut filters = Vec::new();
        filters.extend(self.v4_filter((start, end)));
        for chunk in addresses.chunks(TOPIC_LIST) {
            filters.push(filter(json!([topic(TRANSFER), chunk])));
            filters.push(filter(json!([topic(TRANSFER), null, chunk])));
            if farms {
                // A farm's (or a Slipstream gauge's) harvest and withdrawal name its staker
                // (only the staker may do either); a withdrawal to another address is the
                // staker's position leaving.
                let kinds = FARM_EVENTS.map(topic);
                filters.push(filter(json!([kinds, chunk])));
            }
        }
        for chunk in ids.chunks(TOPIC_LIST) {
            let kinds = [topic(INCREASE), topic(DECREASE), topic(COLLECT)];
            filters.push(filter(json!([kinds, chunk])));
        }
        filters
    }

    /// The pool manager's modifications by the v4 position manager over the range, where the
    /// chain has Uniswap v4: the same one call whatever the wallets.
    fn v4_filter(&self, (start, end): (u64, u64)) -> Option<(&'static str, Value)> {
        let (pool_manager, manager) = self.v4.as_ref()?;
        let sender = format!("0x{:0>64}", manager.trim_start_matches("0x"));
        Some((
            "eth_getLogs",
            json!([{
                "address": pool_manager,
                "fromBlock": format!("0x{start:x}"),
                "toBlock": format!("0x{end:x}"),
                "topics": [topic(MODIFY_LIQUIDITY), null, sender],
            }]),
        ))
    }

    /// A v4 modification's block and the position it names (`(manager, salt)`), or `None` for
    /// another log.
    fn v4_position(&self, log: &Value) -> Option<(u64, (String, U256))> {
        let (pool_manager, manager) = self.v4.as_ref()?;
        let topics = log.get("topics")?.as_array()?;
        let first = topics.first()?.as_str()?;
        let emitter = log.get("address")?.as_str()?;
        if !first.eq_ignore_ascii_case(&topic(MODIFY_LIQUIDITY))
            || !emitter.eq_ignore_ascii_case(pool_manager)
        {
            return None;
        }
        let data = evm::hex_bytes(log.get("data")?).ok()?;
        let salt = U256::from_be_slice(data.get(96..128)?);
        let block = log.get("blockNumber").and_then(evm::quantity)?;
        Some((block, (manager.clone(), salt)))
    }

    /// Whether a log may touch a watched wallet, from its topics alone (an unfiltered range's
    /// logs are mostly strangers', skipped before they are decoded).
    fn may_touch(&self, log: &Value) -> bool {
        let topics = log.get("topics").and_then(Value::as_array);
        let word = |i: usize| topics.and_then(|t| t.get(i)).and_then(Value::as_str);
        let address_of = |i: usize| {
            word(i).map(|w| {
                format!(
                    "0x{}",
                    &w.get(26..).unwrap_or_default().to_ascii_lowercase()
                )
            })
        };
        let manager = log.get("address").and_then(Value::as_str);
        let party = |i| address_of(i).is_some_and(|a| self.by_address.contains_key(&a));
        if let Some((_, position)) = self.v4_position(log) {
            return self.by_position.contains_key(&position);
        }
        match word(0) {
            Some(first) if is_farm_event(first) => party(1),
            Some(first) if first.eq_ignore_ascii_case(&topic(TRANSFER)) => {
                let held = word(3)
                    .zip(manager)
                    .and_then(|(w, m)| Some((m.to_ascii_lowercase(), U256::from_str(w).ok()?)))
                    .is_some_and(|p| self.by_position.contains_key(&p));
                party(1) || party(2) || held
            }
            Some(_) => word(1)
                .zip(manager)
                .and_then(|(w, m)| Some((m.to_ascii_lowercase(), U256::from_str(w).ok()?)))
                .is_some_and(|p| self.by_position.contains_key(&p)),
            None => true,
        }
    }

    /// The wallets one log touches: a `Transfer`'s sender and recipient, the holder of the
    /// position another event names.
    fn touched(
        &self,
        log: &Value,
        range: (u64, u64),
    ) -> Result<(u64, Vec<&'a LinkedWallet>), String> {
        if let Some(farm_event) = staker_of(log, range)? {
            let (block, staker) = farm_event;
            let holders = self.by_address.get(&staker);
            return Ok((block, holders.into_iter().flatten().copied().collect()));
        }
        if let Some((block, position)) = self.v4_position(log) {
            if !(range.0..=range.1).contains(&block) {
                return Err("a ModifyLiquidity outside the range asked for".into());
            }
            let holders = self.by_position.get(&position);
            return Ok((block, holders.into_iter().flatten().copied().collect()));
        }
        let (manager, token, event) = decode_log(log, range)?;
        let mut wallets = Vec::new();
        // A collect's recipient is no holder: only a transfer's parties are.
        if event.kind != EventKind::Collect {
            for party in [&event.from, &event.to].into_iter().flatten() {
                let holders = self.by_address.get(&party.to_ascii_lowercase());
                wallets.extend(holders.into_iter().flatten());
            }
        }
        let position = (manager.to_ascii_lowercase(), token);
        wallets.extend(self.by_position.get(&position).into_iter().flatten());
        Ok((event.block, wallets))
    }
}

/// What a farm or a Slipstream gauge emits naming its staker first.
const FARM_EVENTS: [&str; 4] = [HARVEST, FARM_WITHDRAW, GAUGE_CLAIM, GAUGE_WITHDRAW];

/// A farm's `Harvest` or `Withdraw` (or a gauge's `ClaimRewards` or `Withdraw`), by its first
/// topic.
fn is_farm_event(first: &str) -> bool {
    FARM_EVENTS
        .iter()
        .any(|kind| first.eq_ignore_ascii_case(&topic(kind)))
}

/// A farm's `Harvest` (the staker's rewards paid: its position's `rewardsPending` changed) or
/// `Withdraw` (its position unstaked, to it or to anyone else): its block and its staker
/// (lower-case); `None` for another event.
fn staker_of(log: &Value, (start, end): (u64, u64)) -> Result<Option<(u64, String)>, String> {
    let topics = log.get("topics").and_then(Value::as_array);
    let word = |i: usize| topics.and_then(|t| t.get(i)).and_then(Value::as_str);
    if !word(0).is_some_and(is_farm_event) {
        return Ok(None);
    }
    let staker = word(1)
        .filter(|w| w.len() == 66)
        .map(|w| format!("0x{}", w[26..].to_ascii_lowercase()))
        .ok_or("a farm event without its staker")?;
    let block = log
        .get("blockNumber")
        .and_then(Value::as_str)
        .and_then(|n| u64::from_str_radix(n.trim_start_matches("0x"), 16).ok())
        .filter(|n| (start..=end).contains(n))
        .ok_or("a farm event outside the range asked for")?;
    Ok(Some((block, staker)))
}

impl ChainScanner {
    /// One chain's scan: its report, and the wallets to read whole.
    async fn scan(&self, chain: Chain, wallets: &[LinkedWallet]) -> (ChainScan, Vec<LinkedWallet>) {
        let mut report = ChainScan {
            chain,
            from: 0,
            through: 0,
            head: 0,
            events: 0,
            touched: 0,
            rescanned: None,
            stopped: None,
        };
        match self.try_scan(chain, wallets, &mut report).await {
            Ok(touched) => {
                report.touched = touched.len();
                (report, touched)
            }
            Err(reason) => {
                tracing::warn!(%chain, %reason, "chain scan failed: it goes on from its last block at the next sync");
                report.stopped = Some(reason);
                (report, Vec::new())
            }
        }
    }

    async fn try_scan(
        &self,
        chain: Chain,
        wallets: &[LinkedWallet],
        report: &mut ChainScan,
    ) -> Result<Vec<LinkedWallet>, String> {
        let rpc = self
            .endpoints
            .get(&chain)
            .ok_or_else(|| format!("no RPC endpoint is configured for {chain}"))?;
        let catalog = self.market.catalog().await.map_err(|e| e.to_string())?;
        // The position managers, the farms their positions are staked in, and the gauges of
        // the chain's Slipstream pools (each pool's, as its sync read it).
        let gauges: Vec<String> = catalog
            .pools
            .iter()
            .filter(|p| p.chain == chain)
            .filter_map(|p| p.state.as_ref()?.slipstream.as_ref()?.gauge.clone())
            .collect();
        let mut managers: Vec<String> = catalog
            .deployments_on(chain)
            .flat_map(|d| [d.position_manager.clone(), d.staking.clone()])
            .flatten()
            .chain(gauges.iter().cloned())
            .collect();
        managers.sort_unstable();
        managers.dedup();
        let farms =
            catalog.deployments_on(chain).any(|d| d.staking.is_some()) || !gauges.is_empty();
        let head = evm::block_number(rpc)
            .await
            .map_err(|e| format!("eth_blockNumber: {e}"))?;
        let target = head.saturating_sub(self.confirmations.of(chain));
        report.head = target;
        let previous = self
            .wallets
            .scan_progress(chain)
            .await
            .map_err(|e| e.to_string())?;
        let now = self.clock.now();
        let Some(previous) = previous else {
            // Nothing is known of before: every wallet is read whole once, the scan starts here.
            let block = block_at(rpc, target).await?;
            report.from = target + 1;
            report.through = target;
            report.rescanned = Some("the chain's first scan: every wallet read whole".into());
            let progress = ScanProgress {
                chain,
                through: target,
                hash: block.hash,
                scanned_at: now,
                recent: Vec::new(),
            };
            self.save(None, &progress).await?;
            return Ok(wallets.to_vec());
        };
        let mut from = previous.through + 1;
        let mut touched: Vec<&LinkedWallet> = Vec::new();
        let mut recent = previous.recent.clone();
        let to = target.min(from.saturating_add(MAX_SCAN_BLOCKS - 1));
        let numbers = [previous.through, to.max(previous.through)];
        let blocks = evm::blocks(rpc, &numbers)
            .await
            .map_err(|e| format!("eth_getBlockByNumber: {e}"))?;
        let Some(last) = blocks[0].as_ref() else {
            // A node behind the last scan (another provider, a lagging one): nothing to scan yet.
            report.stopped = Some(format!(
                "the node has no block {} yet: the scan waits for it",
                previous.through
            ));
            return Ok(Vec::new());
        };
        let mut watched = Watched::of(wallets);
        watched.v4 = catalog
            .deployment(chain, Protocol::UniswapV4)
            .and_then(|d| Some((d.pool_manager.clone()?, d.position_manager.clone()?)))
            .map(|(p, m)| (p.to_ascii_lowercase(), m.to_ascii_lowercase()));
        if last.hash != previous.hash {
            // Replaced since: back over the window, and the wallets touched there read again.
            from = previous.through.saturating_sub(REORG_WINDOW - 1).max(1);
            report.rescanned = Some(format!(
                "block {} was replaced: blocks from {from} scanned again",
                previous.through
            ));
            let again = recent.iter().filter(|t| t.block >= from);
            for touch in again {
                let wallet = watched
                    .by_address
                    .get(&touch.address.to_ascii_lowercase())
                    .into_iter()
                    .flatten()
                    .find(|w| w.owner == touch.owner);
                touched.extend(wallet);
            }
            recent.retain(|t| t.block < from);
        }
        report.from = from;
        report.through = from - 1;
        let end = blocks[1].clone().filter(|b| b.number >= from);
        let Some(end) = end else {
            return Ok(Vec::new());
        };
        let read = read_ranges(from, end.number, self.log_ranges.of(chain), |range| {
            let calls = watched.filters((&managers, farms), range);
            let watched = &watched;
            async move {
                let mut found = Vec::new();
                for answer in rpc.batch(&calls).await {
                    let logs = answer?;
                    let logs = logs
                        .as_array()
                        .ok_or_else(|| Refused::Other("eth_getLogs answered no list".into()))?;
                    for log in logs {
                        if log.get("removed") == Some(&Value::Bool(true)) || !watched.may_touch(log)
                        {
                            continue;
                        }
                        found.push(
                            watched
                                .touched(log, range)
                                .map_err(|e| Refused::Other(format!("a log refused: {e}")))?,
                        );
                    }
                }
                Ok(found)
            }
        })
        .await;
        report.through = read.through;
        report.stopped = read.stopped;
        report.events = read.found.len();
        for (block, wallets) in read.found {
            for wallet in wallets {
                touched.push(wallet);
                recent.push(Touch {
                    block,
                    owner: wallet.owner.clone(),
                    address: wallet.address.clone(),
                });
            }
        }
        if read.through >= from {
            let hash = if read.through == end.number {
                end.hash
            } else {
                block_at(rpc, read.through).await?.hash
            };
            recent.retain(|t| t.block + REORG_WINDOW > read.through);
            recent.sort_by(|a, b| {
                (a.block, &a.owner, &a.address).cmp(&(b.block, &b.owner, &b.address))
            });
            recent.dedup();
            let progress = ScanProgress {
                chain,
                through: read.through,
                hash,
                scanned_at: now,
                recent,
            };
            self.save(Some(&previous), &progress).await?;
        }
        let mut seen = BTreeSet::new();
        Ok(touched
            .into_iter()
            .filter(|w| seen.insert((w.owner.clone(), w.address.clone())))
            .cloned()
            .collect())
    }

    async fn save(
        &self,
        previous: Option<&ScanProgress>,
        progress: &ScanProgress,
    ) -> Result<(), String> {
        self.wallets
            .save_scan_progress(previous, progress)
            .await
            .map_err(|e| match e {
                crate::application::ports::StoreError::Conflict => {
                    "another sync scanned these blocks meanwhile".to_string()
                }
                other => format!("the scan's progress cannot be stored: {other}"),
            })
    }
}

async fn block_at(rpc: &RpcClient, number: u64) -> Result<Block, String> {
    evm::blocks(rpc, &[number])
        .await
        .map_err(|e| format!("eth_getBlockByNumber: {e}"))?
        .pop()
        .flatten()
        .ok_or_else(|| format!("the node has no block {number}"))
}

#[async_trait]
impl ChainFollow for ChainScanner {
    /// Every EVM chain with an endpoint, side by side.
    async fn follow(&self, wallets: &[LinkedWallet]) -> (Vec<ChainScan>, Vec<LinkedWallet>) {
        let chains: Vec<Chain> = self
            .endpoints
            .keys()
            .copied()
            .filter(|c| *c != Chain::Solana)
            .collect();
        let scans = chains.iter().map(|&chain| {
            let on_chain: Vec<LinkedWallet> = wallets
                .iter()
                .filter(|w| w.chain == chain)
                .cloned()
                .collect();
            async move { self.scan(chain, &on_chain).await }
        });
        let mut reports = Vec::new();
        let mut touched = Vec::new();
        for (report, wallets) in futures_util::future::join_all(scans).await {
            reports.push(report);
            touched.extend(wallets);
        }
        (reports, touched)
    }
}
