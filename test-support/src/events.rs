//! The sample events in `events/` and their manifest.

use crate::fixtures::position;
use serde_json::Value;
use shared::alerts::webhooks::{Delivery, Webhook};
use shared::alerts::{AlertEvent, AlertStore};
use shared::model::{Chain, ChainOrder, OrderKind, Position, Status};
use shared::wallets::challenge::Challenge;
use shared::Endpoint;

/// The manifest of `events/`: expected status per file and the fixture position some read.
pub struct EventManifest {
    pub dir: std::path::PathBuf,
    pub expected: Vec<(String, u16)>,
    /// Events that are not HTTP requests (the schedules'), answered with a sync report or the
    /// wallets queued.
    pub scheduled: Vec<String>,
    /// The queue's events (`refresh-wallets`: SQS batches) and how many of each batch's
    /// messages its answer reports failed.
    pub queue: Vec<(String, usize)>,
    pub fixture: Position,
    /// A pending position opened from a linked wallet, waiting for its mint.
    pub order_fixture: Position,
    /// The challenge `link-wallet-success` answers (stored before the events run).
    pub wallet_challenge: Challenge,
    /// The webhook endpoints, the event and the attempt the webhook events read.
    pub webhooks: WebhookFixtures,
}

/// Two endpoints of the fixture's owner (the second is deleted by an event), a `webhook.test`
/// event and one attempt of it at the first.
pub struct WebhookFixtures {
    pub endpoints: [Webhook; 2],
    pub event: AlertEvent,
    pub delivery: Delivery,
}

impl WebhookFixtures {
    /// Stores them in `store` (before the events run).
    pub async fn store_in(&self, store: &dyn AlertStore) {
        for endpoint in &self.endpoints {
            store.insert_webhook(endpoint, 5).await.unwrap();
        }
        let expires = self.event.created_at + chrono::Duration::days(30);
        store
            .record_event(&self.event, expires, u64::MAX)
            .await
            .unwrap();
        store
            .record_delivery(&self.delivery, expires)
            .await
            .unwrap();
    }
}

pub fn event_manifest() -> EventManifest {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../events");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected-status.json")).unwrap())
            .unwrap();
    let expected = manifest["expected"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(file, status)| (file.clone(), status.as_u64().unwrap() as u16))
        .collect();
    let scheduled = manifest["scheduled"]
        .as_object()
        .map(|files| files.keys().cloned().collect())
        .unwrap_or_default();
    let queue = manifest["queue"]
        .as_object()
        .map(|files| {
            files
                .iter()
                .map(|(file, e)| (file.clone(), e["failures"].as_u64().unwrap() as usize))
                .collect()
        })
        .unwrap_or_default();
    let fixture = &manifest["fixture"];
    let mut position = position(
        fixture["owner"].as_str().unwrap(),
        Status::Active,
        Chain::Ethereum,
        1_790_000_000_000,
    );
    position.id = fixture["id"].as_str().unwrap().to_string();
    let order = &manifest["orderFixture"];
    let mut order_fixture = crate::fixtures::position(
        order["owner"].as_str().unwrap(),
        Status::Pending,
        Chain::Ethereum,
        1_790_000_000_000,
    );
    order_fixture.id = order["id"].as_str().unwrap().to_string();
    order_fixture.liquidity = 1_000_000;
    let at = |millis| chrono::DateTime::from_timestamp_millis(millis).unwrap();
    order_fixture.order = Some(Box::new(ChainOrder {
        kind: OrderKind::Open,
        wallet: order["wallet"].as_str().unwrap().to_string(),
        manager: "0xC36442b4a4522E871399CD717aBDD847Ab11FE88".into(),
        requested_at: at(1_790_000_000_000),
        expires_at: at(1_990_000_000_000),
        height: 1,
        slippage_bps: 50,
        transactions: Vec::new(),
        hash: None,
        moved: None,
        permit: None,
    }));
    let challenge = &manifest["walletChallenge"];
    let text = |name: &str| challenge[name].as_str().unwrap().to_string();
    let wallet_challenge = Challenge {
        owner: text("owner"),
        chain: text("chain").parse().unwrap(),
        address: text("address"),
        nonce: text("nonce"),
        message: text("message"),
        expires_at: chrono::DateTime::parse_from_rfc3339(&text("expiresAt"))
            .unwrap()
            .with_timezone(&chrono::Utc),
        used: false,
    };
    let hooks = &manifest["webhookFixtures"];
    let owner = hooks["owner"].as_str().unwrap().to_string();
    let created = at(1_790_000_000_000);
    let endpoint = |id: &str| Webhook {
        id: id.to_string(),
        owner: owner.clone(),
        url: "https://hooks.example.com/positions".into(),
        event_types: Vec::new(),
        description: "the fixture's endpoint".into(),
        created_at: created,
        secret: vec![7; 32],
        previous_secret: None,
        disabled_reason: None,
        failing_since: None,
    };
    let kept = endpoint(hooks["kept"].as_str().unwrap());
    let event = shared::alerts::test_event(&owner, "fixture", created);
    let delivery = Delivery {
        id: hooks["delivery"].as_str().unwrap().to_string(),
        owner: owner.clone(),
        webhook_id: kept.id.clone(),
        event_id: event.id.clone(),
        event_type: event.event_type,
        attempt: 1,
        at: created,
        status_code: Some(503),
        error: None,
        duration_ms: 120,
        delivered: false,
    };
    let webhooks = WebhookFixtures {
        endpoints: [kept, endpoint(hooks["deleted"].as_str().unwrap())],
        event,
        delivery,
    };
    EventManifest {
        webhooks,
        dir,
        expected,
        scheduled,
        queue,
        fixture: position,
        order_fixture,
        wallet_challenge,
    }
}

/// The endpoint whose function name starts the event file's name.
pub fn endpoint_of(file: &str) -> Endpoint {
    *Endpoint::ALL
        .iter()
        .find(|e| file.starts_with(&format!("{}-", e.function_name())))
        .unwrap_or_else(|| panic!("{file} does not start with a function name"))
}

/// A delivery queue that keeps what it is given: the tests read the jobs queued.
#[derive(Default)]
pub struct RecordingQueue {
    pub jobs: std::sync::Mutex<Vec<shared::alerts::DeliveryJob>>,
}

#[async_trait::async_trait]
impl shared::alerts::DeliveryQueue for RecordingQueue {
    async fn enqueue(&self, jobs: &[shared::alerts::DeliveryJob]) -> Result<(), String> {
        self.jobs.lock().unwrap().extend_from_slice(jobs);
        Ok(())
    }
}

/// A queue that refuses while `refusing` is set, else records what it is given.
#[derive(Default)]
pub struct RefusingQueue {
    pub refusing: std::sync::atomic::AtomicBool,
    pub queued: RecordingQueue,
}

#[async_trait::async_trait]
impl shared::alerts::DeliveryQueue for RefusingQueue {
    async fn enqueue(&self, jobs: &[shared::alerts::DeliveryJob]) -> Result<(), String> {
        if self.refusing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err("the queue refused the batch".into());
        }
        self.queued.enqueue(jobs).await
    }
}

/// An SQS client with nowhere to send: for batches whose handling makes no queue call.
pub fn unreachable_sqs() -> aws_sdk_sqs::Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .endpoint_url("http://127.0.0.1:9")
        .build();
    aws_sdk_sqs::Client::from_conf(config)
}
