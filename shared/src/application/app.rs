//! What every handler receives: the store, the market (pool catalog), a clock, the wallets and,
//! where chains are read, the readers behind their traits; and the wallet refresh over them.
//! Which implementations fill it is the wiring's `assemble`.

use crate::application::alert_ports::Alerts;
use crate::application::error::{Outcome, UseCaseError};
use crate::application::ports::{
    HistoryStore, Market, PositionStore, SeriesStore, StoreError, WalletStore,
};
use crate::application::wallet_reads::{Change, Recorded};
use crate::domain::catalog::Catalog;
use crate::domain::clock::Clock;
use crate::domain::market::{ChainScan, PoolState, SyncReport, WalletFailure, WalletsRefreshed};
use crate::domain::math::U256;
use crate::domain::model::{Chain, Position, TransactionRequest};
use crate::domain::orders::simulation::{Credit, Simulated, SimulationError};
use crate::domain::orders::v4::Permit2Allowance;
use crate::domain::orders::zap::{Quote, QuotedPool};
use crate::domain::wallets::challenge::SigningDomain;
use crate::domain::wallets::proof::ContractProof;
use crate::domain::wallets::retry::{due, Retry, RETRIES_PER_SYNC};
use crate::domain::wallets::{DeploymentError, LinkedWallet};
use async_trait::async_trait;
use std::sync::Arc;

#[derive(Clone)]
pub struct App {
    pub store: Arc<dyn PositionStore>,
    pub market: Arc<dyn Market>,
    pub clock: Arc<dyn Clock>,
    /// What `POST /markets/sync` runs; `None` where no chain is read (the snapshot).
    pub sync: Option<Arc<dyn MarketSync>>,
    /// Linked wallets and their challenges.
    pub wallets: Arc<dyn WalletStore>,
    /// Wallet positions' events as read from their chains.
    pub history: Arc<dyn HistoryStore>,
    /// The pools' series of points the charts are computed from (decision 66).
    pub series: Arc<dyn SeriesStore>,
    /// The domain and URI a wallet signs in to (the challenge's first lines).
    pub signing: SigningDomain,
    /// Reads a wallet's positions from its chain; `None` where no chain is read.
    pub wallet_refresh: Option<Arc<dyn WalletRefresh>>,
    /// Reads what an on-chain open needs (the wallet's allowances); `None` where no chain is
    /// read: opening from a wallet then waits for one (503).
    pub order_chain: Option<Arc<dyn OrderChain>>,
    /// Follows the chains' events to the wallets they touch; `None` where no chain is read.
    pub follow: Option<Arc<dyn ChainFollow>>,
    /// The events told to users, their settings and webhooks (decision 61).
    pub alerts: Alerts,
}

/// The chain reads building an on-chain order takes (`chain::orders`).
/// Whose allowances of which tokens (protocol order) to whom, read at a pool state's block.
pub struct Allowed<'a> {
    pub chain: Chain,
    pub state: &'a PoolState,
    pub owner: &'a str,
    pub spender: &'a str,
    pub tokens: [&'a str; 2],
}

#[async_trait]
pub trait OrderChain: Send + Sync {
    /// `allowance(owner, spender)` of each token, at the block of the state (by hash where it
    /// has one): what the wallet has approved when the mint is sized.
    async fn allowances(&self, asked: &Allowed<'_>) -> Result<[U256; 2], String>;

    /// What the owner lets Uniswap v4's position manager (the spender) take through Permit2 of
    /// each token (the native currency: unlimited), at the block of the state.
    async fn permit2_allowances(
        &self,
        asked: &Allowed<'_>,
    ) -> Result<[Permit2Allowance; 2], String>;

    /// Runs `transactions` in order from their wallet on the chain's latest block, each seeing
    /// the allowances the approvals before it grant (decision 55): each one's gas
    /// estimate and return data, or why it would revert or could not be run.
    async fn simulate(
        &self,
        chain: Chain,
        transactions: &[TransactionRequest],
        credits: &[Credit],
    ) -> Result<Vec<Simulated>, SimulationError>;

    /// What selling `amount_in` of token `sell` (0 or 1) on `pool` pays and where it leaves the
    /// price, at the block of `state` (Uniswap's QuoterV2 by `eth_call`): a zap's search asks
    /// one at a time (issue 63). Where no chain answers quotes, none are given.
    async fn quote(
        &self,
        _pool: &QuotedPool<'_>,
        _state: &PoolState,
        _sell: (usize, U256),
    ) -> Result<Quote, SimulationError> {
        Err(SimulationError::Unavailable(
            "swap quotes are not read here: a zap is built where the chain is read".into(),
        ))
    }

    /// Whether the contract wallet `wallet` signed what `proof` holds, by the chain's answer
    /// (ERC-1271; ERC-6492 for a wallet not deployed yet): `Err` when it could not answer.
    async fn signed_by(
        &self,
        chain: Chain,
        wallet: &str,
        proof: &ContractProof,
    ) -> Result<bool, String>;
}

/// What one read of a wallet stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refreshed {
    /// How many positions the wallet holds.
    pub positions: u64,
    /// What the read could not take, if anything (positions whose token or pool cannot be
    /// read, which keep their last good read; positions past a read's cap): the wallet's
    /// `refreshError`, its other positions stored all the same.
    pub incomplete: Option<String>,
    /// Why a position's history stopped part way, or a deployment could not be read, if one
    /// did: the syncs retry the wallet.
    pub stopped: Option<String>,
    /// The deployments the read could not take (their positions keep their last read).
    pub deployment_errors: Vec<DeploymentError>,
    /// The positions it wrote and what changed of each.
    pub changed: Vec<Change>,
    /// The positions the wallet holds, as `{manager}#{token}` (whose events are followed).
    pub tokens: Vec<String>,
}

