//! What the handlers need from persistence: positions behind [`PositionStore`], the pool
//! catalog and market state behind [`Market`]. Each backend implements both beside each other.

use crate::domain::catalog::{Catalog, Pool, PoolMarket, PoolRecord};
use crate::domain::chart::{FollowedStake, PoolPoint, SeriesCursor, Tier};
use crate::domain::fee_ticks::FeeTick;
use crate::domain::history::{HistoryProgress, PositionEvent};
use crate::domain::market::{PoolState, Succession};
use crate::domain::model::{
    Chain, ChainOrder, Closing, Filter, KeyAnswer, KeyClaim, Page, PageRequest, Position, Protocol,
    Realized, Source, Status,
};
use crate::domain::wallets::challenge::Challenge;
use crate::domain::wallets::{LinkOutcome, LinkedWallet, ScanProgress};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What every store operation returns.
pub type StoreResult<T> = Result<T, StoreError>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend is throttling or unreachable after retries: the client may retry.
    #[error("store unavailable: {0}")]
    Unavailable(BoxError),
    /// A write's precondition failed (the id exists, the status changed meanwhile).
    #[error("conflicting write")]
    Conflict,
    /// Anything else: a bug, a misconfiguration, a malformed item.
    #[error("store failure: {0}")]
    Failure(BoxError),
}

/// The portfolio's reads of one owner ([`PositionStore::portfolio_inputs`]).
#[derive(Debug, Clone, Default)]
pub struct PortfolioInputs {
    /// The positions that are not closed.
    pub open: Vec<Position>,
    /// The running totals of the closed ones.
    pub realized: Realized,
    /// The wallet positions closed on chain (withdrawn, transferred away); a store may also
    /// give those closed through the API, which the portfolio leaves to `realized`.
    pub closed_on_chain: Vec<Position>,
}

#[async_trait]
pub trait PositionStore: Send + Sync {
    /// Stores a new position (a pending one in its pool's pending index too); `Conflict` if its
    /// id exists. All or nothing.
    async fn insert(&self, position: &Position) -> StoreResult<()> {
        self.insert_answering(position, None).await
    }

    /// [`Self::insert`], completing an idempotency key with `answer` in the same write: both
    /// or neither (`Conflict` if the key's lease is no longer the answer's).
    async fn insert_answering(
        &self,
        position: &Position,
        answer: Option<&KeyAnswer>,
    ) -> StoreResult<()>;

    /// The owner's position with this id; another owner's is `None`, as an unknown id.
    async fn get(&self, owner: &str, id: &str) -> StoreResult<Option<Position>>;

    /// Newest first (ids are time-ordered), `page.offset` skipped, and the exact count of every
    /// position of the owner that matches the filter.
    async fn list(&self, owner: &str, filter: Filter, page: PageRequest) -> StoreResult<Page>;

    /// Every position of the owner that is not closed (the portfolio's inputs).
    async fn open_positions(&self, owner: &str) -> StoreResult<Vec<Position>>;

    /// The positions waiting on one pool (catalog spelling of its id), oldest first: the
    /// pending ones and the active ones with an order (a close waiting for the chain); read
    /// from the per-pool index, not by scanning.
    async fn pending_on(
        &self,
        chain: Chain,
        protocol: Protocol,
        pool: &str,
    ) -> StoreResult<Vec<Position>>;

    /// Stores `activated` (a pending position sized at a synced state, or an on-chain open
    /// whose mint was confirmed, status `active`) over the pending one, leaving the pool's
    /// pending index, all at once; `Conflict` if it is no longer pending, or if it holds a
    /// wallet token another of the owner's positions holds.
    async fn activate(&self, activated: &Position) -> StoreResult<()>;

    /// Closes a position that is in `from` (leaving its pool's pending index if pending), storing its frozen figures and adding its realized
    /// PnL and cost basis to the owner's running totals, all at once; `Conflict` if it is not
    /// in `from` (closed meanwhile) or does not exist.
    async fn close(
        &self,
        owner: &str,
        id: &str,
        from: Status,
        closing: &Closing,
    ) -> StoreResult<()> {
        self.close_answering(owner, id, from, closing, None).await
    }

    /// [`Self::close`], completing an idempotency key with `answer` in the same write.
    async fn close_answering(
        &self,
        owner: &str,
        id: &str,
        from: Status,
        closing: &Closing,
        answer: Option<&KeyAnswer>,
    ) -> StoreResult<()>;

