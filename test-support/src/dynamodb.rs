//! The DynamoDB-API server the test command started (moto), and fresh tables on it.

use shared::store::dynamodb::local_client;
use shared::store::DynamoDbStore;

/// The DynamoDB-API server the test command started. Missing is an error, never a skip.
pub fn dynamodb_endpoint() -> String {
    std::env::var("DYNAMODB_TEST_ENDPOINT").expect(
        "DYNAMODB_TEST_ENDPOINT is not set: run the tests with scripts/test.sh, which starts moto's server",
    )
}

/// A fresh table on the test server.
pub async fn dynamodb_store() -> DynamoDbStore {
    let table = format!("test-{}", ulid::Ulid::new().to_string().to_lowercase());
    let store = DynamoDbStore::new(local_client(&dynamodb_endpoint()), table);
    store
        .prepare_local()
        .await
        .expect("the test DynamoDB server answers");
    store
}

/// An SQS client for the same test server (moto serves both APIs on one port), and a fresh
/// queue on it: its URL.
pub async fn sqs_queue(name: &str) -> (aws_sdk_sqs::Client, String) {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "local", "local", None, None, "local",
        ))
        .endpoint_url(dynamodb_endpoint())
        .http_client(shared::store::dynamodb::client::aws_https_client())
        .build();
    let sqs = aws_sdk_sqs::Client::from_conf(config);
    let url = sqs
        .create_queue()
        .queue_name(format!("{name}-{}", ulid::Ulid::new()))
        .send()
        .await
        .expect("the test server makes a queue")
        .queue_url
        .expect("a queue URL");
    (sqs, url)
}

/// A loopback forwarder in front of the test DynamoDB server that keeps each request's
/// `X-Amz-Target` operation and body: what a test counts a path's writes by.
pub struct CountingDynamoDb {
    pub url: String,
    seen: std::sync::Arc<std::sync::Mutex<Vec<(String, serde_json::Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl CountingDynamoDb {
    pub async fn start() -> CountingDynamoDb {
        use http_body_util::{BodyExt, Full};
        use hyper::body::Bytes;
        let upstream: hyper::Uri = dynamodb_endpoint().parse().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<Full<Bytes>>();
        let kept = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (client, kept, upstream) = (client.clone(), kept.clone(), upstream.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |request: hyper::Request<hyper::body::Incoming>| {
                            let (client, kept, upstream) =
                                (client.clone(), kept.clone(), upstream.clone());
                            async move {
                                let (parts, body) = request.into_parts();
                                let body = body.collect().await?.to_bytes();
                                let target = parts
                                    .headers
                                    .get("x-amz-target")
                                    .and_then(|t| t.to_str().ok())
                                    .unwrap_or_default()
                                    .rsplit('.')
                                    .next()
                                    .unwrap_or_default()
                                    .to_string();
                                let parsed = serde_json::from_slice(&body)
                                    .unwrap_or(serde_json::Value::Null);
                                kept.lock().unwrap().push((target, parsed));
                                let mut forward =
                                    hyper::Request::builder().method(parts.method).uri(format!(
                                        "{}{}",
                                        upstream.to_string().trim_end_matches('/'),
                                        parts.uri.path()
                                    ));
                                for (name, value) in &parts.headers {
                                    forward = forward.header(name, value);
                                }
                                let answer = client
                                    .request(forward.body(Full::new(body)).unwrap())
                                    .await
                                    .expect("the test DynamoDB server answers");
                                let (parts, body) = answer.into_parts();
                                let body = body.collect().await?.to_bytes();
                                Ok::<_, hyper::Error>(hyper::Response::from_parts(
                                    parts,
                                    Full::new(body),
                                ))
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        CountingDynamoDb { url, seen, task }
    }

    /// The requests since the last call: each operation and its body.
    pub fn take(&self) -> Vec<(String, serde_json::Value)> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

impl Drop for CountingDynamoDb {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The keys (`PK`, `SK`) a write request names (every item of a transaction or batch).
pub fn written_keys(operation: &str, body: &serde_json::Value) -> Vec<(String, String)> {
    let key = |item: &serde_json::Value| {
        Some((
            item["PK"]["S"].as_str()?.to_string(),
            item["SK"]["S"].as_str()?.to_string(),
        ))
    };
    match operation {
        "PutItem" => key(&body["Item"]).into_iter().collect(),
        "UpdateItem" | "DeleteItem" => key(&body["Key"]).into_iter().collect(),
        "TransactWriteItems" => body["TransactItems"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| {
                let (_, action) = item.as_object()?.iter().next()?;
                key(&action["Item"]).or_else(|| key(&action["Key"]))
            })
            .collect(),
        "BatchWriteItem" => body["RequestItems"]
            .as_object()
            .into_iter()
            .flat_map(|tables| tables.values())
            .flat_map(|requests| requests.as_array().cloned().unwrap_or_default())
            .filter_map(|r| {
                key(&r["PutRequest"]["Item"]).or_else(|| key(&r["DeleteRequest"]["Key"]))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A KMS client for the same test server, and a fresh symmetric key on it: its id.
pub async fn kms_key() -> (aws_sdk_kms::Client, String) {
    let config = aws_sdk_kms::Config::builder()
        .behavior_version(aws_sdk_kms::config::BehaviorVersion::latest())
        .region(aws_sdk_kms::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_kms::config::Credentials::new(
            "local", "local", None, None, "local",
        ))
        .endpoint_url(dynamodb_endpoint())
        .http_client(shared::store::dynamodb::client::aws_https_client())
        .build();
    let kms = aws_sdk_kms::Client::from_conf(config);
    let key = kms
        .create_key()
        .description("webhook secrets (test)")
        .send()
        .await
        .expect("the test server makes a key")
        .key_metadata
        .expect("the key's metadata")
        .key_id;
    (kms, key)
}
