//! What alerts cost on DynamoDB (moto, behind a counting forwarder): the requests and write
//! units of an event, of a delivery, of a sync's pass over a pool's watches (the same with 1 and
//! 50 watched positions when nothing moved), and of a feed read. Prints the figures
//! `docs/figures/alerts.md` gives (`cargo test -p shared --test dynamodb alert_costs -- --nocapture`).

use chrono::Utc;
use shared::alerts::settings::AlertSettings;
use shared::alerts::webhooks::Webhook;
use shared::alerts::{
    emit, test_event, watch_pool, AlertStore, Alerts, DeliveryJob, Sent, SyncPass, SyncedState,
    Watched, WebhookSender,
};
use shared::store::dynamodb::local_client;
use shared::store::{DynamoDbStore, MemoryMarket};
use std::sync::Arc;
use test_support::dynamodb::{written_keys, CountingDynamoDb};
use test_support::events::RecordingQueue;

struct Answers200;

#[async_trait::async_trait]
impl WebhookSender for Answers200 {
    async fn send(&self, _: &str, _: &[(&str, String)], _: &str) -> Sent {
        Sent {
            status: Some(200),
            error: None,
            duration_ms: 1,
        }
    }
}

/// Operations and items written, as DynamoDB bills them: a transaction's items twice.
fn tally(requests: &[(String, serde_json::Value)]) -> (Vec<String>, usize) {
    let operations = requests.iter().map(|(op, _)| op.clone()).collect();
    let units = requests
        .iter()
        .map(|(op, body)| {
            let items = written_keys(op, body).len();
            if op == "TransactWriteItems" {
                2 * items
            } else {
                items
            }
        })
        .sum();
    (operations, units)
}

#[tokio::test]
async fn alert_costs() {
    let counting = CountingDynamoDb::start().await;
    let table = format!("alerts-{}", ulid::Ulid::new().to_string().to_lowercase());
    let store = DynamoDbStore::new(local_client(&counting.url), table);
    store.ensure_table().await.unwrap();
    let store = Arc::new(store);
    let alerts = Alerts {
        queue: Some(Arc::new(RecordingQueue::default())),
        sender: Some(Arc::new(Answers200)),
        ..Alerts::kept_in(store.clone())
    };
    let owner = "costs";
    let hook = Webhook {
        id: "wh_01JD8Z6C6XK4W5S7R9T2V3M1QA".into(),
        owner: owner.into(),
        url: "https://hooks.example.com/x".into(),
        event_types: Vec::new(),
        description: String::new(),
        created_at: Utc::now(),
        secret: vec![1; 32],
        previous_secret: None,
        disabled_reason: None,
        failing_since: None,
    };
    store.insert_webhook(&hook, 5).await.unwrap();
    counting.take();

    // One new event, then the same one again.
    let event = test_event(owner, "costs", Utc::now());
    emit(&alerts, vec![event.clone()]).await.unwrap();
    let (new_ops, new_units) = tally(&counting.take());
    emit(&alerts, vec![event.clone()]).await.unwrap();
    let (seen_ops, _) = tally(&counting.take());
    assert_eq!(new_ops, ["UpdateItem", "TransactWriteItems", "Query"]);
    assert_eq!(
        new_units, 5,
        "the hour's count, the event and its feed copy (a transaction)"
    );
    assert_eq!(
        seen_ops,
        ["UpdateItem", "TransactWriteItems"],
        "refused: nothing queued"
    );

    // One delivery that succeeds at once.
    let job = DeliveryJob {
        owner: owner.into(),
        webhook_id: hook.id.clone(),
        event_id: event.id.clone(),
        attempt: 1,
    };
    shared::alerts::use_cases::deliver(&alerts, &job, Utc::now())
        .await
        .unwrap();
    let (delivery_ops, delivery_units) = tally(&counting.take());
    assert_eq!(delivery_ops, ["GetItem", "GetItem", "PutItem"]);
    assert_eq!(delivery_units, 1, "the attempt's log");

    // A sync's pass over one pool: 1 and 50 watched positions of one owner, nothing moved.
    let market = MemoryMarket::embedded();
    let catalog = shared::store::Market::catalog(&market).await.unwrap();
    let pool = catalog.pools[0].clone();
    let mut passes = Vec::new();
    for n in [1usize, 50] {
        let fresh = CountingDynamoDb::start().await;
        let table = format!("alerts-{}", ulid::Ulid::new().to_string().to_lowercase());
        let store = DynamoDbStore::new(local_client(&fresh.url), table);
        store.ensure_table().await.unwrap();
        let store = Arc::new(store);
        store
            .put_settings(owner, None, &AlertSettings::default())
            .await
            .unwrap();
        for i in 0..n {
            let watch = Watched {
                owner: owner.into(),
                position: format!("P{i}"),
                chain: pool.chain,
                protocol: pool.protocol,
                pool: pool.id.clone(),
                tick_lower: pool.tick - 600,
                tick_upper: pool.tick + 600,
                watch: None,
                settings: None,
            };
            store.watch(&watch).await.unwrap();
        }
        let alerts = Alerts::kept_in(store.clone());
        let positions = shared::store::MemoryStore::new();
        let sync = |block| {
            let state = SyncedState {
                tick: pool.tick,
                block,
                sqrt_price: pool.sqrt_price,
            };
            (state, SyncPass::new(&positions, &market))
        };
        // The first state seen is written once per watch; then nothing moves.
        let (state, mut pass) = sync(10);
        watch_pool(&alerts, &pool, state, Utc::now(), &mut pass)
            .await
            .unwrap();
        fresh.take();
        let (state, mut pass) = sync(11);
        watch_pool(&alerts, &pool, state, Utc::now(), &mut pass)
            .await
            .unwrap();
        let (ops, units) = tally(&fresh.take());
        println!(
            "idle pass over a pool with {n} watched position(s): {ops:?}, {units} write units"
        );
        passes.push((ops, units));
    }
    assert_eq!(
        passes[0], passes[1],
        "the same requests for 1 and 50 watched positions"
    );
    assert_eq!(
        passes[0].0,
        ["Query", "GetItem"],
        "the watches, the owner's settings"
    );
    assert_eq!(passes[0].1, 0, "nothing written when nothing moved");

    // A feed read of 1 event.
    shared::alerts::events(
        &shared::App {
            alerts: alerts.clone(),
            ..shared::App::in_memory()
        },
        owner,
        Default::default(),
        shared::model::PageRequest {
            offset: 0,
            limit: 20,
        },
    )
    .await
    .unwrap();
    let (feed_ops, _) = tally(&counting.take());
    assert_eq!(feed_ops, ["Query"]);

    println!("a new event: {new_ops:?}, {new_units} write units; seen again: {seen_ops:?}");
    println!("a delivery: {delivery_ops:?}, {delivery_units} write unit");
    println!("a feed read: {feed_ops:?}");
}
