//! The webhook use cases (decision 61): endpoints registered, changed, rotated and removed
//! (their secrets sealed at rest, shown once), tests and redeliveries queued, and the delivery
//! of one queued event to one endpoint: signed, sent only to a permitted address, logged,
//! judged (delivered, retried on the schedule, or the endpoint disabled).

use crate::application::alert_ports::Alerts;
use crate::application::alert_ports::{DeliveryJob, Sent, UNCOUNTED};
use crate::application::app::App;
use crate::application::error::{Outcome, UseCaseError};
use crate::application::ports::StoreError;
use crate::application::watches::test_event;
use crate::domain::alerts::{EventType, FEED_DAYS};
use crate::domain::model::{ListView, PageRequest};
use crate::domain::webhooks::address::check_url;
use crate::domain::webhooks::delivery::{judge, retry_after, Verdict, MAX_BODY_BYTES};
use crate::domain::webhooks::signing::{new_secret, secret_text, signature_header};
use crate::domain::webhooks::{
    Delivery, Retired, Webhook, WebhookView, MAX_DESCRIPTION, MAX_ENDPOINTS,
};
use chrono::{DateTime, Duration, Utc};

/// How long a rotated-out secret still signs beside the new one.
pub const ROTATION_OVERLAP_HOURS: i64 = 24;

/// What a client may set on an endpoint (`None`: unchanged, on a `PATCH`).
#[derive(Debug, Clone, Default)]
pub struct EndpointInput {
    pub url: Option<String>,
    pub event_types: Option<Vec<EventType>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
}

fn checked(app: &App, input: &EndpointInput) -> Outcome<()> {
    if let Some(url) = &input.url {
        check_url(url, app.alerts.reach).map_err(|e| UseCaseError::bad_request(e.to_string()))?;
    }
    if let Some(description) = &input.description {
        if description.chars().count() > MAX_DESCRIPTION {
            return Err(UseCaseError::bad_request(format!(
                "description must be at most {MAX_DESCRIPTION} characters"
            )));
        }
    }
    Ok(())
}

async fn new_sealed_secret(alerts: &Alerts) -> Outcome<(String, Vec<u8>)> {
    let plain = new_secret().map_err(|e| UseCaseError::internal(e.to_string()))?;
    let sealed = alerts
        .sealer
        .seal(&plain)
        .await
        .map_err(UseCaseError::internal)?;
    Ok((secret_text(&plain), sealed))
}

/// Registers an endpoint; its secret is in this answer only.
pub async fn create(app: &App, owner: &str, input: EndpointInput) -> Outcome<WebhookView> {
    checked(app, &input)?;
    let Some(url) = input.url.clone() else {
        return Err(UseCaseError::bad_request("url is required"));
    };
    let (shown, sealed) = new_sealed_secret(&app.alerts).await?;
    let now = app.clock.now();
    let webhook = Webhook {
        id: format!("wh_{}", ulid::Ulid::from_datetime(now.into())),
        owner: owner.to_string(),
        url,
        event_types: input.event_types.unwrap_or_default(),
        description: input.description.unwrap_or_default(),
        created_at: DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now),
        secret: sealed,
        previous_secret: None,
        disabled_reason: (input.enabled == Some(false)).then(|| "disabled by its owner".into()),
        failing_since: None,
    };
    match app
        .alerts
        .store
        .insert_webhook(&webhook, MAX_ENDPOINTS)
        .await
    {
        Err(StoreError::Conflict) => Err(UseCaseError::Conflict(format!(
            "at most {MAX_ENDPOINTS} webhook endpoints per user: delete one first"
        ))),
        other => other.map_err(UseCaseError::from),
    }?;
    Ok(WebhookView {
        secret: Some(shown),
        ..webhook.view()
    })
}

