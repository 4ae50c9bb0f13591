//! The Lambda entry point every function binary calls with its endpoint.

use crate::adapters::store::dynamodb::{lambda_client, lambda_sdk_config, DynamoDbStore};
use crate::application::app::App;
use crate::edge::routes::Endpoint;
use crate::wiring::config::Config;
use lambda_http::{service_fn, Error, Request};
use std::convert::Infallible;

/// The app on the configured table (the catalog cached for `catalog_ttl`), its signing domain
/// and, with feature `webhooks`, its alerts' queue and key; with the SDK's configuration.
pub(crate) async fn on_table(
    config: &Config,
    catalog_ttl: std::time::Duration,
) -> (aws_config::SdkConfig, App) {
    let sdk = lambda_sdk_config().await;
    let client = lambda_client(&sdk, config.dynamodb_endpoint.as_deref());
    let store = DynamoDbStore::new(client, config.table_name.clone());
    let app = App::on_dynamodb(store, catalog_ttl, config.market_rules());
    #[cfg(feature = "webhooks")]
    let app = App {
        alerts: configured(app.alerts, config, &sdk),
        ..app
    };
    let app = App {
        signing: config.signing.clone(),
        ..app
    };
    (sdk, app)
}

/// Reads the configuration and builds logging and, for endpoints that use the table, the
/// DynamoDB client once (the init phase), then serves invocations.
pub async fn run(endpoint: Endpoint) -> Result<(), Error> {
    let config = Config::from_env()?;
    crate::wiring::telemetry::init(&config.log_level);
    let app = if endpoint.uses_table() {
        on_table(&config, config.catalog_ttl).await.1
    } else {
        // Nothing to read: no DynamoDB client to build at cold start.
        App::in_memory()
    };
    let app = &app;
    lambda_http::run(service_fn(move |request: Request| async move {
        Ok::<_, Infallible>(endpoint.handle(app, request).await)
    }))
    .await
}

/// `alerts` with the configured queue and key: deliveries queued where `WEBHOOK_QUEUE_URL`
/// is set, secrets sealed where `WEBHOOK_KEY_ID` is (refused otherwise).
#[cfg(feature = "webhooks")]
pub fn configured(
    alerts: crate::application::alert_ports::Alerts,
    config: &Config,
    sdk: &aws_config::SdkConfig,
) -> crate::application::alert_ports::Alerts {
    use crate::adapters::webhooks::clients::OnFirstUse;
    // Built at first use: most invocations neither queue nor seal (the cold start's saving).
    let queue = config.webhook_queue_url.clone().map(|url| {
        let sdk = sdk.clone();
        std::sync::Arc::new(crate::adapters::webhooks::queue::SqsDeliveries {
            sqs: OnFirstUse::new(move || aws_sdk_sqs::Client::new(&sdk)),
            url,
        }) as std::sync::Arc<dyn crate::application::alert_ports::DeliveryQueue>
    });
    let mut alerts = crate::application::alert_ports::Alerts {
        queue: queue.or(alerts.queue.clone()),
        ..alerts
    };
    if let Some(key_id) = config.webhook_key_id.clone() {
        let sdk = sdk.clone();
        alerts.sealer = std::sync::Arc::new(crate::adapters::webhooks::kms::KmsSealer::new(
            OnFirstUse::new(move || aws_sdk_kms::Client::new(&sdk)),
            key_id,
        ));
    }
    alerts
}
