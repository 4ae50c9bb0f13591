//! The actions on an open wallet position (decision 56): `POST /positions/{id}/collect`,
//! `/increase`, `/decrease` and `/rebalance` (a move of the range, which also opens the new
//! position, pending until its mint is confirmed). Each is built at the pool's fresh state for the position's
//! wallet, run on the chain before it is answered (decision 55), stored as the position's order
//! and followed as a close is: `POST /positions/{id}/transactions`, then the sync. One
//! transaction at a time per position: another one waiting is 409.

use crate::application::app::App;
use crate::application::ports::StoreError;
use crate::domain::catalog::Catalog;
use crate::domain::history::units;
use crate::domain::holdings::entry;
use crate::domain::model::{Chain, ChainOrder, OrderKind, Position, Source, Status};
use crate::domain::orders::actions::{
    collect_transaction, decrease_transaction, increase_transactions, move_funds,
    rebalance_transactions, share_of, Move,
};
use crate::domain::orders::build::protocol_tokens;
use crate::domain::orders::plan_mint;
use crate::domain::valuation::{TokenPair, ValuationError};
use crate::edge::caller::{json_body, own_position, owner};
use crate::edge::error::ApiError;
use crate::edge::http::json_response;
use crate::edge::idempotency::{guarded, Claim};
use crate::edge::order_handlers::{
    answer, close_on_chain, fresh_state, held_terms, order_chain, simulated, venue_of,
    waiting_order,
};
use crate::edge::validation::{integer, json_object, parse_amount, price, OrderLimits};
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use serde_json::value::RawValue;

type Reply = Result<Response<Body>, ApiError>;

