//! The pool catalog and its market state in the table, and the market source that serves it
//! cached per container.
//!
//! One item per pool (`PK = CATALOG`, `SK = chain#protocol#address`): `record` (the catalog
//! entry, JSON), `state` (the last state read from the chain, JSON) with its `height` (block or
//! slot, a number the conditional write compares). One item per tick a position uses
//! (`SK = chain#protocol#address#tick#<tick>`): `uses` (how many open positions use it; when
//! none does, `lingers`, the time it was released, until the series passes it, then the item
//! goes) and `fee` (the service's fee record of it, JSON). No pool has a
//! size or expression limit in reach, however many ticks it tracks. One query reads the whole
//! market. (Tables written before tick items held a `ticks` number set and `fee#<tick>`
//! attributes on the pool item: they are still read, as ticks in use.)

use super::errors::{
    build_error, classify, classify_conditional, classify_transaction, json_failure,
};
use super::item::{malformed, text};
use super::keys::{
    catalog_sort_key, pool_key, s, tick_key, Item, CATALOG_PK, DEPLOYMENTS_SK, TICK_INFIX,
};
use super::store::DynamoDbStore;
use crate::application::ports::{Market, StoreError, StoreResult};
use crate::domain::catalog::{Catalog, Deployment, Pool, PoolMarket, PoolRecord};
use crate::domain::fee_ticks::FeeTick;
use crate::domain::market::{MarketRules, PoolKey, PoolState, Succession};
use async_trait::async_trait;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, TransactWriteItem, Update};
use futures_util::future::try_join_all;
use futures_util::StreamExt;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// The pool item's legacy attributes holding fee records (before tick items).
const FEE_TICK_PREFIX: &str = "fee#";

/// Writes in one transaction at most (DynamoDB's limit).
const TRANSACTION_ITEMS: usize = 100;

fn fee_tick_value(record: &FeeTick) -> Result<AttributeValue, StoreError> {
    Ok(s(serde_json::to_string(record).map_err(json_failure)?))
}

/// A catalog pool item: the record and what the market keeps of the pool on the item itself.
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
            ..PoolMarket::default()
        },
    ))
}

/// A tick item: its tick, how many positions use it, its fee record if it has one, and when
/// it was released, if it lingers.
struct TickItem {
    tick: i32,
    uses: i64,
    record: Option<FeeTick>,
    lingers: Option<i64>,
}

fn tick_item(item: &Item) -> Result<TickItem, StoreError> {
    let sort_key = text(item, "SK")?;
    let tick = sort_key
        .rsplit_once(TICK_INFIX)
        .and_then(|(_, t)| t.parse::<i32>().ok())
        .ok_or_else(|| malformed("SK"))?;
    let uses = match item.get("uses") {
        None => 0,
        Some(AttributeValue::N(n)) => n.parse().map_err(|_| malformed("uses"))?,
        Some(_) => return Err(malformed("uses")),
    };
    let record = match item.get("fee") {
        None => None,
        Some(_) => Some(serde_json::from_str(text(item, "fee")?).map_err(json_failure)?),
    };
    let lingers = match item.get("lingers") {
        None => None,
        Some(AttributeValue::N(n)) => Some(n.parse().map_err(|_| malformed("lingers"))?),
        Some(_) => return Err(malformed("lingers")),
    };
    Ok(TickItem {
        tick,
        uses,
        record,
        lingers,
    })
}

/// Adds a tick item to its pool's market: tracked while a position uses it, or while it
/// lingers after the last one closed.
fn add_tick(market: &mut PoolMarket, item: TickItem) {
    let lingers = item.lingers.filter(|_| item.uses <= 0);
    if item.uses > 0 || lingers.is_some() {
        market.tracked_ticks.insert(item.tick);
        if let Some(record) = item.record {
            market.fee_ticks.insert(item.tick, record);
        }
    }
    if let Some(at) = lingers {
        market.lingering.insert(item.tick, at);
    }
}

impl DynamoDbStore {
    /// Loads catalog records into the table (the documented seeding step); existing entries
    /// are updated in place, their synced state and tracked ticks kept. Each keeps its place
    /// in the file (`rank`): prices route by catalog order (decision 21), not by sort key.
    pub async fn seed_catalog(&self, records: &[PoolRecord]) -> Result<(), StoreError> {
        for (rank, record) in records.iter().enumerate() {
            let body = serde_json::to_string(record).map_err(json_failure)?;
            let sort_key = catalog_sort_key(record.chain, record.protocol, &record.pool);
            self.client
                .update_item()
                .table_name(&self.table)
                .key("PK", s(CATALOG_PK))
                .key("SK", s(sort_key))
                .update_expression("SET #record = :record, #rank = :rank")
                .expression_attribute_names("#record", "record")
                .expression_attribute_names("#rank", "rank")
                .expression_attribute_values(":record", s(body))
                .expression_attribute_values(":rank", AttributeValue::N(rank.to_string()))
                .send()
                .await
                .map_err(classify)?;
        }
        Ok(())
    }

