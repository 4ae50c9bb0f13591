//! Helpers shared by the integration tests.
#![allow(dead_code)]

use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use shared::model::{Chain, Position, Protocol, Status};
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
    let store = DynamoDbStore::new(
        shared::store::dynamodb::local_client(&dynamodb_endpoint()),
        table,
    );
    store
        .prepare_local()
        .await
        .expect("the test DynamoDB server answers");
    store
}

pub fn unique_owner(prefix: &str) -> String {
    format!("{prefix}-{}", ulid::Ulid::new())
}

/// A stored position created at `millis` (ids are time-ordered like the server's).
pub fn position(owner: &str, status: Status, chain: Chain, millis: i64) -> Position {
    let created_at: DateTime<Utc> = DateTime::from_timestamp_millis(millis).unwrap();
    Position {
        id: ulid::Ulid::from_datetime(created_at.into()).to_string(),
        owner: owner.to_string(),
        chain,
        protocol: Protocol::UniswapV3,
        pool: "0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640".to_string(),
        status,
        tick_lower: -80000,
        tick_upper: -70000,
        liquidity: 1_000_000_000_000,
        cost_basis_usd: BigDecimal::from(100),
        fees_earned_usd: BigDecimal::from(0),
        created_at,
    }
}
