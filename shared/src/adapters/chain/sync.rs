//! One sync: every catalog pool read from its chain (chains in parallel, each chain's pools at
//! one block or slot, `confirmations` behind the head) and stored when [`super::trust`] takes
//! it; a pool updates whole or keeps its last state, and the report says which and why.

use super::orders::ChainOrders;
use super::rpc::{RpcClient, RpcError};
use super::trust::{agreeing_tick, fee_growth_advances, succession, StoredBlock};
use super::{evm, pools, series, solana};
use crate::application::alert_ports::Alerts;
use crate::application::app::MarketSync;
use crate::application::ports::{Market, PositionStore, SeriesStore, StoreError};
use crate::application::settling::{settle_offers, waiting_on};
use crate::application::watches::{flush_outbox, watch_pool, SyncPass, SyncedState};
use crate::domain::catalog::{Catalog, Pool};
use crate::domain::clock::Clock;
use crate::domain::fee_ticks::advance_all;
use crate::domain::market::Confirmations;
use crate::domain::market::{Height, OrdersSettled, PoolState, PoolSync, Succession, SyncReport};
use crate::domain::math::U256;
use crate::domain::model::Chain;
use crate::domain::model::Position;
use async_trait::async_trait;
use futures_util::future::join_all;
use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// How long one RPC request may take before the chain counts as down for this sync.
pub const RPC_TIMEOUT: Duration = Duration::from_secs(8);
/// How long one sync records boundaries on each chain before leaving the rest to the next: the
/// function's 25 s less its reads before and a last RPC round trip after.
pub const SERIES_BUDGET: Duration = Duration::from_secs(10);

pub struct Syncer {
    endpoints: BTreeMap<Chain, Arc<RpcClient>>,
    market: Arc<dyn Market>,
    /// Where the pending positions wait for a pool's fresh state.
    store: Arc<dyn PositionStore>,
    clock: Arc<dyn Clock>,
    /// Blocks between the head and the block read (EVM), per chain; above 0, Solana reads
    /// `finalized`. Receipts of orders need as many blocks on top.
    confirmations: Confirmations,
    /// Where range events go; `None`: none are made.
    alerts: Option<Alerts>,
    /// Where the pools' points go at each boundary passed; `None`: none are recorded.
    series: Option<Arc<dyn SeriesStore>>,
    /// The confirmed block each EVM chain was read at by this sync: where its points are
    /// recorded to (no request of their own for it).
    read_at: std::sync::Mutex<BTreeMap<Chain, evm::Block>>,
}

/// One chain's read: the height read, the head as the node reports it, and per pool its state
/// (or why it has none) with what the chain says of its stored state's block.
struct ChainRead {
    height: Option<u64>,
    head: u64,
    states: Vec<(Result<PoolState, String>, StoredBlock)>,
}

impl ChainRead {
    fn failed(pools: &[&Pool], reason: String) -> ChainRead {
        ChainRead {
            height: None,
            head: 0,
            states: pools
                .iter()
                .map(|_| (Err(reason.clone()), StoredBlock::Unchecked))
                .collect(),
        }
    }
}

impl Syncer {
    pub fn new(
        endpoints: BTreeMap<Chain, Arc<RpcClient>>,
        market: Arc<dyn Market>,
        store: Arc<dyn PositionStore>,
        clock: Arc<dyn Clock>,
    ) -> Syncer {
        Syncer {
            endpoints,
            market,
            store,
            clock,
            confirmations: Confirmations::from(0),
            alerts: None,
            series: None,
            read_at: Default::default(),
        }
    }

    /// Tells the positions watched on each pool it updates of their ranges (decision 61).
    pub fn with_alerts(mut self, alerts: Alerts) -> Syncer {
        self.alerts = Some(alerts);
        self
    }

    /// Records the pools' points at each boundary the chains pass (decision 66).
    pub fn with_series(mut self, series: Arc<dyn SeriesStore>) -> Syncer {
        self.series = Some(series);
        self
    }

