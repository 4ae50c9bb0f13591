//! Reading linked wallets' positions for the API (`app::WalletRefresh`): the chain's RPC
//! endpoint, the catalog's deployments on it, one block `confirmations` behind the head.

use super::backfill::HistoryReader;
use super::evm::{self, Block};
use super::gone::{burned, no_longer_held};
use super::orca_wallets::read_orca_wallet;
use super::orders::ChainOrders;
use super::rpc::RpcClient;
use super::slipstream::gauged_pools;
use super::sync::Syncer;
use super::v4_wallets::{read_positions, Known};
use super::wallets::{
    read_wallet, ChainPosition, FailedDeployment, TokenMeta, MAX_POSITIONS_PER_MANAGER,
};
use crate::application::alert_ports::Alerts;
use crate::application::app::{App, Refreshed, WalletRefresh};
use crate::application::ports::{
    HistoryStore, Market, PositionStore, SeriesStore, StoreError, WalletStore,
};
use crate::application::wallet_reads::{close_burned, mark_unread, record, WALLET_NOT_READ};
use crate::domain::catalog::{Catalog, Pool};
use crate::domain::clock::Clock;
use crate::domain::holdings::{discovered_record, ReadPosition, Staked, TRANSFERRED};
use crate::domain::market::{Cadence, Confirmations, LogRanges};
use crate::domain::math::U256;
use crate::domain::model::{Chain, FeeState, HeldToken, Position, Protocol, Status};
use crate::domain::wallets::{DeploymentError, LinkedWallet};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct WalletReader {
    endpoints: BTreeMap<Chain, Arc<RpcClient>>,
    market: Arc<dyn Market>,
    store: Arc<dyn PositionStore>,
    clock: Arc<dyn Clock>,
    history: Arc<dyn HistoryStore>,
    wallets: Arc<dyn WalletStore>,
    /// Where a position older than the series asks for its pool's past days.
    series: Arc<dyn SeriesStore>,
    alerts: Alerts,
    confirmations: Confirmations,
    log_ranges: LogRanges,
}

impl WalletReader {
    pub fn new(
        endpoints: BTreeMap<Chain, Arc<RpcClient>>,
        app: &App,
        confirmations: impl Into<Confirmations>,
    ) -> WalletReader {
        WalletReader {
            endpoints,
            market: app.market.clone(),
            store: app.store.clone(),
            clock: app.clock.clone(),
            history: app.history.clone(),
            wallets: app.wallets.clone(),
            series: app.series.clone(),
            alerts: app.alerts.clone(),
            confirmations: confirmations.into(),
            log_ranges: LogRanges::default(),
        }
    }

    /// Blocks one `eth_getLogs` of a position's history asks for at most, per chain.
    pub fn with_log_ranges(mut self, log_ranges: LogRanges) -> WalletReader {
        self.log_ranges = log_ranges;
        self
    }

