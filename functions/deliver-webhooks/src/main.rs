//! `deliver-webhooks`: each SQS batch of alert deliveries (decision 61): every event signed
//! (Standard Webhooks) and sent to its endpoint over HTTPS to public addresses only, retried on
//! the schedule through the message's visibility.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::alerts::lambda::deliver().await
}
