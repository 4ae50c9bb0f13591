//! Administration: creating the table and loading it (local servers, seeding, backfills).
//! Production creates the table from `template.yaml`.

use super::errors::{back_off, build_error, classify};
use super::item::{page_body, page_copy, position_from, position_item};
use super::keys::{counter_attribute, counter_key, list_key, variants, Item};
use super::store::DynamoDbStore;
use crate::application::ports::StoreError;
use crate::domain::market::Freshness;
use crate::domain::model::Position;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, PutRequest,
    ScalarAttributeType, WriteRequest,
};
use std::collections::HashMap;

impl DynamoDbStore {
    /// Creates the table if it is missing (local servers; production uses `template.yaml`).
    pub async fn ensure_table(&self) -> Result<(), StoreError> {
        let exists = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await;
        if exists.is_ok() {
            return Ok(());
        }
        let attribute = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(build_error)
        };
        let key = |name: &str, kind| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .map_err(build_error)
        };
        self.client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attribute("PK")?)
            .attribute_definitions(attribute("SK")?)
            .key_schema(key("PK", KeyType::Hash)?)
            .key_schema(key("SK", KeyType::Range)?)
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// Creates the table if needed and seeds the catalog if it has none (local runs).
    pub async fn prepare_local(&self) -> Result<(), StoreError> {
        self.ensure_table().await?;
        if self.load_catalog(Freshness::Snapshot).await.is_err() {
            self.seed_catalog(&crate::domain::catalog::embedded_records())
                .await?;
            self.seed_deployments(&crate::domain::catalog::embedded_deployments())
                .await?;
        }
        Ok(())
    }

    /// Writes positions of a new owner in bulk (`BatchWriteItem`), with the same items and
    /// counters `insert` writes, but not atomically: for backfills and benchmarks into an
    /// otherwise idle table, where one transaction per position would be needlessly slow.
    pub async fn bulk_import(&self, owner: &str, positions: &[Position]) -> Result<(), StoreError> {
        let mut items = Vec::new();
        let mut counts: HashMap<String, u64> = HashMap::new();
        for position in positions.iter().filter(|p| p.owner == owner) {
            let item = position_item(position);
            let every = variants(position.status, position.chain, position.source());
            let body = page_body(&item)?;
            for v in &every {
                items.push(page_copy(&body, v, owner, &position.id));
            }
            items.push(item);
            for v in every {
                items.push(list_key(&v, owner, &position.id));
                *counts.entry(counter_attribute(&v)).or_default() += 1;
            }
        }
        let mut counter = counter_key(owner);
        counter.extend(
            counts
                .into_iter()
                .map(|(name, n)| (name, AttributeValue::N(n.to_string()))),
        );
        items.push(counter);
        self.put_all(&items).await
    }

    /// Writes the page copies of every position in the table that lacks them (a table from
    /// before page copies: decision 51): one `Scan` of the position items, paged, and
    /// their copies in batches. Idempotent: a copy written again is the same item. Run on an
    /// idle table, as the bulk import is. Returns how many positions it copied.
    pub async fn backfill_pages(&self) -> Result<u64, StoreError> {
        let mut start = None;
        let mut copied = 0;
        loop {
            let page = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("begins_with(PK, :user) AND begins_with(SK, :position)")
                .expression_attribute_values(":user", AttributeValue::S("U#".into()))
                .expression_attribute_values(":position", AttributeValue::S("P#".into()))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            let mut copies = Vec::new();
            for item in page.items() {
                let position = position_from(item)?;
                let body = page_body(item)?;
                for v in variants(position.status, position.chain, position.source()) {
                    copies.push(page_copy(&body, &v, &position.owner, &position.id));
                }
                copied += 1;
            }
            self.put_all(&copies).await?;
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                return Ok(copied);
            }
        }
    }

    /// `items` put in batches of 25, unprocessed ones retried with backoff.
    pub(super) async fn put_all(&self, items: &[Item]) -> Result<(), StoreError> {
        for chunk in items.chunks(25) {
            let mut pending: Vec<WriteRequest> = chunk
                .iter()
                .map(|item| {
                    let put = PutRequest::builder()
                        .set_item(Some(item.clone()))
                        .build()
                        .map_err(build_error)?;
                    Ok(WriteRequest::builder().put_request(put).build())
                })
                .collect::<Result<_, StoreError>>()?;
            let mut attempt = 0u32;
            while !pending.is_empty() {
                back_off(&mut attempt, "BatchWriteItem left items unprocessed").await?;
                let batch = self.client.batch_write_item();
                let request = batch.request_items(&self.table, pending);
                let output = request.send().await.map_err(classify)?;
                pending = output
                    .unprocessed_items()
                    .and_then(|u| u.get(&self.table))
                    .cloned()
                    .unwrap_or_default();
            }
        }
        Ok(())
    }
}
