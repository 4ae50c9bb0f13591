//! Store faults become the documented responses and leave nothing half-written: throttling and
//! an unreachable or hung DynamoDB give 503 with Retry-After after the SDK's retries; other
//! failures give a generic 500; a cancelled transaction writes none of its items.

use aws_sdk_dynamodb::types::AttributeValue;
use lambda_http::http::StatusCode;
use serde_json::json;
use shared::alerts::Alerts;
use shared::model::{Chain, Filter, PageRequest, Status};
use shared::store::dynamodb::local_client_with_timeout;
use shared::store::MemoryMarket;
use shared::store::{DynamoDbStore, PositionStore, StoreError};
use shared::wallets::challenge::SigningDomain;
use shared::{App, SystemClock};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use test_support::bodies::create_body;
use test_support::client::{Reply, TestClient};
use test_support::dynamodb::{dynamodb_endpoint, dynamodb_store};
use test_support::fixtures::{position, unique_owner};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// An app whose store talks to `endpoint`, with the shipped catalog (so requests reach the store).
fn app_on(endpoint: &str, attempt_timeout: Duration) -> App {
    let store = DynamoDbStore::new(
        local_client_with_timeout(endpoint, attempt_timeout),
        "positions",
    );
    App {
        store: Arc::new(store.clone()),
        market: Arc::new(MemoryMarket::embedded()),
        clock: Arc::new(SystemClock),
        sync: None,
        wallets: Arc::new(store.clone()),
        history: Arc::new(store.clone()),
        series: Arc::new(store.clone()),
        signing: SigningDomain::default(),
        wallet_refresh: None,
        order_chain: None,
        follow: None,
        alerts: Alerts::kept_in(Arc::new(store)),
    }
}

/// A fake DynamoDB endpoint that answers every request with `response` (or never, if `None`),
/// counting the requests it receives.
async fn fake_endpoint(response: Option<&'static str>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 64 * 1024];
                let mut seen = Vec::new();
                // Read the head and the body the Content-Length announces.
                loop {
                    let n = socket.read(&mut buffer).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buffer[..n]);
                    let text = String::from_utf8_lossy(&seen).to_lowercase();
                    if let Some(head_end) = text.find("\r\n\r\n") {
                        let length = text
                            .lines()
                            .find_map(|l| {
                                l.strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if seen.len() >= head_end + 4 + length {
                            break;
                        }
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
                match response {
                    Some(body) => {
                        let reply = format!(
                            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/x-amz-json-1.0\r\nx-amzn-errortype: ThrottlingException\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = socket.write_all(reply.as_bytes()).await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(30)).await,
                }
            });
        }
    });
    (url, hits)
}

fn assert_unavailable(reply: &Reply) {
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        reply.json,
        json!({"message": "Service Unavailable", "statusCode": 503})
    );
    assert!(reply.headers.contains_key("retry-after"));
}

#[tokio::test]
async fn throttling_after_retries_is_503_with_retry_after() {
    let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#;
    let (url, hits) = fake_endpoint(Some(body)).await;
    let app = app_on(&url, Duration::from_secs(5));
    // One request (the position's GetItem): the SDK's standard retries, three attempts.
    let reply = TestClient::in_process(&app, Some("alice"))
        .get("01ARZ3NDEKTSV4RRFFQ69G5FAV")
        .await;
    assert_unavailable(&reply);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        3,
        "standard retries: three attempts"
    );
    // A create (its first reads run side by side) and a list answer the same.
    let reply = TestClient::in_process(&app, Some("alice"))
        .create(&create_body(json!({})))
        .await;
    assert_unavailable(&reply);
    let reply = TestClient::in_process(&app, Some("alice")).list("").await;
    assert_unavailable(&reply);
}

#[tokio::test]
async fn a_hung_dynamodb_times_out_into_503() {
    let (url, hits) = fake_endpoint(None).await;
    let app = app_on(&url, Duration::from_millis(200));
    let reply = TestClient::in_process(&app, Some("alice"))
        .portfolio()
        .await;
    assert_unavailable(&reply);
    assert!(
        hits.load(Ordering::SeqCst) >= 2,
        "timed-out attempts are retried"
    );
}

#[tokio::test]
async fn an_unreachable_dynamodb_is_503() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let app = app_on(&url, Duration::from_secs(1));
    let reply = TestClient::in_process(&app, Some("alice"))
        .get("01JD8Z6C6XK4W5S7R9T2V3M1QA")
        .await;
    assert_unavailable(&reply);
}

#[tokio::test]
async fn other_store_failures_are_a_generic_500() {
    // A table that does not exist: the real server answers ResourceNotFoundException.
    let app = app_on(&dynamodb_endpoint(), Duration::from_secs(30));
    let reply = TestClient::in_process(&app, Some("alice")).list("").await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        reply.json,
        json!({"message": "Internal Server Error", "statusCode": 500})
    );
}

#[tokio::test]
async fn a_corrupt_item_is_a_generic_500() {
    let store = dynamodb_store().await;
    let owner = unique_owner("corrupt");
    let p = position(&owner, Status::Active, Chain::Base, 1_790_000_000_000);
    store.insert(&p).await.unwrap();
    store
        .client()
        .update_item()
        .table_name(store.table())
        .key("PK", AttributeValue::S(format!("U#{owner}")))
        .key("SK", AttributeValue::S(format!("P#{}", p.id)))
        .update_expression("SET liquidity = :bad")
        .expression_attribute_values(":bad", AttributeValue::S("not a number".into()))
        .send()
        .await
        .unwrap();
    let app = App {
        store: Arc::new(store.clone()),
        market: Arc::new(MemoryMarket::embedded()),
        clock: Arc::new(SystemClock),
        sync: None,
        wallets: Arc::new(store.clone()),
        history: Arc::new(store.clone()),
        series: Arc::new(store.clone()),
        signing: SigningDomain::default(),
        wallet_refresh: None,
        order_chain: None,
        follow: None,
        alerts: Alerts::kept_in(Arc::new(store)),
    };
    let reply = TestClient::in_process(&app, Some(&owner)).get(&p.id).await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        !reply.json.to_string().contains("liquidity"),
        "no internal detail in the body"
    );
}

#[tokio::test]
async fn a_cancelled_transaction_writes_nothing() {
    let store = dynamodb_store().await;
    let owner = unique_owner("torn");
    let p = position(&owner, Status::Pending, Chain::Arbitrum, 1_790_000_000_000);
    // A stray list entry for the same id makes one of the transaction's conditions fail.
    store
        .client()
        .put_item()
        .table_name(store.table())
        .item("PK", AttributeValue::S(format!("IX#c#arbitrum#{owner}")))
        .item("SK", AttributeValue::S(p.id.clone()))
        .send()
        .await
        .unwrap();
    assert!(matches!(store.insert(&p).await, Err(StoreError::Conflict)));
    assert_eq!(
        store.get(&owner, &p.id).await.unwrap(),
        None,
        "the position was not written"
    );
    let page = store
        .list(
            &owner,
            Filter::default(),
            PageRequest {
                offset: 0,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (page.items.len(), page.total),
        (0, 0),
        "no list entry, no count"
    );
    let pending = Filter {
        status: Some(Status::Pending),
        ..Filter::default()
    };
    assert_eq!(
        store
            .list(
                &owner,
                pending,
                PageRequest {
                    offset: 0,
                    limit: 10
                }
            )
            .await
            .unwrap()
            .total,
        0
    );
}
