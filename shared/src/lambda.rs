//! The Lambda entry point every function binary calls with its endpoint.

use crate::app::App;
use crate::http::Endpoint;
use crate::store::DynamoDbStore;
use lambda_http::{service_fn, Error, Request};
use std::convert::Infallible;

/// Initialises logging and the DynamoDB client once (the init phase), then serves invocations.
pub async fn run(endpoint: Endpoint) -> Result<(), Error> {
    crate::telemetry::init();
    let app = App::on_dynamodb(DynamoDbStore::from_env().await?);
    let app = &app;
    lambda_http::run(service_fn(move |request: Request| async move {
        Ok::<_, Infallible>(endpoint.handle(app, request).await)
    }))
    .await
}
