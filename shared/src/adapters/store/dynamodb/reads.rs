//! The store's reads: queries page after page (list entries, page items), positions by key in
//! batches, one item by key, and the owner's counters; each counted by the read metrics when
//! they are on.

use super::errors::{back_off, build_error, classify};
use super::item::{malformed, position_from, position_from_page, text};
use super::item::{realized_of, REALIZED_COST_BASIS, REALIZED_PNL};
use super::keys::{
    counter_attribute, counter_key, page_key, page_pk, position_key, s, variant, Item,
};
use super::metrics::ReadKind;
use super::store::DynamoDbStore;
use crate::application::ports::{PortfolioInputs, StoreError, StoreResult};
use crate::domain::model::{Filter, Position, Source, Status};
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use std::collections::HashMap;

/// Largest number of keys one `BatchGetItem` takes.
const BATCH_GET_LIMIT: usize = 100;

impl DynamoDbStore {
    /// Up to `wanted` items of partition `pk` (consistent, key order, newest first when
    /// `newest_first`), after the key `start` when given; page after page, each counted as
    /// `kind`.
    pub(super) async fn query_items(
        &self,
        pk: String,
        start: Option<Item>,
        newest_first: bool,
        wanted: u64,
        kind: ReadKind,
    ) -> StoreResult<Vec<Item>> {
        let mut items = Vec::new();
        let mut start = start;
        while (items.len() as u64) < wanted {
            let remaining = wanted - items.len() as u64;
            self.meter.request();
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk")
                .expression_attribute_values(":pk", s(pk.clone()))
                .scan_index_forward(!newest_first)
                .consistent_read(true)
                .limit(i32::try_from(remaining).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            self.meter.items(kind, page.items(), false);
            items.extend(page.items().iter().cloned());
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }
        Ok(items)
    }

    /// The key-only entries of partition `pk` (consistent, key order, newest first when
    /// `newest_first`): up to `wanted`, page after page.
    pub(super) async fn entries(
        &self,
        pk: String,
        newest_first: bool,
        wanted: u64,
    ) -> StoreResult<Vec<Item>> {
        self.query_items(pk, None, newest_first, wanted, ReadKind::ListKeys)
            .await
    }

    /// Up to `wanted` positions of `variant`, newest first, from its page items: after the
    /// position `after` when given.
    pub(super) async fn page_items(
        &self,
        variant: &str,
        owner: &str,
        after: Option<&str>,
        wanted: u64,
    ) -> StoreResult<Vec<Position>> {
        let start = after.map(|id| page_key(variant, owner, id));
        let pk = page_pk(variant, owner);
        self.query_items(pk, start, true, wanted, ReadKind::PositionItems)
            .await?
            .iter()
            .map(|item| position_from_page(item, owner))
            .collect()
    }

    /// The list entries of one variant, newest first: up to `wanted` ids.
    pub(super) async fn list_ids(
        &self,
        pk: String,
        wanted: u64,
    ) -> Result<Vec<String>, StoreError> {
        self.entries(pk, true, wanted)
            .await?
            .iter()
            .map(|item| text(item, "SK").map(str::to_string))
            .collect()
    }

    /// Full items for `ids`, in the order given; `UnprocessedKeys` are retried with backoff.
    pub(super) async fn fetch_positions(
        &self,
        owner: &str,
        ids: &[String],
    ) -> StoreResult<Vec<Position>> {
        let mut found: HashMap<String, Position> = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(BATCH_GET_LIMIT) {
            let mut pending: Vec<Item> = chunk.iter().map(|id| position_key(owner, id)).collect();
            let mut attempt = 0u32;
            while !pending.is_empty() {
                back_off(&mut attempt, "BatchGetItem left keys unprocessed").await?;
                let keys = KeysAndAttributes::builder()
                    .set_keys(Some(pending))
                    .consistent_read(true)
                    .build()
                    .map_err(build_error)?;
                self.meter.request();
                let output = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, keys)
                    .send()
                    .await
                    .map_err(classify)?;
                let items = output
                    .responses()
                    .and_then(|r| r.get(&self.table))
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                self.meter.items(ReadKind::PositionItems, items, true);
                for item in items {
                    let position = position_from(item)?;
                    found.insert(position.id.clone(), position);
                }
                pending = output
                    .unprocessed_keys()
                    .and_then(|u| u.get(&self.table))
                    .map(|k| k.keys().to_vec())
                    .unwrap_or_default();
            }
        }
        // A listed id without its position would mean a torn write, which transactions rule out.
        ids.iter()
            .map(|id| {
                found
                    .remove(id)
                    .ok_or_else(|| malformed("list entry without position"))
            })
            .collect()
    }

    /// One item by key, strongly consistent, with only `attributes` when some are named.
    pub(super) async fn item(&self, key: Item, attributes: &[&str]) -> StoreResult<Option<Item>> {
        let mut request = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .consistent_read(true);
        if !attributes.is_empty() {
            let names: Vec<String> = (0..attributes.len()).map(|i| format!("#p{i}")).collect();
            request = request.projection_expression(names.join(", "));
            for (name, attribute) in names.iter().zip(attributes) {
                request = request.expression_attribute_names(name, *attribute);
            }
        }
        Ok(request.send().await.map_err(classify)?.item().cloned())
    }

    /// The owner's counters item with only `attributes` (empty when it does not exist yet).
    pub(super) async fn counters(&self, owner: &str, attributes: &[&str]) -> StoreResult<Item> {
        self.meter.request();
        let item = self
            .item(counter_key(owner), attributes)
            .await?
            .unwrap_or_default();
        self.meter
            .items(ReadKind::CounterItems, std::slice::from_ref(&item), true);
        Ok(item)
    }

    pub(super) async fn count(&self, owner: &str, variant: &str) -> Result<u64, StoreError> {
        let attribute = counter_attribute(variant);
        let item = self.counters(owner, &[&attribute]).await?;
        match item.get(&attribute) {
            Some(AttributeValue::N(n)) => n.parse().map_err(|_| malformed("counter")),
            _ => Ok(0),
        }
    }

    /// The counters item first (the realized totals and how many positions are pending and
    /// closed on chain), then one `Query` of each page partition that holds any: three
    /// requests for a book with pending offers, two without, one more with wallet positions
    /// closed on chain (each `Query` up to 1 MB).
    pub(super) async fn portfolio_reads(&self, owner: &str) -> StoreResult<PortfolioInputs> {
        let of = |status, source| {
            variant(Filter {
                status: Some(status),
                chain: None,
                source,
            })
        };
        let active = of(Status::Active, None);
        let pending = of(Status::Pending, None);
        let closed = of(Status::Closed, Some(Source::Wallet));
        let counted = [&pending, &closed].map(|v| counter_attribute(v));
        let item = self
            .counters(
                owner,
                &[REALIZED_PNL, REALIZED_COST_BASIS, &counted[0], &counted[1]],
            )
            .await?;
        let held =
            |i: usize| matches!(item.get(&counted[i]), Some(AttributeValue::N(n)) if n != "0");
        let read = |variant: &str, any: bool| {
            let variant = variant.to_string();
            async move {
                if !any {
                    return Ok(Vec::new());
                }
                self.page_items(&variant, owner, None, u64::MAX).await
            }
        };
        let (mut open, waiting, closed_on_chain) = tokio::try_join!(
            read(&active, true),
            read(&pending, held(0)),
            read(&closed, held(1))
        )?;
        open.extend(waiting);
        Ok(PortfolioInputs {
            open,
            realized: realized_of(&item)?,
            closed_on_chain,
        })
    }
}