    /// Each EVM chain's points at every boundary its confirmed block passed (the block this sync
    /// read it at; where it read none of its pools, its head and that block: two requests), then
    /// per [`series::BOUNDARIES_AT_ONCE`] boundaries the rounds of probes finding their blocks
    /// together, and per boundary one batch of pool reads, for [`SERIES_BUDGET`] at most: the
    /// next sync goes on from where this one stopped. A chain that fails records nothing more
    /// this time; the next sync takes the same boundaries.
    async fn record_series(&self, series: &dyn SeriesStore, catalog: &Catalog) {
        let deadline = std::time::Instant::now() + SERIES_BUDGET;
        let chains = self.endpoints.iter().filter(|(chain, _)| {
            **chain != Chain::Solana && catalog.pools.iter().any(|p| p.chain == **chain)
        });
        let records = chains.map(|(chain, rpc)| async move {
            let read = self.read_at.lock().ok().and_then(|mut r| r.remove(chain));
            let target = async {
                if let Some(block) = read {
                    return Ok(vec![Some(block)]);
                }
                let head = evm::block_number(rpc).await?;
                let number = head.saturating_sub(self.confirmations.of(*chain));
                evm::blocks(rpc, &[number]).await
            };
            let target = match target.await {
                Ok(blocks) => blocks.into_iter().flatten().next(),
                Err(e) => {
                    tracing::warn!(%chain, cause = %e, "no point recorded: the chain did not answer");
                    None
                }
            };
            let Some(target) = target else { return };
            let until = (&target, deadline);
            match series::record(rpc, series, catalog, *chain, until).await {
                Ok(done) if done.boundaries > 0 => {
                    tracing::info!(%chain, boundaries = done.boundaries, points = done.points, left = done.left, "points recorded");
                }
                Ok(_) => {}
                Err(why) => tracing::warn!(%chain, %why, "points not recorded"),
            }
            match series::backfill_days(rpc, series, catalog, *chain, &target).await {
                Ok(0) => {}
                Ok(points) => tracing::info!(%chain, points, "past days recorded"),
                Err(why) => tracing::warn!(%chain, %why, "past days not recorded"),
            }
        });
        join_all(records).await;
    }

    /// Drops the lingering ticks (no position uses them any more) of each pool whose chain's
    /// series has recorded through their release (all of them without a series): one cursor
    /// read per chain that has some, one write per pool with some to drop.
    async fn expire_lingering(&self, catalog: &Catalog) {
        let mut by_chain: BTreeMap<Chain, Vec<&Pool>> = BTreeMap::new();
        for pool in catalog.pools.iter().filter(|p| !p.lingering.is_empty()) {
            by_chain.entry(pool.chain).or_default().push(pool);
        }
        for (chain, pools) in by_chain {
            let through = match &self.series {
                Some(series) => match series.series_cursor(chain).await {
                    Ok(cursor) => cursor.through,
                    Err(e) => {
                        tracing::warn!(%chain, cause = %e, "lingering ticks kept: the series' cursor was not read");
                        continue;
                    }
                },
                None => Some(i64::MAX),
            };
            let Some(through) = through else { continue };
            for pool in pools {
                if !pool.lingering.values().any(|at| *at <= through) {
                    continue;
                }
                if let Err(e) = self.market.expire_ticks(pool, through).await {
                    tracing::warn!(%chain, pool = %pool.id, cause = %e, "lingering ticks kept");
                }
            }
        }
    }

    /// Reads `confirmations` blocks behind the head (0: the head itself, as on a devnet).
    pub fn with_confirmations(mut self, confirmations: impl Into<Confirmations>) -> Syncer {
        self.confirmations = confirmations.into();
        self
    }

    /// The RPC client of each chain (tests read their request counts).
    pub fn endpoints(&self) -> &BTreeMap<Chain, Arc<RpcClient>> {
        &self.endpoints
    }