    /// Stores the protocols' deployments (one item beside the pools, replaced whole).
    pub async fn seed_deployments(&self, deployments: &[Deployment]) -> Result<(), StoreError> {
        let body = serde_json::to_string(deployments).map_err(json_failure)?;
        self.client
            .put_item()
            .table_name(&self.table)
            .item("PK", s(CATALOG_PK))
            .item("SK", s(DEPLOYMENTS_SK))
            .item("deployments", s(body))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// Reads the catalog with its states from the table.
    pub async fn load_catalog(&self, rules: impl Into<MarketRules>) -> Result<Catalog, StoreError> {
        let mut records = Vec::new();
        let mut markets = HashMap::new();
        let mut by_sort_key: HashMap<String, PoolKey> = HashMap::new();
        let mut deployments = Vec::new();
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
                let sort_key = text(item, "SK")?;
                if sort_key == DEPLOYMENTS_SK {
                    deployments =
                        serde_json::from_str(text(item, "deployments")?).map_err(json_failure)?;
                    continue;
                }
                if let Some((pool, _)) = sort_key.rsplit_once(TICK_INFIX) {
                    // After its pool's item: the sort keys share the pool's as a prefix. A pool
                    // gone from the catalog leaves its ticks unread.
                    if let Some(market) = by_sort_key.get(pool).and_then(|k| markets.get_mut(k)) {
                        add_tick(market, tick_item(item)?);
                    }
                    continue;
                }
                let (record, market) = pool_market(item)?;
                let key = PoolKey::new(record.chain, record.protocol, &record.pool);
                by_sort_key.insert(sort_key.to_string(), key.clone());
                markets.insert(key, market);
                // Discovered pools (no rank) after the seeded ones, in sort key order.
                let rank = match item.get("rank") {
                    Some(AttributeValue::N(n)) => n.parse().map_err(|_| malformed("rank"))?,
                    _ => u64::MAX,
                };
                records.push((rank, record));
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
        records.sort_by_key(|(rank, _)| *rank);
        let records: Vec<PoolRecord> = records.into_iter().map(|(_, r)| r).collect();
        Ok(Catalog::build(&records, markets, rules)
            .map_err(|e| StoreError::Failure(Box::new(e)))?
            .with_deployments(deployments))
    }
}

/// The catalog from the table, cached in the container for its TTL (the sync function reads it
/// uncached: a TTL of zero).
pub struct DynamoDbMarket {
    store: DynamoDbStore,
    ttl: Duration,
    rules: MarketRules,
    cached: Mutex<Option<(Instant, Arc<Catalog>)>>,
}

impl DynamoDbMarket {
    pub fn new(store: DynamoDbStore, ttl: Duration, rules: impl Into<MarketRules>) -> Self {
        DynamoDbMarket {
            store,
            ttl,
            rules: rules.into(),
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
        let catalog = Arc::new(self.store.load_catalog(self.rules).await?);
        *cached = Some((Instant::now(), catalog.clone()));
        Ok(catalog)
    }

    /// A conditional `PutItem` of the pool's catalog item: a pool already there (the catalog's,
    /// or discovered before) is left as it is.
    async fn discover(&self, record: &PoolRecord) -> StoreResult<()> {
        let body = serde_json::to_string(record).map_err(json_failure)?;
        let result = self
            .store
            .client
            .put_item()
            .table_name(&self.store.table)
            .item("PK", s(CATALOG_PK))
            .item(
                "SK",
                s(catalog_sort_key(
                    record.chain,
                    record.protocol,
                    &record.pool,
                )),
            )
            .item("record", s(body))
            .condition_expression("attribute_not_exists(PK)")
            .send()
            .await;
        match result {
            Ok(_) => {
                // This container's next catalog read sees the pool (and the prices it routes).
                *self.cached.lock().await = None;
                Ok(())
            }
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(classify(e)),
        }
    }

    async fn track_ticks(
        &self,
        pool: &Pool,
        ticks: [i32; 2],
        first_use: &[FeeTick],
    ) -> StoreResult<PoolMarket> {
        // The records and the state must be of one moment: a sync storing a state between the
        // two reads would pair records of one state with another; then read again.
        for _ in 0..3 {
            let before = self.stored_state(pool).await?;
            let uses = ticks.map(|tick| self.use_tick(pool, tick, first_use));
            let used = try_join_all(uses).await?;
            let state = self.stored_state(pool).await?;
            if before.as_ref().map(|s| s.height) != state.as_ref().map(|s| s.height) {
                continue;
            }
            let mut market = PoolMarket {
                state,
                ..PoolMarket::default()
            };
            for tick in used {
                add_tick(&mut market, tick);
            }
            return Ok(market);
        }
        Err(StoreError::Unavailable(
            "the pool's state kept changing while its ticks were tracked".into(),
        ))
    }

    async fn release_ticks(
        &self,
        pool: &Pool,
        ticks: [i32; 2],
        released_at: Option<i64>,
    ) -> StoreResult<()> {
        for tick in ticks {
            let released = self
                .store
                .client
                .update_item()
                .table_name(&self.store.table)
                .set_key(Some(tick_key(pool, tick)))
                .update_expression("ADD uses :minus_one")
                .condition_expression("uses > :zero")
                .expression_attribute_values(":minus_one", AttributeValue::N("-1".into()))
                .expression_attribute_values(":zero", AttributeValue::N("0".into()))
                .return_values(ReturnValue::UpdatedNew)
                .send()
                .await;
            let left = match released {
                Ok(output) => output
                    .attributes()
                    .and_then(|a| a.get("uses"))
                    .and_then(|n| n.as_n().ok())
                    .and_then(|n| n.parse::<i64>().ok()),
                // Not tracked as an item (a table from before tick items): nothing to release.
                Err(e) if e.code() == Some("ConditionalCheckFailedException") => None,
                Err(e) => return Err(classify(e)),
            };
            if left != Some(0) {
                continue;
            }
            // Unless a new position took it up meanwhile: kept, read until the series passes
            // the release, or gone.
            let written = match released_at {
                Some(at) => self
                    .store
                    .client
                    .update_item()
                    .table_name(&self.store.table)
                    .set_key(Some(tick_key(pool, tick)))
                    .update_expression("SET lingers = :at")
                    .condition_expression("uses <= :zero")
                    .expression_attribute_values(":at", AttributeValue::N(at.to_string()))
                    .expression_attribute_values(":zero", AttributeValue::N("0".into()))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(classify_conditional),
                None => self.drop_tick(pool, tick, None).await,
            };
            match written {
                Ok(()) | Err(StoreError::Conflict) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn expire_ticks(&self, pool: &Pool, through: i64) -> StoreResult<()> {
        for (&tick, _) in pool.lingering.iter().filter(|(_, at)| **at <= through) {
            match self.drop_tick(pool, tick, Some(through)).await {
                // Taken up again, or released again later: it stays.
                Ok(()) | Err(StoreError::Conflict) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn save_state(
        &self,
        pool: &Pool,
        state: &PoolState,
        fee_ticks: &[FeeTick],
        succession: Succession,
    ) -> StoreResult<()> {
        // The tick values read serve the sync's records, which the tick items hold: the pool's
        // item keeps the state without them, its size independent of the ticks tracked.
        let stored = PoolState {
            ticks: Vec::new(),
            ..state.clone()
        };
        let body = serde_json::to_string(&stored).map_err(json_failure)?;
        let height = AttributeValue::N(state.height.to_string());
        let update = Update::builder()
            .table_name(&self.store.table)
            .set_key(Some(pool_key(pool)))
            .update_expression("SET #state = :state, height = :height")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":state", s(body))
            .expression_attribute_values(":height", height.clone());
        let update = match succession {
            Succession::Next => update.condition_expression(
                "attribute_exists(PK) AND (attribute_not_exists(height) OR height < :height)",
            ),
            Succession::Replaces { height } => update
                .condition_expression("attribute_exists(PK) AND height = :replaced")
                .expression_attribute_values(":replaced", AttributeValue::N(height.to_string())),
        };
        let mut items = vec![TransactWriteItem::builder()
            .update(update.build().map_err(build_error)?)
            .build()];
        // Only the records that changed (a crossing, the pool's own values moving): most syncs
        // write none, and those few go in the state's own transaction. Past 99 (many ticks
        // crossed at once) the rest follow it one by one: a reader between sees the new state
        // with some records of the last, which it reads across the crossing as the service
        // does any record (fee_ticks::FeeTick::outside_at).
        let changed: Vec<&FeeTick> = fee_ticks
            .iter()
            .filter(|r| {
                pool.fee_ticks
                    .get(&r.tick)
                    .is_none_or(|old| !same_record(old, r))
            })
            .collect();
        let (together, after) = changed.split_at(changed.len().min(TRANSACTION_ITEMS - 1));
        for record in together {
            let write = Update::builder()
                .table_name(&self.store.table)
                .set_key(Some(tick_key(pool, record.tick)))
                .update_expression("SET fee = :fee")
                .expression_attribute_values(":fee", fee_tick_value(record)?)
                .build()
                .map_err(build_error)?;
            items.push(TransactWriteItem::builder().update(write).build());
        }
        self.store
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
            .map_err(classify_transaction)?;
        // This container's next catalog read sees the state (a wallet read that has just
        // synced the pools it discovered prices with them).
        *self.cached.lock().await = None;
        let mut writes = Vec::with_capacity(after.len());
        for record in after {
            let write = self
                .store
                .client
                .update_item()
                .table_name(&self.store.table)
                .set_key(Some(tick_key(pool, record.tick)))
                .update_expression("SET fee = :fee")
                .expression_attribute_values(":fee", fee_tick_value(record)?);
            writes.push(write.send());
        }
        let results: Vec<_> = futures_util::stream::iter(writes)
            .buffer_unordered(16)
            .collect()
            .await;
        results
            .into_iter()
            .try_for_each(|r| r.map(|_| ()).map_err(classify))
    }
}

/// Whether two records of a tick say the same: the side of the tick they are on, their
/// outside values, and where they follow the pool's own values with which offsets.
fn same_record(a: &FeeTick, b: &FeeTick) -> bool {
    let side = |r: &FeeTick| r.at_tick >= r.tick;
    side(a) == side(b)
        && (a.outside0, a.outside1, a.on_chain, a.offset0, a.offset1)
            == (b.outside0, b.outside1, b.on_chain, b.offset0, b.offset1)
}

impl DynamoDbMarket {
    /// The pool's stored state, read consistently.
    async fn stored_state(&self, pool: &Pool) -> StoreResult<Option<PoolState>> {
        let output = self
            .store
            .client
            .get_item()
            .table_name(&self.store.table)
            .set_key(Some(pool_key(pool)))
            .projection_expression("#state")
            .expression_attribute_names("#state", "state")
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        match output.item().and_then(|i| i.get("state")) {
            None => Ok(None),
            Some(value) => {
                let json = value.as_s().map_err(|_| malformed("state"))?;
                Ok(Some(serde_json::from_str(json).map_err(json_failure)?))
            }
        }
    }

    /// One more position uses `tick`; its record starts as `first_use` has it if it has none.
    /// Deletes a tick item no position uses (`Conflict` if one took it up), one lingering only
    /// if released at or before `through`, where given.
    async fn drop_tick(&self, pool: &Pool, tick: i32, through: Option<i64>) -> StoreResult<()> {
        let mut delete = self
            .store
            .client
            .delete_item()
            .table_name(&self.store.table)
            .set_key(Some(tick_key(pool, tick)))
            .expression_attribute_values(":zero", AttributeValue::N("0".into()));
        delete = match through {
            Some(at) => delete
                .condition_expression("uses <= :zero AND lingers <= :through")
                .expression_attribute_values(":through", AttributeValue::N(at.to_string())),
            None => delete.condition_expression("uses <= :zero"),
        };
        delete
            .send()
            .await
            .map(|_| ())
            .map_err(classify_conditional)
    }

    async fn use_tick(
        &self,
        pool: &Pool,
        tick: i32,
        first_use: &[FeeTick],
    ) -> StoreResult<TickItem> {
        let mut update = self
            .store
            .client
            .update_item()
            .table_name(&self.store.table)
            .set_key(Some(tick_key(pool, tick)))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .return_values(ReturnValue::AllNew);
        // A record that exists stays: positions' checkpoints rest on it.
        let expression = match first_use.iter().find(|r| r.tick == tick) {
            Some(record) => {
                update = update.expression_attribute_values(":fee", fee_tick_value(record)?);
                "ADD uses :one SET fee = if_not_exists(fee, :fee)"
            }
            None => "ADD uses :one",
        };
        let output = update
            .update_expression(expression)
            .send()
            .await
            .map_err(classify)?;
        let item = output
            .attributes()
            .ok_or_else(|| malformed("tick item after the update"))?;
        tick_item(item)
    }
}