    /// Everything the wallet holds on its chain, at one block or slot.
    pub async fn read(
        &self,
        wallet: &LinkedWallet,
        catalog: &Catalog,
    ) -> Result<WalletRead, String> {
        let chain = wallet.chain;
        let rpc = self
            .endpoints
            .get(&chain)
            .ok_or_else(|| format!("no RPC endpoint is configured for {chain}"))?;
        let deployments: Vec<_> = catalog.deployments_on(chain).collect();
        if chain == Chain::Solana {
            let program = deployments
                .iter()
                .find_map(|d| d.program.as_deref())
                .ok_or("no Orca Whirlpools program is known on solana")?;
            let symbol = |mint: &str| {
                catalog
                    .pools
                    .iter()
                    .filter(|p| p.chain == Chain::Solana)
                    .flat_map(|p| [&p.token_a, &p.token_b])
                    .find(|t| t.address == mint)
                    .map(|t| t.symbol.clone())
            };
            let finalized = self.confirmations.of(chain) > 0;
            let read = read_orca_wallet(rpc, program, &wallet.address, finalized, &symbol).await?;
            return Ok(WalletRead {
                block: None,
                height: read.slot,
                positions: read.positions,
                not_read: read.not_read,
                unread: Vec::new(),
                failed: Vec::new(),
            });
        }
        if deployments.is_empty() {
            return Err(format!("no protocol deployment is known on {chain}"));
        }
        let block = confirmed_block(rpc, self.confirmations.of(chain)).await?;
        let known = Known {
            tokens: &wallet.tokens,
            log_range: self.log_ranges.of(chain),
        };
        let gauged = gauged_pools(catalog, chain);
        let mut holdings = read_wallet(rpc, &deployments, &gauged, &wallet.address, &block).await?;
        // Each v4 deployment apart too: one failing keeps its positions as last read.
        for d in deployments
            .iter()
            .filter(|d| d.protocol == Protocol::UniswapV4)
        {
            match read_positions(rpc, d, &wallet.address, &known, &block).await {
                Ok((positions, unread, not_read)) => {
                    holdings.positions.extend(positions);
                    holdings.unread.extend(unread);
                    holdings.not_read = holdings.not_read.saturating_add(not_read);
                }
                Err(reason) => {
                    let manager = d.position_manager.clone().unwrap_or_default();
                    holdings.failed.push(FailedDeployment {
                        protocol: d.protocol,
                        contract: manager.clone(),
                        manager,
                        reason,
                    });
                }
            }
        }
        let readable = deployments
            .iter()
            .filter(|d| d.position_manager.is_some())
            .count();
        let failed: Vec<DeploymentError> = holdings
            .failed
            .drain(..)
            .map(|f| DeploymentError {
                protocol: f.protocol,
                position_manager: f.manager,
                contract: f.contract,
                reason: f.reason,
            })
            .collect();
        if readable > 0 && failed.len() >= readable {
            // Nothing answered: the read failed whole (its positions keep their last read).
            let each: Vec<String> = failed.iter().map(DeploymentError::describe).collect();
            return Err(each.join("; "));
        }
        let key = |manager: &str, token: U256| format!("{chain}#{manager}#{token}");
        Ok(WalletRead {
            block: Some(holdings.block.clone()),
            height: holdings.block.number,
            positions: holdings
                .positions
                .into_iter()
                .map(|p| neutral(p, holdings.block.number))
                .collect(),
            not_read: holdings.not_read,
            unread: holdings
                .unread
                .into_iter()
                .map(|u| (key(&u.manager, u.token_id), u.reason))
                .collect(),
            failed,
        })
    }
}

/// What one read of a wallet found, at one block or slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletRead {
    /// The block an EVM read was made at (its events are read up to it).
    pub block: Option<Block>,
    pub height: u64,
    pub positions: Vec<ReadPosition>,
    /// Positions past a read's cap, not read.
    pub not_read: u64,
    /// Positions left out, by their holding key, with why (their pool or tokens cannot be read).
    pub unread: Vec<(String, String)>,
    /// Deployments that could not be read: their positions keep their last read.
    pub failed: Vec<DeploymentError>,
}

impl WalletRead {
    /// What the read could not take, for the wallet's `refreshError`; `None` when it took all.
    fn incomplete(&self) -> Option<String> {
        let mut said = Vec::new();
        for f in &self.failed {
            said.push(format!(
                "{}: its positions keep their last read",
                f.describe()
            ));
        }
        if !self.unread.is_empty() {
            let each: Vec<String> = self
                .unread
                .iter()
                .map(|(key, reason)| format!("{}: {reason}", key.rsplit('#').next().unwrap_or(key)))
                .collect();
            said.push(format!(
                "{} position(s) could not be read and keep their last read ({})",
                self.unread.len(),
                each.join("; ")
            ));
        }
        if self.not_read > 0 {
            said.push(format!(
                "the wallet holds {} positions: {} were read and stored, {} past the read's cap of {MAX_POSITIONS_PER_MANAGER} per position manager (its earliest) were not; of its stored positions not read, only those it no longer holds were closed",
                self.positions.len() as u64 + self.unread.len() as u64 + self.not_read,
                self.positions.len(),
                self.not_read
            ));
        }
        (!said.is_empty()).then(|| said.join("; "))
    }
}

/// The block `confirmations` behind the head, by number and hash.
pub async fn confirmed_block(rpc: &RpcClient, confirmations: u64) -> Result<Block, String> {
    let head = evm::block_number(rpc)
        .await
        .map_err(|e| format!("eth_blockNumber: {e}"))?;
    let number = head.saturating_sub(confirmations);
    evm::blocks(rpc, &[number])
        .await
        .map_err(|e| format!("eth_getBlockByNumber: {e}"))?
        .pop()
        .flatten()
        .ok_or_else(|| format!("the node has no block {number}"))
}

