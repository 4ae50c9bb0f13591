//! The Lambda entry point every function binary calls with its endpoint.

use crate::app::App;
use crate::config::Config;
use crate::routes::Endpoint;
use crate::store::dynamodb::{lambda_client, DynamoDbStore};
use lambda_http::{service_fn, Error, Request};
use std::convert::Infallible;

/// Reads the configuration and builds logging and the DynamoDB client once (the init phase),
/// then serves invocations.
pub async fn run(endpoint: Endpoint) -> Result<(), Error> {
    let config = Config::from_env()?;
    crate::telemetry::init(&config.log_level);
    let client = lambda_client(config.dynamodb_endpoint.as_deref()).await;
    let app = App::on_dynamodb(
        DynamoDbStore::new(client, config.table_name),
        config.catalog_ttl,
    );
    let app = &app;
    lambda_http::run(service_fn(move |request: Request| async move {
        Ok::<_, Infallible>(endpoint.handle(app, request).await)
    }))
    .await
}
