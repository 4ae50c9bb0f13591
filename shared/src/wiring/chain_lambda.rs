//! The entry points of the functions that read the chains. The sync function serves two kinds
//! of invocation: the EventBridge Scheduler's (any event that is not an HTTP one: sync, answer
//! the report) and API Gateway's `POST /markets/sync` (the route's handler, behind the
//! authorizer and its scope). The link function reads a wallet's positions as it links it.

use crate::adapters::chain::fanout::{enqueue, refresh_batch};
use crate::adapters::chain::orders::ChainOrders;
use crate::adapters::chain::refresh::WalletReader;
use crate::adapters::chain::rpc::RpcClient;
use crate::adapters::chain::secrets::rpc_urls;
use crate::adapters::chain::sync::{Syncer, RPC_TIMEOUT};
use crate::adapters::store::dynamodb::{lambda_client, lambda_sdk_config, DynamoDbStore};
use crate::application::app::App;
use crate::edge::routes::Endpoint;
use crate::wiring::config::Config;
use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Error, RequestExt, Response};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The input of the wallets' schedule (`{"refresh": "wallets"}`).
pub const WALLETS_SCHEDULE: &str = "wallets";

/// What a chain-reading function builds once per container: its configuration, the SDK's,
/// the app on DynamoDB (catalog cached for `catalog_ttl`, or the configured TTL) and a JSON-RPC
/// client per chain whose RPC URL parameter is configured (the URLs from SSM).
struct Container {
    config: Config,
    sdk: aws_config::SdkConfig,
    app: App,
    endpoints: BTreeMap<crate::domain::model::Chain, Arc<RpcClient>>,
}

impl Container {
    async fn start(catalog_ttl: Option<Duration>) -> Result<Container, Error> {
        let config = Config::from_env()?;
        crate::wiring::telemetry::init(&config.log_level);
        let sdk = lambda_sdk_config().await;
        let store = DynamoDbStore::new(
            lambda_client(&sdk, config.dynamodb_endpoint.as_deref()),
            config.table_name.clone(),
        );
        let app = App {
            signing: config.signing.clone(),
            ..App::on_dynamodb(
                store,
                catalog_ttl.unwrap_or(config.catalog_ttl),
                config.market_rules(),
            )
        };
        let urls = rpc_urls(&aws_sdk_ssm::Client::new(&sdk), &config.rpc_parameters).await?;
        let endpoints = urls
            .iter()
            .map(|(chain, url)| Ok((*chain, Arc::new(RpcClient::new(url, RPC_TIMEOUT)?))))
            .collect::<Result<BTreeMap<_, _>, String>>()
            .map_err(|e| format!("RPC endpoint: {e}"))?;
        tracing::debug!(chains = ?endpoints.keys().collect::<Vec<_>>(), "chain endpoints configured");
        Ok(Container {
            config,
            sdk,
            app,
            endpoints,
        })
    }

    /// The app reading wallets' positions and orders' allowances from the chains.
    fn with_wallets(self) -> App {
        let confirmations = self.config.confirmation_blocks;
        let orders = ChainOrders::new(self.endpoints.clone(), confirmations.clone());
        let reader = WalletReader::new(self.endpoints, &self.app, confirmations)
            .with_log_ranges(self.config.log_ranges);
        App {
            wallet_refresh: Some(Arc::new(reader)),
            order_chain: Some(Arc::new(orders)),
            ..self.app
        }
    }
}

/// The sync function: the container once, then invocations (the schedule's and the route's).
pub async fn run() -> Result<(), Error> {
    // The sync reads the catalog uncached: tracked ticks and stored heights must be current.
    let Container {
        config,
        sdk,
        mut app,
        endpoints,
    } = Container::start(Some(Duration::ZERO)).await?;
    app.sync = Some(Arc::new(
        Syncer::new(
            endpoints,
            app.market.clone(),
            app.store.clone(),
            app.clock.clone(),
        )
        .with_confirmations(config.confirmation_blocks),
    ));
    let queue = config
        .wallet_queue_url
        .clone()
        .map(|url| (aws_sdk_sqs::Client::new(&sdk), url));
    let (app, queue) = (&app, &queue);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        invoke(app, queue.as_ref(), event).await
    }))
    .await
}

/// The `refresh-wallets` function: the container once, then each SQS batch of wallets
/// refreshed, the failed ones reported for the queue to retry.
pub async fn refresh_wallets() -> Result<(), Error> {
    let app = &Container::start(None).await?.with_wallets();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        Ok::<_, Error>(refresh_batch(app, &event.payload).await)
    }))
    .await
}

/// An API function that reads the chains (`POST /wallets` reads the wallet's positions,
/// `POST /positions` an opening wallet's allowances): the container once, then invocations.
pub async fn serve_reading_chains(endpoint: Endpoint) -> Result<(), Error> {
    let app = &Container::start(None).await?.with_wallets();
    lambda_http::run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(endpoint.handle(app, request).await)
    }))
    .await
}

async fn invoke(
    app: &App,
    queue: Option<&(aws_sdk_sqs::Client, String)>,
    event: LambdaEvent<Value>,
) -> Result<Value, Error> {
    let (payload, context) = event.into_parts();
    if payload.get("requestContext").is_some() {
        let request: LambdaRequest = serde_json::from_value(payload)?;
        let request = lambda_http::http::Request::from(request).with_lambda_context(context);
        return Ok(api_gateway_response(
            Endpoint::SyncMarkets.handle(app, request).await,
        ));
    }
    // The wallets' schedule (its own cadence: a wallet read costs more than a pool's): every
    // linked wallet, one message each, for the refresh function.
    if payload.get("refresh").and_then(Value::as_str) == Some(WALLETS_SCHEDULE) {
        let (sqs, url) = queue.ok_or("no wallet refresh queue is configured")?;
        let wallets = app.wallets.linked().await?;
        let queued = enqueue(sqs, url, &wallets).await?;
        tracing::info!(wallets = queued, "wallet refreshes queued");
        return Ok(json!({"walletsQueued": queued}));
    }
    let sync = app.sync.as_ref().ok_or("no syncer")?;
    // A catalog that cannot be read fails the invocation: the scheduler's retry and the
    // function's Errors alarm take it from there.
    let report = sync.sync().await?;
    tracing::info!(
        updated = report.updated,
        not_updated = report.not_updated,
        "scheduled sync"
    );
    Ok(serde_json::to_value(report)?)
}

/// An API Gateway payload 2.0 response of a handler's response (text bodies: all ours are JSON).
fn api_gateway_response(response: Response<Body>) -> Value {
    let headers: serde_json::Map<String, Value> = response
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.to_string(), json!(value.to_str().ok()?))))
        .collect();
    let body = match response.body() {
        Body::Text(text) => text.clone(),
        Body::Binary(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Body::Empty => String::new(),
        _ => String::new(),
    };
    json!({
        "statusCode": response.status().as_u16(),
        "headers": headers,
        "body": body,
        "isBase64Encoded": false,
    })
}
