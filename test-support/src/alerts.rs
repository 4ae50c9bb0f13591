//! The contract every alert store keeps (memory and DynamoDB): an event recorded once by its
//! id, the feed newest first with its filters and exact totals, the hourly allowance, the
//! settings, the watches per pool, at most five endpoints, an endpoint changed only over what
//! is stored, and the attempts' log; an event taken back once, in the feed too.

use chrono::{Duration, TimeZone, Utc};
use serde_json::json;
use shared::alerts::settings::AlertSettings;
use shared::alerts::webhooks::{Delivery, Webhook};
use shared::alerts::{
    AlertEvent, AlertStore, DeliveryJob, EventFilter, EventType, Recorded, Watched, UNCOUNTED,
};
use shared::model::{Chain, PageRequest, Protocol};

fn event(owner: &str, id: &str, position: &str, event_type: EventType, minute: i64) -> AlertEvent {
    AlertEvent {
        id: id.to_string(),
        owner: owner.to_string(),
        event_type,
        created_at: Utc.timestamp_opt(1_795_000_000 + minute * 60, 0).unwrap(),
        position_id: Some(position.to_string()),
        chain: Some(Chain::Ethereum),
        block: Some(100 + minute as u64),
        sequence: 100 + minute as u64,
        data: json!({"tick": minute}),
        not_delivered: None,
        retracted_by: None,
    }
}

fn endpoint(owner: &str, n: usize) -> Webhook {
    Webhook {
        id: format!("wh_01JD8Z6C6XK4W5S7R9T2V3M1Q{}", (b'A' + n as u8) as char),
        owner: owner.to_string(),
        url: format!("https://hooks{n}.example.com/x"),
        event_types: vec![EventType::RangeExited],
        description: String::new(),
        created_at: Utc.timestamp_opt(1_795_000_000, 0).unwrap(),
        secret: vec![n as u8; 32],
        previous_secret: None,
        disabled_reason: None,
        failing_since: None,
    }
}

