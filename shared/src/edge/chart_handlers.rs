//! The chart endpoints (decision 66): a position's, the portfolio's and a pool's figures at
//! the series' boundaries, `?period=1d|7d|30d|90d|1y|all` (7d when left out).

use crate::application::app::App;
use crate::application::charts::{self, PortfolioChart};
use crate::domain::chart::{GroupBy, Period};
use crate::domain::model::Chain;
use crate::edge::caller::{owner, position_id};
use crate::edge::error::ApiError;
use crate::edge::http::json_response;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, RequestExt, Response};
use std::str::FromStr;

type Reply = Result<Response<Body>, ApiError>;

fn period(request: &Request) -> Result<Period, ApiError> {
    match request.query_string_parameters().first("period") {
        None => Ok(Period::Week),
        Some(text) => Period::from_str(text).map_err(|_| {
            ApiError::bad_request(format!("period must be one of: {}", Period::names()))
        }),
    }
}

/// `GET /positions/{id}/chart`: anything not the caller's is 404.
pub async fn position_chart(app: &App, request: &Request) -> Reply {
    let (owner, id) = (owner(request)?, position_id(request)?);
    let period = period(request)?;
    let chart = charts::position_chart(app, &owner, &id, period).await?;
    Ok(json_response(StatusCode::OK, &chart))
}

/// `GET /portfolio/chart?groupBy=asset|chain|protocol`.
pub async fn portfolio_chart(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let period = period(request)?;
    let group_by = match request.query_string_parameters().first("groupBy") {
        None => None,
        Some(text) => Some(GroupBy::from_str(text).map_err(|_| {
            ApiError::bad_request(format!("groupBy must be one of: {}", GroupBy::names()))
        })?),
    };
    Ok(
        match charts::portfolio_chart(app, &owner, period, group_by).await? {
            PortfolioChart::Whole(chart) => json_response(StatusCode::OK, &chart),
            PortfolioChart::Grouped(chart) => json_response(StatusCode::OK, &chart),
        },
    )
}

/// `GET /pools/{chain}/{pool}/chart`: the shared series; a pool not in the catalog is 404.
pub async fn pool_chart(app: &App, request: &Request) -> Reply {
    owner(request)?;
    let period = period(request)?;
    let not_found = || ApiError::NotFound("pool not found".into());
    let parameters = request.path_parameters_ref().ok_or_else(not_found)?;
    let (chain, pool) = match (parameters.first("chain"), parameters.first("pool")) {
        (Some(chain), Some(pool)) => (Chain::from_str(chain).map_err(|_| not_found())?, pool),
        _ => return Err(not_found()),
    };
    let chart = charts::pool_chart(app, chain, pool, period).await?;
    Ok(json_response(StatusCode::OK, &chart))
}
