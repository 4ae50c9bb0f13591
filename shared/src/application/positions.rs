//! The position use cases: list, read, history, create (simulated, or from a wallet), close, the
//! pools, and a sync on request. Each takes plain inputs (the caller, ids, checked inputs) and
//! returns what the API shows or a [`UseCaseError`]; nothing here knows HTTP.

use crate::application::app::App;
use crate::application::error::{Outcome, UseCaseError};
use crate::application::inputs::{parse_amount, CreateRequest, OrderLimits};
use crate::application::keys::Answering;
use crate::application::orders::{close_on_chain, open_on_chain};
use crate::application::ports::StoreError;
use crate::application::settling::release_ticks;
use crate::application::zaps::open_zapped;
use crate::domain::catalog::{Catalog, Pool, PoolView};
use crate::domain::fee_ticks::{growth_inside, FeeTick};
use crate::domain::history::EventView;
use crate::domain::holdings::{entry, history_views};
use crate::domain::lifecycle::close_position as close_figures;
use crate::domain::market::SyncReport;
use crate::domain::model::{
    format_time, Chain, FeeCheckpoint, Filter, ListView, PageRequest, Position, PositionEntry,
    Source, Status,
};
use crate::domain::valuation::{value_position, TokenPair, ValuationError};
use std::sync::Arc;

/// The caller's positions, newest first, filtered and paged.
pub async fn list(
    app: &App,
    owner: &str,
    filter: Filter,
    page: PageRequest,
) -> Outcome<ListView<PositionEntry>> {
    let (page, catalog) =
        tokio::try_join!(app.store.list(owner, filter, page), app.market.catalog())?;
    let now = app.clock.now();
    let data = page
        .items
        .iter()
        .map(|p| entry(p, &catalog, now))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ListView {
        data,
        total: page.total,
    })
}

/// One of the caller's positions as the API shows it.
pub async fn get(app: &App, owner: &str, id: &str) -> Outcome<PositionEntry> {
    let (position, catalog) = app.own_position(owner, id).await?;
    Ok(entry(&position, &catalog, app.clock.now())?)
}

/// The caller's position's events, oldest first, paged as the list is; a simulated position's
/// life in the same shape.
pub async fn history(
    app: &App,
    owner: &str,
    id: &str,
    page: PageRequest,
) -> Outcome<ListView<EventView>> {
    let (position, catalog) = app.own_position(owner, id).await?;
    let (offset, limit) = (
        usize::try_from(page.offset).unwrap_or(usize::MAX),
        page.limit as usize,
    );
    let evm_holding = position.holding.is_some() && position.chain != Chain::Solana;
    let (events, total) = if evm_holding {
        let (owner, id) = (&position.owner, &position.id);
        let stored = app.history.history_progress(owner, id).await?;
        let total = stored.map_or(0, |p| p.events);
        let wanted = page.offset.saturating_add(u64::from(page.limit)).min(total);
        (app.history.history_page(owner, id, 0, wanted).await?, total)
    } else {
        (Vec::new(), 0)
    };
    let data = history_views(&position, &events, &catalog, (offset, limit));
    let total = if evm_holding {
        total
    } else {
        history_views(&position, &[], &catalog, (0, usize::MAX)).len() as u64
    };
    Ok(ListView { data, total })
}

/// Attempts at a close that lost a race (another close, a cancel, the sync activating the
/// offer): each re-reads the position and closes it as it is now.
const CLOSE_ATTEMPTS: usize = 3;

/// Closes the caller's open position: a simulated one withdrawn at its pool's current state,
/// its figures frozen; a wallet position's withdraw built for its wallet (or a pending open
/// cancelled). Closed already: a conflict; the pool's state stale: not now.
pub async fn close(
    app: &App,
    owner: &str,
    id: &str,
    limits: OrderLimits,
    answering: Answering<'_>,
) -> Outcome<PositionEntry> {
    for _ in 0..CLOSE_ATTEMPTS {
        if let Some(shown) = close_once(app, owner, id, limits, answering).await? {
            return Ok(shown);
        }
    }
    Err(UseCaseError::Contended(
        "the position changed while it was being closed: retry".into(),
    ))
}

