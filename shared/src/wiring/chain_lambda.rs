//! The entry points of the functions that read the chains. The sync function serves two kinds
//! of invocation: the EventBridge Scheduler's (any event that is not an HTTP one: sync, answer
//! the report) and API Gateway's `POST /markets/sync` (the route's handler, behind the
//! authorizer and its scope). The link function reads a wallet's positions as it links it.

use crate::adapters::chain::fanout::{due, enqueue, refresh_batch};
use crate::adapters::chain::orders::ChainOrders;
use crate::adapters::chain::refresh::WalletReader;
use crate::adapters::chain::rpc::RpcClient;
use crate::adapters::chain::scan::ChainScanner;
use crate::adapters::chain::secrets::rpc_urls;
use crate::adapters::chain::sync::{Syncer, RPC_TIMEOUT};
use crate::adapters::webhooks::clients::OnFirstUse;
use crate::application::app::{
    with_due_retries, Allowed, App, OrderChain, Refreshed, WalletRefresh, WholeRead,
};
use crate::domain::market::PoolState;
use crate::domain::math::U256;
use crate::domain::model::Chain;
use crate::domain::model::TransactionRequest;
use crate::domain::orders::simulation::{Credit, Simulated, SimulationError};
use crate::domain::orders::v4::Permit2Allowance;
use crate::domain::orders::zap::{Quote, QuotedPool};
use crate::domain::wallets::proof::ContractProof;
use crate::domain::wallets::LinkedWallet;
use crate::edge::routes::Endpoint;
use crate::wiring::config::Config;
use crate::wiring::lambda::on_table;
use async_trait::async_trait;
use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Error, RequestExt, Response};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The input of the reconciliation's hourly schedule (`{"refresh": "reconcile"}`): this hour's
/// share of the linked wallets, read whole and corrected.
pub const RECONCILE_SCHEDULE: &str = "reconcile";

/// The input of the Orca wallets' schedule (`{"refresh": "orca"}`): their events are not
/// followed, so they are polled.
pub const ORCA_SCHEDULE: &str = "orca";

/// `{"refresh": "wallets"}`: every linked wallet read whole and corrected at once (by hand).
pub const WALLETS_SCHEDULE: &str = "wallets";

/// Where the sync function sends wallets to read whole, and the reconciliation's round.
struct Fanout {
    sqs: OnFirstUse<aws_sdk_sqs::Client>,
    url: String,
    reconcile_hours: u32,
}

/// What a chain-reading function builds once per container: its configuration, the SDK's and
/// the app on DynamoDB (catalog cached for `catalog_ttl`, or the configured TTL).
struct Container {
    config: Config,
    sdk: aws_config::SdkConfig,
    app: App,
}

/// A JSON-RPC client per chain whose RPC URL parameter is configured (the URLs from SSM).
async fn endpoints(
    sdk: &aws_config::SdkConfig,
    config: &Config,
) -> Result<BTreeMap<Chain, Arc<RpcClient>>, String> {
    // No parameter, no SSM client (its endpoint rules are parsed when it is built).
    if config.rpc_parameters.is_empty() {
        return Ok(BTreeMap::new());
    }
    let urls = rpc_urls(&aws_sdk_ssm::Client::new(sdk), &config.rpc_parameters).await?;
    let endpoints = urls
        .iter()
        .map(|(chain, url)| Ok((*chain, Arc::new(RpcClient::new(url, RPC_TIMEOUT)?))))
        .collect::<Result<BTreeMap<_, _>, String>>()
        .map_err(|e| format!("RPC endpoint: {e}"))?;
    tracing::debug!(chains = ?endpoints.keys().collect::<Vec<_>>(), "chain endpoints configured");
    Ok(endpoints)
}

impl Container {
    async fn start(catalog_ttl: Option<Duration>) -> Result<Container, Error> {
        let config = Config::from_env()?;
        crate::wiring::telemetry::init(&config.log_level);
        let (sdk, app) = on_table(&config, catalog_ttl.unwrap_or(config.catalog_ttl)).await;
        Ok(Container { config, sdk, app })
    }

    /// The app reading wallets' positions and orders' allowances from the chains, their
    /// readers built at the first call that needs one (the SSM read, the TLS stack): an
    /// invocation that reads no chain never pays for them, nor does the init.
    fn with_wallets(self) -> App {
        let app = self.app.clone();
        let chains = Arc::new(ChainsOnFirstUse {
            built: tokio::sync::OnceCell::new(),
            container: self,
        });
        App {
            wallet_refresh: Some(chains.clone()),
            order_chain: Some(chains),
            ..app
        }
    }
}

/// The wallet reader and the order chain of an API function, built at their first use.
struct ChainsOnFirstUse {
    container: Container,
    built: tokio::sync::OnceCell<(WalletReader, ChainOrders)>,
}

impl ChainsOnFirstUse {
    /// Built once; a failure (SSM unreachable) is the call's, the next call tries again.
    async fn chains(&self) -> Result<&(WalletReader, ChainOrders), String> {
        let Container { config, sdk, app } = &self.container;
        self.built
            .get_or_try_init(|| async {
                let endpoints = endpoints(sdk, config).await?;
                let confirmations = config.confirmation_blocks.clone();
                let orders = ChainOrders::new(endpoints.clone(), confirmations.clone());
                let reader = WalletReader::new(endpoints, app, confirmations)
                    .with_log_ranges(config.log_ranges.clone());
                Ok((reader, orders))
            })
            .await
    }
}