/// A chain's read of a position at `height` in the chain-neutral form the store keeps.
fn neutral(p: ChainPosition, height: u64) -> ReadPosition {
    let token = |t: TokenMeta| HeldToken {
        symbol: t.symbol,
        address: t.address,
        decimals: t.decimals,
    };
    let staked = p.staked.map(|s| Staked {
        contract: s.farm,
        reward_token: token(s.reward_token),
        rewards_pending: s.rewards_pending.to_string(),
        since_height: height,
        pending_height: height,
        unstaked: false,
    });
    ReadPosition {
        protocol: p.protocol,
        pool: p.pool,
        manager: p.manager,
        token: p.token_id.to_string(),
        tokens: [token(p.token0), token(p.token1)],
        fee_tier: p.fee,
        tick_spacing: p.tick_spacing,
        tick_lower: p.tick_lower,
        tick_upper: p.tick_upper,
        liquidity: p.liquidity,
        amounts: p.amounts,
        fees: p.fees.map(U256::from),
        sqrt_price: p.state.sqrt_price,
        tick: p.state.tick,
        fee_state: Some(FeeState {
            fee_growth_inside_last: p.fee_growth_inside_last.map(|g| g.to_string()),
            tokens_owed: p.tokens_owed.map(|o| o.to_string()),
        }),
        staked,
        hooks: p.hooks,
    }
}

impl WalletReader {
    /// Pools outside the catalog join the pools the sync reads, as discovered, and are synced
    /// at once (their state and depth: a discovered pool prices a token only by its depth);
    /// the catalog is read again with them.
    async fn discover(
        &self,
        chain: Chain,
        read: &[ReadPosition],
        catalog: Arc<Catalog>,
    ) -> Result<Arc<Catalog>, String> {
        let mut new = Vec::new();
        for position in read {
            let known = catalog.find(chain, position.protocol, &position.pool);
            if known.is_some() || new.iter().any(|(_, pool)| pool == &position.pool) {
                continue;
            }
            let Some(record) = discovered_record(chain, position) else {
                tracing::warn!(pool = %position.pool, "a wallet's pool cannot be tracked");
                continue;
            };
            match self.market.discover(&record).await {
                Ok(()) => new.push((position.protocol, position.pool.clone())),
                Err(e) => {
                    tracing::warn!(pool = %position.pool, cause = %e, "discovered pool not stored");
                }
            }
        }
        if new.is_empty() {
            return Ok(catalog);
        }
        let reread = || async {
            self.market
                .catalog()
                .await
                .map_err(|e| format!("the catalog cannot be read: {e}"))
        };
        let catalog = reread().await?;
        let pools: Vec<&Pool> = new
            .iter()
            .filter_map(|(protocol, pool)| catalog.find(chain, *protocol, pool))
            .filter(|pool| pool.state.is_none() && pool.cadence != Cadence::Never)
            .collect();
        if pools.is_empty() {
            return Ok(catalog);
        }
        let syncer = Syncer::new(
            self.endpoints.clone(),
            self.market.clone(),
            self.store.clone(),
            self.clock.clone(),
        )
        .with_confirmations(self.confirmations.clone());
        syncer.read_and_store(&pools).await;
        reread().await
    }
}

