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