pub async fn alert_store_keeps_its_contract(store: &dyn AlertStore) {
    let owner = crate::fixtures::unique_owner("alerts");
    let other = crate::fixtures::unique_owner("alerts");
    let expires = Utc::now() + Duration::days(30);
    let page = PageRequest {
        offset: 0,
        limit: 100,
    };

    // Once by id; the feed newest first, filtered, counted; another owner's apart.
    let a = event(&owner, "evt_a", "P1", EventType::RangeExited, 1);
    let b = event(&owner, "evt_b", "P2", EventType::RangeEntered, 2);
    let c = event(&owner, "evt_c", "P1", EventType::RangeEntered, 3);
    for e in [&a, &b, &c] {
        assert_eq!(
            store.record_event(e, expires, 600).await.unwrap(),
            Recorded::New
        );
    }
    assert_eq!(
        store.record_event(&a, expires, 600).await.unwrap(),
        Recorded::Seen
    );
    let (all, total) = store
        .events(&owner, &EventFilter::default(), page)
        .await
        .unwrap();
    let ids: Vec<&str> = all.iter().map(|e| e.id.as_str()).collect();
    assert_eq!((ids, total), (vec!["evt_c", "evt_b", "evt_a"], 3));
    assert_eq!(all[2], a, "as recorded");
    let p1 = EventFilter {
        position: Some("P1".into()),
        event_type: None,
    };
    assert_eq!(store.events(&owner, &p1, page).await.unwrap().1, 2);
    let entered_p1 = EventFilter {
        event_type: Some(EventType::RangeEntered),
        ..p1
    };
    let (only, total) = store.events(&owner, &entered_p1, page).await.unwrap();
    assert_eq!((only[0].id.as_str(), total), ("evt_c", 1));
    let second = PageRequest {
        offset: 1,
        limit: 1,
    };
    let (paged, total) = store
        .events(&owner, &EventFilter::default(), second)
        .await
        .unwrap();
    assert_eq!((paged[0].id.as_str(), total), ("evt_b", 3));
    assert_eq!(store.event(&owner, "evt_b").await.unwrap(), Some(b));
    assert_eq!(store.event(&other, "evt_b").await.unwrap(), None);
    assert_eq!(
        store
            .events(&other, &EventFilter::default(), page)
            .await
            .unwrap()
            .1,
        0
    );

    // Past the hour's allowance: kept, said so, not to deliver.
    let over = event(&owner, "evt_d", "P1", EventType::RangeExited, 4);
    assert_eq!(
        store.record_event(&over, expires, 3).await.unwrap(),
        Recorded::OverAllowance
    );
    let kept = store.event(&owner, "evt_d").await.unwrap().unwrap();
    assert!(kept.not_delivered.unwrap().contains("3 events an hour"));

    // Taken back once, in the feed too, by the retraction named; another owner's, or one
    // unknown, not at all.
    let was = store.retract_event(&owner, "evt_b", "evt_r").await.unwrap();
    assert_eq!(was.as_ref().map(|e| e.retracted_by.clone()), Some(None));
    assert_eq!(was.map(|e| e.id), Some("evt_b".to_string()));
    let marked = store.event(&owner, "evt_b").await.unwrap().unwrap();
    assert_eq!(marked.retracted_by.as_deref(), Some("evt_r"));
    let listed = store.events(&owner, &EventFilter::default(), page).await;
    let listed = listed.unwrap().0;
    let in_feed = listed.iter().find(|e| e.id == "evt_b").unwrap();
    assert_eq!(in_feed.retracted_by.as_deref(), Some("evt_r"));
    assert_eq!(
        listed.iter().filter(|e| e.retracted_by.is_some()).count(),
        1
    );
    let again = store.retract_event(&owner, "evt_b", "evt_s").await.unwrap();
    assert_eq!(again, None);
    assert_eq!(
        store.retract_event(&other, "evt_a", "evt_r").await.unwrap(),
        None
    );
    assert_eq!(
        store.retract_event(&owner, "evt_z", "evt_r").await.unwrap(),
        None
    );
    assert_eq!(store.event(&owner, "evt_a").await.unwrap(), Some(a.clone()));

    // A webhook test is outside the hourly allowance (never counted, never over it); tests are
    // counted apart, per endpoint and minute.
    let tester = format!("{owner}-tests");
    for i in 0..3 {
        let test = event(
            &tester,
            &format!("evt_t{i}"),
            "P1",
            EventType::WebhookTest,
            i,
        );
        let recorded = store.record_event(&test, expires, UNCOUNTED).await.unwrap();
        assert_eq!(recorded, Recorded::New);
    }
    let counted = event(&tester, "evt_u", "P1", EventType::RangeExited, 5);
    assert_eq!(
        store.record_event(&counted, expires, 1).await.unwrap(),
        Recorded::New,
        "the tests took none of the allowance"
    );
    for n in 1..=3 {
        assert_eq!(store.count_test(&tester, "wh_1", 7).await.unwrap(), n);
    }
    assert_eq!(store.count_test(&tester, "wh_2", 7).await.unwrap(), 1);
    assert_eq!(store.count_test(&tester, "wh_1", 8).await.unwrap(), 1);
    assert_eq!(store.count_test(&other, "wh_1", 7).await.unwrap(), 1);

    // The outbox: deliveries the queue refused, kept once each until queued.
    let job = |event: &str| DeliveryJob {
        owner: owner.clone(),
        webhook_id: "wh_1".into(),
        event_id: event.into(),
        attempt: 1,
    };
    assert!(store.unqueued(10).await.unwrap().is_empty());
    let kept = [job("evt_a"), job("evt_b")];
    store.keep_unqueued(&kept).await.unwrap();
    store.keep_unqueued(&kept[..1]).await.unwrap();
    let mut waiting = store.unqueued(10).await.unwrap();
    waiting.sort_by(|a, b| a.event_id.cmp(&b.event_id));
    assert_eq!(waiting, kept);
    assert_eq!(store.unqueued(1).await.unwrap().len(), 1);
    store.queued(&kept[..1]).await.unwrap();
    assert_eq!(store.unqueued(10).await.unwrap(), [job("evt_b")]);
    store.queued(&kept[1..]).await.unwrap();
    assert!(store.unqueued(10).await.unwrap().is_empty());

    // Settings: the user's and a position's own, apart.
    assert_eq!(store.settings(&owner, None).await.unwrap(), None);
    let mine = AlertSettings {
        cooldown_minutes: 5,
        ..AlertSettings::default()
    };
    store.put_settings(&owner, None, &mine).await.unwrap();
    store
        .put_settings(&owner, Some("P1"), &AlertSettings::default())
        .await
        .unwrap();
    assert_eq!(store.settings(&owner, None).await.unwrap(), Some(mine));
    assert_eq!(
        store.settings(&owner, Some("P1")).await.unwrap(),
        Some(AlertSettings::default())
    );
    assert_eq!(store.settings(&other, None).await.unwrap(), None);

    // Watches: by pool, replaced in place, gone when unwatched.
    let pool = format!("0x{}", &owner[owner.len() - 8..]);
    let watched = Watched {
        owner: owner.clone(),
        position: "P1".into(),
        chain: Chain::Base,
        protocol: Protocol::UniswapV3,
        pool: pool.clone(),
        tick_lower: -60,
        tick_upper: 60,
        watch: None,
        settings: None,
    };
    store.watch(&watched).await.unwrap();
    store
        .watch(&Watched {
            position: "P2".into(),
            ..watched.clone()
        })
        .await
        .unwrap();
    let moved = Watched {
        tick_upper: 120,
        ..watched.clone()
    };
    store.save_watch(&moved).await.unwrap();
    let on_pool = store
        .watched(Chain::Base, Protocol::UniswapV3, &pool)
        .await
        .unwrap();
    assert_eq!(on_pool.len(), 2);
    assert!(on_pool.contains(&moved));
    store.unwatch(&moved).await.unwrap();
    let on_pool = store
        .watched(Chain::Base, Protocol::UniswapV3, &pool)
        .await
        .unwrap();
    assert_eq!(
        on_pool
            .iter()
            .map(|w| w.position.as_str())
            .collect::<Vec<_>>(),
        ["P2"]
    );

    // Endpoints: at most five; changed only over what is stored; removed once.
    for n in 0..5 {
        store.insert_webhook(&endpoint(&owner, n), 5).await.unwrap();
    }
    assert!(store.insert_webhook(&endpoint(&owner, 5), 5).await.is_err());
    assert_eq!(store.webhooks(&owner).await.unwrap().len(), 5);
    assert!(store.webhooks(&other).await.unwrap().is_empty());
    let first = endpoint(&owner, 0);
    let changed = Webhook {
        description: "changed".into(),
        ..first.clone()
    };
    store.update_webhook(&changed, &first).await.unwrap();
    let stale = Webhook {
        description: "lost".into(),
        ..first.clone()
    };
    assert!(
        store.update_webhook(&stale, &first).await.is_err(),
        "over a stale read"
    );
    assert_eq!(
        store.webhook(&owner, &first.id).await.unwrap(),
        Some(changed)
    );
    assert_eq!(store.webhook(&other, &first.id).await.unwrap(), None);
    assert!(store.delete_webhook(&owner, &first.id).await.unwrap());
    assert!(!store.delete_webhook(&owner, &first.id).await.unwrap());
    store.insert_webhook(&endpoint(&owner, 5), 5).await.unwrap();

    // Attempts: newest first, each by id.
    let hook = endpoint(&owner, 1);
    for n in 0..3u32 {
        let attempt = Delivery {
            id: format!("dlv_01JD8Z6C6XK4W5S7R9T2V3M1Q{n}"),
            owner: owner.clone(),
            webhook_id: hook.id.clone(),
            event_id: "evt_a".into(),
            event_type: EventType::RangeExited,
            attempt: n + 1,
            at: Utc.timestamp_opt(1_795_000_000 + i64::from(n), 0).unwrap(),
            status_code: Some(500),
            error: None,
            duration_ms: 3,
            delivered: false,
        };
        store.record_delivery(&attempt, expires).await.unwrap();
    }
    let (log, total) = store.deliveries(&owner, &hook.id, page).await.unwrap();
    let attempts: Vec<u32> = log.iter().map(|d| d.attempt).collect();
    assert_eq!((attempts, total), (vec![3, 2, 1], 3));
    let one = store
        .delivery(&owner, &hook.id, "dlv_01JD8Z6C6XK4W5S7R9T2V3M1Q1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(one.attempt, 2);
    assert_eq!(one.owner, owner);
    assert!(store
        .delivery(&other, &hook.id, &one.id)
        .await
        .unwrap()
        .is_none());
}