    /// Claims the owner's idempotency `key` for the request with `fingerprint` at `now`, or
    /// says why not (answered, another request's, in flight). A key whose retention ended, or
    /// whose in-flight lease ran out (a crashed attempt), is claimed afresh.
    async fn claim_key(
        &self,
        owner: &str,
        key: &str,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> StoreResult<KeyClaim>;

    /// Completes a claimed key with an answer that changed nothing (a client error).
    async fn answer_key(&self, answer: &KeyAnswer) -> StoreResult<()>;

    /// Frees a claimed key (the attempt failed on our side: a retry may run it again).
    async fn release_key(&self, owner: &str, key: &str, lease: &str) -> StoreResult<()>;

    /// The running totals of the owner's closed positions: one read.
    async fn realized(&self, owner: &str) -> StoreResult<Realized>;

    /// What the portfolio reads of the owner: [`Self::open_positions`], [`Self::realized`],
    /// and the wallet positions closed on chain (their figures still move with prices while
    /// they hold what a collect would pay). A store may read the three in fewer requests.
    async fn portfolio_inputs(&self, owner: &str) -> StoreResult<PortfolioInputs> {
        let closed = async {
            let filter = Filter {
                status: Some(Status::Closed),
                chain: None,
                source: Some(Source::Wallet),
            };
            let mut closed = Vec::new();
            loop {
                let page = PageRequest {
                    offset: closed.len() as u64,
                    limit: 100,
                };
                let found = self.list(owner, filter, page).await?;
                let done = found.items.len() < 100;
                closed.extend(found.items);
                if done || closed.len() as u64 >= found.total {
                    return Ok(closed);
                }
            }
        };
        let (open, realized, closed_on_chain) =
            tokio::try_join!(self.open_positions(owner), self.realized(owner), closed)?;
        Ok(PortfolioInputs {
            open,
            realized,
            closed_on_chain,
        })
    }

    /// The owner's positions read from `wallet` on `chain`, any status. A new one is stored by
    /// [`Self::insert`], which refuses (`Conflict`) a second position with the same
    /// [`crate::domain::model::WalletHolding::key`] for the owner: a position read twice, even by two
    /// racing refreshes, keeps one id.
    async fn holdings(&self, owner: &str, chain: Chain, wallet: &str)
        -> StoreResult<Vec<Position>>;

    /// The owner's wallet position under `key` ([`crate::domain::model::WalletHolding::key`]),
    /// whichever of the owner's wallets read it last: where a position moved between two of
    /// the owner's wallets is found.
    async fn holding(&self, owner: &str, chain: Chain, key: &str) -> StoreResult<Option<Position>>;

    /// Stores `read` (a later read of a wallet position) over `previous` as stored, all at
    /// once: its figures, its wallet (a position moved between two of the owner's wallets), and
    /// its status with the list entries and counts; `Conflict` when the
    /// stored position is no longer `previous` (a newer read, or an order, was stored
    /// meanwhile).
    async fn update_holding(&self, read: &Position, previous: &Position) -> StoreResult<()>;

    /// Stores `position`'s order (built, its hash reported, or cleared) over the stored one's
    /// if that is still `previous`, and the status and wallet read `position`'s, all at once;
    /// `Conflict` otherwise (a newer read is never undone). An active position with an order (a close waiting for the chain) is on its
    /// pool's pending index, which the sync reads: it joins it with its order and leaves it
    /// without.
    async fn set_order(
        &self,
        position: &Position,
        previous: Option<&ChainOrder>,
    ) -> StoreResult<()>;

    /// A move of a position's range: `position`'s order stored as [`Self::set_order`] stores
    /// it, and `opening` (the new position, pending) inserted as [`Self::insert`] inserts it,
    /// all at once; `Conflict` when either is refused, and then nothing is stored.
    async fn set_move_order(
        &self,
        position: &Position,
        previous: Option<&ChainOrder>,
        opening: &Position,
    ) -> StoreResult<()>;

    /// Removes the owner's positions read from `wallet` on `chain` (the wallet was unlinked),
    /// with their list entries and counts; how many went.
    async fn remove_holdings(&self, owner: &str, chain: Chain, wallet: &str) -> StoreResult<u64>;

    /// Moves a position from `from` to `to` keeping every count right; `Conflict` if it is not
    /// in `from` (or does not exist). With `from == to` nothing moves: `Ok` if it is in `from`.
    async fn set_status(&self, owner: &str, id: &str, from: Status, to: Status) -> StoreResult<()>;
}

/// Where the pool catalog and its market state come from, and where the sync writes.
#[async_trait]
pub trait Market: Send + Sync {
    /// The catalog at the latest stored states (possibly cached: see each implementation).
    async fn catalog(&self) -> StoreResult<Arc<Catalog>>;

