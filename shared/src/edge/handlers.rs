//! The endpoints. Each reads the caller from the authorizer's claims, validates, calls the
//! store and the market, and answers JSON; errors are returned and rendered in one place
//! ([`crate::edge::routes::Endpoint::handle`]).

use crate::application::app::App;
use crate::application::portfolio::portfolio_of;
use crate::application::ports::StoreError;
use crate::application::settling::release_ticks;
use crate::domain::catalog::{Pool, PoolView};
use crate::domain::fee_ticks::{growth_inside, FeeTick};
use crate::domain::holdings::{entry, history_views};
use crate::domain::lifecycle::close_position as close_figures;
use crate::domain::market::SyncReport;
use crate::domain::model::{format_time, Chain, FeeCheckpoint, ListView, Position, Source, Status};
use crate::domain::valuation::{value_position, TokenPair, ValuationError};
use crate::edge::caller::{json_body, own_position, owner};
use crate::edge::error::ApiError;
use crate::edge::http::{has_scope, json_response};
use crate::edge::idempotency::{guarded, Claim};
use crate::edge::order_handlers::{close_on_chain, open_on_chain};
use crate::edge::validation::{page_request, parse_amount, CreateRequest, ListQuery, OrderLimits};
use lambda_http::http::{header, StatusCode};
use lambda_http::{Body, Request, RequestExt, Response};

/// The scope a token needs to start a sync.
pub const SYNC_SCOPE: &str = "markets:sync";

type Reply = Result<Response<Body>, ApiError>;

/// `GET /positions`: the caller's positions, newest first, filtered and paged.
pub async fn list_positions(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let query = ListQuery::parse(&request.query_string_parameters())?;
    let (page, catalog) = tokio::try_join!(
        app.store.list(&owner, query.filter, query.page),
        app.market.catalog()
    )?;
    let now = app.clock.now();
    let data = page
        .items
        .iter()
        .map(|p| entry(p, &catalog, now))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json_response(
        StatusCode::OK,
        &ListView {
            data,
            total: page.total,
        },
    ))
}

/// `GET /positions/{id}`: one of the caller's positions; anything else is 404.
pub async fn get_position(app: &App, request: &Request) -> Reply {
    let (position, catalog) = own_position(app, request).await?;
    let shown = entry(&position, &catalog, app.clock.now())?;
    Ok(json_response(StatusCode::OK, &shown))
}

/// `GET /positions/{id}/history`: the caller's position's events, oldest first, paged as the
/// list is; a simulated position's life in the same shape. Anything not the caller's is 404.
pub async fn position_history(app: &App, request: &Request) -> Reply {
    let page = page_request(&request.query_string_parameters())?;
    let (position, catalog) = own_position(app, request).await?;
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
    Ok(json_response(StatusCode::OK, &ListView { data, total }))
}

/// `POST /positions/{id}/close`: withdraws the caller's open position at its pool's current
/// state and freezes the figures. Closed already: 409; the pool's state stale: 503.
pub async fn close_position(app: &App, request: &Request) -> Reply {
    let caller = owner(request)?;
    guarded(app, request, &caller, |claim| close(app, request, claim)).await
}

/// Attempts at a close that lost a race (another close, a cancel, the sync activating the
/// offer): each re-reads the position and closes it as it is now.
const CLOSE_ATTEMPTS: usize = 3;

async fn close(app: &App, request: &Request, claim: Option<Claim>) -> Reply {
    let limits = close_limits(request)?;
    for _ in 0..CLOSE_ATTEMPTS {
        if let Some(response) = close_once(app, request, claim.as_ref(), limits).await? {
            return Ok(response);
        }
    }
    Err(ApiError::Contended(
        "the position changed while it was being closed: retry".into(),
    ))
}

/// A close's optional body (`slippageBps`, `deadlineSeconds`, for a wallet's withdraw): none,
/// or JSON.
fn close_limits(request: &Request) -> Result<OrderLimits, ApiError> {
    let body = request.body().as_ref();
    if body.iter().all(u8::is_ascii_whitespace) {
        return OrderLimits::parse_close(b"");
    }
    OrderLimits::parse_close(json_body(request)?)
}

