//! The pool catalog and its market state in the table, and the market source that serves it
//! cached per container.

use super::errors::classify;
use super::item::text;
use super::keys::{catalog_sort_key, s, CATALOG_PK};
use super::store::DynamoDbStore;
use crate::catalog::{Catalog, PoolRecord};
use crate::store::traits::{Market, StoreError};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

impl DynamoDbStore {
    /// Loads catalog records into the table (the documented seeding step); existing entries
    /// are replaced, so re-running it updates the market state.
    pub async fn seed_catalog(&self, records: &[PoolRecord]) -> Result<(), StoreError> {
        for record in records {
            let body =
                serde_json::to_string(record).map_err(|e| StoreError::Failure(Box::new(e)))?;
            let sort_key = catalog_sort_key(record.chain, record.protocol, &record.pool);
            self.client
                .put_item()
                .table_name(&self.table)
                .item("PK", s(CATALOG_PK))
                .item("SK", s(sort_key))
                .item("record", s(body))
                .send()
                .await
                .map_err(classify)?;
        }
        Ok(())
    }

    /// Reads the catalog from the table.
    pub async fn load_catalog(&self) -> Result<Catalog, StoreError> {
        let mut records = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk")
                .expression_attribute_values(":pk", s(CATALOG_PK))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in page.items() {
                let record: PoolRecord = serde_json::from_str(text(item, "record")?)
                    .map_err(|e| StoreError::Failure(Box::new(e)))?;
                records.push(record);
            }
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }
        if records.is_empty() {
            return Err(StoreError::Failure(
                "the catalog is empty: run the seed step".into(),
            ));
        }
        Catalog::from_records(&records).map_err(|e| StoreError::Failure(Box::new(e)))
    }
}

/// The catalog from the table, cached in the container for its TTL.
pub struct DynamoDbMarket {
    store: DynamoDbStore,
    ttl: Duration,
    cached: Mutex<Option<(Instant, Arc<Catalog>)>>,
}

impl DynamoDbMarket {
    pub fn new(store: DynamoDbStore, ttl: Duration) -> Self {
        DynamoDbMarket {
            store,
            ttl,
            cached: Mutex::new(None),
        }
    }
}

#[async_trait]
impl Market for DynamoDbMarket {
    async fn catalog(&self) -> Result<Arc<Catalog>, StoreError> {
        let mut cached = self.cached.lock().await;
        if let Some((loaded, catalog)) = cached.as_ref() {
            if loaded.elapsed() < self.ttl {
                return Ok(catalog.clone());
            }
        }
        let catalog = Arc::new(self.store.load_catalog().await?);
        *cached = Some((Instant::now(), catalog.clone()));
        Ok(catalog)
    }
}
