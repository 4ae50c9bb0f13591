//! One sync: every catalog pool read from its chain (chains in parallel, each chain's pools at
//! one block or slot) and stored; a pool updates whole or keeps its last state, and the report
//! says which and why.

use super::rpc::{RpcClient, RpcError};
use super::{evm, solana};
use crate::app::MarketSync;
use crate::catalog::{Catalog, Pool};
use crate::clock::Clock;
use crate::fee_ticks::advance_all;
use crate::lifecycle::settle_pending;
use crate::market::{PoolState, PoolSync, SyncReport};
use crate::model::Chain;
use crate::store::{Market, PositionStore, StoreError};
use async_trait::async_trait;
use futures_util::future::join_all;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How long one RPC request may take before the chain counts as down for this sync.
pub const RPC_TIMEOUT: Duration = Duration::from_secs(8);

pub struct Syncer {
    endpoints: BTreeMap<Chain, Arc<RpcClient>>,
    market: Arc<dyn Market>,
    /// Where the pending positions wait for a pool's fresh state.
    store: Arc<dyn PositionStore>,
    clock: Arc<dyn Clock>,
}

/// One chain's pools: the height read and each pool's state or the reason it has none.
type ChainRead = (Option<u64>, Vec<Result<PoolState, String>>);

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
        }
    }

    /// The RPC client of each chain (tests read their request counts).
    pub fn endpoints(&self) -> &BTreeMap<Chain, Arc<RpcClient>> {
        &self.endpoints
    }

    async fn read_chain(&self, chain: Chain, pools: &[&Pool]) -> ChainRead {
        let Some(rpc) = self.endpoints.get(&chain) else {
            let reason = format!("no RPC endpoint is configured for {chain}");
            return (None, pools.iter().map(|_| Err(reason.clone())).collect());
        };
        let failed = |e: RpcError| {
            tracing::warn!(%chain, cause = %e, "chain read failed");
            let reason = e.to_string();
            (None, pools.iter().map(|_| Err(reason.clone())).collect())
        };
        if chain == Chain::Solana {
            return match solana::read_pools(rpc, pools, self.clock.now()).await {
                Ok((slot, states)) => (Some(slot), states),
                Err(e) => failed(e),
            };
        }
        match evm::block_number(rpc).await {
            Ok(block) => {
                let states = evm::read_pools(rpc, pools, block, self.clock.now()).await;
                (Some(block), states)
            }
            Err(e) => failed(e),
        }
    }

    async fn store(
        &self,
        pool: &Pool,
        read: Result<PoolState, String>,
        height: Option<u64>,
    ) -> PoolSync {
        let mut report = PoolSync::unread(pool.chain, pool.id.clone(), height);
        let state = match read.and_then(|state| check(pool, state)) {
            Ok(state) => state,
            Err(reason) => {
                tracing::warn!(chain = %pool.chain, pool = %pool.id, %reason, "pool not updated");
                report.reason = Some(reason);
                return report;
            }
        };
        report.sqrt_price = Some(state.sqrt_price.to_string());
        report.tick = Some(state.tick);
        report.price = Some(pool.orientation.human_price_of(state.sqrt_price));
        let fee_ticks = advance_all(
            pool.fee_accounting(),
            &pool.tracked_ticks,
            &pool.fee_ticks,
            &state,
        );
        match self.market.save_state(pool, &state, &fee_ticks).await {
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

    /// Syncs every pool of `catalog`; the report lists them in catalog order.
    pub async fn sync_catalog(&self, catalog: &Catalog) -> SyncReport {
        let mut by_chain: BTreeMap<Chain, Vec<&Pool>> = BTreeMap::new();
        for pool in &catalog.pools {
            by_chain.entry(pool.chain).or_default().push(pool);
        }
        let reads = by_chain.iter().map(|(chain, pools)| async move {
            let (height, states) = self.read_chain(*chain, pools).await;
            let mut out = Vec::with_capacity(pools.len());
            for (pool, state) in pools.iter().zip(states) {
                out.push(self.store(pool, state, height).await);
            }
            out
        });
        let mut pools: Vec<PoolSync> = join_all(reads).await.into_iter().flatten().collect();
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
        match settle_pending(self.store.as_ref(), self.market.as_ref(), &updated, now).await {
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
        pools.sort_by_key(order);
        SyncReport::new(pools)
    }
}

/// A state the API can value at: a sqrt price inside the protocol's range and a tick that
/// agrees with it (the pool's tick is the sqrt price's, or one below right on a tick after a
/// swap down).
fn check(pool: &Pool, state: PoolState) -> Result<PoolState, String> {
    let curve = pool.curve();
    let lowest = curve
        .sqrt_price_at_tick(curve.min_tick())
        .map_err(|e| e.0.to_string())?;
    let highest = curve
        .sqrt_price_at_tick(curve.max_tick())
        .map_err(|e| e.0.to_string())?;
    if state.sqrt_price.is_zero() {
        return Err("the pool is not initialized".into());
    }
    if state.sqrt_price < lowest || state.sqrt_price >= highest {
        return Err("the sqrt price read lies outside the protocol's range".into());
    }
    let tick = curve.tick_at_or_below(state.sqrt_price);
    if state.tick != tick && state.tick != tick - 1 {
        return Err("the tick read does not match the sqrt price read".into());
    }
    Ok(state)
}

#[async_trait]
impl MarketSync for Syncer {
    async fn sync(&self) -> Result<SyncReport, StoreError> {
        let catalog = self.market.catalog().await?;
        Ok(self.sync_catalog(&catalog).await)
    }
}
