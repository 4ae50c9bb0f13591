//! Every function's binary (the build the tests use) under the Lambda Runtime Interface Emulator (the emulator
//! `sam local invoke` runs), on DynamoDB (moto): every file in `events/` is invoked through it
//! and answers its expected status with a body of the documented shape, and the function's logs
//! are JSON lines carrying the Lambda request id.
//!
//! Needs `LAMBDA_RIE` (the emulator) and `LAMBDA_BIN_DIR` (the binaries), which
//! `scripts/test.sh` provides; missing is a failure, never a skip.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use shared::market::{PoolState, Succession};
use shared::store::{DynamoDbMarket, Market, PositionStore, WalletStore};
use shared::Endpoint;
use std::process::Stdio;
use std::time::Duration;
use test_support::dynamodb::{dynamodb_endpoint, dynamodb_store};
use test_support::events::{endpoint_of, event_manifest};
use tokio::process::Command;

fn required(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set: run the tests with scripts/test.sh"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn invoke(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    port: u16,
    event: &str,
) -> Option<Value> {
    let request = hyper::Request::post(format!(
        "http://127.0.0.1:{port}/2015-03-31/functions/function/invocations"
    ))
    .body(Full::new(Bytes::from(event.to_string())))
    .unwrap();
    let response = client.request(request).await.ok()?;
    let bytes = response.into_body().collect().await.ok()?.to_bytes();
    serde_json::from_slice(&bytes).ok()
}

/// Gives the fixture's pool a state read now, at its catalog price: the close event needs a
/// pool that is not stale.
async fn fresh_state_for(store: &shared::store::DynamoDbStore, fixture: &shared::model::Position) {
    let market = DynamoDbMarket::new(
        store.clone(),
        Duration::ZERO,
        shared::market::Freshness::live(Duration::from_secs(300)),
    );
    let catalog = market.catalog().await.unwrap();
    let pool = catalog
        .find(fixture.chain, fixture.protocol, &fixture.pool)
        .unwrap();
    let state = PoolState {
        sqrt_price: pool.sqrt_price,
        tick: pool.tick,
        liquidity: 1,
        fee_growth_global0: Default::default(),
        fee_growth_global1: Default::default(),
        height: 1,
        block_hash: None,
        observed_at: chrono::Utc::now(),
        ticks: Vec::new(),
        balances: None,
        slipstream: None,
    };
    market
        .save_state(pool, &state, &[], Succession::Next)
        .await
        .unwrap();
}

