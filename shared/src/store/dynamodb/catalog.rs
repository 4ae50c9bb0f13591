//! The pool catalog and its market state in the table, and the market source that serves it
//! cached per container.
//!
//! One item per pool (`PK = CATALOG`, `SK = chain#protocol#address`): `record` (the catalog
//! entry, JSON), `state` (the last state read from the chain, JSON) with its `height` (block or
//! slot, a number the conditional write compares), `ticks` (a number set of the ticks
//! positions use) and one `fee#<tick>` attribute per tracked tick (the service's fee record of
//! it, JSON). One query reads the whole market.

use super::errors::classify;
use super::item::{malformed, text};
use super::keys::{catalog_sort_key, s, Item, CATALOG_PK};
use super::store::DynamoDbStore;
use crate::catalog::{Catalog, Pool, PoolMarket, PoolRecord};
use crate::fee_ticks::FeeTick;
use crate::market::{Freshness, PoolKey, PoolState, Succession};
use crate::store::traits::{Market, StoreError, StoreResult};
use async_trait::async_trait;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

fn json_failure(e: serde_json::Error) -> StoreError {
    StoreError::Failure(Box::new(e))
}

fn pool_key(pool: &Pool) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("PK".into(), s(CATALOG_PK)),
        (
            "SK".into(),
            s(catalog_sort_key(pool.chain, pool.protocol, &pool.id)),
        ),
    ])
}

/// The attribute holding the fee record of `tick` (top-level, so a write needs no parent map).
fn fee_tick_attribute(tick: i32) -> String {
    format!("{FEE_TICK_PREFIX}{tick}")
}

const FEE_TICK_PREFIX: &str = "fee#";

fn fee_tick_value(record: &FeeTick) -> Result<AttributeValue, StoreError> {
    Ok(s(serde_json::to_string(record).map_err(json_failure)?))
}