impl From<Recorded> for Refreshed {
    /// A read that took every position.
    fn from(recorded: Recorded) -> Refreshed {
        Refreshed {
            positions: recorded.held,
            incomplete: None,
            stopped: None,
            deployment_errors: Vec::new(),
            changed: recorded.changed,
            tokens: Vec::new(),
        }
    }
}

/// Reads one wallet's positions from its chain and stores them (`chain::wallets`).
#[async_trait]
pub trait WalletRefresh: Send + Sync {
    /// What the read stored, or why the wallet could not be read at all (its last good read
    /// then stays).
    async fn refresh(&self, wallet: &LinkedWallet) -> Result<Refreshed, String>;
}

/// Follows the chains' position-manager events (`chain::scan`, decision 45).
#[async_trait]
pub trait ChainFollow: Send + Sync {
    /// Scans each EVM chain's confirmed blocks since its last scan for the events of `wallets`
    /// and of the positions they hold: per chain what was scanned, and the wallets to read
    /// whole (no other wallet is read).
    async fn follow(&self, wallets: &[LinkedWallet]) -> (Vec<ChainScan>, Vec<LinkedWallet>);
}

/// Reads the catalog pools' states from their chains and stores them (`chain::sync`).
#[async_trait]
pub trait MarketSync: Send + Sync {
    /// Fails only when the catalog itself cannot be read; each pool's fate is in the report.
    async fn sync(&self) -> Result<SyncReport, StoreError>;
}

/// Why a wallet is read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WholeRead {
    /// It was linked, an event touched it, or it is polled (Orca): what changed is expected.
    Refresh,
    /// The slow check of what the events made of it: any change is a correction, logged and
    /// counted (`wallets.reconciled.corrected`).
    Reconcile,
}

impl App {
    /// The caller's position `id`, with the catalog; unknown or another user's is not found.
    pub async fn own_position(&self, owner: &str, id: &str) -> Outcome<(Position, Arc<Catalog>)> {
        let (position, catalog) =
            tokio::try_join!(self.store.get(owner, id), self.market.catalog())?;
        let not_found = || UseCaseError::NotFound("position not found".into());
        Ok((position.ok_or_else(not_found)?, catalog))
    }

    /// Reads `wallets` whole, a few at a time (the in-process path: local-api; the stack fans
    /// out through its queue instead).
    pub async fn read_wallets(
        &self,
        wallets: Vec<LinkedWallet>,
        why: WholeRead,
    ) -> WalletsRefreshed {
        let mut report = WalletsRefreshed::default();
        let mut pending = wallets.into_iter();
        loop {
            let batch: Vec<LinkedWallet> = pending.by_ref().take(8).collect();
            if batch.is_empty() {
                return report;
            }
            let reads = batch.into_iter().map(|w| self.read_wallet(w, why));
            for (wallet, corrected) in futures_util::future::join_all(reads).await {
                report.corrected += corrected;
                match wallet.refresh_error {
                    None => report.refreshed += 1,
                    Some(reason) => report.failed.push(WalletFailure {
                        chain: wallet.chain,
                        address: wallet.address,
                        reason,
                    }),
                }
            }
        }
    }

