//! The `deliver-webhooks` function's batches: each SQS record one delivery, its attempt the
//! message's receive count. A delivery to try again is reported failed after its message's
//! visibility is set to the schedule's wait (so the queue redelivers it then); after the last
//! attempt the message is done with; a record that is no delivery is reported failed every
//! time, so the redrive policy's dead-letter queue takes it.

use super::queue::answer_batch;
use crate::application::alert_ports::Alerts;
use crate::application::alert_ports::DeliveryJob;
use crate::application::webhooks::deliver;
use serde_json::Value;

/// SQS holds a message invisible at most 12 hours.
const MAX_VISIBILITY_SECONDS: u64 = 43_200;

pub async fn deliver_batch(
    alerts: &Alerts,
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    event: &Value,
) -> Value {
    answer_batch(event, |record| async move {
        let id = record.get("messageId").and_then(Value::as_str).unwrap_or_default();
        let job = record
            .get("body")
            .and_then(Value::as_str)
            .and_then(|body| serde_json::from_str::<DeliveryJob>(body).ok());
        let Some(mut job) = job else {
            // Reported: after the redrive policy's receives it rests in the dead letters,
            // whose alarm says so.
            tracing::error!(message = id, "not a webhook delivery message");
            return Some(id.to_string());
        };
        let received = record
            .pointer("/attributes/ApproximateReceiveCount")
            .and_then(Value::as_str)
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(1);
        job.attempt = job.attempt.max(received);
        match deliver(alerts, &job, chrono::Utc::now()).await {
            Ok(None) => None,
            Ok(Some(wait)) => {
                let seconds = wait.as_secs().clamp(1, MAX_VISIBILITY_SECONDS) as i32;
                let handle = record
                    .get("receiptHandle")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let delayed = sqs
                    .change_message_visibility()
                    .queue_url(queue_url)
                    .receipt_handle(handle)
                    .visibility_timeout(seconds)
                    .send()
                    .await;
                if let Err(e) = delayed {
                    tracing::warn!(message = id, cause = %aws_sdk_sqs::error::DisplayErrorContext(&e),
                        "retry at the queue's own visibility instead");
                }
                Some(id.to_string())
            }
            Err(e) => {
                tracing::warn!(message = id, cause = %e, "delivery deferred: the store failed");
                Some(id.to_string())
            }
        }
    })
    .await
}