/// One close of the position as it reads now; `None` when its status changed meanwhile.
async fn close_once(
    app: &App,
    owner: &str,
    id: &str,
    limits: OrderLimits,
    answering: Answering<'_>,
) -> Outcome<Option<PositionEntry>> {
    let (position, catalog) = app.own_position(owner, id).await?;
    if position.status == Status::Closed {
        return Err(UseCaseError::Conflict(
            "the position is already closed".into(),
        ));
    }
    if position.source() == Source::Wallet {
        return close_on_chain(app, (position, &catalog), limits, answering).await;
    }
    let now = app.clock.now();
    // Stale, or older than the position's own checkpoint (a container's cached catalog just
    // after the open): either would misstate what the close pays.
    let stale = catalog
        .find(position.chain, position.protocol, &position.pool)
        .is_some_and(|pool| {
            let height = pool.state.as_ref().map(|s| s.height);
            catalog.freshness.is_stale(pool.state.as_ref(), now)
                || position
                    .fee_checkpoint
                    .is_some_and(|c| height.is_none_or(|h| h < c.height))
        });
    if stale && position.status == Status::Active {
        return Err(UseCaseError::MarketStale(
            "the pool's market state is stale: closing at an old price would misstate the \
             amounts; retry after the next sync"
                .into(),
        ));
    }
    let closing = close_figures(&position, &catalog, now).map_err(|e| match e {
        // As on chain: the protocol cannot pay out amounts past its type at this price.
        ValuationError::Math(e) => UseCaseError::MarketStale(format!(
            "the position cannot be closed at the pool's current price ({e}): retry when the \
             price moves back into what the protocol can pay out"
        )),
        other => other.into(),
    })?;
    let closed = Position {
        status: Status::Closed,
        closing: Some(closing.clone()),
        ..position.clone()
    };
    let shown = PositionEntry::Valued(Box::new(value_position(&closed, &catalog, now)?.view));
    let answer = answering.map(|f| f(&shown));
    match app
        .store
        .close_answering(
            &position.owner,
            &position.id,
            position.status,
            &closing,
            answer.as_ref(),
        )
        .await
    {
        // Re-read: a conflict only for a position really closed, never for one the sync
        // activated.
        Err(StoreError::Conflict) => return Ok(None),
        result => result?,
    }
    if let Some(pool) = catalog.find(position.chain, position.protocol, &position.pool) {
        release_ticks(app.market.as_ref(), pool, &position, app.clock.now()).await;
    }
    tracing::info!(position = %position.id, pnl = %closing.pnl_usd, "position closed");
    Ok(Some(shown))
}

