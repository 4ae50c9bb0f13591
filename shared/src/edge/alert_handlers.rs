//! The alert and webhook routes (decision 61): the feed, the settings (the user's and a
//! position's own), and the webhook endpoints with their tests, attempts and redeliveries;
//! each request read, then `application::alerts` or `application::webhooks`. Secrets are in
//! the answers that make them only (a replayed create opens its endpoint's secret again).

use crate::application::alert_ports::EventFilter;
use crate::application::app::App;
use crate::application::webhooks::{self, EndpointInput};
use crate::application::{alerts, keys};
use crate::domain::alerts::settings::{
    AlertSettings, APPROACH_PERCENT_RANGE, COOLDOWN_MINUTES_RANGE,
};
use crate::domain::alerts::EventType;
use crate::domain::model::StoredResponse;
use crate::domain::webhooks::WebhookView;
use crate::edge::caller::{json_body, owner, position_id};
use crate::edge::error::ApiError;
use crate::edge::http::json_response;
use crate::edge::idempotency::{guarded_replaying, replay};
use crate::edge::validation::{integer, is_position_id, json_object, page_request, present};
use bigdecimal::BigDecimal;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Deserialize;
use std::str::FromStr;

type Reply = Result<Response<Body>, ApiError>;

/// An event type by its name, or a 400 listing them.
fn event_type(name: &str, field: &str) -> Result<EventType, ApiError> {
    EventType::from_str(name)
        .ok()
        .filter(|t| *t != EventType::WebhookTest)
        .ok_or_else(|| {
            let names: Vec<&str> = EventType::subscribable().map(EventType::as_str).collect();
            ApiError::bad_request(format!("{field} must be one of: {}", names.join(", ")))
        })
}

/// The most type names a list may hold (the document's `maxItems`).
const MAX_TYPE_NAMES: usize = 50;

fn event_types(names: &[String], field: &str) -> Result<Vec<EventType>, ApiError> {
    if names.len() > MAX_TYPE_NAMES {
        return Err(ApiError::bad_request(format!(
            "{} holds at most {MAX_TYPE_NAMES} names",
            field.trim_end_matches("[]")
        )));
    }
    let mut types = Vec::new();
    for name in names {
        let t = event_type(name, field)?;
        if !types.contains(&t) {
            types.push(t);
        }
    }
    Ok(types)
}

/// `GET /events?positionId&type&limit&offset`: the caller's events of the last 30 days,
/// newest first.
pub async fn list_events(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let query = request.query_string_parameters();
    let page = page_request(&query)?;
    let position = match query.first("positionId") {
        Some(id) if is_position_id(id) => Some(id.to_string()),
        Some(_) => return Err(ApiError::bad_request("positionId must be a position id")),
        None => None,
    };
    // The feed also shows the webhook tests: they may be filtered on too.
    let event_type = match query.first("type") {
        Some("webhook.test") => Some(EventType::WebhookTest),
        other => other.map(|t| event_type(t, "type")).transpose()?,
    };
    let filter = EventFilter {
        position,
        event_type,
    };
    let events = alerts::events(app, &owner, filter, page).await?;
    Ok(json_response(StatusCode::OK, &events))
}

/// The settings as a client sends them: every field required.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SettingsBody {
    types: Vec<String>,
    #[serde(deserialize_with = "integer")]
    approach_percent: Option<i64>,
    /// Required, and may be null: no threshold.
    #[serde(deserialize_with = "required_nullable")]
    fee_threshold_usd: Option<String>,
    #[serde(deserialize_with = "integer")]
    cooldown_minutes: Option<i64>,
}

/// A field that must be present and may be `null` (serde's `Option` alone lets it be left out).
fn required_nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d)
}

