//! The Lambda entry point every function binary calls with its endpoint.

use crate::adapters::store::dynamodb::{lambda_client, lambda_sdk_config, DynamoDbStore};
use crate::application::app::App;
use crate::edge::routes::Endpoint;
use crate::wiring::config::Config;
use lambda_http::{service_fn, Error, Request};
use std::convert::Infallible;

/// Reads the configuration and builds logging and, for endpoints that use the table, the
/// DynamoDB client once (the init phase), then serves invocations.
pub async fn run(endpoint: Endpoint) -> Result<(), Error> {
    let config = Config::from_env()?;
    crate::wiring::telemetry::init(&config.log_level);
    let app = if endpoint.uses_table() {
        let sdk = lambda_sdk_config().await;
        let client = lambda_client(&sdk, config.dynamodb_endpoint.as_deref());
        let rules = config.market_rules();
        let app = App::on_dynamodb(
            DynamoDbStore::new(client, config.table_name.clone()),
            config.catalog_ttl,
            rules,
        );
        #[cfg(feature = "webhooks")]
        let app = App {
            alerts: crate::wiring::alerts_lambda::configured(app.alerts, &config, &sdk),
            ..app
        };
        App {
            signing: config.signing,
            ..app
        }
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