#[tokio::test]
async fn every_event_through_the_function_binaries_under_the_emulator() {
    let rie = required("LAMBDA_RIE");
    let bin_dir = std::path::PathBuf::from(required("LAMBDA_BIN_DIR"));
    let store = dynamodb_store().await;
    let manifest = event_manifest();
    store.insert(&manifest.fixture).await.unwrap();
    store.insert(&manifest.order_fixture).await.unwrap();
    store
        .put_challenge(&manifest.wallet_challenge)
        .await
        .unwrap();
    fresh_state_for(&store, &manifest.fixture).await;
    manifest.webhooks.store_in(&store).await;
    let client = Client::builder(TokioExecutor::new()).build_http();
    let queue = test_support::dynamodb::sqs_queue("emulator").await;
    let deliveries = test_support::dynamodb::sqs_queue("emulator-deliveries").await;
    let (_, key) = test_support::dynamodb::kms_key().await;
    let alerts = (&deliveries.1, key.as_str());
    let logs_dir = std::env::temp_dir().join(format!("rie-logs-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&logs_dir).unwrap();

    for endpoint in Endpoint::ALL {
        let binary = bin_dir.join(endpoint.function_name());
        assert!(
            binary.exists(),
            "{} is missing: build the binaries (scripts/test.sh does)",
            binary.display()
        );
        let (port, log_path, mut emulator) =
            emulate(&rie, &binary, &store, (&queue, alerts), &logs_dir).await;

        let events = manifest
            .expected
            .iter()
            .filter(|(file, _)| endpoint_of(file) == endpoint);
        let mut invoked = 0;
        for (file, status) in events {
            let event = std::fs::read_to_string(manifest.dir.join(file)).unwrap();
            let response = invoke(&client, port, &event)
                .await
                .unwrap_or_else(|| panic!("{file}: no response from the emulator"));
            assert_eq!(response["statusCode"], *status, "{file}: {response}");
            if *status == 204 {
                assert_eq!(response["body"].as_str().unwrap_or(""), "", "{file}");
                invoked += 1;
                continue;
            }
            if *status == 200 && endpoint == Endpoint::ExportHistory {
                // The export answers its CSV, Koinly's template asked.
                assert_eq!(
                    response["headers"]["content-type"], "text/csv; charset=utf-8",
                    "{file}"
                );
                let csv = response["body"].as_str().unwrap();
                assert_eq!(csv.lines().next(), Some(shared::export::KOINLY_HEADER));
                invoked += 1;
                continue;
            }
            assert_eq!(
                response["headers"]["content-type"], "application/json",
                "{file}"
            );
            let body: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
            if *status >= 400 {
                assert_eq!(body["statusCode"], *status, "{file}");
                assert!(body["message"].is_string());
                assert_eq!(body.as_object().unwrap().len(), 2, "{file}");
            } else if file.ends_with("-success.json") && endpoint == Endpoint::GetPosition {
                assert_eq!(body["id"], manifest.fixture.id.as_str());
            }
            invoked += 1;
        }
        // The schedule's invocations answer the sync report: here with no RPC endpoint
        // configured, every catalog pool is reported and none updated.
        for file in manifest
            .scheduled
            .iter()
            .filter(|file| endpoint_of(file) == endpoint)
        {
            let event = std::fs::read_to_string(manifest.dir.join(file)).unwrap();
            let report = invoke(&client, port, &event)
                .await
                .unwrap_or_else(|| panic!("{file}: no response from the emulator"));
            // A wallets' schedule queues whole reads: none is linked here.
            if event.contains("\"refresh\"") {
                assert_eq!(report["walletsQueued"], 0, "{file}: {report}");
                invoked += 1;
                continue;
            }
            let pools = report["pools"].as_array().expect("a sync report");
            assert!(!pools.is_empty(), "{file}: {report}");
            assert_eq!(report["updated"], 0, "{file}: {report}");
            assert_eq!(report["notUpdated"], pools.len(), "{file}: {report}");
            assert!(pools.iter().all(|p| p["reason"].is_string()), "{report}");
            invoked += 1;
        }
        assert!(
            invoked > 0,
            "{} has no sample events",
            endpoint.function_name()
        );
        emulator.kill().await.unwrap();
        assert_logs_are_json_lines(&log_path, endpoint);
    }

    // The queues' functions: each SQS batch answered with the messages that failed.
    for (function, unreadable) in [
        ("refresh-wallets", "not a wallet refresh message"),
        ("deliver-webhooks", "not a webhook delivery message"),
    ] {
        let binary = bin_dir.join(function);
        let (port, log_path, mut emulator) =
            emulate(&rie, &binary, &store, (&queue, alerts), &logs_dir).await;
        let batches: Vec<_> = manifest
            .queue
            .iter()
            .filter(|(file, _)| file.starts_with(&format!("{function}-")))
            .collect();
        assert!(!batches.is_empty(), "{function} has no sample events");
        for (file, failures) in batches {
            let event = std::fs::read_to_string(manifest.dir.join(file)).unwrap();
            let answer = invoke(&client, port, &event)
                .await
                .unwrap_or_else(|| panic!("{file}: no response from the emulator"));
            let reported = answer["batchItemFailures"]
                .as_array()
                .expect("a batch answer");
            assert_eq!(reported.len(), *failures, "{file}: {answer}");
        }
        emulator.kill().await.unwrap();
        let logs = std::fs::read_to_string(&log_path).unwrap();
        assert!(logs.contains(unreadable), "{logs}");
    }
    std::fs::remove_dir_all(&logs_dir).ok();
}

/// `binary` under the emulator on a free port, its logs to a file: the port, the log file and
/// the emulator's process. Every function gets the same environment: the table on the test
/// server, the wallet and webhook queues and the webhook key on it.
async fn emulate(
    rie: &str,
    binary: &std::path::Path,
    store: &shared::store::DynamoDbStore,
    ((_, queue_url), (webhook_queue, webhook_key)): (
        &(aws_sdk_sqs::Client, String),
        (&String, &str),
    ),
    logs_dir: &std::path::Path,
) -> (u16, std::path::PathBuf, tokio::process::Child) {
    let port = free_port();
    let name = binary.file_name().unwrap().to_string_lossy().to_string();
    let log_path = logs_dir.join(format!("{name}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let emulator = Command::new(rie)
        .arg("--runtime-interface-emulator-address")
        .arg(format!("127.0.0.1:{port}"))
        .arg(binary)
        .env("TABLE_NAME", store.table())
        .env("DYNAMODB_ENDPOINT", dynamodb_endpoint())
        .env("AWS_ENDPOINT_URL_SQS", dynamodb_endpoint())
        .env("WALLET_QUEUE_URL", queue_url)
        .env("WEBHOOK_QUEUE_URL", webhook_queue)
        .env("WEBHOOK_KEY_ID", webhook_key)
        .env("AWS_ENDPOINT_URL_KMS", dynamodb_endpoint())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("RUST_LOG", "info")
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .kill_on_drop(true)
        .spawn()
        .expect("the emulator starts");
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (port, log_path, emulator)
}

/// Every log line the function wrote is JSON with the request id of its invocation.
fn assert_logs_are_json_lines(log_path: &std::path::Path, endpoint: Endpoint) {
    {
        let logs = std::fs::read_to_string(log_path).unwrap();
        let ours: Vec<Value> = logs
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for line in &ours {
            assert!(line["level"].is_string(), "{line}");
            assert!(
                line["span"]["requestId"].is_string(),
                "no request id: {line}"
            );
        }
        assert!(!logs.contains("Bearer "), "no token is logged");
        if endpoint == Endpoint::CreatePosition {
            assert!(
                ours.iter()
                    .any(|l| l["fields"]["message"] == "position opened"),
                "{logs}"
            );
        }
    }
}