/// A USD amount as the document's pattern has it: 1 to 20 digits, then 1 to 18 after a point.
fn usd_text(text: &str) -> bool {
    let digits = |s: &str, most: usize| {
        (1..=most).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    match text.split_once('.') {
        Some((whole, fraction)) => digits(whole, 20) && digits(fraction, 18),
        None => digits(text, 20),
    }
}

fn settings_of(request: &Request) -> Result<AlertSettings, ApiError> {
    let body: SettingsBody = json_object(json_body(request)?)?;
    let in_range = |v: Option<i64>, (lo, hi): (u32, u32), name: &str| {
        v.filter(|v| (i64::from(lo)..=i64::from(hi)).contains(v))
            .map(|v| v as u32)
            .ok_or_else(|| {
                ApiError::bad_request(format!("{name} must be an integer from {lo} to {hi}"))
            })
    };
    let threshold = match body.fee_threshold_usd {
        None => None,
        Some(text) => Some(
            usd_text(&text)
                .then(|| BigDecimal::from_str(&text).ok())
                .flatten()
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "feeThresholdUsd must be a decimal string of USD (up to 20 digits, \
                         18 after the point) or null",
                    )
                })?,
        ),
    };
    Ok(AlertSettings {
        types: event_types(&body.types, "types[]")?,
        approach_percent: in_range(
            body.approach_percent,
            APPROACH_PERCENT_RANGE,
            "approachPercent",
        )?,
        fee_threshold_usd: threshold,
        cooldown_minutes: in_range(
            body.cooldown_minutes,
            COOLDOWN_MINUTES_RANGE,
            "cooldownMinutes",
        )?,
    })
}

/// `GET /alerts`: the caller's settings (the defaults until set).
pub async fn get_alerts(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    Ok(json_response(
        StatusCode::OK,
        &alerts::settings(app, &owner).await?,
    ))
}

/// `PUT /alerts`: replaces the caller's settings (a repeat changes nothing more).
pub async fn put_alerts(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let settings = settings_of(request)?;
    let stored = alerts::put_settings(app, &owner, settings).await?;
    Ok(json_response(StatusCode::OK, &stored))
}