/// What the caller asked of the position, checked before any read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Asked {
    Collect(OrderLimits),
    Increase {
        amounts: (String, String),
        limits: OrderLimits,
    },
    Decrease {
        percent: u8,
        limits: OrderLimits,
    },
    Rebalance {
        prices: (BigDecimal, BigDecimal),
        limits: OrderLimits,
    },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RebalanceBody {
    price_lower: Box<RawValue>,
    price_upper: Box<RawValue>,
    #[serde(default, deserialize_with = "integer")]
    slippage_bps: Option<i64>,
    #[serde(default, deserialize_with = "integer")]
    deadline_seconds: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IncreaseBody {
    amount_a: String,
    amount_b: String,
    #[serde(default, deserialize_with = "integer")]
    slippage_bps: Option<i64>,
    #[serde(default, deserialize_with = "integer")]
    deadline_seconds: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DecreaseBody {
    #[serde(deserialize_with = "integer")]
    percent: Option<i64>,
    #[serde(default, deserialize_with = "integer")]
    slippage_bps: Option<i64>,
    #[serde(default, deserialize_with = "integer")]
    deadline_seconds: Option<i64>,
}

impl Asked {
    fn parse(kind: OrderKind, request: &Request) -> Result<Asked, ApiError> {
        let body = request.body().as_ref();
        match kind {
            OrderKind::Increase => {
                let body: IncreaseBody = json_object(json_body(request)?)?;
                Ok(Asked::Increase {
                    amounts: (body.amount_a, body.amount_b),
                    limits: OrderLimits::from_fields(body.slippage_bps, body.deadline_seconds)?,
                })
            }
            OrderKind::Decrease => {
                let body: DecreaseBody = json_object(json_body(request)?)?;
                let percent = body
                    .percent
                    .and_then(|p| u8::try_from(p).ok())
                    .filter(|p| (1..=100).contains(p))
                    .ok_or_else(|| {
                        ApiError::bad_request("percent must be an integer from 1 to 100")
                    })?;
                Ok(Asked::Decrease {
                    percent,
                    limits: OrderLimits::from_fields(body.slippage_bps, body.deadline_seconds)?,
                })
            }
            OrderKind::Rebalance => {
                let body: RebalanceBody = json_object(json_body(request)?)?;
                let (a, b) = (
                    price(&body.price_lower, "priceLower")?,
                    price(&body.price_upper, "priceUpper")?,
                );
                Ok(Asked::Rebalance {
                    prices: if a <= b { (a, b) } else { (b, a) },
                    limits: OrderLimits::from_fields(body.slippage_bps, body.deadline_seconds)?,
                })
            }
            _ if body.iter().all(u8::is_ascii_whitespace) => {
                Ok(Asked::Collect(OrderLimits::parse_close(b"")?))
            }
            _ => Ok(Asked::Collect(OrderLimits::parse_close(json_body(
                request,
            )?)?)),
        }
    }

    fn limits(&self) -> OrderLimits {
        match self {
            Asked::Collect(limits)
            | Asked::Increase { limits, .. }
            | Asked::Decrease { limits, .. }
            | Asked::Rebalance { limits, .. } => *limits,
        }
    }
}

/// `POST /positions/{id}/collect`: everything owed paid to the wallet.
pub async fn collect(app: &App, request: &Request) -> Reply {
    act(app, request, OrderKind::Collect).await
}

/// `POST /positions/{id}/increase` `{amountA, amountB, slippageBps?, deadlineSeconds?}`.
pub async fn increase(app: &App, request: &Request) -> Reply {
    act(app, request, OrderKind::Increase).await
}

/// `POST /positions/{id}/decrease` `{percent, slippageBps?, deadlineSeconds?}`; 100 is the close.
pub async fn decrease(app: &App, request: &Request) -> Reply {
    act(app, request, OrderKind::Decrease).await
}

/// `POST /positions/{id}/rebalance` `{priceLower, priceUpper, slippageBps?, deadlineSeconds?}`.
pub async fn rebalance(app: &App, request: &Request) -> Reply {
    act(app, request, OrderKind::Rebalance).await
}

async fn act(app: &App, request: &Request, kind: OrderKind) -> Reply {
    let caller = owner(request)?;
    guarded(app, request, &caller, |claim| async move {
        let asked = Asked::parse(kind, request)?;
        for _ in 0..3 {
            let (position, catalog) = own_position(app, request).await?;
            let done = match &asked {
                Asked::Decrease {
                    percent: 100,
                    limits,
                } => {
                    refuse(&position, app.clock.now())?;
                    close_on_chain(app, (position, &catalog), *limits, claim.as_ref()).await?
                }
                _ => act_once(app, (position, &catalog), &asked, claim.as_ref()).await?,
            };
            if let Some(response) = done {
                return Ok(response);
            }
        }
        Err(ApiError::Contended(
            "the position changed while the transaction was being built: retry".into(),
        ))
    })
    .await
}

/// Why the position takes no action now, if it takes none: 409 with the reason.
fn refuse(position: &Position, now: DateTime<Utc>) -> Result<(), ApiError> {
    let conflict = |message: &str| Err(ApiError::Conflict(message.into()));
    if position.source() != Source::Wallet {
        return conflict(
            "a simulated position moves no token: collect, increase, decrease and a move of the \
             range act on wallet positions (opened on chain or read from a linked wallet)",
        );
    }
    if position.chain == Chain::Solana {
        return conflict(
            "actions on Orca positions are not offered: Orca's program and SDKs are under a \
             licence that forbids commercial use; act on it from your wallet, and the next \
             refresh reads it",
        );
    }
    if position.status != Status::Active {
        return conflict("the position is not active: only an open position takes an action");
    }
    if let Some(waiting) = waiting_order(position, now) {
        return Err(ApiError::Conflict(format!(
            "a {} of this position waits for the chain until {}: send it (and report its \
             hash) or let it expire first",
            waiting.kind,
            waiting.expires_at.to_rfc3339()
        )));
    }
    Ok(())
}

/// One build of the action on the position as it reads now; `None` when it changed meanwhile.
async fn act_once(
    app: &App,
    (position, catalog): (Position, &Catalog),
    asked: &Asked,
    claim: Option<&Claim>,
) -> Result<Option<Response<Body>>, ApiError> {
    let now = app.clock.now();
    refuse(&position, now)?;
    let Some(holding) = position.holding.as_deref() else {
        return Err(ApiError::Conflict(
            "the position has no token on chain to act on".into(),
        ));
    };
    let pool = catalog
        .find(position.chain, position.protocol, &position.pool)
        .ok_or_else(|| {
            ApiError::MarketStale(
                "the position's pool is not synced yet: retry after the next sync".into(),
            )
        })?;
    let state = fresh_state(catalog, pool, now)?;
    let venue = venue_of(catalog, pool)?;
    let chain = order_chain(app, pool.chain)?;
    let limits = asked.limits();
    let terms = held_terms(&venue, &holding.wallet, state, limits, now);
    let ticks = (position.tick_lower, position.tick_upper);
    let token = holding.token.as_str();
    // A collect's payment is told apart where the history knows the uncollected principal.
    let principal_owed = holding
        .history
        .as_ref()
        .filter(|h| h.complete)
        .map(|h| units(&h.uncollected_principal));
    let plan_at = |ticks: (i32, i32), offered: TokenPair| {
        plan_mint(pool, ticks, offered, limits.slippage_bps).map_err(|e| match e {
            ValuationError::Rejected(message) => ApiError::Conflict(message),
            other => other.into(),
        })
    };
    let allowances = || async {
        let tokens = protocol_tokens(pool).map(|t| t.address.as_str());
        chain
            .allowances(pool.chain, state, &holding.wallet, &venue.manager, tokens)
            .await
            .map_err(|e| {
                ApiError::MarketStale(format!(
                    "the wallet's allowances cannot be read from {} ({e}): retry",
                    pool.chain
                ))
            })
    };
    // A range move also opens a position: pending until its mint is confirmed.
    let mut opening: Option<Position> = None;
    let (kind, transactions) = match asked {
        Asked::Collect(_) => (
            OrderKind::Collect,
            vec![collect_transaction(&terms, token).map_err(ApiError::internal)?],
        ),
        Asked::Increase { amounts, .. } => {
            let amount = |text: &str, decimals: u8, name: &str| {
                parse_amount(text, decimals, pool.max_amount(decimals), name)
            };
            let offered = TokenPair {
                a: amount(&amounts.0, pool.token_a.decimals, "amountA")?,
                b: amount(&amounts.1, pool.token_b.decimals, "amountB")?,
            };
            if offered.a.is_zero() && offered.b.is_zero() {
                return Err(ApiError::bad_request(
                    "amountA or amountB must be above zero",
                ));
            }
            let plan = plan_at(ticks, offered)?;
            let built = increase_transactions(pool, &terms, token, &plan, allowances().await?)
                .map_err(ApiError::internal)?;
            (OrderKind::Increase, built)
        }
        Asked::Decrease { percent, .. } => {
            let share = share_of(position.liquidity, *percent);
            if share == 0 {
                return Err(ApiError::Conflict(format!(
                    "{percent} % of the position's liquidity ({}) is no liquidity to withdraw",
                    position.liquidity
                )));
            }
            let built = decrease_transaction(pool, &terms, token, ticks, share)
                .map_err(ApiError::internal)?;
            (OrderKind::Decrease, vec![built])
        }
        Asked::Rebalance {
            prices: (lower, upper),
            ..
        } => {
            if ![lower, upper].into_iter().all(|p| pool.price_in_bounds(p)) {
                let (low, high) = pool.price_bounds();
                return Err(ApiError::bad_request(format!(
                    "priceLower and priceUpper must lie between {low:e} and {high:e} on this pool"
                )));
            }
            let to = pool.snap_range(lower, upper)?;
            if to == ticks {
                return Err(ApiError::Conflict(
                    "the new range is the position's own: nothing to move".into(),
                ));
            }
            let owed = holding.fees.clone().map(|f| f.parse().unwrap_or_default());
            let funds = move_funds(pool, ticks, position.liquidity, owed)?;
            let plan = plan_at(to, funds)?;
            let moving = Move {
                token_id: token,
                from: ticks,
                liquidity: position.liquidity,
                to,
                plan: &plan,
            };
            let built = rebalance_transactions(pool, &terms, &moving, allowances().await?)
                .map_err(ApiError::internal)?;
            let id = ulid::Ulid::from_datetime(terms.now.into()).to_string();
            let new = Position {
                id,
                status: Status::Pending,
                tick_lower: to.0,
                tick_upper: to.1,
                liquidity: plan.liquidity,
                cost_basis_usd: pool.value_of(&plan.deposit),
                deposit: Some(plan.deposit),
                fee_checkpoint: None,
                closing: None,
                created_at: terms.now,
                holding: None,
                order: None,
                ..position.clone()
            };
            opening = Some(new);
            (OrderKind::Rebalance, built)
        }
    };
    let transactions = simulated(chain, pool, transactions, principal_owed).await?;
    let mut order = terms.order(kind, transactions.clone());
    // A move stores its new position (pending) with the old one's order in one write: a move
    // refused (another action stored first) stores nothing.
    let opening = opening.map(|new| {
        order.moved = Some(new.id.clone());
        let open = ChainOrder {
            moved: Some(position.id.clone()),
            ..terms.order(OrderKind::Open, transactions)
        };
        Position {
            order: Some(Box::new(open)),
            ..new
        }
    });
    let ordered = Position {
        order: Some(Box::new(order)),
        ..position.clone()
    };
    let previous = position.order.as_deref();
    let stored = match &opening {
        Some(new) => app.store.set_move_order(&ordered, previous, new).await,
        None => app.store.set_order(&ordered, previous).await,
    };
    match stored {
        Err(StoreError::Conflict) => return Ok(None),
        result => result?,
    }
    let response = json_response(StatusCode::OK, &entry(&ordered, catalog, now)?);
    answer(app, claim, &response).await;
    tracing::info!(position = %position.id, %kind, "action built for the wallet");
    Ok(Some(response))
}
