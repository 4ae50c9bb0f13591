//! `local-api` serves the API on one machine; `token` prints a bearer token; `seed-catalog`
//! loads the pool catalog into a DynamoDB table.

use local_api::auth::JwtSettings;
use local_api::gateway::{Cors, Gateway};
use shared::config::{DEFAULT_CATALOG_TTL, DEFAULT_LOG_LEVEL};
use shared::store::dynamodb::{local_client, user_client};
use shared::store::DynamoDbStore;
use shared::App;
use std::process::ExitCode;
use std::sync::Arc;

const USAGE: &str = "usage:
  local-api [--addr HOST:PORT] [--dynamodb-endpoint URL [--table NAME]] [--cors-origin ORIGIN]...
      serve the API (default 127.0.0.1:3000) on the in-memory store, or on a DynamoDB-API
      server (the table, default 'positions', is created and its catalog seeded if missing);
      --cors-origin (repeatable, or '*') answers browser preflights and adds CORS headers for
      that origin, as the stack's CorsAllowedOrigins parameter does
  local-api token --sub NAME [--ttl SECONDS]
      print a bearer token for NAME (default ttl 86400)
  local-api seed-catalog --table NAME [--dynamodb-endpoint URL]
      load data/pools.json into a table (AWS credentials and region from the environment
      unless an endpoint is given)";

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
    let (mut sub, mut ttl) = (None, 86_400);
    for (name, value) in options(args)? {
        match name {
            "--sub" => sub = Some(value),
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
    println!("{}", jwt.issue(sub, ttl));
    Ok(())
}

async fn seed_catalog(args: &[String]) -> Result<(), String> {
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
    let store = DynamoDbStore::new(client, table.ok_or("seed-catalog needs --table NAME")?);
    let records = shared::catalog::embedded_records();
    store
        .seed_catalog(&records)
        .await
        .map_err(|e| format!("seeding failed: {e}"))?;
    println!("seeded {} pools into {}", records.len(), store.table());
    Ok(())
}

async fn serve(jwt: JwtSettings, args: &[String]) -> Result<(), String> {
    let mut addr = "127.0.0.1:3000".to_string();
    let (mut endpoint, mut table) = (None, "positions".to_string());
    let mut cors = Cors::default();
    for (name, value) in options(args)? {
        match name {
            "--addr" => addr = value.to_string(),
            "--dynamodb-endpoint" => endpoint = Some(value.to_string()),
            "--table" => table = value.to_string(),
            "--cors-origin" => cors.allowed_origins.push(value.to_string()),
            _ => return Err(format!("unknown option {name}")),
        }
    }
    let log_level = std::env::var("RUST_LOG").unwrap_or_else(|_| DEFAULT_LOG_LEVEL.to_string());
    shared::telemetry::init_with(&log_level, std::io::stderr);
    // A panic is logged as one JSON line like everything else, never as raw backtrace text.
    std::panic::set_hook(Box::new(|info| tracing::error!(panic = %info, "panic")));
    let (app, store_name) = match endpoint {
        None => (App::in_memory(), "in-memory".to_string()),
        Some(url) => {
            let store = DynamoDbStore::new(local_client(&url), table.clone());
            store
                .prepare_local()
                .await
                .map_err(|e| format!("cannot prepare table {table} at {url}: {e}"))?;
            (
                App::on_dynamodb(store, DEFAULT_CATALOG_TTL),
                format!("DynamoDB table {table} at {url}"),
            )
        }
    };
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    println!("local-api listening on http://{bound} (store: {store_name})");
    println!(
        "try: curl -s http://{bound}/positions -H 'Authorization: Bearer {}'",
        jwt.issue("alice", 86_400)
    );
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
