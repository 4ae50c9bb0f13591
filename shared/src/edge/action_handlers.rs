//! The actions on an open wallet position (decision 56): `POST /positions/{id}/collect`,
//! `/harvest` (decision 60), `/increase`, `/decrease` and `/rebalance`, each read from its body and built by
//! `application::actions`.

use crate::application::actions::{self, Asked};
use crate::application::app::App;
use crate::application::inputs::OrderLimits;
use crate::domain::model::OrderKind;
use crate::edge::caller::{json_body, owner, position_id};
use crate::edge::error::ApiError;
use crate::edge::handlers::ok_position;
use crate::edge::idempotency::guarded;
use crate::edge::validation::{integer, json_object, present, price};
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use serde_json::value::RawValue;

type Reply = Result<Response<Body>, ApiError>;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RebalanceBody {
    price_lower: Box<RawValue>,
    price_upper: Box<RawValue>,
    #[serde(default, deserialize_with = "integer")]
    slippage_bps: Option<i64>,
    #[serde(default, deserialize_with = "integer")]
    deadline_seconds: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    swap: Option<bool>,
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
    #[serde(default, deserialize_with = "present")]
    permit: Option<String>,
    #[serde(default, deserialize_with = "present")]
    swap: Option<bool>,
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

/// What the caller asks of the position, checked before any read.
fn parse_asked(kind: OrderKind, request: &Request) -> Result<Asked, ApiError> {
    let body = request.body().as_ref();
    match kind {
        OrderKind::Increase => {
            let body: IncreaseBody = json_object(json_body(request)?)?;
            Ok(Asked::Increase {
                amounts: (body.amount_a, body.amount_b),
                limits: OrderLimits::from_fields(body.slippage_bps, body.deadline_seconds)?
                    .with_permit(body.permit.as_deref())?
                    .with_swap(body.swap),
            })
        }
        OrderKind::Decrease => {
            let body: DecreaseBody = json_object(json_body(request)?)?;
            let percent = body
                .percent
                .and_then(|p| u8::try_from(p).ok())
                .filter(|p| (1..=100).contains(p))
                .ok_or_else(|| ApiError::bad_request("percent must be an integer from 1 to 100"))?;
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
                limits: OrderLimits::from_fields(body.slippage_bps, body.deadline_seconds)?
                    .with_swap(body.swap),
            })
        }
        _ => {
            let limits = if body.iter().all(u8::is_ascii_whitespace) {
                OrderLimits::parse_close(b"")?
            } else {
                OrderLimits::parse_close(json_body(request)?)?
            };
            Ok(match kind {
                OrderKind::Harvest => Asked::Harvest(limits),
                OrderKind::Stake => Asked::Stake(limits),
                _ => Asked::Collect(limits),
            })
        }
    }
}

/// `POST /positions/{id}/collect`: everything owed paid to the wallet.
pub async fn collect(app: &App, request: &Request) -> Reply {
    act(app, request, OrderKind::Collect).await
}

/// `POST /positions/{id}/harvest`: a staked position's rewards paid to the wallet.
pub async fn harvest(app: &App, request: &Request) -> Reply {
    act(app, request, OrderKind::Harvest).await
}

/// `POST /positions/{id}/stake`: a held position sent into its deployment's farm.
pub async fn stake(app: &App, request: &Request) -> Reply {
    act(app, request, OrderKind::Stake).await
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
    let caller = caller.as_str();
    guarded(app, request, caller, |claim| async move {
        let asked = parse_asked(kind, request)?;
        let id = position_id(request)?;
        let answering = claim.as_ref().map(|c| c.answering(ok_position));
        let shown = actions::act(app, caller, &id, &asked, answering.as_deref()).await?;
        Ok(ok_position(&shown))
    })
    .await
}
