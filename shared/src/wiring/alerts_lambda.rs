//! Feature `webhooks`: what a deployed function delivers alerts with (the queue, the KMS key,
//! the sender, each where configured), and the `deliver-webhooks` function's entry point.

use crate::adapters::webhooks::consume::deliver_batch;
use crate::adapters::webhooks::sender::HttpsSender;
use crate::application::alert_ports::Alerts;
use crate::domain::webhooks::address::Reach;
use crate::wiring::config::Config;
use crate::wiring::lambda::on_table;
use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
use lambda_http::Error;
use serde_json::Value;
use std::sync::Arc;

/// The `deliver-webhooks` function: the container once (the table, the key, the sender to
/// public HTTPS addresses only), then each SQS batch of deliveries.
pub async fn deliver() -> Result<(), Error> {
    let config = Config::from_env()?;
    crate::wiring::telemetry::init(&config.log_level);
    let (sdk, app) = on_table(&config, config.catalog_ttl).await;
    let url = config
        .webhook_queue_url
        .clone()
        .ok_or("WEBHOOK_QUEUE_URL is not set")?;
    let alerts = Alerts {
        // A retry waits on the message's visibility, not on a new message.
        queue: None,
        sender: Some(Arc::new(HttpsSender::new(Reach::PublicHttpsOnly)?)),
        ..app.alerts
    };
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let (alerts, sqs, url) = (&alerts, &sqs, url.as_str());
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        Ok::<_, Error>(deliver_batch(alerts, sqs, url, &event.payload).await)
    }))
    .await
}
