//! Alerts in process (decision 61): the settings as a client writes them (bad input changes
//! nothing), the feed's filters, a rotation's overlap ending after 24 hours, a body past 16 KB
//! cut to fit, and what a reorg's retraction takes back.

use async_trait::async_trait;
use base64::Engine;
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use shared::alerts::use_cases::{self as webhooks, EndpointInput};
use shared::alerts::webhooks::signing::signature;
use shared::alerts::{DeliveryJob, Sent, WebhookSender};
use shared::App;
use std::sync::{Arc, Mutex};
use test_support::client::TestClient;

/// One request as it would be sent: its headers and body.
type Request = (Vec<(String, String)>, String);

/// A sender that keeps what it would send and answers 200.
#[derive(Default)]
struct Kept(Mutex<Vec<Request>>);

#[async_trait]
impl WebhookSender for Kept {
    async fn send(&self, _: &str, headers: &[(&str, String)], body: &str) -> Sent {
        let headers = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        self.0.lock().unwrap().push((headers, body.to_string()));
        Sent {
            status: Some(200),
            error: None,
            duration_ms: 1,
        }
    }
}

fn header(sent: &[(String, String)], name: &str) -> String {
    sent.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap()
}

fn secret_bytes(secret: &str) -> Vec<u8> {
    let text = secret.strip_prefix("whsec_").unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

/// The embedded app with `sender` and `queue` for its alerts, and alice's endpoint on it.
async fn with_endpoint(
    sender: Option<Arc<dyn WebhookSender>>,
    queue: Option<Arc<dyn shared::alerts::DeliveryQueue>>,
) -> (App, shared::alerts::webhooks::WebhookView) {
    let mut app = App::in_memory();
    app.alerts.sender = sender;
    app.alerts.queue = queue;
    let input = EndpointInput {
        url: Some("https://hooks.example.com/x".into()),
        ..EndpointInput::default()
    };
    let made = webhooks::create(&app, "alice", input).await.unwrap();
    (app, made)
}

#[tokio::test]
async fn a_rotated_secret_signs_beside_the_new_one_for_24_hours_only() {
    let kept = Arc::new(Kept::default());
    let queue = Arc::new(test_support::events::RecordingQueue::default());
    let (app, made) = with_endpoint(Some(kept.clone()), Some(queue)).await;
    let old = secret_bytes(made.secret.as_ref().unwrap());
    let rotated = webhooks::rotate(&app, "alice", &made.id).await.unwrap();
    let new = secret_bytes(rotated.secret.as_ref().unwrap());
    let event = webhooks::test(&app, "alice", &made.id).await.unwrap();
    let job = DeliveryJob {
        owner: "alice".into(),
        webhook_id: made.id.clone(),
        event_id: event.id.clone(),
        attempt: 1,
    };
    let now = chrono::Utc::now();
    for at in [
        now + chrono::Duration::hours(23),
        now + chrono::Duration::hours(25),
    ] {
        let wait = webhooks::deliver(&app.alerts, &job, at).await.unwrap();
        assert_eq!(wait, None, "delivered");
    }
    let sent = kept.0.lock().unwrap().clone();
    let signed = |(headers, body): &Request, secret: &[u8]| {
        let ts: i64 = header(headers, "webhook-timestamp").parse().unwrap();
        signature(secret, &header(headers, "webhook-id"), ts, body)
    };
    let during = header(&sent[0].0, "webhook-signature");
    assert_eq!(
        during,
        format!("{} {}", signed(&sent[0], &new), signed(&sent[0], &old))
    );
    let after = header(&sent[1].0, "webhook-signature");
    assert_eq!(
        after,
        signed(&sent[1], &new),
        "the old secret no longer signs"
    );
    assert_eq!(header(&sent[0].0, "webhook-id"), event.id);
}

async fn put(client: &TestClient, path: &str, body: &Value) -> test_support::client::Reply {
    let headers = [("content-type", "application/json")];
    let body = body.to_string();
    client
        .send(Method::PUT, path, &headers, body.as_bytes())
        .await
}

#[tokio::test]
async fn settings_are_written_whole_and_bad_ones_change_nothing() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, Some("alice"));
    let defaults = alice.send(Method::GET, "/alerts", &[], b"").await;
    assert_eq!(defaults.status, StatusCode::OK);
    assert_eq!(defaults.json["approachPercent"], 10);
    assert_eq!(defaults.json["cooldownMinutes"], 60);
    assert_eq!(defaults.json["feeThresholdUsd"], Value::Null);
    let good = json!({"types": ["position.range.exited"], "approachPercent": 5, "feeThresholdUsd": "12.50", "cooldownMinutes": 30});
    for (bad, says) in [
        (json!({"approachPercent": 0}), "approachPercent"),
        (json!({"approachPercent": 50}), "approachPercent"),
        (json!({"cooldownMinutes": 10081}), "cooldownMinutes"),
        (json!({"cooldownMinutes": 1.5}), "integer"),
        (json!({"feeThresholdUsd": ".5"}), "feeThresholdUsd"),
        (json!({"feeThresholdUsd": "-1"}), "feeThresholdUsd"),
        (json!({"feeThresholdUsd": 12}), "invalid"),
        (json!({"types": ["position.moved"]}), "types"),
        (json!({"types": ["webhook.test"]}), "types"),
        (json!({"extra": 1}), "extra"),
        (json!({"types": vec!["position.closed"; 51]}), "at most 50"),
    ] {
        let mut body = good.clone();
        body.as_object_mut()
            .unwrap()
            .extend(bad.as_object().unwrap().clone());
        put(&alice, "/alerts", &body)
            .await
            .assert_refused(StatusCode::BAD_REQUEST, says);
    }
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("feeThresholdUsd");
    put(&alice, "/alerts", &missing)
        .await
        .assert_refused(StatusCode::BAD_REQUEST, "feeThresholdUsd");
    let unchanged = alice.send(Method::GET, "/alerts", &[], b"").await;
    assert_eq!(unchanged.json, defaults.json, "nothing changed");
    let reply = put(&alice, "/alerts", &good).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let stored = alice.send(Method::GET, "/alerts", &[], b"").await;
    assert_eq!(stored.json["feeThresholdUsd"], "12.5");
    assert_eq!(stored.json["types"], json!(["position.range.exited"]));
    // A position's own: only the caller's positions.
    let path = "/positions/01JD8Z6C6XK4W5S7R9T2V3M1QZ/alerts";
    put(&alice, path, &good)
        .await
        .assert_refused(StatusCode::NOT_FOUND, "no position");
    // A closed one's: 409, nothing of it is watched any more (an open one takes them).
    let opened = alice.open(json!({})).await;
    let id = opened["id"].as_str().unwrap().to_string();
    let own = format!("/positions/{id}/alerts");
    let reply = put(&alice, &own, &good).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let closed = alice.close(&id).await;
    assert_eq!(closed.status, StatusCode::OK, "{}", closed.text());
    put(&alice, &own, &good)
        .await
        .assert_refused(StatusCode::CONFLICT, "closed");
    // An endpoint's fields may be left out, never null.
    let made = test_support::wallets::post(
        &alice,
        "/webhooks",
        &json!({"url": "https://hooks.example.com/x"}),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let path = format!("/webhooks/{}", made.json["id"].as_str().unwrap());
    for body in [
        json!({"url": null}),
        json!({"enabled": null}),
        json!({"eventTypes": null}),
    ] {
        let headers = [("content-type", "application/json")];
        let reply = alice
            .send(Method::PATCH, &path, &headers, body.to_string().as_bytes())
            .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.text()
        );
    }
    // The feed's filters are checked; the webhook tests may be filtered on.
    let tests = alice
        .send(Method::GET, "/events?type=webhook.test", &[], b"")
        .await;
    assert_eq!(tests.status, StatusCode::OK, "{}", tests.text());
    for query in ["type=position.moved", "positionId=nope", "limit=0"] {
        let reply = alice
            .send(Method::GET, &format!("/events?{query}"), &[], b"")
            .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{query}: {}",
            reply.text()
        );
    }
}

