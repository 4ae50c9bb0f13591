//! Webhook delivery on real parts (moto's DynamoDB, SQS and KMS; a receiver on loopback): a
//! secret sealed by the KMS key (never stored in the clear) signs what the receiver checks; a
//! failed delivery's message is reported and made visible again after the schedule's wait, and
//! its next receive (attempt 2) delivers.

use serde_json::{json, Value};
use shared::alerts::delivery::clients::OnFirstUse;
use shared::alerts::delivery::consume::deliver_batch;
use shared::alerts::delivery::kms::KmsSealer;
use shared::alerts::delivery::queue::SqsDeliveries;
use shared::alerts::delivery::sender::HttpsSender;
use shared::alerts::use_cases::{self as webhooks, EndpointInput};
use shared::alerts::webhooks::address::Reach;
use shared::alerts::Alerts;
use shared::App;
use std::sync::Arc;
use std::time::Duration;
use test_support::dynamodb::{dynamodb_store, kms_key, sqs_queue};
use test_support::webhooks::{Answer, Receiver};

/// The queue's messages now, as the Lambda SQS integration hands them over (a record each).
async fn receive(sqs: &aws_sdk_sqs::Client, url: &str) -> Value {
    let got = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    let records: Vec<Value> = got
        .messages()
        .iter()
        .map(|m| {
            let count = m
                .attributes()
                .and_then(|a| {
                    a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount)
                })
                .cloned()
                .unwrap_or_else(|| "1".into());
            json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": {"ApproximateReceiveCount": count},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    json!({ "Records": records })
}

#[tokio::test]
async fn a_failed_delivery_waits_on_its_message_and_kms_sealed_secrets_sign() {
    let store = Arc::new(dynamodb_store().await);
    let (sqs, url) = sqs_queue("deliveries").await;
    let (kms, key_id) = kms_key().await;
    let receiver = Receiver::start(vec![Answer::Status(500)]).await;
    let reach = Reach::AlsoLoopbackHttp;
    let alerts = Alerts {
        store: store.clone(),
        queue: Some(Arc::new(SqsDeliveries {
            sqs: OnFirstUse::built(sqs.clone()),
            url: url.clone(),
        })),
        sealer: Arc::new(KmsSealer::new(OnFirstUse::built(kms), key_id)),
        sender: Some(Arc::new(HttpsSender::new(reach).unwrap())),
        reach,
        // 5 s × 0.2: the second attempt a second later.
        retry_scale: 0.2,
    };
    let app = App {
        alerts: alerts.clone(),
        ..App::in_memory()
    };
    let owner = test_support::fixtures::unique_owner("webhooks");
    let input = EndpointInput {
        url: Some(receiver.url.clone()),
        ..EndpointInput::default()
    };
    let made = webhooks::create(&app, &owner, input).await.unwrap();
    let secret = made.secret.clone().unwrap();
    let stored = store_secret(&alerts, &owner, &made.id).await;
    assert!(!stored.is_empty());
    assert!(
        !secret.contains(&base64_of(&stored)),
        "sealed, never in the clear"
    );

    let event = webhooks::test(&app, &owner, &made.id).await.unwrap();
    let batch = receive(&sqs, &url).await;
    assert_eq!(batch["Records"].as_array().unwrap().len(), 1, "{batch}");
    // The function's alerts: no queue of its own (a retry waits on its message).
    let consuming = Alerts {
        queue: None,
        ..alerts.clone()
    };
    let answer = deliver_batch(&consuming, &sqs, &url, &batch).await;
    assert_eq!(
        answer["batchItemFailures"].as_array().unwrap().len(),
        1,
        "{answer}"
    );
    let got = receiver.wait_for(1).await;
    assert_eq!(got[0].id(), event.id);
    assert!(got[0].signed_by(&secret));
    // Invisible for the schedule's wait, then received again: its second attempt delivers.
    assert!(receive(&sqs, &url).await["Records"]
        .as_array()
        .unwrap()
        .is_empty());
    let mut again = json!({"Records": []});
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        again = receive(&sqs, &url).await;
        if !again["Records"].as_array().unwrap().is_empty() {
            break;
        }
    }
    let record = &again["Records"][0];
    assert_eq!(
        record["attributes"]["ApproximateReceiveCount"], "2",
        "{again}"
    );
    let answer = deliver_batch(&consuming, &sqs, &url, &again).await;
    assert!(
        answer["batchItemFailures"].as_array().unwrap().is_empty(),
        "{answer}"
    );
    let got = receiver.wait_for(2).await;
    assert_eq!(got[1].id(), event.id);
    let log = webhooks::deliveries(
        &app,
        &owner,
        &made.id,
        shared::model::PageRequest {
            offset: 0,
            limit: 10,
        },
    )
    .await
    .unwrap();
    let statuses: Vec<Option<u16>> = log.data.iter().rev().map(|d| d.status_code).collect();
    assert_eq!(statuses, [Some(500), Some(200)]);
    let attempts: Vec<u32> = log.data.iter().rev().map(|d| d.attempt).collect();
    assert_eq!(attempts, [1, 2]);
}

async fn store_secret(alerts: &Alerts, owner: &str, id: &str) -> Vec<u8> {
    alerts
        .store
        .webhook(owner, id)
        .await
        .unwrap()
        .unwrap()
        .secret
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