    async fn read_chain(&self, chain: Chain, pools: &[&Pool]) -> ChainRead {
        let Some(rpc) = self.endpoints.get(&chain) else {
            let reason = format!("no RPC endpoint is configured for {chain}");
            return ChainRead::failed(pools, reason);
        };
        let read = if chain == Chain::Solana {
            self.read_solana(rpc, pools).await
        } else {
            self.read_evm(chain, rpc, pools).await
        };
        read.unwrap_or_else(|e| {
            tracing::warn!(%chain, cause = %e, "chain read failed");
            ChainRead::failed(pools, e.to_string())
        })
    }

    async fn read_solana(&self, rpc: &RpcClient, pools: &[&Pool]) -> Result<ChainRead, RpcError> {
        let finalized = self.confirmations.of(Chain::Solana) > 0;
        let (slot, head, states) =
            solana::read_pools(rpc, pools, finalized, self.clock.now()).await?;
        Ok(ChainRead {
            height: Some(slot),
            head,
            states: states
                .into_iter()
                .map(|s| (s, StoredBlock::Unchecked))
                .collect(),
        })
    }

    /// The head, then in one batch the block `confirmations` behind it and the blocks of the
    /// stored states (to see a reorg), then the pools at that block's hash.
    async fn read_evm(
        &self,
        chain: Chain,
        rpc: &RpcClient,
        pools: &[&Pool],
    ) -> Result<ChainRead, RpcError> {
        let head = evm::block_number(rpc).await?;
        let target = head.saturating_sub(self.confirmations.of(chain));
        let mut numbers = vec![target];
        for pool in pools {
            if let Some(stored) = pool.state.as_ref() {
                if !numbers.contains(&stored.height) {
                    numbers.push(stored.height);
                }
            }
        }
        let blocks = evm::blocks(rpc, &numbers).await?;
        let Some(block) = blocks[0].clone() else {
            return Err(RpcError::Malformed(
                "the node knows no block at the head it reported",
            ));
        };
        let states = pools::read_pools(rpc, pools, &block, self.clock.now()).await;
        if let Ok(mut read_at) = self.read_at.lock() {
            read_at.insert(chain, block.clone());
        }
        let stored_block = |pool: &Pool| {
            let Some(stored) = pool.state.as_ref() else {
                return StoredBlock::Unchecked;
            };
            let at = numbers.iter().position(|n| *n == stored.height);
            match at.map(|i| &blocks[i]) {
                Some(Some(block)) if stored.block_hash.is_some() => {
                    StoredBlock::Hash(block.hash.clone())
                }
                Some(None) => StoredBlock::Unknown,
                _ => StoredBlock::Unchecked,
            }
        };
        Ok(ChainRead {
            height: Some(block.number),
            head,
            states: pools
                .iter()
                .zip(states)
                .map(|(pool, state)| (state, stored_block(pool)))
                .collect(),
        })
    }