#[tokio::test]
async fn a_body_past_16_kb_is_cut_to_fit() {
    let kept = Arc::new(Kept::default());
    let (app, made) = with_endpoint(Some(kept.clone()), None).await;
    let mut event = shared::alerts::test_event("alice", "big", chrono::Utc::now());
    event.data = json!({"padding": "x".repeat(20_000)});
    let expires = chrono::Utc::now() + chrono::Duration::days(1);
    app.alerts
        .store
        .record_event(&event, expires, 600)
        .await
        .unwrap();
    let job = DeliveryJob {
        owner: "alice".into(),
        webhook_id: made.id,
        event_id: event.id.clone(),
        attempt: 1,
    };
    webhooks::deliver(&app.alerts, &job, chrono::Utc::now())
        .await
        .unwrap();
    let (_, body) = kept.0.lock().unwrap()[0].clone();
    assert!(body.len() < 16 * 1024, "{}", body.len());
    let sent: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(sent["id"], event.id.as_str());
    assert_eq!(sent["data"]["truncated"], true);
}

/// A sender that answers 200 after a while and counts the attempts in flight at once.
#[derive(Default)]
struct Slow {
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    done: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl WebhookSender for Slow {
    async fn send(&self, _: &str, _: &[(&str, String)], _: &str) -> Sent {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.now.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        self.now.fetch_sub(1, SeqCst);
        self.done.fetch_add(1, SeqCst);
        Sent {
            status: Some(200),
            error: None,
            duration_ms: 30,
        }
    }
}

/// Where no queue runs (local-api), deliveries to one endpoint go at most ten at a time, as
/// the stack's queue hands its function a batch: 40 queued at once never open 40 connections.
#[tokio::test]
async fn local_deliveries_to_one_endpoint_are_bounded() {
    use shared::alerts::delivery::local::{TaskDeliveries, PER_ENDPOINT};
    use shared::alerts::DeliveryQueue;
    let slow = Arc::new(Slow::default());
    let queue = Arc::new(test_support::events::RecordingQueue::default());
    let (app, made) = with_endpoint(Some(slow.clone()), Some(queue)).await;
    let event = webhooks::test(&app, "alice", &made.id).await.unwrap();
    let job = DeliveryJob {
        owner: "alice".into(),
        webhook_id: made.id.clone(),
        event_id: event.id.clone(),
        attempt: 1,
    };
    let local = TaskDeliveries::new(app.alerts.clone());
    local.enqueue(&vec![job; 40]).await.unwrap();
    for _ in 0..500 {
        if slow.done.load(std::sync::atomic::Ordering::SeqCst) == 40 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(slow.done.load(std::sync::atomic::Ordering::SeqCst), 40);
    let most = slow.most.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        most, PER_ENDPOINT,
        "at most {PER_ENDPOINT} at once, and that many"
    );
}

/// A delivery the queue refused is kept in the outbox, never lost while its event is in the
/// feed, and queued by the next run that can.
#[tokio::test]
async fn a_refused_delivery_waits_in_the_outbox_for_the_next_run() {
    use shared::alerts::{emit, flush_outbox, AlertEvent, EventType};
    use std::sync::atomic::Ordering::SeqCst;
    let queue = Arc::new(test_support::events::RefusingQueue::default());
    let (app, made) = with_endpoint(None, Some(queue.clone())).await;
    queue.refusing.store(true, SeqCst);
    let event = AlertEvent {
        id: "evt_01JD8Z6C6XK4W5S7R9T2V3M1QA".into(),
        owner: "alice".into(),
        event_type: EventType::RangeExited,
        created_at: chrono::Utc::now(),
        position_id: Some("P1".into()),
        chain: None,
        block: Some(1),
        sequence: 1,
        data: json!({}),
        not_delivered: None,
        retracted_by: None,
    };
    assert_eq!(emit(&app.alerts, vec![event.clone()]).await.unwrap(), 1);
    assert!(queue.queued.jobs.lock().unwrap().is_empty());
    assert_eq!(flush_outbox(&app.alerts).await.unwrap(), 0, "still refused");
    queue.refusing.store(false, SeqCst);
    assert_eq!(flush_outbox(&app.alerts).await.unwrap(), 1);
    let queued = queue.queued.jobs.lock().unwrap().clone();
    assert_eq!(queued.len(), 1);
    assert_eq!(
        (queued[0].webhook_id.as_str(), queued[0].event_id.as_str()),
        (made.id.as_str(), event.id.as_str())
    );
    assert_eq!(flush_outbox(&app.alerts).await.unwrap(), 0, "queued once");
}

/// Of the told events a reorg replaced, only those the canonical chain does not hold again are
/// retracted (a transaction included again in another block keeps its event), each once.
#[tokio::test]
async fn a_transaction_included_again_is_not_retracted() {
    use shared::alerts::{emit_history, retract_history, EventFilter, EventType};
    use shared::history::{EventKind, PositionEvent};
    use shared::model::{Chain, PageRequest, Status};
    let app = App::in_memory();
    let position = test_support::fixtures::position("alice", Status::Active, Chain::Base, 1);
    let withdrawal = |tx: u64, block: u64| PositionEvent {
        kind: EventKind::Withdraw,
        block,
        block_hash: format!("0x{block:064x}"),
        transaction: format!("0x{tx:064x}"),
        log_index: 0,
        liquidity: 10,
        amounts: [1u64.try_into().unwrap(), 2u64.try_into().unwrap()],
        from: None,
        to: None,
        timestamp: None,
        reward: None,
        gas: None,
        acted: None,
        paid: None,
        prices: [None, None],
        priced: None,
        kept: None,
    };
    let now = chrono::Utc::now();
    let (again, gone) = (withdrawal(1, 10), withdrawal(2, 11));
    let replaced = [again, gone];
    let told = emit_history(&app.alerts, &position, &replaced, now);
    assert_eq!(told.await.unwrap(), 2);
    let included_again = [withdrawal(1, 12)];
    let retract = || retract_history(&app.alerts, &position, &replaced, &included_again, now);
    assert_eq!(retract().await.unwrap(), 1);
    assert_eq!(retract().await.unwrap(), 0, "once");
    let page = PageRequest {
        offset: 0,
        limit: 10,
    };
    let all = EventFilter::default();
    let (feed, _) = app.alerts.store.events("alice", &all, page).await.unwrap();
    let retraction = feed
        .iter()
        .find(|e| e.event_type == EventType::Retracted)
        .unwrap();
    let marked: Vec<_> = feed.iter().filter(|e| e.retracted_by.is_some()).collect();
    assert_eq!(marked.len(), 1, "{feed:?}");
    assert_eq!(marked[0].retracted_by.as_ref(), Some(&retraction.id));
    assert_eq!(retraction.data["retractedEventId"], marked[0].id.as_str());
    assert_eq!(retraction.data["transaction"], format!("0x{:064x}", 2));
    assert_eq!(feed.len(), 3);
}