/// `PUT /positions/{id}/alerts`: the position's own settings, replacing the caller's for it.
pub async fn put_position_alerts(app: &App, request: &Request) -> Reply {
    let (owner, id) = (owner(request)?, position_id(request)?);
    let settings = settings_of(request)?;
    let stored = alerts::put_position_settings(app, &owner, &id, settings).await?;
    Ok(json_response(StatusCode::OK, &stored))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EndpointBody {
    // Each may be left out; none may be null.
    #[serde(default, deserialize_with = "present")]
    url: Option<String>,
    #[serde(default, deserialize_with = "present")]
    event_types: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    description: Option<String>,
    #[serde(default, deserialize_with = "present")]
    enabled: Option<bool>,
}

fn endpoint_of(request: &Request) -> Result<EndpointInput, ApiError> {
    let body: EndpointBody = json_object(json_body(request)?)?;
    Ok(EndpointInput {
        url: body.url,
        event_types: body
            .event_types
            .map(|t| event_types(&t, "eventTypes[]"))
            .transpose()?,
        description: body.description,
        enabled: body.enabled,
    })
}

/// The endpoint id the path names; a malformed one is 404, as an unknown one is.
fn webhook_id(request: &Request) -> Result<String, ApiError> {
    path_id(request, "id", "wh_", "webhook endpoint not found")
}

fn path_id(request: &Request, name: &str, prefix: &str, missing: &str) -> Result<String, ApiError> {
    request
        .path_parameters_ref()
        .and_then(|p| p.first(name))
        .filter(|id| {
            id.strip_prefix(prefix)
                .is_some_and(|u| ulid::Ulid::from_string(u).is_ok_and(|v| v.to_string() == u))
        })
        .map(str::to_string)
        .ok_or_else(|| ApiError::NotFound(missing.into()))
}

/// `POST /webhooks`: registers an endpoint; 201 with its secret. Under an `Idempotency-Key`
/// the answer is kept without the secret (never kept in the clear), and a replay answers the
/// same 201 with the endpoint as it is and its secret, opened again; 409 when the endpoint was
/// deleted since (decision 61).
pub async fn create_webhook(app: &App, request: &Request) -> Reply {
    let caller = owner(request)?;
    let caller = caller.as_str();
    let replayed = |stored: StoredResponse| async move {
        let kept: serde_json::Value = serde_json::from_str(&stored.body).unwrap_or_default();
        let Some(id) = kept.get("id").and_then(serde_json::Value::as_str) else {
            // A kept refusal: the same answer again.
            return Ok(replay(stored));
        };
        let made = webhooks::created_again(app, caller, id).await?;
        Ok(json_response(StatusCode::CREATED, &made))
    };
    guarded_replaying(
        app,
        request,
        caller,
        |claim| async move {
            let input = endpoint_of(request)?;
            let made = webhooks::create(app, caller, input).await?;
            if let Some(claim) = claim {
                let kept = WebhookView {
                    secret: None,
                    ..made.clone()
                };
                let replay = json_response(StatusCode::CREATED, &kept);
                keys::keep(app, &claim.answer(&replay)).await;
            }
            Ok(json_response(StatusCode::CREATED, &made))
        },
        replayed,
    )
    .await
}

/// `GET /webhooks`: the caller's endpoints (never their secrets).
pub async fn list_webhooks(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    Ok(json_response(
        StatusCode::OK,
        &webhooks::list(app, &owner).await?,
    ))
}

/// `GET /webhooks/{id}`: one of the caller's endpoints; anything else is 404.
pub async fn get_webhook(app: &App, request: &Request) -> Reply {
    let (owner, id) = (owner(request)?, webhook_id(request)?);
    Ok(json_response(
        StatusCode::OK,
        &webhooks::get(app, &owner, &id).await?,
    ))
}

/// `PATCH /webhooks/{id}`: changes the url, types, description, or enables it again.
pub async fn update_webhook(app: &App, request: &Request) -> Reply {
    let (owner, id) = (owner(request)?, webhook_id(request)?);
    let input = endpoint_of(request)?;
    let updated = webhooks::update(app, &owner, &id, input).await?;
    Ok(json_response(StatusCode::OK, &updated))
}

/// `DELETE /webhooks/{id}`: 204; nothing more is sent to it.
pub async fn delete_webhook(app: &App, request: &Request) -> Reply {
    let (owner, id) = (owner(request)?, webhook_id(request)?);
    webhooks::delete(app, &owner, &id).await?;
    let mut response = Response::new(Body::Empty);
    *response.status_mut() = StatusCode::NO_CONTENT;
    Ok(response)
}

/// `POST /webhooks/{id}/rotate-secret`: a new secret (shown this once); the old one still
/// signs beside it for 24 hours.
pub async fn rotate_webhook_secret(app: &App, request: &Request) -> Reply {
    let (owner, id) = (owner(request)?, webhook_id(request)?);
    let rotated = webhooks::rotate(app, &owner, &id).await?;
    Ok(json_response(StatusCode::OK, &rotated))
}

/// `POST /webhooks/{id}/test`: a `webhook.test` event queued to the endpoint; 202 with it.
pub async fn test_webhook(app: &App, request: &Request) -> Reply {
    let (owner, id) = (owner(request)?, webhook_id(request)?);
    let event = webhooks::test(app, &owner, &id).await?;
    Ok(json_response(StatusCode::ACCEPTED, &event))
}

/// `GET /webhooks/{id}/deliveries`: the endpoint's attempts, newest first.
pub async fn list_webhook_deliveries(app: &App, request: &Request) -> Reply {
    let page = page_request(&request.query_string_parameters())?;
    let (owner, id) = (owner(request)?, webhook_id(request)?);
    let log = webhooks::deliveries(app, &owner, &id, page).await?;
    Ok(json_response(StatusCode::OK, &log))
}

/// `POST /webhooks/{id}/deliveries/{deliveryId}/redeliver`: the attempt's event sent again,
/// with the same id; 202.
pub async fn redeliver_webhook(app: &App, request: &Request) -> Reply {
    let (owner, id) = (owner(request)?, webhook_id(request)?);
    let delivery = path_id(request, "deliveryId", "dlv_", "delivery not found")?;
    let job = webhooks::redeliver(app, &owner, &id, &delivery).await?;
    let queued = serde_json::json!({"webhookId": job.webhook_id, "eventId": job.event_id});
    Ok(json_response(StatusCode::ACCEPTED, &queued))
}