    /// One sync's wallet work in process: the chains' events followed to the wallets they
    /// touched, which are read whole, and the Orca wallets polled (their events are not
    /// followed); every other wallet costs nothing.
    pub async fn follow_wallets(&self) -> Result<(Vec<ChainScan>, WalletsRefreshed), StoreError> {
        let linked = self.wallets.linked().await?;
        let (scans, mut touched) = match &self.follow {
            Some(follow) => follow.follow(&linked).await,
            None => (Vec::new(), Vec::new()),
        };
        let solana = linked.iter().filter(|w| w.chain == Chain::Solana).cloned();
        touched.extend(solana);
        let retried = with_due_retries(&mut touched, &linked, self.clock.now());
        let mut read = self.read_wallets(touched, WholeRead::Refresh).await;
        read.retried = retried;
        Ok((scans, read))
    }

    /// Every linked wallet read whole and compared with what the events made of it.
    pub async fn reconcile_all(&self) -> Result<WalletsRefreshed, StoreError> {
        let linked = self.wallets.linked().await?;
        Ok(self.read_wallets(linked, WholeRead::Reconcile).await)
    }

    /// [`Self::refresh_wallet`], and how many positions a reconciliation corrected (0 for any
    /// other read: its changes are expected).
    pub async fn read_wallet(&self, wallet: LinkedWallet, why: WholeRead) -> (LinkedWallet, usize) {
        let (wallet, changed) = self.whole_read(wallet).await;
        if why != WholeRead::Reconcile {
            return (wallet, 0);
        }
        for change in &changed {
            tracing::warn!(
                metric = "wallets.reconciled.corrected",
                position = %change.position,
                fields = %change.fields.join(","),
                chain = %wallet.chain,
                "reconciliation corrected a position the events had not kept as the chain holds it"
            );
        }
        (wallet, changed.len())
    }

    /// Reads the wallet's positions now and records the outcome: the count, or why the chain
    /// could not be read (the link stands either way; an event of the wallet or the
    /// reconciliation reads it again).
    pub async fn refresh_wallet(&self, wallet: LinkedWallet) -> LinkedWallet {
        self.whole_read(wallet).await.0
    }

    /// The whole read recorded on the wallet, and the positions it changed.
    async fn whole_read(&self, wallet: LinkedWallet) -> (LinkedWallet, Vec<Change>) {
        let outcome = match &self.wallet_refresh {
            Some(refresh) => refresh.refresh(&wallet).await,
            None => Err(format!(
                "no RPC endpoint is configured for {}: its positions are read once one is",
                wallet.chain
            )),
        };
        let now = self.clock.now();
        // A read or a history that stopped part way is retried by the next syncs (decision 58).
        let retry = |why: &str| Some(Retry::after(wallet.retry.as_ref(), why.to_string(), now));
        let (wallet, changed) = match outcome {
            Ok(read) => (
                LinkedWallet {
                    refreshed_at: Some(now),
                    positions: Some(read.positions),
                    refresh_error: read.incomplete,
                    tokens: read.tokens,
                    retry: read.stopped.as_deref().and_then(retry),
                    deployment_errors: read.deployment_errors,
                    ..wallet.clone()
                },
                read.changed,
            ),
            Err(reason) => (
                LinkedWallet {
                    retry: retry(&reason),
                    refresh_error: Some(reason),
                    ..wallet.clone()
                },
                Vec::new(),
            ),
        };
        if let Some(retry) = wallet.retry.as_ref().filter(|r| r.stalled(now)) {
            tracing::warn!(
                metric = "wallets.retry.stalled",
                chain = %wallet.chain,
                address = %wallet.address,
                since = %retry.since.to_rfc3339(),
                attempts = retry.attempts,
                reason = %retry.reason,
                "a wallet's read or a position's history is still stopped after an hour"
            );
        }
        if let Err(e) = self.wallets.record_refresh(&wallet).await {
            tracing::warn!(cause = %e, chain = %wallet.chain, address = %wallet.address, "wallet refresh not recorded");
        }
        (wallet, changed)
    }
}

/// Adds to `touched` the wallets of `linked` whose retry is due at `now` (at most
/// [`RETRIES_PER_SYNC`], the longest waiting first), each wallet once; how many it added.
pub fn with_due_retries(
    touched: &mut Vec<LinkedWallet>,
    linked: &[LinkedWallet],
    now: chrono::DateTime<chrono::Utc>,
) -> usize {
    let mut added = 0;
    for wallet in due(linked, now, RETRIES_PER_SYNC) {
        let same = |w: &LinkedWallet| {
            w.owner == wallet.owner && w.chain == wallet.chain && w.address == wallet.address
        };
        if !touched.iter().any(same) {
            touched.push(wallet);
            added += 1;
        }
    }
    added
}