/// The endpoint `id` a create made, answered again to a replay of that create (its
/// idempotency key): as it is now, with its current secret opened again (never kept in the
/// clear); 409 when it was deleted since (a replay never answers an id that is gone).
pub async fn created_again(app: &App, owner: &str, id: &str) -> Outcome<WebhookView> {
    let Some(webhook) = app.alerts.store.webhook(owner, id).await? else {
        return Err(UseCaseError::Conflict(
            "the endpoint this Idempotency-Key created has been deleted since: use a new key to create another".into(),
        ));
    };
    let plain = app
        .alerts
        .sealer
        .open(&webhook.secret)
        .await
        .map_err(UseCaseError::internal)?;
    Ok(WebhookView {
        secret: Some(secret_text(&plain)),
        ..webhook.view()
    })
}

pub async fn list(app: &App, owner: &str) -> Outcome<ListView<WebhookView>> {
    let data: Vec<WebhookView> = app
        .alerts
        .store
        .webhooks(owner)
        .await?
        .iter()
        .map(Webhook::view)
        .collect();
    Ok(ListView {
        total: data.len() as u64,
        data,
    })
}

async fn own(app: &App, owner: &str, id: &str) -> Outcome<Webhook> {
    app.alerts
        .store
        .webhook(owner, id)
        .await?
        .ok_or_else(|| UseCaseError::NotFound(format!("no webhook endpoint with id {id}")))
}

pub async fn get(app: &App, owner: &str, id: &str) -> Outcome<WebhookView> {
    Ok(own(app, owner, id).await?.view())
}

async fn replace(app: &App, updated: &Webhook, previous: &Webhook) -> Outcome<()> {
    match app.alerts.store.update_webhook(updated, previous).await {
        Err(StoreError::Conflict) => Err(UseCaseError::Contended(
            "the endpoint changed meanwhile: read it again and retry".into(),
        )),
        other => Ok(other?),
    }
}

/// Changes what is sent; `enabled: true` enables a disabled endpoint again (its failures
/// forgotten).
pub async fn update(
    app: &App,
    owner: &str,
    id: &str,
    input: EndpointInput,
) -> Outcome<WebhookView> {
    checked(app, &input)?;
    let previous = own(app, owner, id).await?;
    let mut updated = previous.clone();
    if let Some(url) = input.url {
        updated.url = url;
    }
    if let Some(types) = input.event_types {
        updated.event_types = types;
    }
    if let Some(description) = input.description {
        updated.description = description;
    }
    match input.enabled {
        Some(true) => {
            updated.disabled_reason = None;
            updated.failing_since = None;
        }
        Some(false) if updated.disabled_reason.is_none() => {
            updated.disabled_reason = Some("disabled by its owner".into());
        }
        _ => {}
    }
    if updated != previous {
        replace(app, &updated, &previous).await?;
    }
    Ok(updated.view())
}

pub async fn delete(app: &App, owner: &str, id: &str) -> Outcome<()> {
    if app.alerts.store.delete_webhook(owner, id).await? {
        Ok(())
    } else {
        Err(UseCaseError::NotFound(format!(
            "no webhook endpoint with id {id}"
        )))
    }
}

/// A new secret; the old one still signs beside it for 24 hours. The new one is in this answer
/// only.
pub async fn rotate(app: &App, owner: &str, id: &str) -> Outcome<WebhookView> {
    let previous = own(app, owner, id).await?;
    let (shown, sealed) = new_sealed_secret(&app.alerts).await?;
    let until = app.clock.now() + Duration::hours(ROTATION_OVERLAP_HOURS);
    let rotated = Webhook {
        secret: sealed,
        previous_secret: Some(Retired {
            secret: previous.secret.clone(),
            until,
        }),
        ..previous.clone()
    };
    replace(app, &rotated, &previous).await?;
    Ok(WebhookView {
        secret: Some(shown),
        ..rotated.view()
    })
}