/// A catalog item: the record and what the market keeps of the pool.
fn pool_market(item: &Item) -> Result<(PoolRecord, PoolMarket), StoreError> {
    let record: PoolRecord = serde_json::from_str(text(item, "record")?).map_err(json_failure)?;
    let state = match item.get("state") {
        None => None,
        Some(_) => {
            Some(serde_json::from_str::<PoolState>(text(item, "state")?).map_err(json_failure)?)
        }
    };
    let tracked_ticks = match item.get("ticks") {
        None => Default::default(),
        Some(AttributeValue::Ns(ticks)) => ticks
            .iter()
            .map(|t| t.parse::<i32>().map_err(|_| malformed("ticks")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(malformed("ticks")),
    };
    let mut fee_ticks = BTreeMap::new();
    for (name, value) in item {
        if name.starts_with(FEE_TICK_PREFIX) {
            let json = value.as_s().map_err(|_| malformed(name))?;
            let fee_tick: FeeTick = serde_json::from_str(json).map_err(json_failure)?;
            fee_ticks.insert(fee_tick.tick, fee_tick);
        }
    }
    Ok((
        record,
        PoolMarket {
            state,
            tracked_ticks,
            fee_ticks,
        },
    ))
}

impl DynamoDbStore {
    /// Loads catalog records into the table (the documented seeding step); existing entries
    /// are updated in place, their synced state and tracked ticks kept.
    pub async fn seed_catalog(&self, records: &[PoolRecord]) -> Result<(), StoreError> {
        for record in records {
            let body = serde_json::to_string(record).map_err(json_failure)?;
            let sort_key = catalog_sort_key(record.chain, record.protocol, &record.pool);
            self.client
                .update_item()
                .table_name(&self.table)
                .key("PK", s(CATALOG_PK))
                .key("SK", s(sort_key))
                .update_expression("SET #record = :record")
                .expression_attribute_names("#record", "record")
                .expression_attribute_values(":record", s(body))
                .send()
                .await
                .map_err(classify)?;
        }
        Ok(())
    }

    /// Reads the catalog with its states from the table.
    pub async fn load_catalog(&self, freshness: Freshness) -> Result<Catalog, StoreError> {
        let mut records = Vec::new();
        let mut markets = HashMap::new();
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
                let (record, market) = pool_market(item)?;
                let key = PoolKey::new(record.chain, record.protocol, &record.pool);
                markets.insert(key, market);
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
        Catalog::build(&records, markets, freshness).map_err(|e| StoreError::Failure(Box::new(e)))
    }
}

/// The catalog from the table, cached in the container for its TTL (the sync function reads it
/// uncached: a TTL of zero).
pub struct DynamoDbMarket {
    store: DynamoDbStore,
    ttl: Duration,
    freshness: Freshness,
    cached: Mutex<Option<(Instant, Arc<Catalog>)>>,
}

impl DynamoDbMarket {
    pub fn new(store: DynamoDbStore, ttl: Duration, freshness: Freshness) -> Self {
        DynamoDbMarket {
            store,
            ttl,
            freshness,
            cached: Mutex::new(None),
        }
    }
}

#[async_trait]
impl Market for DynamoDbMarket {
    async fn catalog(&self) -> StoreResult<Arc<Catalog>> {
        let mut cached = self.cached.lock().await;
        if let Some((loaded, catalog)) = cached.as_ref() {
            if loaded.elapsed() < self.ttl {
                return Ok(catalog.clone());
            }
        }
        let catalog = Arc::new(self.store.load_catalog(self.freshness).await?);
        *cached = Some((Instant::now(), catalog.clone()));
        Ok(catalog)
    }

    async fn track_ticks(
        &self,
        pool: &Pool,
        ticks: [i32; 2],
        first_use: &[FeeTick],
    ) -> StoreResult<PoolMarket> {
        let mut update = self
            .store
            .client
            .update_item()
            .table_name(&self.store.table)
            .set_key(Some(pool_key(pool)))
            .condition_expression("attribute_exists(PK)")
            .expression_attribute_values(
                ":ticks",
                AttributeValue::Ns(ticks.iter().map(i32::to_string).collect()),
            )
            .return_values(ReturnValue::AllNew);
        // A record that exists stays: positions' checkpoints rest on it.
        let mut sets = Vec::new();
        for (i, record) in first_use.iter().enumerate() {
            sets.push(format!("#f{i} = if_not_exists(#f{i}, :f{i})"));
            update = update
                .expression_attribute_names(format!("#f{i}"), fee_tick_attribute(record.tick))
                .expression_attribute_values(format!(":f{i}"), fee_tick_value(record)?);
        }
        let expression = if sets.is_empty() {
            "ADD ticks :ticks".to_string()
        } else {
            format!("ADD ticks :ticks SET {}", sets.join(", "))
        };
        let output = update
            .update_expression(expression)
            .send()
            .await
            .map_err(classify)?;
        let item = output
            .attributes()
            .ok_or_else(|| malformed("pool item after the update"))?;
        Ok(pool_market(item)?.1)
    }

    async fn save_state(
        &self,
        pool: &Pool,
        state: &PoolState,
        fee_ticks: &[FeeTick],
        succession: Succession,
    ) -> StoreResult<()> {
        let body = serde_json::to_string(state).map_err(json_failure)?;
        let mut update = self
            .store
            .client
            .update_item()
            .table_name(&self.store.table)
            .set_key(Some(pool_key(pool)));
        let mut expression = "SET #state = :state, height = :height".to_string();
        for (i, record) in fee_ticks.iter().enumerate() {
            expression.push_str(&format!(", #f{i} = :f{i}"));
            update = update
                .expression_attribute_names(format!("#f{i}"), fee_tick_attribute(record.tick))
                .expression_attribute_values(format!(":f{i}"), fee_tick_value(record)?);
        }
        let update = match succession {
            Succession::Next => update.condition_expression(
                "attribute_exists(PK) AND (attribute_not_exists(height) OR height < :height)",
            ),
            Succession::Replaces { height } => update
                .condition_expression("attribute_exists(PK) AND height = :replaced")
                .expression_attribute_values(":replaced", AttributeValue::N(height.to_string())),
        };
        let result = update
            .update_expression(expression)
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":state", s(body))
            .expression_attribute_values(":height", AttributeValue::N(state.height.to_string()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => {
                Err(StoreError::Conflict)
            }
            Err(e) => Err(classify(e)),
        }
    }
}