impl WalletReader {
    /// The histories of the wallet's positions read on to `block` and summed onto them: of
    /// those this read `changed` (an event of theirs changes their chain state), of those whose
    /// history is not complete, and of one gone until its history reaches the read that saw it
    /// go. The rest had no event: an event of one position costs no read of the others' (dust
    /// sent to the wallet included). Why one stopped part way, if one did (the syncs retry it).
    async fn follow_history(
        &self,
        wallet: &LinkedWallet,
        catalog: &Catalog,
        block: &Block,
        changed: &std::collections::HashSet<&str>,
    ) -> Option<String> {
        let rpc = self.endpoints.get(&wallet.chain)?;
        let positions = match self
            .store
            .holdings(&wallet.owner, wallet.chain, &wallet.address)
            .await
        {
            // The ones the wallet still holds (withdrawn ones too: a later collect counts), and
            // a closed one until its history reaches the read that saw it closed.
            Ok(positions) => positions
                .into_iter()
                .filter(|p| {
                    let Some(holding) = p.holding.as_deref() else {
                        return false;
                    };
                    // Closed (sent away, emptied, or through the API): its history read
                    // until it reaches the read that saw it closed, the close among it.
                    let gone = holding.close_reason.as_deref() == Some(TRANSFERRED)
                        || p.status == Status::Closed;
                    let caught_up = holding
                        .history
                        .as_ref()
                        .is_some_and(|h| h.through >= holding.height);
                    let complete = holding.history.as_ref().is_some_and(|h| h.complete);
                    if gone {
                        // Until then, and until it is summed (a departure read there).
                        !caught_up || !complete
                    } else {
                        changed.contains(p.id.as_str()) || !complete
                    }
                })
                .collect::<Vec<_>>(),
            Err(e) => {
                tracing::warn!(cause = %e, "histories not read");
                return Some(format!("the positions' histories were not read: {e}"));
            }
        };
        if positions.is_empty() {
            return None;
        }
        // The owner's wallets on the chain: a move between two of them continues the count.
        let own: Vec<String> = match self.wallets.wallets(&wallet.owner).await {
            Ok(wallets) => wallets
                .into_iter()
                .filter(|w| w.chain == wallet.chain)
                .map(|w| w.address.to_ascii_lowercase())
                .collect(),
            Err(e) => return Some(format!("the owner's wallets were not read: {e}")),
        };
        let reader = HistoryReader {
            own: &own,
            rpc,
            chain: wallet.chain,
            catalog,
            history: self.history.as_ref(),
            series: Some(self.series.as_ref()),
            store: self.store.as_ref(),
            alerts: &self.alerts,
            log_range: self.log_ranges.of(wallet.chain),
        };
        let done = reader.follow(&positions, block).await;
        for (position, why) in &done.stopped {
            tracing::warn!(position = %position, cause = %why, "history read stopped part way");
        }
        let (position, why) = done.stopped.first()?;
        Some(format!(
            "the history of {} position(s) stopped part way ({position}: {why})",
            done.stopped.len()
        ))
    }
}

