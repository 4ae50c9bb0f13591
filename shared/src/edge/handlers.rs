//! The endpoints. Each reads the caller and its input from the request, calls one use case
//! (`application`), and renders the answer; errors are returned and rendered in one place
//! ([`crate::edge::routes::Endpoint::handle`]).

use crate::application::app::App;
use crate::application::export;
use crate::application::inputs::{CreateRequest, OrderLimits};
use crate::application::portfolio::portfolio_of;
use crate::application::positions;
pub use crate::application::positions::MAX_OPEN_RANGES_PER_POOL;
use crate::domain::export::{ExportFormat, MAX_EXPORT_BYTES};
use crate::domain::model::PositionEntry;
use crate::edge::caller::{json_body, owner, position_id};
use crate::edge::error::ApiError;
use crate::edge::http::{has_scope, json_response};
use crate::edge::idempotency::{guarded, Claim};
use crate::edge::validation::{page_request, ListQuery};
use lambda_http::http::{header, StatusCode};
use lambda_http::{Body, Request, RequestExt, Response};
use std::str::FromStr;

/// The scope a token needs to start a sync.
pub const SYNC_SCOPE: &str = "markets:sync";

type Reply = Result<Response<Body>, ApiError>;

/// A position answered with 200.
pub(crate) fn ok_position(shown: &PositionEntry) -> Response<Body> {
    json_response(StatusCode::OK, shown)
}

/// A position answered with 202 (a hash recorded).
pub(crate) fn accepted_position(shown: &PositionEntry) -> Response<Body> {
    json_response(StatusCode::ACCEPTED, shown)
}

/// A position created: 201 with its `Location`.
fn created_position(shown: &PositionEntry) -> Response<Body> {
    let mut response = json_response(StatusCode::CREATED, shown);
    if let Ok(location) = header::HeaderValue::from_str(&format!("/positions/{}", shown.id())) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// `GET /positions`: the caller's positions, newest first, filtered and paged.
pub async fn list_positions(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let query = ListQuery::parse(&request.query_string_parameters())?;
    let page = positions::list(app, &owner, query.filter, query.page).await?;
    Ok(json_response(StatusCode::OK, &page))
}

/// `GET /positions/{id}`: one of the caller's positions; anything else is 404.
pub async fn get_position(app: &App, request: &Request) -> Reply {
    let (owner, id) = (owner(request)?, position_id(request)?);
    Ok(ok_position(&positions::get(app, &owner, &id).await?))
}

/// `GET /positions/{id}/history`: the caller's position's events, oldest first, paged as the
/// list is; a simulated position's life in the same shape. Anything not the caller's is 404.
pub async fn position_history(app: &App, request: &Request) -> Reply {
    let page = page_request(&request.query_string_parameters())?;
    let (owner, id) = (owner(request)?, position_id(request)?);
    let events = positions::history(app, &owner, &id, page).await?;
    Ok(json_response(StatusCode::OK, &events))
}

/// `POST /positions/{id}/close`: withdraws the caller's open position at its pool's current
/// state and freezes the figures (a wallet position: its withdraw to sign). Closed already:
/// 409; the pool's state stale: 503.
pub async fn close_position(app: &App, request: &Request) -> Reply {
    let caller = owner(request)?;
    let caller = caller.as_str();
    guarded(app, request, caller, |claim| async move {
        let limits = close_limits(request)?;
        let id = position_id(request)?;
        let answering = claim.as_ref().map(|c| c.answering(ok_position));
        let shown = positions::close(app, caller, &id, limits, answering.as_deref()).await?;
        Ok(ok_position(&shown))
    })
    .await
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

/// `POST /positions`: opens a position on a catalog pool.
pub async fn create_position(app: &App, request: &Request) -> Reply {
    let caller = owner(request)?;
    let caller = caller.as_str();
    guarded(app, request, caller, |claim: Option<Claim>| async move {
        let input = CreateRequest::parse(json_body(request)?)?;
        let answering = claim.as_ref().map(|c| c.answering(created_position));
        let shown =
            positions::create(app, caller.to_string(), &input, answering.as_deref()).await?;
        Ok(created_position(&shown))
    })
    .await
}

/// `GET /portfolio[?include=changes]`: the overview of the caller's open positions and the
/// realized totals of the closed ones; with `include=changes`, its changes over a day, a week
/// and a month.
pub async fn get_portfolio(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let changes = match request.query_string_parameters().first("include") {
        None => false,
        Some("changes") => true,
        Some(_) => return Err(ApiError::bad_request("include must be: changes")),
    };
    let view = portfolio_of(app, &owner, changes).await?;
    Ok(json_response(StatusCode::OK, &view))
}

/// `GET /pools`: the supported pools with their market state.
pub async fn list_pools(app: &App, request: &Request) -> Reply {
    owner(request)?;
    Ok(json_response(StatusCode::OK, &positions::pools(app).await?))
}

/// `POST /markets/sync`: syncs every pool now and answers the report. Needs the `markets:sync`
/// scope (API Gateway checks it; so does this handler, so local-api answers alike).
/// `?reconcile=all` also reads every linked wallet whole where wallets are read in process.
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
    Ok(json_response(
        StatusCode::OK,
        &positions::sync(app, reconcile).await?,
    ))
}

/// `GET /history/export?format=koinly|cointracker|ledger&from=&to=&include=watched`: the
/// caller's wallet positions' token movements as a CSV a tax tool imports (`from`, `to`: dates
/// or RFC 3339 times, UTC; `to` excluded; addresses only watched when `include=watched`); 413
/// past 5 MB.
pub async fn export_history(app: &App, request: &Request) -> Reply {
    let caller = owner(request)?;
    let query = request.query_string_parameters();
    let format = query.first("format").unwrap_or_default();
    let format = ExportFormat::from_str(format).map_err(|_| {
        ApiError::bad_request(format!("format must be one of: {}", ExportFormat::names()))
    })?;
    let bound = |name: &str, default: i64| -> Result<i64, ApiError> {
        let Some(text) = query.first(name) else {
            return Ok(default);
        };
        let day = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| t.and_utc());
        let time = day.or_else(|| {
            chrono::DateTime::parse_from_rfc3339(text)
                .ok()
                .map(|t| t.with_timezone(&chrono::Utc))
        });
        time.map(|t| t.timestamp()).ok_or_else(|| {
            ApiError::bad_request(format!(
                "{name} must be a date (2026-01-31) or an RFC 3339 time, UTC"
            ))
        })
    };
    let watched = match query.first("include") {
        None => false,
        Some("watched") => true,
        Some(_) => return Err(ApiError::bad_request("include must be: watched")),
    };
    // A range that is empty (`to` not after `from`) has no movement: the header alone.
    let (from, to) = (bound("from", 0)?, bound("to", i64::MAX)?);
    let csv = export::export(app, &caller, format, (from, to), watched)
        .await?
        .ok_or_else(|| {
            ApiError::AnswerTooLarge(format!(
                "the export exceeds {} MB: narrow the range (from, to)",
                MAX_EXPORT_BYTES / (1024 * 1024)
            ))
        })?;
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/csv; charset=utf-8")
        .header(
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"positions-{format}.csv\""),
        )
        .body(Body::Text(csv))
        .unwrap_or_default())
}