/// Opens a position on a catalog pool for `owner`: sized at once at a fresh state, pending on a
/// stale one, or from a linked wallet with the transactions to sign.
pub async fn create(
    app: &App,
    owner: String,
    input: &CreateRequest,
    answering: Answering<'_>,
) -> Outcome<PositionEntry> {
    let catalog = app.market.catalog().await?;
    let pool = catalog
        .find_supported(input.chain, input.protocol, &input.pool)
        .ok_or_else(|| {
            UseCaseError::bad_request(format!(
                "pool {} is not a supported {} pool on {}; GET /pools lists them",
                input.pool, input.protocol, input.chain
            ))
        })?;
    let offered = offered_amounts(pool, (&input.amount_a, &input.amount_b))?;
    if ![&input.price_lower, &input.price_upper]
        .into_iter()
        .all(|p| pool.price_in_bounds(p))
    {
        let (low, high) = pool.price_bounds();
        return Err(UseCaseError::bad_request(format!(
            "priceLower and priceUpper must lie between {low:e} and {high:e} on this pool"
        )));
    }
    let (tick_lower, tick_upper) = pool.snap_range(&input.price_lower, &input.price_upper)?;
    within_range_cap(app, &owner, pool, (tick_lower, tick_upper)).await?;
    let now = app.clock.now();
    let created_at = chrono::DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now);
    // The offer as it waits while the pool's state is stale; sized at once when it is fresh.
    let offer = Position {
        id: ulid::Ulid::from_datetime(created_at.into()).to_string(),
        owner,
        chain: pool.chain,
        protocol: pool.protocol,
        pool: pool.id.clone(),
        status: Status::Pending,
        tick_lower,
        tick_upper,
        liquidity: 0,
        cost_basis_usd: pool.value_of(&offered),
        deposit: Some(offered),
        fee_checkpoint: None,
        closing: None,
        created_at,
        activated_at: None,
        holding: None,
        order: None,
    };
    let position = if let Some((wallet, limits)) = input.on_chain.as_ref().filter(|o| o.1.swap) {
        open_zapped(app, (&catalog, pool), offer, offered, (wallet, limits)).await?
    } else if let Some(on_chain) = &input.on_chain {
        open_on_chain(app, (&catalog, pool), offer, offered, on_chain).await?
    } else if catalog.freshness.is_stale(pool.state.as_ref(), now) {
        // Sizing at an old price would misstate what the deposit takes: the offer waits for
        // the next sync, which reads these ticks too and activates it.
        app.market
            .track_ticks(pool, [tick_lower, tick_upper], &[])
            .await?;
        offer
    } else {
        open_now(app, pool, offer, offered).await?
    };
    let shown = entry(&position, &catalog, now)?;
    let answer = answering.map(|f| f(&shown));
    if let Err(e) = app.store.insert_answering(&position, answer.as_ref()).await {
        // An on-chain open tracks no ticks: its fees are the chain's own.
        if position.order.is_none() {
            release_ticks(app.market.as_ref(), pool, &position, app.clock.now()).await;
        }
        return Err(e.into());
    }
    tracing::info!(position = %position.id, pool = %position.pool, status = %position.status, created_at = %format_time(&position.created_at), "position opened");
    Ok(shown)
}

/// `amountA` and `amountB` in the pool's base units; not both zero.
pub(crate) fn offered_amounts(pool: &Pool, (a, b): (&str, &str)) -> Outcome<TokenPair> {
    let amount = |text: &str, decimals: u8, name: &str| {
        parse_amount(text, decimals, pool.max_amount(decimals), name)
    };
    let offered = TokenPair {
        a: amount(a, pool.token_a.decimals, "amountA")?,
        b: amount(b, pool.token_b.decimals, "amountB")?,
    };
    if offered.a.is_zero() && offered.b.is_zero() {
        return Err(UseCaseError::bad_request(
            "amountA or amountB must be above zero",
        ));
    }
    Ok(offered)
}

/// The most distinct ranges one user may hold open on one pool: each range is two ticks the sync
/// reads at every run, so one user can never add more than twice this to a pool's reads.
pub const MAX_OPEN_RANGES_PER_POOL: usize = 20;

/// Refuses a new range beyond [`MAX_OPEN_RANGES_PER_POOL`] of the owner's on the pool; a
/// range the owner already holds open costs nothing more and is always allowed.
async fn within_range_cap(app: &App, owner: &str, pool: &Pool, range: (i32, i32)) -> Outcome<()> {
    let open = app.store.open_positions(owner).await?;
    let mut ranges: Vec<(i32, i32)> = open
        .iter()
        .filter(|p| p.chain == pool.chain && p.protocol == pool.protocol && pool.is_named(&p.pool))
        .map(|p| (p.tick_lower, p.tick_upper))
        .collect();
    ranges.sort_unstable();
    ranges.dedup();
    if ranges.len() >= MAX_OPEN_RANGES_PER_POOL && !ranges.contains(&range) {
        return Err(UseCaseError::Conflict(format!(
            "you hold open positions in {MAX_OPEN_RANGES_PER_POOL} distinct ranges on this pool, \
             the most one user may: add to one of those ranges, or close one first"
        )));
    }
    Ok(())
}

