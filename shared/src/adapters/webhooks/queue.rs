//! Messages to an SQS queue, ten a `SendMessageBatch` (the wallet fan-out's and the webhook
//! deliveries'), and the delivery queue over it.

use crate::application::alert_ports::{DeliveryJob, DeliveryQueue};
use async_trait::async_trait;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;

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
    pub sqs: aws_sdk_sqs::Client,
    pub url: String,
}

#[async_trait]
impl DeliveryQueue for SqsDeliveries {
    async fn enqueue(&self, jobs: &[DeliveryJob]) -> Result<(), String> {
        let bodies = jobs
            .iter()
            .map(|j| serde_json::to_string(j).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        send_all(&self.sqs, &self.url, &bodies).await.map(|_| ())
    }
}
