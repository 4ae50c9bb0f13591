//! Feature `webhooks`: what a deployed function delivers alerts with (the queue, the KMS key,
//! the sender, each where configured), and the `deliver-webhooks` function's entry point.

use crate::adapters::store::dynamodb::{lambda_client, lambda_sdk_config, DynamoDbStore};
use crate::adapters::webhooks::consume::deliver_batch;
use crate::adapters::webhooks::kms::KmsSealer;
use crate::adapters::webhooks::queue::SqsDeliveries;
use crate::adapters::webhooks::sender::HttpsSender;
use crate::application::alert_ports::Alerts;
use crate::application::app::App;
use crate::domain::webhooks::address::Reach;
use crate::wiring::config::Config;
use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
use lambda_http::Error;
use serde_json::Value;
use std::sync::Arc;

/// `alerts` with the configured queue and key: deliveries queued where `WEBHOOK_QUEUE_URL`
/// is set, secrets sealed where `WEBHOOK_KEY_ID` is (refused otherwise).
pub fn configured(alerts: Alerts, config: &Config, sdk: &aws_config::SdkConfig) -> Alerts {
    let queue = config.webhook_queue_url.clone().map(|url| {
        Arc::new(SqsDeliveries {
            sqs: aws_sdk_sqs::Client::new(sdk),
            url,
        }) as Arc<dyn crate::application::alert_ports::DeliveryQueue>
    });
    let mut alerts = Alerts {
        queue: queue.or(alerts.queue.clone()),
        ..alerts
    };
    if let Some(key_id) = config.webhook_key_id.clone() {
        alerts.sealer = Arc::new(KmsSealer::new(aws_sdk_kms::Client::new(sdk), key_id));
    }
    alerts
}

/// The `deliver-webhooks` function: the container once (the table, the key, the sender to
/// public HTTPS addresses only), then each SQS batch of deliveries.
pub async fn deliver() -> Result<(), Error> {
    let config = Config::from_env()?;
    crate::wiring::telemetry::init(&config.log_level);
    let sdk = lambda_sdk_config().await;
    let store = DynamoDbStore::new(
        lambda_client(&sdk, config.dynamodb_endpoint.as_deref()),
        config.table_name.clone(),
    );
    let app = App::on_dynamodb(store, config.catalog_ttl, config.market_rules());
    let url = config
        .webhook_queue_url
        .clone()
        .ok_or("WEBHOOK_QUEUE_URL is not set")?;
    let alerts = Alerts {
        // A retry waits on the message's visibility, not on a new message.
        queue: None,
        sender: Some(Arc::new(HttpsSender::new(Reach::PublicHttpsOnly)?)),
        ..configured(app.alerts, &config, &sdk)
    };
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let (alerts, sqs, url) = (&alerts, &sqs, url.as_str());
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        Ok::<_, Error>(deliver_batch(alerts, sqs, url, &event.payload).await)
    }))
    .await
}
