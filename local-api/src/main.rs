//! `local-api` serves the API on one machine; `token` prints a bearer token; `seed-catalog`
//! loads the pool catalog into a DynamoDB table; `backfill-pages` writes the page copies a table
//! from before them lacks.

use local_api::auth::JwtSettings;
use local_api::gateway::{Cors, Gateway};
use shared::alerts::delivery::local::TaskDeliveries;
use shared::alerts::delivery::sender::HttpsSender;
use shared::alerts::webhooks::address::Reach;
use shared::alerts::Alerts;
use shared::app::MarketSync;
use shared::catalog::{embedded_deployments, embedded_records, Catalog, CatalogFile, Deployment};
use shared::chain::orders::ChainOrders;
use shared::chain::refresh::WalletReader;
use shared::chain::scan::ChainScanner;
use shared::chain::{RpcClient, Syncer, RPC_TIMEOUT};
use shared::config::{
    Confirmations, LogRanges, DEFAULT_CATALOG_TTL, DEFAULT_LOG_LEVEL, DEFAULT_STALE_AFTER,
};
use shared::market::{Freshness, MarketRules, DEFAULT_MIN_DISCOVERED_DEPTH_USD};
use shared::model::Chain;
use shared::store::dynamodb::{local_client, user_client};
use shared::store::KeptAsGiven;
use shared::store::{DynamoDbStore, MemoryMarket};
use shared::wallets::challenge::SigningDomain;
use shared::App;
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How often local-api syncs with `--rpc`, unless `--sync-interval` says otherwise.
const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_secs(60);

/// How often local-api reads every linked wallet whole to check the events' work, unless
/// `--reconcile-interval` says otherwise: a day, as the stack's default.
const DEFAULT_RECONCILE_INTERVAL: Duration = Duration::from_secs(86_400);

const USAGE: &str = "usage:
  local-api [--addr HOST:PORT] [--dynamodb-endpoint URL [--table NAME]] [--cors-origin ORIGIN]...
            [--catalog FILE] [--rpc CHAIN=URL]... [--sync-interval SECONDS] [--stale-after SECONDS]
            [--confirmations BLOCKS] [--min-discovered-depth-usd USD] [--log-range BLOCKS]
            [--reconcile-interval SECONDS]
            [--signing-domain HOST[:PORT]] [--signing-uri URI]
            [--webhooks-http-loopback allow|refuse] [--webhook-retry-scale FACTOR]
      serve the API (default 127.0.0.1:3000) on the in-memory store, or on a DynamoDB-API
      server (the table, default 'positions', is created and its catalog seeded if missing);
      --cors-origin (repeatable, or '*') answers browser preflights and adds CORS headers for
      that origin, as the stack's CorsAllowedOrigins parameter does;
      --catalog serves a catalog file (the format of shared/data/pools.json) instead of the
      embedded one; --rpc (repeatable) reads that chain's pools from a JSON-RPC endpoint: once
      at start, then every --sync-interval (default 60) and on POST /markets/sync; a pool's
      state older than --stale-after (default 300) is stale; the chains are read, and an
      order's transaction taken, --confirmations blocks behind the head (default 2 on
      ethereum, 1 elsewhere; 0 on a devnet, which mines a block per transaction); a pool
      found in a wallet prices a token the catalog's pools do not reach only when it holds
      --min-discovered-depth-usd (default 10000) of a priced token; a wallet position's history is
      read from its position manager's events --log-range blocks per eth_getLogs at most
      (default 10000); each sync follows the position managers' events to the linked wallets
      they touch, which are read whole (Orca wallets are read every sync), and every linked
      wallet is read whole and corrected every --reconcile-interval (default 86400) and on
      POST /markets/sync?reconcile=all. Without --rpc, nothing is
      read from any network: the catalog's prices are a snapshot; --signing-domain and --signing-uri name the site a wallet signs
      in to when it is linked (default this server's address); alert events are delivered to
      the users' webhooks from this process (public https only, unless --webhooks-http-loopback
      allow, for tests and walk-throughs: http to loopback too); --webhook-retry-scale
      shortens the retry schedule by that factor (tests)
  local-api token --sub NAME [--ttl SECONDS] [--scope SCOPES]
      print a bearer token for NAME (default ttl 86400); --scope sets the space-separated
      scope claim, e.g. \"markets:sync\"
  local-api seed-catalog --table NAME [--dynamodb-endpoint URL]
      load data/pools.json (its pools and deployments) into a table (AWS credentials and region from the environment
      unless an endpoint is given)
  local-api backfill-pages --table NAME [--dynamodb-endpoint URL]
      write the page copies of every position of a table from before them (decision 51)";