    /// Adds a pool a linked wallet holds a position on to the pools the sync reads
    /// ([`crate::domain::catalog::PoolRecord::discovered`]); a pool already known is left as it is.
    async fn discover(&self, record: &PoolRecord) -> StoreResult<()>;

    /// Counts one more position on each of `ticks` (so the sync reads them while any uses
    /// them) and starts the fee records of those that have none with `first_use` (a record
    /// that exists is kept: other positions' checkpoints rest on it). Answers the pool's state
    /// as stored and these ticks' records, of one moment, which the new position's checkpoint
    /// is taken from. Counted before the position is stored: a position that then fails to
    /// store leaves a count that costs one read per sync, never a tick dropped under a position.
    async fn track_ticks(
        &self,
        pool: &Pool,
        ticks: [i32; 2],
        first_use: &[FeeTick],
    ) -> StoreResult<PoolMarket>;

    /// Counts one position fewer on each of `ticks` (it closed). A tick no position uses any
    /// more lingers, still read, until the series has recorded through `released_at` (unix
    /// seconds: [`Self::expire_ticks`]); without one (no series follows the pool) it is no
    /// longer read by the sync, and its record goes.
    async fn release_ticks(
        &self,
        pool: &Pool,
        ticks: [i32; 2],
        released_at: Option<i64>,
    ) -> StoreResult<()>;

    /// Drops the pool's lingering ticks released at or before `through` (the chain's series
    /// has recorded through it) and no position took up again: no longer read, records gone.
    async fn expire_ticks(&self, pool: &Pool, through: i64) -> StoreResult<()>;

    /// Stores a state read from the chain with the fee records advanced to it: as the
    /// `Next` state only if it was read at a later block or slot than the stored one (so a
    /// slower sync never moves a pool back in time), as `Replaces` only over the very state it
    /// replaces; `Conflict` otherwise.
    async fn save_state(
        &self,
        pool: &Pool,
        state: &PoolState,
        fee_ticks: &[FeeTick],
        succession: Succession,
    ) -> StoreResult<()>;
}

/// Wallet positions' events as read from their chains, under each position.
#[async_trait]
pub trait HistoryStore: Send + Sync {
    /// Adds `events` (in chain order, all after the stored progress) to the owner's position
    /// `id` and moves its progress to `progress`, all at once, if its stored progress is still
    /// `previous` (`None`: none yet); `Conflict` otherwise (another read stored them first).
    async fn append_history(
        &self,
        owner: &str,
        id: &str,
        previous: Option<&HistoryProgress>,
        events: &[PositionEvent],
        progress: &HistoryProgress,
    ) -> StoreResult<()>;

    /// Takes back the position's events from block `from` on (their blocks were replaced by a
    /// reorg) and moves its progress back to `progress`, if the stored progress is still
    /// `previous`; `Conflict` otherwise. The progress moves first: no reader appends over the
    /// stretch being taken back.
    async fn rewind_history(
        &self,
        owner: &str,
        id: &str,
        previous: &HistoryProgress,
        from: u64,
        progress: &HistoryProgress,
    ) -> StoreResult<()>;

    /// How far the position's events were read, if any read was stored.
    async fn history_progress(&self, owner: &str, id: &str)
        -> StoreResult<Option<HistoryProgress>>;

    /// `limit` of the position's stored events from `offset`, oldest first.
    async fn history_page(
        &self,
        owner: &str,
        id: &str,
        offset: u64,
        limit: u64,
    ) -> StoreResult<Vec<PositionEvent>>;
}

/// Linked wallets and the challenges that link them.
#[async_trait]
pub trait WalletStore: Send + Sync {
    /// Stores a challenge issued to its owner for its wallet.
    async fn put_challenge(&self, challenge: &Challenge) -> StoreResult<()>;

    /// The owner's challenge with this nonce (another user's is `None`, as an unknown one).
    async fn challenge(&self, owner: &str, nonce: &str) -> StoreResult<Option<Challenge>>;

    /// Links `wallet` answering `challenge`, all at once: the challenge marked used, the wallet
    /// stored, the owner's wallet count raised; nothing at all when the outcome is not `Linked`.
    async fn link(&self, challenge: &Challenge, wallet: &LinkedWallet) -> StoreResult<LinkOutcome>;

