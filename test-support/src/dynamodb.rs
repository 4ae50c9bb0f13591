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