/// `--name value` pairs after the subcommand.
fn options(args: &[String]) -> Result<Vec<(&str, &str)>, String> {
    args.chunks(2)
        .map(|pair| match pair {
            [name, value] if name.starts_with("--") => Ok((name.as_str(), value.as_str())),
            _ => Err(format!("unexpected arguments: {}", pair.join(" "))),
        })
        .collect()
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let jwt = JwtSettings::from_env();
    let result = match args.first().map(String::as_str) {
        Some("token") => token(&jwt, &args[1..]),
        Some("seed-catalog") => seed_catalog(&args[1..]).await,
        Some("backfill-pages") => backfill_pages(&args[1..]).await,
        Some("--help" | "-h" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => serve(jwt, &args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("local-api: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The longest lifetime `token` issues: ten years.
const MAX_TTL_SECONDS: i64 = 10 * 365 * 86_400;

fn token(jwt: &JwtSettings, args: &[String]) -> Result<(), String> {
    let (mut sub, mut ttl, mut scope) = (None, 86_400, None);
    for (name, value) in options(args)? {
        match name {
            "--sub" => sub = Some(value),
            "--scope" => scope = Some(value),
            "--ttl" => {
                ttl = value
                    .parse()
                    .ok()
                    .filter(|t| (1..=MAX_TTL_SECONDS).contains(t))
                    .ok_or_else(|| {
                        format!("--ttl takes whole seconds from 1 to {MAX_TTL_SECONDS}")
                    })?;
            }
            _ => return Err(format!("unknown option {name}")),
        }
    }
    let sub = sub.ok_or("token needs --sub NAME")?;
    if sub.is_empty() || sub.len() > local_api::auth::MAX_SUB_BYTES {
        return Err(format!(
            "--sub takes a name of 1 to {} bytes",
            local_api::auth::MAX_SUB_BYTES
        ));
    }
    println!("{}", jwt.issue_with_scope(sub, ttl, scope));
    Ok(())
}

/// The `--rpc CHAIN=URL` endpoints, each chain once.
fn rpc_endpoint(
    value: &str,
    endpoints: &mut BTreeMap<Chain, Arc<RpcClient>>,
) -> Result<(), String> {
    let (chain, url) = value
        .split_once('=')
        .ok_or("--rpc takes CHAIN=URL, e.g. ethereum=http://127.0.0.1:8545")?;
    let chain: Chain = chain
        .parse()
        .map_err(|_| format!("--rpc: unknown chain {chain:?}; one of {}", Chain::names()))?;
    let client = RpcClient::new(url, RPC_TIMEOUT).map_err(|e| format!("--rpc {chain}: {e}"))?;
    if endpoints.insert(chain, Arc::new(client)).is_some() {
        return Err(format!("--rpc {chain} is given twice"));
    }
    Ok(())
}

fn seconds(name: &str, value: &str) -> Result<Duration, String> {
    value
        .parse::<u64>()
        .ok()
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{name} takes whole seconds above zero"))
}

/// The catalog of `--catalog FILE`, checked as the service checks its own; without
/// `deployments`, the embedded (mainnet) ones.
fn catalog_file(path: &str) -> Result<CatalogFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut file: CatalogFile =
        serde_json::from_str(&text).map_err(|e| format!("{path} is not a catalog: {e}"))?;
    Catalog::from_records(&file.pools).map_err(|e| format!("{path}: {e}"))?;
    if file.deployments.is_empty() {
        file.deployments = embedded_deployments();
    }
    Deployment::check_all(&file.deployments).map_err(|e| format!("{path}: {e}"))?;
    Ok(file)
}

/// The table an admin subcommand works on: `--table`, on `--dynamodb-endpoint` or AWS.
async fn admin_store(command: &str, args: &[String]) -> Result<DynamoDbStore, String> {
    let (mut table, mut endpoint) = (None, None);
    for (name, value) in options(args)? {
        match name {
            "--table" => table = Some(value),
            "--dynamodb-endpoint" => endpoint = Some(value),
            _ => return Err(format!("unknown option {name}")),
        }
    }
    let client = match endpoint {
        Some(url) => local_client(url),
        None => user_client().await,
    };
    let table = table.ok_or(format!("{command} needs --table NAME"))?;
    Ok(DynamoDbStore::new(client, table))
}

async fn seed_catalog(args: &[String]) -> Result<(), String> {
    let store = admin_store("seed-catalog", args).await?;
    let records = embedded_records();
    store
        .seed_catalog(&records)
        .await
        .map_err(|e| format!("seeding failed: {e}"))?;
    store
        .seed_deployments(&embedded_deployments())
        .await
        .map_err(|e| format!("seeding failed: {e}"))?;
    println!("seeded {} pools into {}", records.len(), store.table());
    Ok(())
}

async fn backfill_pages(args: &[String]) -> Result<(), String> {
    let store = admin_store("backfill-pages", args).await?;
    let copied = store
        .backfill_pages()
        .await
        .map_err(|e| format!("backfill failed: {e}"))?;
    println!(
        "{}: page copies written for {copied} positions",
        store.table()
    );
    Ok(())
}

/// Alerts delivered by this process: a task per delivery (no queue here), secrets kept as
/// given (in memory, or on a local table), sent to public HTTPS addresses, or also to `http`
/// on loopback when `--webhooks-http-loopback allow` says so (said at start).
fn delivered_here(alerts: Alerts, reach: Reach, retry_scale: f64) -> Result<Alerts, String> {
    if reach == Reach::AlsoLoopbackHttp {
        eprintln!(
            "webhooks may be sent over plain http to loopback addresses \
             (--webhooks-http-loopback allow): for tests and the walk-through only"
        );
    }
    let base = Alerts {
        queue: None,
        sealer: Arc::new(KeptAsGiven),
        sender: Some(Arc::new(HttpsSender::new(reach)?)),
        reach,
        retry_scale,
        ..alerts
    };
    Ok(Alerts {
        queue: Some(Arc::new(TaskDeliveries::new(base.clone()))),
        ..base
    })
}

async fn serve(jwt: JwtSettings, args: &[String]) -> Result<(), String> {
    let mut addr = "127.0.0.1:3000".to_string();
    let (mut endpoint, mut table) = (None, "positions".to_string());
    let mut cors = Cors::default();
    let mut records = None;
    let mut endpoints = BTreeMap::new();
    let (mut interval, mut stale_after) = (DEFAULT_SYNC_INTERVAL, DEFAULT_STALE_AFTER);
    let mut reconcile_every = DEFAULT_RECONCILE_INTERVAL;
    let mut confirmations = Confirmations::default();
    let mut min_depth = DEFAULT_MIN_DISCOVERED_DEPTH_USD;
    let mut log_ranges = LogRanges::default();
    let (mut signing_domain, mut signing_uri) = (None, None);
    let (mut reach, mut retry_scale) = (Reach::PublicHttpsOnly, 1.0);
    for (name, value) in options(args)? {
        match name {
            "--addr" => addr = value.to_string(),
            "--catalog" => records = Some(catalog_file(value)?),
            "--rpc" => rpc_endpoint(value, &mut endpoints)?,
            "--sync-interval" => interval = seconds(name, value)?,
            "--stale-after" => stale_after = seconds(name, value)?,
            "--reconcile-interval" => reconcile_every = seconds(name, value)?,
            "--confirmations" => {
                confirmations = value
                    .parse::<u64>()
                    .map(Confirmations::from)
                    .map_err(|_| "--confirmations takes a whole number of blocks".to_string())?;
            }
            "--min-discovered-depth-usd" => {
                min_depth = value
                    .parse()
                    .map_err(|_| format!("{name} takes whole USD, not {value:?}"))?;
            }
            "--log-range" => {
                log_ranges = LogRanges::parse(value).map_err(|e| format!("{name}: {e}"))?;
            }
            "--dynamodb-endpoint" => endpoint = Some(value.to_string()),
            "--table" => table = value.to_string(),
            "--cors-origin" => cors.allowed_origins.push(value.to_string()),
            "--signing-domain" => signing_domain = Some(value.to_string()),
            "--signing-uri" => signing_uri = Some(value.to_string()),
            "--webhooks-http-loopback" => {
                reach = match value {
                    "allow" => Reach::AlsoLoopbackHttp,
                    "refuse" => Reach::PublicHttpsOnly,
                    _ => return Err(format!("{name} takes allow or refuse")),
                };
            }
            "--webhook-retry-scale" => {
                retry_scale = value
                    .parse::<f64>()
                    .ok()
                    .filter(|s| *s > 0.0 && *s <= 1.0)
                    .ok_or_else(|| format!("{name} takes a factor above 0, at most 1"))?;
            }
            _ => return Err(format!("unknown option {name}")),
        }
    }
    let log_level = std::env::var("RUST_LOG").unwrap_or_else(|_| DEFAULT_LOG_LEVEL.to_string());
    shared::telemetry::init_with(&log_level, std::io::stderr);
    // A panic is logged as one JSON line like everything else, never as raw backtrace text.
    std::panic::set_hook(Box::new(|info| tracing::error!(panic = %info, "panic")));
    let live = !endpoints.is_empty();
    let rules = MarketRules {
        freshness: if live {
            Freshness::Live { stale_after }
        } else {
            Freshness::Snapshot
        },
        min_discovered_depth_usd: min_depth,
    };
    let (mut app, store_name) = match endpoint {
        None => {
            let mut app = App::in_memory();
            if records.is_some() || live {
                let (records, deployments) = match records.clone() {
                    Some(file) => (file.pools, file.deployments),
                    None => (embedded_records(), embedded_deployments()),
                };
                let market = MemoryMarket::new(records, rules)
                    .map_err(|e| e.to_string())?
                    .with_deployments(deployments);
                app.market = Arc::new(market);
            }
            (app, "in-memory".to_string())
        }
        Some(url) => {
            let store = DynamoDbStore::new(local_client(&url), table.clone());
            let prepared = match &records {
                // The file's pools, not the embedded ones beside them.
                Some(file) => match store.ensure_table().await {
                    Ok(()) => match store.seed_catalog(&file.pools).await {
                        Ok(()) => store.seed_deployments(&file.deployments).await,
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                },
                None => store.prepare_local().await,
            };
            prepared.map_err(|e| format!("cannot prepare table {table} at {url}: {e}"))?;
            // Synced here, read here: no cache to wait out.
            let ttl = if live {
                Duration::ZERO
            } else {
                DEFAULT_CATALOG_TTL
            };
            (
                App::on_dynamodb(store, ttl, rules),
                format!("DynamoDB table {table} at {url}"),
            )
        }
    };
    app.alerts = delivered_here(app.alerts, reach, retry_scale)?;
    if live {
        app.wallet_refresh = Some(Arc::new(
            WalletReader::new(endpoints.clone(), &app, confirmations.clone())
                .with_log_ranges(log_ranges.clone()),
        ));
        app.order_chain = Some(Arc::new(ChainOrders::new(
            endpoints.clone(),
            confirmations.clone(),
        )));
        app.follow = Some(Arc::new(ChainScanner::new(
            endpoints.clone(),
            (app.wallets.clone(), app.market.clone(), app.clock.clone()),
            confirmations.clone(),
            log_ranges.clone(),
        )));
        let syncer = Arc::new(
            Syncer::new(
                endpoints,
                app.market.clone(),
                app.store.clone(),
                app.clock.clone(),
            )
            .with_confirmations(confirmations)
            .with_alerts(app.alerts.clone())
            .with_series(app.series.clone()),
        );
        app.sync = Some(syncer.clone());
        // Before listening: the first request already sees the chains' state.
        sync_once(&syncer).await;
        tokio::spawn(sync_every(syncer, app.clone(), interval));
        tokio::spawn(reconcile_every_interval(app.clone(), reconcile_every));
    }
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    // Wallets sign in to this server unless told the page they link from.
    app.signing = SigningDomain {
        domain: signing_domain.unwrap_or_else(|| bound.to_string()),
        uri: signing_uri.unwrap_or_else(|| format!("http://{bound}")),
    };
    // The page's link carries a token in the fragment, which the browser never sends.
    let token = jwt.issue("alice", 86_400);
    println!(
        "local-api listening on http://{bound} (store: {store_name}); the page: http://{bound}/#token={token}"
    );
    println!("try: curl -s http://{bound}/positions -H 'Authorization: Bearer {token}'");
    let gateway = Arc::new(Gateway {
        app,
        jwt,
        cors,
        local_addr: bound,
    });
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    local_api::server::serve(listener, gateway, shutdown).await;
    Ok(())
}

/// Syncs now, then every `interval`, logging each report's counts.
/// Syncs the pools and then follows the chains' events to the wallets they touched every
/// `interval` (the first sync ran at start).
async fn sync_every(syncer: Arc<Syncer>, app: App, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate: the sync at start has just run.
    ticker.tick().await;
    loop {
        ticker.tick().await;
        sync_once(&syncer).await;
        match app.follow_wallets().await {
            Ok((scans, report)) => tracing::info!(
                chains = scans.len(),
                events = scans.iter().map(|s| s.events).sum::<usize>(),
                refreshed = report.refreshed,
                failed = report.failed.len(),
                "chain events followed"
            ),
            Err(e) => tracing::error!(cause = %e, "chain events not followed"),
        }
    }
}

/// Reads every linked wallet whole every `interval` and corrects what the events missed
/// (decision 45); the first run is one interval after the start (a link reads a
/// wallet whole already).
async fn reconcile_every_interval(app: App, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        match app.reconcile_all().await {
            Ok(report) => tracing::info!(
                refreshed = report.refreshed,
                corrected = report.corrected,
                failed = report.failed.len(),
                "wallets reconciled"
            ),
            Err(e) => tracing::error!(cause = %e, "wallets not reconciled"),
        }
    }
}

async fn sync_once(syncer: &Syncer) {
    match syncer.sync().await {
        Ok(report) => tracing::info!(
            updated = report.updated,
            not_updated = report.not_updated,
            "market sync"
        ),
        Err(e) => tracing::error!(cause = %e, "market sync failed"),
    }
}
