//! Every sample event in `events/` runs through its function's handler and answers the status
//! its manifest states, with a body of the documented shape.

use serde_json::Value;
use shared::App;
use std::collections::BTreeSet;
use test_support::events::{endpoint_of, event_manifest};

#[tokio::test]
async fn every_event_file_answers_its_expected_status() {
    let manifest = event_manifest();
    let mut app = App::in_memory();
    let queue = std::sync::Arc::new(test_support::events::RecordingQueue::default());
    app.alerts.queue = Some(queue.clone());
    manifest.webhooks.store_in(app.alerts.store.as_ref()).await;
    app.store.insert(&manifest.fixture).await.unwrap();
    app.store.insert(&manifest.order_fixture).await.unwrap();
    app.wallets
        .put_challenge(&manifest.wallet_challenge)
        .await
        .unwrap();

    let on_disk: BTreeSet<String> = std::fs::read_dir(&manifest.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json") && name != "expected-status.json")
        .collect();
    let listed: BTreeSet<String> = manifest
        .expected
        .iter()
        .map(|(f, _)| f.clone())
        .chain(manifest.scheduled.iter().cloned())
        .chain(manifest.queue.iter().map(|(f, _)| f.clone()))
        .collect();
    assert_eq!(
        on_disk, listed,
        "every event file has an expected status, and only those"
    );

    for (file, status) in &manifest.expected {
        let text = std::fs::read_to_string(manifest.dir.join(file)).unwrap();
        let event: Value = serde_json::from_str(&text).unwrap();
        let endpoint = endpoint_of(file);
        assert_eq!(event["routeKey"], endpoint.route_key(), "{file}");
        assert_eq!(
            event["requestContext"]["routeKey"],
            endpoint.route_key(),
            "{file}"
        );
        assert_eq!(event["version"], "2.0");
        if let Some(claims) = event["requestContext"]["authorizer"]["jwt"]["claims"].as_object() {
            assert!(
                claims.values().all(Value::is_string),
                "{file}: API Gateway sends every claim as a string"
            );
        }
        let request = lambda_http::request::from_str(&text).unwrap();
        let response = endpoint.handle(&app, request).await;
        assert_eq!(
            response.status().as_u16(),
            *status,
            "{file}: {:?}",
            response.body()
        );
        if *status == 204 {
            assert!(response.body().is_empty(), "{file}: no content");
            continue;
        }
        if *status == 200 && endpoint == shared::Endpoint::ExportHistory {
            assert_eq!(
                response.headers()["content-type"],
                "text/csv; charset=utf-8"
            );
            continue;
        }
        assert_eq!(response.headers()["content-type"], "application/json");
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        if *status >= 400 {
            assert_eq!(body["statusCode"], *status, "{file}");
            assert!(body["message"].is_string(), "{file}");
        }
    }
}

/// The queue's batches (`refresh-wallets`) through the same code as its function: each answer
/// reports exactly the messages expected to fail.
#[tokio::test]
async fn every_queue_event_reports_its_failures() {
    let manifest = event_manifest();
    let app = App::in_memory();
    assert!(!manifest.queue.is_empty());
    let sqs = test_support::events::unreachable_sqs();
    for (file, failures) in &manifest.queue {
        let text = std::fs::read_to_string(manifest.dir.join(file)).unwrap();
        let event: Value = serde_json::from_str(&text).unwrap();
        assert!(event["Records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["eventSource"] == "aws:sqs"));
        let answer = match endpoint_of_queue(file) {
            "refresh-wallets" => shared::chain::fanout::refresh_batch(&app, &event).await,
            "deliver-webhooks" => {
                let deliver = shared::alerts::delivery::consume::deliver_batch;
                deliver(&app.alerts, &sqs, "https://sqs.invalid/q", &event).await
            }
            other => panic!("{file}: no queue function {other}"),
        };
        let reported = answer["batchItemFailures"].as_array().unwrap();
        assert_eq!(reported.len(), *failures, "{file}: {answer}");
    }
}

/// The queue function a queue event's file name starts with.
fn endpoint_of_queue(file: &str) -> &'static str {
    ["refresh-wallets", "deliver-webhooks"]
        .into_iter()
        .find(|f| file.starts_with(&format!("{f}-")))
        .unwrap_or("")
}