    async fn store(
        &self,
        pool: &Pool,
        read: Result<PoolState, String>,
        stored_block: StoredBlock,
        chain: (Option<u64>, u64),
    ) -> PoolSync {
        let (height, head) = chain;
        let mut report = PoolSync::unread(pool.chain, pool.id.clone(), height);
        let accounting = pool.fee_accounting();
        let judged = read.and_then(|state| {
            agreeing_tick(pool, &state)?;
            let succession = succession(
                pool.state.as_ref(),
                &state,
                head,
                &stored_block,
                self.clock.now(),
            )?;
            let fee_ticks = advance_all(accounting, &pool.tracked_ticks, &pool.fee_ticks, &state);
            if let (Succession::Next, Some(stored)) = (succession, pool.state.as_ref()) {
                fee_growth_advances(accounting, stored, &state, &pool.fee_ticks, &fee_ticks)?;
            }
            Ok((state, succession, fee_ticks))
        });
        let (state, succession, fee_ticks) = match judged {
            Ok(judged) => judged,
            Err(reason) => {
                tracing::warn!(chain = %pool.chain, pool = %pool.id, %reason, "pool not updated");
                report.reason = Some(reason);
                return report;
            }
        };
        if let Succession::Replaces { height } = succession {
            tracing::warn!(chain = %pool.chain, pool = %pool.id, replaced = height, by = state.height,
                "the stored state is no longer the chain's: replaced by the canonical one");
        }
        report.sqrt_price = Some(state.sqrt_price.to_string());
        report.tick = Some(state.tick);
        report.price = Some(pool.orientation.human_price_of(state.sqrt_price));
        match self
            .market
            .save_state(pool, &state, &fee_ticks, succession)
            .await
        {
            Ok(()) => report.updated = true,
            Err(StoreError::Conflict) => {
                report.reason = Some(
                    "a state read at the same or a later block or slot is already stored".into(),
                );
            }
            Err(e) => {
                tracing::error!(chain = %pool.chain, pool = %pool.id, cause = %e, "state not stored");
                report.reason = Some("the state could not be stored".into());
            }
        }
        report
    }

