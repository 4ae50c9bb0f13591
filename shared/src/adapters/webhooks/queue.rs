//! Messages to an SQS queue, ten a `SendMessageBatch` (the wallet fan-out's and the webhook
//! deliveries'), and the delivery queue over it.

use super::clients::OnFirstUse;
use crate::application::alert_ports::{DeliveryJob, DeliveryQueue};
use async_trait::async_trait;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use serde_json::{json, Value};
use std::future::Future;

/// Most entries SQS takes in one `SendMessageBatch`.
const SEND_BATCH: usize = 10;

/// Sends each body as one message, ten a request; how many were sent. An entry the queue
/// refuses fails the whole send (its caller's retry sends them again).
pub async fn send_all(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    bodies: &[String],
) -> Result<usize, String> {
    let mut sent = 0;
    for chunk in bodies.chunks(SEND_BATCH) {
        let entries = chunk
            .iter()
            .enumerate()
            .map(|(i, body)| {
                SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(body)
                    .build()
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<_>, String>>()?;
        let output = sqs
            .send_message_batch()
            .queue_url(queue_url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|e| {
                format!(
                    "SendMessageBatch: {}",
                    aws_sdk_sqs::error::DisplayErrorContext(&e)
                )
            })?;
        if !output.failed().is_empty() {
            return Err(format!(
                "SendMessageBatch refused {} of {} messages",
                output.failed().len(),
                chunk.len()
            ));
        }
        sent += output.successful().len();
    }
    Ok(sent)
}

/// The deliveries' SQS queue: one message per (event, endpoint).
pub struct SqsDeliveries {
    pub sqs: OnFirstUse<aws_sdk_sqs::Client>,
    pub url: String,
}

#[async_trait]
impl DeliveryQueue for SqsDeliveries {
    async fn enqueue(&self, jobs: &[DeliveryJob]) -> Result<(), String> {
        let bodies = jobs
            .iter()
            .map(|j| serde_json::to_string(j).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        send_all(self.sqs.get(), &self.url, &bodies)
            .await
            .map(|_| ())
    }
}

/// The partial batch answer of an SQS event (`ReportBatchItemFailures`): each record handled
/// side by side by `handle`, which names the message when it failed (the queue hands it back).
pub async fn answer_batch<'a, F, Fut>(event: &'a Value, handle: F) -> Value
where
    F: Fn(&'a Value) -> Fut,
    Fut: Future<Output = Option<String>>,
{
    let records = event
        .get("Records")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let failures: Vec<Value> = futures_util::future::join_all(records.iter().map(handle))
        .await
        .into_iter()
        .flatten()
        .map(|id| json!({"itemIdentifier": id}))
        .collect();
    json!({"batchItemFailures": failures})
}