/// One close of the position as it reads now; `None` when its status changed meanwhile.
async fn close_once(
    app: &App,
    request: &Request,
    claim: Option<&Claim>,
    limits: OrderLimits,
) -> Result<Option<Response<Body>>, ApiError> {
    let (position, catalog) = own_position(app, request).await?;
    let already = || ApiError::Conflict("the position is already closed".into());
    if position.status == Status::Closed {
        return Err(already());
    }
    if position.source() == Source::Wallet {
        return close_on_chain(app, (position, &catalog), limits, claim).await;
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
        return Err(ApiError::MarketStale(
            "the pool's market state is stale: closing at an old price would misstate the \
             amounts; retry after the next sync"
                .into(),
        ));
    }
    let closing = close_figures(&position, &catalog, now).map_err(|e| match e {
        // As on chain: the protocol cannot pay out amounts past its type at this price.
        ValuationError::Math(e) => ApiError::MarketStale(format!(
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
    let response = json_response(
        StatusCode::OK,
        &value_position(&closed, &catalog, now)?.view,
    );
    let answer = claim.map(|c| c.answer(&response));
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
        // Re-read: a 409 only for a position really closed, never for one the sync activated.
        Err(StoreError::Conflict) => return Ok(None),
        result => result?,
    }
    if let Some(pool) = catalog.find(position.chain, position.protocol, &position.pool) {
        release_ticks(app.market.as_ref(), pool, &position).await;
    }
    tracing::info!(position = %position.id, pnl = %closing.pnl_usd, "position closed");
    Ok(Some(response))
}

/// `POST /positions`: opens a position on a catalog pool.
pub async fn create_position(app: &App, request: &Request) -> Reply {
    let caller = owner(request)?;
    guarded(app, request, &caller, |claim| {
        create(app, request, caller.clone(), claim)
    })
    .await
}

async fn create(app: &App, request: &Request, owner: String, claim: Option<Claim>) -> Reply {
    let input = CreateRequest::parse(json_body(request)?)?;
    let catalog = app.market.catalog().await?;
    let pool = catalog
        .find_supported(input.chain, input.protocol, &input.pool)
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "pool {} is not a supported {} pool on {}; GET /pools lists them",
                input.pool, input.protocol, input.chain
            ))
        })?;
    let amount = |text: &str, decimals: u8, name: &str| {
        parse_amount(text, decimals, pool.max_amount(decimals), name)
    };
    let offered = TokenPair {
        a: amount(&input.amount_a, pool.token_a.decimals, "amountA")?,
        b: amount(&input.amount_b, pool.token_b.decimals, "amountB")?,
    };
    if offered.a.is_zero() && offered.b.is_zero() {
        return Err(ApiError::bad_request(
            "amountA or amountB must be above zero",
        ));
    }
    if ![&input.price_lower, &input.price_upper]
        .into_iter()
        .all(|p| pool.price_in_bounds(p))
    {
        let (low, high) = pool.price_bounds();
        return Err(ApiError::bad_request(format!(
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
    let position = if let Some(on_chain) = &input.on_chain {
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
    let view = entry(&position, &catalog, now)?;
    let mut response = json_response(StatusCode::CREATED, &view);
    if let Ok(location) = header::HeaderValue::from_str(&format!("/positions/{}", position.id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    let answer = claim.map(|c| c.answer(&response));
    if let Err(e) = app.store.insert_answering(&position, answer.as_ref()).await {
        // An on-chain open tracks no ticks: its fees are the chain's own.
        if position.order.is_none() {
            release_ticks(app.market.as_ref(), pool, &position).await;
        }
        return Err(e.into());
    }
    tracing::info!(position = %position.id, pool = %position.pool, status = %position.status, created_at = %format_time(&position.created_at), "position opened");
    Ok(response)
}

/// The most distinct ranges one user may hold open on one pool: each range is two ticks the sync
/// reads at every run, so one user can never add more than twice this to a pool's reads.
pub const MAX_OPEN_RANGES_PER_POOL: usize = 20;

/// Refuses (409) a new range beyond [`MAX_OPEN_RANGES_PER_POOL`] of the owner's on the pool; a
/// range the owner already holds open costs nothing more and is always allowed.
async fn within_range_cap(
    app: &App,
    owner: &str,
    pool: &Pool,
    range: (i32, i32),
) -> Result<(), ApiError> {
    let open = app.store.open_positions(owner).await?;
    let mut ranges: Vec<(i32, i32)> = open
        .iter()
        .filter(|p| p.chain == pool.chain && p.protocol == pool.protocol && pool.is_named(&p.pool))
        .map(|p| (p.tick_lower, p.tick_upper))
        .collect();
    ranges.sort_unstable();
    ranges.dedup();
    if ranges.len() >= MAX_OPEN_RANGES_PER_POOL && !ranges.contains(&range) {
        return Err(ApiError::Conflict(format!(
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
) -> Result<Position, ApiError> {
    // What the offer funds depends on the pool's current price: a refusal conflicts with the
    // pool's state, not with the request's form (which the document fully describes).
    let deposit = pool
        .size_deposit(offer.tick_lower, offer.tick_upper, offered)
        .map_err(|e| match e {
            ValuationError::Rejected(message) => ApiError::Conflict(message),
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

/// `GET /portfolio`: the overview of the caller's open positions and the realized totals of
/// the closed ones.
pub async fn get_portfolio(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let view = portfolio_of(app, &owner).await?;
    Ok(json_response(StatusCode::OK, &view))
}

/// `GET /pools`: the supported pools with their market state.
pub async fn list_pools(app: &App, request: &Request) -> Reply {
    owner(request)?;
    let catalog = app.market.catalog().await?;
    let now = app.clock.now();
    let data: Vec<PoolView> = catalog
        .pools
        .iter()
        .map(|p| p.view(catalog.freshness, now))
        .collect();
    let total = data.len() as u64;
    Ok(json_response(StatusCode::OK, &ListView { data, total }))
}

/// `POST /markets/sync`: syncs every pool now and answers the report. Needs the `markets:sync`
/// scope (API Gateway checks it; so does this handler, so local-api answers alike).
pub async fn sync_markets(app: &App, request: &Request) -> Reply {
    owner(request)?;
    if !has_scope(request, SYNC_SCOPE) {
        return Err(ApiError::Forbidden(format!(
            "the token lacks the {SYNC_SCOPE} scope"
        )));
    }
    let reconcile = match request.query_string_parameters().first("reconcile") {
        None => false,
        Some("all") => true,
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "reconcile: expected \"all\", got {other:?}"
            )))
        }
    };
    let mut report = match &app.sync {
        Some(sync) => sync.sync().await?,
        None => {
            let catalog = app.market.catalog().await?;
            let pools = catalog.pools.iter().map(|p| (p.chain, p.id.clone()));
            SyncReport::unsynced(pools, "no RPC endpoint is configured for this chain")
        }
    };
    // Where wallets are read in process (local-api), the chains' events are followed to the
    // wallets they touched (decision 45); `?reconcile=all` reads every wallet whole.
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
    Ok(json_response(StatusCode::OK, &report))
}