    /// Follows the orders waiting on the pools just updated, at the states just stored.
    async fn settle_orders(
        &self,
        orders: Vec<Position>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Option<OrdersSettled> {
        if orders.is_empty() {
            return None;
        }
        let catalog = match self.market.catalog().await {
            Ok(catalog) => catalog,
            Err(e) => {
                tracing::error!(cause = %e, "orders not followed: the catalog cannot be read");
                return None;
            }
        };
        let mut chains = ChainOrders::new(self.endpoints.clone(), self.confirmations.clone());
        if let Some(alerts) = &self.alerts {
            chains = chains.with_alerts(alerts.clone());
        }
        let settled = chains
            .settle(self.store.as_ref(), &catalog, orders, now)
            .await;
        tracing::info!(
            opened = settled.opened,
            withdrawn = settled.withdrawn,
            ended = settled.ended,
            "orders followed"
        );
        Some(settled)
    }

    /// The range events of the positions watched on the pools just updated, at the states
    /// just stored (confirmed: read `confirmations` behind the head). A store that fails here
    /// costs this state's events, never the sync.
    async fn tell_ranges(
        &self,
        alerts: &Alerts,
        updated: &[&Pool],
        reports: &[PoolSync],
        now: chrono::DateTime<chrono::Utc>,
    ) {
        let mut pass = SyncPass::new(self.store.as_ref(), self.market.as_ref());
        let mut told = 0;
        for pool in updated {
            let report = reports
                .iter()
                .find(|r| r.updated && r.chain == pool.chain && r.pool == pool.id);
            let Some(state) = report.and_then(synced_state) else {
                continue;
            };
            match watch_pool(alerts, pool, state, now, &mut pass).await {
                Ok(new) => told += new,
                Err(e) => {
                    tracing::warn!(chain = %pool.chain, pool = %pool.id, cause = %e, "range alerts not made");
                }
            }
        }
        if told > 0 {
            tracing::info!(events = told, "range alerts made");
        }
    }

    /// Reads `pools` (chains in parallel) and stores each state the trust rules take; no
    /// order or pending position is followed. What a sync does first, and what a wallet read
    /// does for the pools it has just discovered, so their depth is known at once.
    pub async fn read_and_store(&self, pools: &[&Pool]) -> Vec<PoolSync> {
        let mut by_chain: BTreeMap<Chain, Vec<&Pool>> = BTreeMap::new();
        for pool in pools {
            by_chain.entry(pool.chain).or_default().push(pool);
        }
        let reads = by_chain.iter().map(|(chain, pools)| async move {
            let read = self.read_chain(*chain, pools).await;
            let mut out = Vec::with_capacity(pools.len());
            for (pool, (state, stored_block)) in pools.iter().zip(read.states) {
                let chain = (read.height, read.head);
                out.push(self.store(pool, state, stored_block, chain).await);
            }
            out
        });
        join_all(reads).await.into_iter().flatten().collect()
    }

    /// Syncs every pool of `catalog` due at its cadence (every catalog pool; a discovered one
    /// as far as it can price a token) and every pool a followed position is on (its ticks
    /// tracked): one pool, one price, for its positions as for `GET /pools` (decision 63). The
    /// report lists them in catalog order.
    pub async fn sync_catalog(&self, catalog: &Catalog) -> SyncReport {
        let started = self.clock.now();
        let due: Vec<&Pool> = catalog
            .pools
            .iter()
            .filter(|p| !p.tracked_ticks.is_empty() || p.cadence.due(p.state.as_ref(), started))
            .collect();
        let mut pools = self.read_and_store(&due).await;
        let updated: Vec<&Pool> = catalog
            .pools
            .iter()
            .filter(|p| {
                pools
                    .iter()
                    .any(|r| r.updated && r.chain == p.chain && r.pool == p.id)
            })
            .collect();
        let now = self.clock.now();
        let (store, market) = (self.store.as_ref(), self.market.as_ref());
        let waiting = match waiting_on(store, &updated).await {
            Ok(waiting) => waiting,
            Err(e) => {
                tracing::error!(cause = %e, "pending positions not read");
                Vec::new()
            }
        };
        let (orders, offers): (Vec<_>, Vec<_>) =
            waiting.into_iter().partition(|(_, p)| p.order.is_some());
        let orders = self
            .settle_orders(orders.into_iter().map(|(_, p)| p).collect(), now)
            .await;
        match settle_offers(store, market, &updated, offers, now).await {
            Ok(settled) => {
                for (pool, counts) in updated.iter().zip(settled) {
                    if let Some(report) = pools
                        .iter_mut()
                        .find(|r| r.chain == pool.chain && r.pool == pool.id)
                    {
                        (report.activated, report.unfunded) = counts;
                    }
                }
            }
            // The positions stay pending: the next sync tries again.
            Err(e) => tracing::error!(cause = %e, "pending positions not activated"),
        }
        let order = |p: &PoolSync| {
            catalog
                .pools
                .iter()
                .position(|c| c.chain == p.chain && c.id == p.pool)
        };
        if let Some(alerts) = &self.alerts {
            self.tell_ranges(alerts, &updated, &pools, now).await;
        }
        pools.sort_by_key(order);
        SyncReport {
            orders,
            ..SyncReport::new(pools)
        }
    }
}

#[async_trait]
impl MarketSync for Syncer {
    async fn sync(&self) -> Result<SyncReport, StoreError> {
        let catalog = self.market.catalog().await?;
        let report = self.sync_catalog(&catalog).await;
        if let Some(series) = &self.series {
            // The pools and their followed ticks as this sync found them; states read anew.
            self.record_series(series.as_ref(), &catalog).await;
        }
        self.expire_lingering(&catalog).await;
        // Deliveries the queue refused earlier are queued again by each sync.
        if let Some(alerts) = &self.alerts {
            match flush_outbox(alerts).await {
                Ok(0) => {}
                Ok(queued) => tracing::info!(queued, "outbox deliveries queued"),
                Err(e) => tracing::warn!(cause = %e, "the outbox was not read"),
            }
        }
        Ok(report)
    }
}

/// The state a pool's report says was stored: its tick, block (or slot) and sqrt price.
fn synced_state(report: &PoolSync) -> Option<SyncedState> {
    let height = match (report.block, report.slot) {
        (Height::Shown(h), _) | (_, Height::Shown(h)) => h?,
        _ => return None,
    };
    Some(SyncedState {
        tick: report.tick?,
        block: height,
        sqrt_price: U256::from_str(report.sqrt_price.as_deref()?).ok()?,
    })
}