/// Queues a `webhook.test` event to this endpoint, delivered like any other; answers the event.
pub async fn test(app: &App, owner: &str, id: &str) -> Outcome<crate::domain::alerts::AlertEvent> {
    let webhook = enabled(own(app, owner, id).await?, "tested")?;
    let now = app.clock.now();
    let alerts = &app.alerts;
    // Tests have their own limit per endpoint and minute: they never crowd out real events.
    let minute = now.timestamp().div_euclid(60);
    let tests = alerts.store.count_test(owner, id, minute).await?;
    if tests > TESTS_PER_MINUTE {
        return Err(UseCaseError::TooMany {
            message: format!(
                "at most {TESTS_PER_MINUTE} tests a minute per endpoint: try again in a minute"
            ),
            retry_after_seconds: 60 - now.timestamp().rem_euclid(60) as u64,
        });
    }
    let request = ulid::Ulid::from_datetime(now.into()).to_string();
    let event = test_event(owner, &request, now);
    // Recorded outside the hourly allowance, and queued to this endpoint only.
    let expires = now + Duration::days(FEED_DAYS);
    alerts
        .store
        .record_event(&event, expires, UNCOUNTED)
        .await?;
    queue(alerts, &[job(&webhook, &event.id)]).await?;
    Ok(event)
}

/// Tests one endpoint takes a minute; past them, 429.
pub const TESTS_PER_MINUTE: u64 = 10;

/// `webhook` where it is enabled; a disabled one is 409 with its reason (nothing would be sent).
fn enabled(webhook: Webhook, action: &str) -> Outcome<Webhook> {
    match &webhook.disabled_reason {
        Some(reason) => Err(UseCaseError::Conflict(format!(
            "this endpoint is disabled ({reason}): nothing can be {action} until it is enabled again (PATCH with \"enabled\": true)"
        ))),
        None => Ok(webhook),
    }
}

fn job(webhook: &Webhook, event: &str) -> DeliveryJob {
    DeliveryJob {
        owner: webhook.owner.clone(),
        webhook_id: webhook.id.clone(),
        event_id: event.to_string(),
        attempt: 1,
    }
}

async fn queue(alerts: &Alerts, jobs: &[DeliveryJob]) -> Outcome<()> {
    let Some(queue) = &alerts.queue else {
        return Err(UseCaseError::MarketStale(
            "no delivery queue is configured here: events are kept in the feed only".into(),
        ));
    };
    queue.enqueue(jobs).await.map_err(UseCaseError::internal)
}

/// The endpoint's attempts, newest first.
pub async fn deliveries(
    app: &App,
    owner: &str,
    id: &str,
    page: PageRequest,
) -> Outcome<ListView<Delivery>> {
    own(app, owner, id).await?;
    let (data, total) = app.alerts.store.deliveries(owner, id, page).await?;
    Ok(ListView { data, total })
}

/// Sends a delivery's event again (same event id: a receiver that saw it can tell).
pub async fn redeliver(app: &App, owner: &str, id: &str, delivery: &str) -> Outcome<DeliveryJob> {
    let webhook = enabled(own(app, owner, id).await?, "redelivered")?;
    let found = app.alerts.store.delivery(owner, id, delivery).await?;
    let Some(found) = found else {
        return Err(UseCaseError::NotFound(format!(
            "no delivery with id {delivery}"
        )));
    };
    if app
        .alerts
        .store
        .event(owner, &found.event_id)
        .await?
        .is_none()
    {
        return Err(UseCaseError::Conflict(
            "its event is past the feed's 30 days: nothing to send again".into(),
        ));
    }
    let job = job(&webhook, &found.event_id);
    queue(&app.alerts, std::slice::from_ref(&job)).await?;
    Ok(job)
}