#[async_trait]
impl WalletRefresh for WalletReader {
    /// One read at one block, then one write per position that changed.
    async fn refresh(&self, wallet: &LinkedWallet) -> Result<Refreshed, String> {
        let catalog = self
            .market
            .catalog()
            .await
            .map_err(|e| format!("the catalog cannot be read: {e}"))?;
        let found = match self.read(wallet, &catalog).await {
            Ok(found) => found,
            Err(reason) => {
                // Its positions say that their figures are those of the last good read.
                let (owner, address) = (&wallet.owner, &wallet.address);
                if let Ok(stored) = self.store.holdings(owner, wallet.chain, address).await {
                    let unread = stored.into_iter().map(|p| (p, WALLET_NOT_READ.to_string()));
                    if let Err(e) = mark_unread(self.store.as_ref(), unread).await {
                        tracing::warn!(cause = %e, "positions not marked unread");
                    }
                }
                return Err(reason);
            }
        };
        let incomplete = found.incomplete();
        let WalletRead {
            block,
            height,
            positions: read,
            not_read,
            unread,
            failed,
        } = found;
        let catalog = self.discover(wallet.chain, &read, catalog).await?;
        // A failed deployment's positions, as followed before: still followed.
        let of_failed = |token: &str| {
            failed.iter().any(|f| {
                token
                    .split('#')
                    .next()
                    .is_some_and(|m| m.eq_ignore_ascii_case(&f.position_manager))
            })
        };
        // What the chain scan follows of this wallet: every position it holds, read or not.
        let tokens = read
            .iter()
            .map(|r| format!("{}#{}", r.manager, r.token))
            .chain(
                unread
                    .iter()
                    .filter_map(|(key, _)| key.split_once('#').map(|(_, token)| token.to_string())),
            )
            .chain(wallet.tokens.iter().filter(|t| of_failed(t)).cloned())
            .collect();
        let now = self.clock.now();
        let store = self.store.as_ref();
        let stored_error = |e: StoreError| format!("the positions cannot be read: {e}");
        let (owner, address) = (&wallet.owner, &wallet.address);
        let mut stored = store
            .holdings(owner, wallet.chain, address)
            .await
            .map_err(stored_error)?;
        // Orders the read shows done settle first, with their events; the read then records
        // the rest (a close whose events were not found is left for the next read).
        let orders = ChainOrders::new(self.endpoints.clone(), self.confirmations.clone())
            .with_alerts(self.alerts.clone());
        let (settled, unsettled) = orders
            .settle_seen(store, &catalog, wallet, (height, &read), &stored, now)
            .await?;
        if settled {
            stored = store
                .holdings(owner, wallet.chain, address)
                .await
                .map_err(stored_error)?;
        }
        stored.retain(|p| !unsettled.contains(&p.id));
        // Positions the read left out keep their last read: neither updated nor closed. A
        // capped read cannot tell a position it did not see from one that left: it closes none.
        let chain = wallet.chain;
        let key = |p: &Position| p.holding.as_ref().map(|h| h.key(chain));
        let reason = |p: &Position| {
            let key = key(p)?;
            unread
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, r)| r.clone())
        };
        // A deployment that failed keeps its positions at their last read, marked stale.
        let deployment_failed = |p: &Position| {
            let manager = p.holding.as_ref().map(|h| h.manager.as_str())?;
            failed
                .iter()
                .find(|f| f.position_manager.eq_ignore_ascii_case(manager))
                .map(|f| {
                    format!(
                        "{}: these are the figures of its last good read",
                        f.describe()
                    )
                })
        };
        let kept_stale = stored
            .iter()
            .filter(|p| p.status != Status::Closed && deployment_failed(p).is_some())
            .count() as u64;
        let reason = |p: &Position| reason(p).or_else(|| deployment_failed(p));
        let (left_out, mut stored): (Vec<_>, Vec<_>) =
            stored.into_iter().partition(|p| reason(p).is_some());
        let left_out = left_out.into_iter().filter_map(|p| Some((reason(&p)?, p)));
        mark_unread(store, left_out.map(|(r, p)| (p, r)))
            .await
            .map_err(|e| format!("the positions cannot be stored: {e}"))?;
        if not_read > 0 {
            let seen: std::collections::HashSet<String> = read
                .iter()
                .map(|r| format!("{chain}#{}#{}", r.manager, r.token))
                .collect();
            let (read_now, unseen): (Vec<_>, Vec<_>) = stored
                .into_iter()
                .partition(|p| key(p).is_some_and(|k| seen.contains(&k)));
            stored = read_now;
            // The ones past the cap the wallet no longer holds close whatever the cap.
            let rpc = self.endpoints.get(&wallet.chain).map(Arc::as_ref);
            stored.extend(no_longer_held(rpc, wallet, block.as_ref(), unseen).await?);
        }
        let rpc = self.endpoints.get(&wallet.chain).map(Arc::as_ref);
        let burned = burned(rpc, block.as_ref(), &read, &mut stored).await;
        let market = self.market.as_ref();
        let mut recorded = record(
            (store, market, &self.alerts),
            &catalog,
            wallet,
            (height, read),
            stored,
            now,
        )
        .await
        .map_err(|e| format!("the positions cannot be stored: {e}"))?;
        let closing = (store, market, &self.alerts);
        let burned = close_burned(closing, &catalog, &burned, (height, now)).await;
        recorded
            .changed
            .extend(burned.map_err(|e| format!("the positions cannot be stored: {e}"))?);
        let changed = recorded
            .changed
            .iter()
            .map(|c| c.position.as_str())
            .collect();
        let stopped = match block {
            Some(block) => {
                self.follow_history(wallet, &catalog, &block, &changed)
                    .await
            }
            None => None,
        };
        // A failed deployment is read again by the syncs' retries until it answers.
        let stopped = stopped.or_else(|| {
            let each: Vec<String> = failed.iter().map(DeploymentError::describe).collect();
            (!each.is_empty()).then(|| format!("deployments not read: {}", each.join("; ")))
        });
        Ok(Refreshed {
            positions: recorded.held + unread.len() as u64 + not_read + kept_stale,
            incomplete,
            stopped,
            deployment_errors: failed,
            changed: recorded.changed,
            tokens,
        })
    }
}