/// Sizes `offer` at the pool's fresh state: the largest liquidity it funds, its ticks tracked
/// and its fee checkpoint taken from the pool's records as stored.
async fn open_now(
    app: &App,
    pool: &Pool,
    offer: Position,
    offered: TokenPair,
) -> Outcome<Position> {
    // What the offer funds depends on the pool's current price: a refusal conflicts with the
    // pool's state, not with the request's form (which the document fully describes).
    let deposit = pool
        .size_deposit(offer.tick_lower, offer.tick_upper, offered)
        .map_err(|e| match e {
            ValuationError::Rejected(message) => UseCaseError::Conflict(message),
            other => other.into(),
        })?;
    let ticks = [deposit.tick_lower, deposit.tick_upper];
    // Tracked first: a tick tracked for a position that then fails to insert costs one read per
    // sync; a position whose ticks the sync never reads would lack its fees.
    let first_use: Vec<FeeTick> = match &pool.state {
        Some(state) => ticks
            .iter()
            .map(|&t| FeeTick::first_use(t, state, state.ticks.iter().find(|s| s.tick == t)))
            .collect(),
        None => Vec::new(),
    };
    let market = app.market.track_ticks(pool, ticks, &first_use).await?;
    // The checkpoint at the pool's state as stored now, with the tick records every position on
    // these ticks shares.
    let fee_checkpoint = market.state.as_ref().and_then(|state| {
        let growth = growth_inside(
            pool.fee_accounting(),
            state,
            &market.fee_ticks,
            deposit.tick_lower,
            deposit.tick_upper,
        )?;
        Some(FeeCheckpoint {
            height: state.height,
            growth,
        })
    });
    Ok(Position {
        status: Status::Active,
        tick_lower: deposit.tick_lower,
        tick_upper: deposit.tick_upper,
        liquidity: deposit.liquidity,
        cost_basis_usd: deposit.value_usd,
        deposit: Some(deposit.amounts),
        fee_checkpoint,
        activated_at: Some(offer.created_at),
        ..offer
    })
}

/// The pool catalog with its market state, as the market holds it now.
pub async fn catalog(app: &App) -> Outcome<Arc<Catalog>> {
    Ok(app.market.catalog().await?)
}

/// The supported pools with their market state.
pub async fn pools(app: &App) -> Outcome<ListView<PoolView>> {
    let catalog = app.market.catalog().await?;
    let now = app.clock.now();
    let data: Vec<PoolView> = catalog
        .pools
        .iter()
        .map(|p| p.view(catalog.freshness, now))
        .collect();
    let total = data.len() as u64;
    Ok(ListView { data, total })
}

/// Syncs every pool now; where wallets are read in process (local-api), the chains' events are
/// followed to the wallets they touched (decision 45), and with `reconcile` every wallet is
/// read whole.
pub async fn sync(app: &App, reconcile: bool) -> Outcome<SyncReport> {
    let mut report = match &app.sync {
        Some(sync) => sync.sync().await?,
        None => {
            let catalog = app.market.catalog().await?;
            let pools = catalog.pools.iter().map(|p| (p.chain, p.id.clone()));
            SyncReport::unsynced(pools, "no RPC endpoint is configured for this chain")
        }
    };
    if app.wallet_refresh.is_some() {
        let (scans, mut wallets) = app.follow_wallets().await?;
        if reconcile {
            let reconciled = app.reconcile_all().await?;
            wallets.refreshed += reconciled.refreshed;
            wallets.corrected += reconciled.corrected;
            wallets.failed.extend(reconciled.failed);
        }
        report.scans = Some(scans);
        report.wallets = Some(wallets);
    }
    Ok(report)
}
