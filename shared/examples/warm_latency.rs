//! Warm latency of each handler against the DynamoDB server used in tests: 1,000 requests per
//! route through the handlers (as the Lambda runtime invokes them behind the authorizer), on
//! one thread, after a warm-up. For each request, its wall time, this thread's CPU time (the
//! handler, valuation, JSON, and the SDK's own request building and signing) and the rest: the
//! wait on DynamoDB (network and the server). Prints p50 and p99 of each.
//!
//! Run with `scripts/bench-latency.sh` (starts moto's server), or against any DynamoDB-API
//! endpoint: `DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo run --release -p shared --example warm_latency`.

use cpu_time::ThreadTime;
use lambda_http::http::{Method, StatusCode};
use serde_json::json;
use shared::catalog::{embedded_deployments, embedded_records};
use shared::config::DEFAULT_STALE_AFTER;
use shared::market::Freshness;
use shared::store::dynamodb::local_client;
use shared::store::DynamoDbStore;
use shared::App;
use std::time::{Duration, Instant};
use test_support::bodies::create_body;
use test_support::client::TestClient;
use test_support::sample;

const REQUESTS: usize = 1_000;
const WARM_UP: usize = 50;
/// The user's book: enough for full pages, deep offsets and a portfolio of some size.
const BOOK: usize = 300;

struct Timing {
    wall: Duration,
    cpu: Duration,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let endpoint =
        std::env::var("DYNAMODB_ENDPOINT").expect("set DYNAMODB_ENDPOINT to a DynamoDB-API server");
    let table = format!("latency-{}", ulid::Ulid::new().to_string().to_lowercase());
    let store = DynamoDbStore::new(local_client(&endpoint), table);
    store.prepare_local().await.expect("table ready");
    store
        .seed_catalog(&embedded_records())
        .await
        .expect("catalog");
    store
        .seed_deployments(&embedded_deployments())
        .await
        .expect("deployments");
    let owner = "latency";
    let catalog = sample::catalog();
    let book: Vec<_> = (0..BOOK)
        .map(|i| sample::position_at(owner, &catalog, i, i % 3 == 2))
        .collect();
    store.bulk_import(owner, &book).await.expect("the book");
    let app = App::on_dynamodb(
        store,
        Duration::from_secs(60),
        Freshness::Live {
            stale_after: DEFAULT_STALE_AFTER,
        },
    );
    let client = TestClient::in_process(&app, Some(owner));
    let id = book[BOOK - 1].id.clone();
    let body = create_body(json!({}));

    println!("{REQUESTS} warm requests per route, one at a time, after {WARM_UP} to warm up; milliseconds\n");
    println!("| route | status | wall p50 | wall p99 | own CPU p50 | own CPU p99 | waiting on DynamoDB p50 | p99 |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    let routes: [(&str, Method, String, &[u8]); 8] = [
        ("GET /positions", Method::GET, "/positions".into(), b""),
        (
            "GET /positions?status=active&chain=ethereum",
            Method::GET,
            "/positions?status=active&chain=ethereum".into(),
            b"",
        ),
        (
            "GET /positions?offset=100",
            Method::GET,
            "/positions?offset=100".into(),
            b"",
        ),
        (
            "GET /positions/{id}",
            Method::GET,
            format!("/positions/{id}"),
            b"",
        ),
        ("GET /portfolio", Method::GET, "/portfolio".into(), b""),
        ("GET /pools", Method::GET, "/pools".into(), b""),
        ("GET /wallets", Method::GET, "/wallets".into(), b""),
        (
            "POST /positions",
            Method::POST,
            "/positions".into(),
            body.as_bytes(),
        ),
    ];
    for (name, method, uri, body) in routes {
        let headers: &[(&str, &str)] = if body.is_empty() {
            &[]
        } else {
            &[("content-type", "application/json")]
        };
        let mut status = StatusCode::OK;
        let mut timings = Vec::with_capacity(REQUESTS);
        for i in 0..WARM_UP + REQUESTS {
            let (wall, cpu) = (Instant::now(), ThreadTime::now());
            let reply = client.send(method.clone(), &uri, headers, body).await;
            let timing = Timing {
                wall: wall.elapsed(),
                cpu: cpu.elapsed(),
            };
            assert!(reply.status.is_success(), "{name}: {}", reply.text());
            status = reply.status;
            if i >= WARM_UP {
                timings.push(timing);
            }
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let wall: Vec<f64> = timings.iter().map(|t| ms(t.wall)).collect();
        let cpu: Vec<f64> = timings.iter().map(|t| ms(t.cpu)).collect();
        let wait: Vec<f64> = timings
            .iter()
            .map(|t| ms(t.wall.saturating_sub(t.cpu)))
            .collect();
        println!(
            "| {name} | {} | {:.2} | {:.2} | {:.3} | {:.3} | {:.2} | {:.2} |",
            status.as_u16(),
            percentile(&wall, 50),
            percentile(&wall, 99),
            percentile(&cpu, 50),
            percentile(&cpu, 99),
            percentile(&wait, 50),
            percentile(&wait, 99),
        );
    }
}

fn percentile(samples: &[f64], p: usize) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}
