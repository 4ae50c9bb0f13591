//! `DynamoDbStore` on a real DynamoDB-API server (moto, started by the test command): the store
//! contract every store passes, the bulk import, and the catalog cache.

use shared::market::Freshness;
use shared::model::Status;
use shared::store::PositionStore;
use test_support::contract::{assert_every_list, mixed};
use test_support::dynamodb::dynamodb_store;
use test_support::fixtures::unique_owner;

test_support::store_contract!(
    contract,
    test_support::dynamodb::dynamodb_store().await,
    200
);

/// The benchmark's bulk import writes what `insert` writes: the same lists and counts.
#[tokio::test]
async fn dynamodb_bulk_import_matches_transactional_inserts() {
    let store = dynamodb_store().await;
    let owner = unique_owner("bulk");
    let positions = mixed(&owner, 40);
    store.bulk_import(&owner, &positions).await.unwrap();
    assert_every_list(&store, &owner, &positions).await;
    let open = store.open_positions(&owner).await.unwrap();
    assert_eq!(
        open.len(),
        positions
            .iter()
            .filter(|p| p.status != Status::Closed)
            .count()
    );
}

/// The market state is read from the table and reused for the cache's lifetime only, so moved
/// prices reach a warm container within the TTL.
#[tokio::test]
async fn dynamodb_catalog_is_cached_for_its_ttl() {
    use shared::config::DEFAULT_STALE_AFTER;
    use shared::store::{DynamoDbMarket, Market};
    use std::time::Duration;

    let store = dynamodb_store().await;
    let cached = DynamoDbMarket::new(
        store.clone(),
        Duration::from_secs(3600),
        Freshness::live(DEFAULT_STALE_AFTER),
    );
    let fresh = DynamoDbMarket::new(
        store.clone(),
        Duration::ZERO,
        Freshness::live(DEFAULT_STALE_AFTER),
    );
    let before = cached.catalog().await.unwrap();
    assert_eq!(
        before.pools.len(),
        shared::catalog::embedded_records().len()
    );

    let mut records = shared::catalog::embedded_records();
    records[0].current_price = "3100".into();
    records[0].token1.price_usd = "3100".into();
    store.seed_catalog(&records[..1]).await.unwrap();

    let price = |c: &shared::catalog::Catalog| {
        c.pools
            .iter()
            .find(|p| p.id == records[0].pool)
            .unwrap()
            .current_price
            .to_string()
    };
    assert_eq!(
        price(&cached.catalog().await.unwrap()),
        price(&before),
        "within the TTL"
    );
    assert_eq!(
        price(&fresh.catalog().await.unwrap()),
        "3100",
        "after the TTL"
    );
}

/// A table from before page copies (its positions without them) lists every position again
/// once backfilled, and the backfill changes nothing a second time.
#[tokio::test]
async fn dynamodb_backfilled_pages_list_a_tables_older_positions() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let store = dynamodb_store().await;
    let owner = unique_owner("backfill");
    let positions = mixed(&owner, 24);
    store.bulk_import(&owner, &positions).await.unwrap();
    // The table as it was: no page copies.
    let copies = store
        .client()
        .scan()
        .table_name(store.table())
        .filter_expression("begins_with(PK, :pg)")
        .expression_attribute_values(":pg", AttributeValue::S("PG#".into()))
        .send()
        .await
        .unwrap();
    assert_eq!(copies.items().len(), 24 * 8);
    for copy in copies.items() {
        store
            .client()
            .delete_item()
            .table_name(store.table())
            .key("PK", copy["PK"].clone())
            .key("SK", copy["SK"].clone())
            .send()
            .await
            .unwrap();
    }
    let first = shared::model::PageRequest {
        offset: 0,
        limit: 20,
    };
    let page = store.list(&owner, Default::default(), first).await.unwrap();
    assert!(page.items.is_empty(), "no copies, no page");
    assert_eq!(store.backfill_pages().await.unwrap(), 24);
    assert_every_list(&store, &owner, &positions).await;
    assert_eq!(store.backfill_pages().await.unwrap(), 24);
    assert_every_list(&store, &owner, &positions).await;
}

#[tokio::test]
async fn history_appends_once_and_pages_in_chain_order() {
    let store = dynamodb_store().await;
    test_support::history::history_appends_once_and_pages_in_chain_order(&store).await;
}

#[tokio::test]
async fn the_alert_store_contract_on_dynamodb() {
    let store = dynamodb_store().await;
    test_support::alerts::alert_store_keeps_its_contract(&store).await;
}

#[tokio::test]
async fn series_points_are_kept_per_pool_and_boundary() {
    let store = dynamodb_store().await;
    test_support::history::series_points_are_kept_per_pool_and_boundary(&store).await;
}

#[tokio::test]
async fn series_follows_stakes() {
    let store = dynamodb_store().await;
    test_support::history::series_follows_stakes(&store).await;
}