    /// Watches `wallet` (kind `Watched`: no challenge), stored as a linked one is and read as
    /// one, counted apart: at most `MAX_WATCHED_PER_USER` (`TooMany`); `AlreadyLinked` when
    /// the owner holds it already.
    async fn watch(&self, wallet: &LinkedWallet) -> StoreResult<LinkOutcome>;

    /// Turns the owner's watched `wallet` into a linked one of `wallet.kind`, answering
    /// `challenge`, all at once (its positions, ids and reads stay): the challenge used, the
    /// kind set, one wallet more and one watched less counted; `AlreadyLinked` when it is no
    /// longer watched.
    async fn promote(
        &self,
        challenge: &Challenge,
        wallet: &LinkedWallet,
    ) -> StoreResult<LinkOutcome>;

    /// The owner's wallets, by chain then address.
    async fn wallets(&self, owner: &str) -> StoreResult<Vec<LinkedWallet>>;

    /// Every linked wallet of every user (the refresh's work list): paged through, never a
    /// scan. Each as linked; its refresh figures are read from its own record.
    async fn linked(&self) -> StoreResult<Vec<LinkedWallet>>;

    /// Stores what a refresh of the wallet found (`refreshed_at`, `positions`, `refresh_error`,
    /// and on its registry entry `tokens`) if it is still linked; a failed refresh keeps the
    /// last good `refreshed_at`, count and tokens.
    async fn record_refresh(&self, wallet: &LinkedWallet) -> StoreResult<()>;

    /// How far the chain's position-manager events were followed, if a scan was stored.
    async fn scan_progress(&self, chain: Chain) -> StoreResult<Option<ScanProgress>>;

    /// Stores a scan's progress over `previous` (`None`: none yet) if that is still what is
    /// stored; `Conflict` otherwise (another sync scanned meanwhile).
    async fn save_scan_progress(
        &self,
        previous: Option<&ScanProgress>,
        progress: &ScanProgress,
    ) -> StoreResult<()>;

    /// Unlinks the owner's wallet; `false` when it was not linked. A store that keeps the
    /// positions too (DynamoDB) removes the wallet's positions in the same transaction.
    async fn unlink(&self, owner: &str, chain: Chain, address: &str) -> StoreResult<bool>;
}

/// The pools' series (decision 66): one point per pool and boundary, shared by every user.
#[async_trait]
pub trait SeriesStore: Send + Sync {
    /// Where `chain`'s series stands (the default before its first point).
    async fn series_cursor(&self, chain: Chain) -> StoreResult<SeriesCursor>;

    /// Stores one boundary's points of `chain` (pool id, point; one read of the chain at the
    /// boundary's block), a point stored before for the same pool and boundary replaced (a
    /// reorg's), then moves the cursor to `cursor`.
    async fn save_points(
        &self,
        chain: Chain,
        points: &[(String, PoolPoint)],
        cursor: Option<&SeriesCursor>,
    ) -> StoreResult<()>;

    /// Asks for `pool`'s daily points from `since` (unix seconds) on: a position older than the
    /// series appeared on it. An earlier `since` asked before stands.
    async fn want_days(&self, chain: Chain, pool: &str, since: i64) -> StoreResult<()>;

    /// The pools of `chain` whose daily points are wanted, and from when.
    async fn wanted_days(&self, chain: Chain) -> StoreResult<Vec<(String, i64)>>;

    /// `pool`'s days are recorded up to `through`: what is still wanted starts after it (nothing
    /// once `through` reaches the series), unless an earlier `since` was asked meanwhile.
    async fn days_done(
        &self,
        chain: Chain,
        pool: &str,
        since: i64,
        through: Option<i64>,
    ) -> StoreResult<()>;

    /// Follows a staked position's pending reward at its pool's points (from its stake; its
    /// end once unstaked), replacing what was followed of the same pool and token. An ended
    /// stake goes a few days after its end (time enough for any sync to pass it).
    async fn follow_stake(&self, chain: Chain, stake: &FollowedStake) -> StoreResult<()>;

    /// The staked positions of `chain` whose pending rewards the points hold.
    async fn followed_stakes(&self, chain: Chain) -> StoreResult<Vec<FollowedStake>>;

    /// A pool's points at boundaries within `range` (unix seconds, both ends in) kept in
    /// `tiers`, oldest first.
    async fn points(
        &self,
        chain: Chain,
        pool: &str,
        range: (i64, i64),
        tiers: &[Tier],
    ) -> StoreResult<Vec<PoolPoint>>;
}