#[async_trait]
impl WalletRefresh for ChainsOnFirstUse {
    async fn refresh(&self, wallet: &LinkedWallet) -> Result<Refreshed, String> {
        self.chains().await?.0.refresh(wallet).await
    }
}

#[async_trait]
impl OrderChain for ChainsOnFirstUse {
    async fn allowances(&self, asked: &Allowed<'_>) -> Result<[U256; 2], String> {
        self.chains().await?.1.allowances(asked).await
    }

    async fn permit2_allowances(
        &self,
        asked: &Allowed<'_>,
    ) -> Result<[Permit2Allowance; 2], String> {
        self.chains().await?.1.permit2_allowances(asked).await
    }

    async fn simulate(
        &self,
        chain: Chain,
        transactions: &[TransactionRequest],
        credits: &[Credit],
    ) -> Result<Vec<Simulated>, SimulationError> {
        let chains = self.chains().await.map_err(SimulationError::Unavailable)?;
        chains.1.simulate(chain, transactions, credits).await
    }

    async fn quote(
        &self,
        pool: &QuotedPool<'_>,
        state: &PoolState,
        sell: (usize, U256),
    ) -> Result<Quote, SimulationError> {
        let chains = self.chains().await.map_err(SimulationError::Unavailable)?;
        chains.1.quote(pool, state, sell).await
    }

    async fn signed_by(
        &self,
        chain: Chain,
        wallet: &str,
        proof: &ContractProof,
    ) -> Result<bool, String> {
        self.chains().await?.1.signed_by(chain, wallet, proof).await
    }
}

/// The sync function: the container once, then invocations (the schedule's and the route's).
pub async fn run() -> Result<(), Error> {
    // The sync reads the catalog uncached: tracked ticks and stored heights must be current.
    let Container {
        config,
        sdk,
        mut app,
    } = Container::start(Some(Duration::ZERO)).await?;
    // The sync reads the chains at every invocation: its clients at init.
    let endpoints = endpoints(&sdk, &config).await?;
    app.follow = Some(Arc::new(ChainScanner::new(
        endpoints.clone(),
        (app.wallets.clone(), app.market.clone(), app.clock.clone()),
        config.confirmation_blocks.clone(),
        config.log_ranges.clone(),
    )));
    app.sync = Some(Arc::new(
        Syncer::new(
            endpoints,
            app.market.clone(),
            app.store.clone(),
            app.clock.clone(),
        )
        .with_confirmations(config.confirmation_blocks)
        .with_alerts(app.alerts.clone()),
    ));
    let queue = config.wallet_queue_url.clone().map(|url| Fanout {
        // Built when a sync first fans out (most syncs touch no wallet).
        sqs: OnFirstUse::new(move || aws_sdk_sqs::Client::new(&sdk)),
        url,
        reconcile_hours: config.reconcile_hours,
    });
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
    queue: Option<&Fanout>,
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
    // The wallets' schedules: whole reads, one message each, for the refresh function.
    if let Some(schedule) = payload.get("refresh").and_then(Value::as_str) {
        let fanout = queue.ok_or("no wallet refresh queue is configured")?;
        let linked = app.wallets.linked().await?;
        let (wallets, why) = match schedule {
            RECONCILE_SCHEDULE => {
                let hour = app.clock.now().timestamp().max(0) as u64 / 3600;
                let due = due(linked, hour, fanout.reconcile_hours);
                (due, WholeRead::Reconcile)
            }
            ORCA_SCHEDULE => {
                let orca = linked.into_iter().filter(|w| w.chain == Chain::Solana);
                (orca.collect(), WholeRead::Refresh)
            }
            WALLETS_SCHEDULE => (linked, WholeRead::Reconcile),
            other => return Err(format!("unknown refresh schedule {other:?}").into()),
        };
        let queued = enqueue(fanout.sqs.get(), &fanout.url, &wallets, why).await?;
        tracing::info!(wallets = queued, schedule, "wallet reads queued");
        return Ok(json!({"walletsQueued": queued}));
    }
    let sync = app.sync.as_ref().ok_or("no syncer")?;
    // A catalog that cannot be read fails the invocation: the scheduler's retry and the
    // function's Errors alarm take it from there.
    let mut report = sync.sync().await?;
    tracing::info!(
        updated = report.updated,
        not_updated = report.not_updated,
        "scheduled sync"
    );
    // Then the chains' events, to the wallets they touched (decision 45).
    if let (Some(fanout), Some(follow)) = (queue, &app.follow) {
        let linked = app.wallets.linked().await?;
        let (scans, mut touched) = follow.follow(&linked).await;
        // With the wallets whose read stopped part way, where their retry is due (decision 58).
        let retried = with_due_retries(&mut touched, &linked, app.clock.now());
        let queued = enqueue(fanout.sqs.get(), &fanout.url, &touched, WholeRead::Refresh).await?;
        tracing::info!(
            events = scans.iter().map(|s| s.events).sum::<usize>(),
            wallets = queued,
            retried,
            "chain events followed"
        );
        report.scans = Some(scans);
    }
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