/// Delivers one queued event to one endpoint: the wait before its next attempt when it is to
/// be tried again, `None` when it is done with (delivered, given up, the endpoint gone or
/// disabled). A store fault is the caller's to retry.
pub async fn deliver(
    alerts: &Alerts,
    job: &DeliveryJob,
    now: DateTime<Utc>,
) -> Result<Option<std::time::Duration>, StoreError> {
    let Some(webhook) = alerts.store.webhook(&job.owner, &job.webhook_id).await? else {
        return Ok(None);
    };
    if webhook.disabled_reason.is_some() {
        return Ok(None);
    }
    let Some(event) = alerts.store.event(&job.owner, &job.event_id).await? else {
        return Ok(None);
    };
    let mut body = serde_json::to_string(&event).unwrap_or_default();
    if body.len() > MAX_BODY_BYTES {
        let cut = crate::domain::alerts::AlertEvent {
            data: serde_json::json!({"truncated": true}),
            ..event.clone()
        };
        body = serde_json::to_string(&cut).unwrap_or_default();
    }
    let sent = match signed_headers(alerts, &webhook, &event.id, now, &body).await {
        Ok(headers) => {
            let sender = alerts.sender.as_ref();
            match (sender, check_url(&webhook.url, alerts.reach)) {
                (Some(sender), Ok(_)) => {
                    let refs: Vec<(&str, String)> =
                        headers.iter().map(|(k, v)| (*k, v.clone())).collect();
                    sender.send(&webhook.url, &refs, &body).await
                }
                (_, Err(refused)) => refusal(refused.to_string()),
                (None, _) => refusal("no webhook sender is configured here".into()),
            }
        }
        Err(e) => {
            tracing::error!(webhook = %webhook.id, cause = %e, "a webhook secret could not be opened");
            refusal("the endpoint's secret could not be opened".into())
        }
    };
    let verdict = judge(sent.status, webhook.failing_since, now);
    let delivered = verdict == Verdict::Delivered;
    let attempt = Delivery {
        id: format!("dlv_{}", ulid::Ulid::from_datetime(now.into())),
        owner: job.owner.clone(),
        webhook_id: webhook.id.clone(),
        event_id: event.id.clone(),
        event_type: event.event_type,
        attempt: job.attempt,
        at: now,
        status_code: sent.status,
        error: sent.error.clone(),
        duration_ms: sent.duration_ms,
        delivered,
    };
    alerts
        .store
        .record_delivery(&attempt, now + Duration::days(FEED_DAYS))
        .await?;
    let updated = match &verdict {
        Verdict::Delivered => Webhook {
            failing_since: None,
            ..webhook.clone()
        },
        Verdict::Retry => Webhook {
            failing_since: webhook.failing_since.or(Some(now)),
            ..webhook.clone()
        },
        Verdict::Disable(reason) => {
            tracing::warn!(webhook = %webhook.id, %reason, "webhook endpoint disabled");
            Webhook {
                disabled_reason: Some(reason.clone()),
                ..webhook.clone()
            }
        }
    };
    if updated != webhook {
        // A lost race (the owner changed it meanwhile) leaves the owner's change standing.
        match alerts.store.update_webhook(&updated, &webhook).await {
            Err(StoreError::Conflict) | Ok(()) => {}
            Err(e) => return Err(e),
        }
    }
    if verdict != Verdict::Retry {
        return Ok(None);
    }
    let jitter = (now.timestamp_subsec_nanos() % 2001) as f64 / 1000.0 - 1.0;
    let wait = retry_after(job.attempt, alerts.retry_scale, jitter);
    if wait.is_none() {
        tracing::warn!(webhook = %webhook.id, event = %event.id, attempts = job.attempt,
            "webhook delivery given up");
    }
    Ok(wait)
}

fn refusal(error: String) -> Sent {
    Sent {
        status: None,
        error: Some(error),
        duration_ms: 0,
    }
}

/// The Standard Webhooks headers of one attempt: the event's id, the time, and a signature by
/// each secret that signs now (the new one first during a rotation).
async fn signed_headers(
    alerts: &Alerts,
    webhook: &Webhook,
    id: &str,
    now: DateTime<Utc>,
    body: &str,
) -> Result<Vec<(&'static str, String)>, String> {
    let mut secrets = vec![alerts.sealer.open(&webhook.secret).await?];
    if let Some(previous) = webhook.previous_secret.as_ref().filter(|p| p.until > now) {
        secrets.push(alerts.sealer.open(&previous.secret).await?);
    }
    let timestamp = now.timestamp();
    let signature = signature_header(secrets.iter().map(Vec::as_slice), id, timestamp, body);
    Ok(vec![
        ("content-type", "application/json".to_string()),
        ("webhook-id", id.to_string()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signature),
    ])
}
