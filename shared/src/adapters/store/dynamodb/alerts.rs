//! Alerts on the table (decision 61). Each item holds its value as JSON (`body`):
//! - settings: `U#{owner}` / `ALERTS` (the user's) and `ALERTS#{position}` (a position's own);
//! - a watched position: `WATCH#{chain}#{protocol}#{pool}` / `{position}#{owner}`: one Query
//!   per synced pool reads every watch on it;
//! - an event: `U#{owner}` / `EV#{id}` (written on the condition that it does not exist: the
//!   id is its cause) and its feed copy `FEED#{owner}` / `{created ms}#{id}` (newest first by
//!   one Query), in one transaction, both kept 30 days (`expiresAt`, the table's TTL); the
//!   owner's hourly count `U#{owner}` / `RATE#{hour}` (kept two hours);
//! - an endpoint: `U#{owner}` / `WH#{id}`, the owner's count on `COUNTS` (`webhooks`), both in
//!   one transaction; its attempts `DLV#{owner}#{webhook}` / `{delivery id}` (time-ordered ids),
//!   kept 30 days.

use super::errors::{build_error, classify, classify_put, classify_transaction};
use super::item::{malformed, text};
use super::keys::{counter_key, s, user_pk, Item};
use super::metrics::ReadKind;
use super::store::DynamoDbStore;
use crate::application::alert_ports::{
    paged, AlertStore, DeliveryJob, EventFilter, Recorded, Watched, UNCOUNTED,
};
use crate::application::ports::{StoreError, StoreResult};
use crate::domain::alerts::settings::AlertSettings;
use crate::domain::alerts::AlertEvent;
use crate::domain::model::{Chain, PageRequest, Protocol};
use crate::domain::webhooks::{Delivery, Webhook};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnValue, TransactWriteItem, Update,
};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;

const BODY: &str = "body";
const EXPIRES: &str = "expiresAt";

fn key(pk: String, sk: String) -> Item {
    HashMap::from([("PK".into(), s(pk)), ("SK".into(), s(sk))])
}

fn settings_key(owner: &str, position: Option<&str>) -> Item {
    let sk = match position {
        Some(id) => format!("ALERTS#{id}"),
        None => "ALERTS".into(),
    };
    key(user_pk(owner), sk)
}

fn watch_pk(chain: Chain, protocol: Protocol, pool: &str) -> String {
    format!("WATCH#{chain}#{protocol}#{pool}")
}

fn watch_key(w: &Watched) -> Item {
    key(
        watch_pk(w.chain, w.protocol, &w.pool),
        format!("{}#{}", w.position, w.owner),
    )
}

fn event_key(owner: &str, id: &str) -> Item {
    key(user_pk(owner), format!("EV#{id}"))
}

/// The tag before the owner keeps the partition's name prefix-free, as for list entries.
fn feed_pk(owner: &str) -> String {
    format!("FEED#{owner}")
}

fn webhook_key(owner: &str, id: &str) -> Item {
    key(user_pk(owner), format!("WH#{id}"))
}

fn deliveries_pk(owner: &str, webhook: &str) -> String {
    format!("DLV#{webhook}#{owner}")
}

/// Deliveries the queue refused (rare): one partition, an item each.
const OUTBOX_PK: &str = "OUTBOX";

fn outbox_key(job: &DeliveryJob) -> Item {
    let sk = format!("{}#{}#{}", job.owner, job.webhook_id, job.event_id);
    key(OUTBOX_PK.to_string(), sk)
}

fn json<T: Serialize>(value: &T) -> StoreResult<AttributeValue> {
    serde_json::to_string(value)
        .map(s)
        .map_err(|e| StoreError::Failure(Box::new(e)))
}

fn parse<T: DeserializeOwned>(item: &Item) -> StoreResult<T> {
    serde_json::from_str(text(item, BODY)?).map_err(|_| malformed(BODY))
}

fn with_body(mut item: Item, body: AttributeValue, expires: Option<DateTime<Utc>>) -> Item {
    item.insert(BODY.into(), body);
    if let Some(at) = expires {
        item.insert(
            EXPIRES.into(),
            AttributeValue::N(at.timestamp().to_string()),
        );
    }
    item
}

impl DynamoDbStore {
    pub(super) async fn put_plain(&self, item: Item) -> StoreResult<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    pub(super) async fn delete_plain(&self, key: Item) -> StoreResult<()> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// Every item of partition `pk`, page after page (`forward`: ascending sort keys).
    async fn partition(&self, pk: String, forward: bool) -> StoreResult<Vec<Item>> {
        self.query_items(pk, None, !forward, u64::MAX, ReadKind::PositionItems)
            .await
    }

    /// Counts one more event in the owner's hour; the count after it.
    async fn count_in_hour(&self, event: &AlertEvent) -> StoreResult<u64> {
        let hour = event.created_at.timestamp().div_euclid(3600);
        let sort = format!("RATE#{hour}");
        self.add_to_counter(&event.owner, sort, (hour + 2) * 3600)
            .await
    }

    /// Adds one to the owner's counter item `sort` (kept until `expires`, unix seconds) and
    /// answers its count: one write.
    async fn add_to_counter(&self, owner: &str, sort: String, expires: i64) -> StoreResult<u64> {
        let output = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(user_pk(owner), sort)))
            .update_expression("ADD n :one SET expiresAt = :e")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":e", AttributeValue::N(expires.to_string()))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(classify)?;
        let n = output
            .attributes()
            .and_then(|a| a.get("n"))
            .and_then(|n| n.as_n().ok())
            .and_then(|n| n.parse().ok());
        n.ok_or_else(|| malformed("n"))
    }
}

/// An event's item's attribute naming the retraction that took it back (set apart from its
/// body, so that marking it is one conditional update per item).
const RETRACTED_BY: &str = "retractedBy";

fn owned_event(item: &Item, owner: &str) -> StoreResult<AlertEvent> {
    let mut event: AlertEvent = parse(item)?;
    event.owner = owner.to_string();
    if let Some(by) = item.get(RETRACTED_BY) {
        event.retracted_by = Some(by.as_s().map_err(|_| malformed(RETRACTED_BY))?.clone());
    }
    Ok(event)
}

fn feed_key(event: &AlertEvent) -> Item {
    let sk = format!("{:013}#{}", event.created_at.timestamp_millis(), event.id);
    key(feed_pk(&event.owner), sk)
}

#[async_trait]
impl AlertStore for DynamoDbStore {
    async fn settings(
        &self,
        owner: &str,
        position: Option<&str>,
    ) -> StoreResult<Option<AlertSettings>> {
        let item = self.item(settings_key(owner, position), &[]).await?;
        item.as_ref().map(parse).transpose()
    }

    async fn put_settings(
        &self,
        owner: &str,
        position: Option<&str>,
        settings: &AlertSettings,
    ) -> StoreResult<()> {
        let item = with_body(settings_key(owner, position), json(settings)?, None);
        self.put_plain(item).await
    }

    async fn watched(
        &self,
        chain: Chain,
        protocol: Protocol,
        pool: &str,
    ) -> StoreResult<Vec<Watched>> {
        let items = self
            .partition(watch_pk(chain, protocol, pool), true)
            .await?;
        items.iter().map(parse).collect()
    }

    async fn watch(&self, watched: &Watched) -> StoreResult<()> {
        self.save_watch(watched).await
    }

    async fn save_watch(&self, watched: &Watched) -> StoreResult<()> {
        let item = with_body(watch_key(watched), json(watched)?, None);
        self.put_plain(item).await
    }

    async fn unwatch(&self, watched: &Watched) -> StoreResult<()> {
        self.delete_plain(watch_key(watched)).await
    }

    async fn keep_unqueued(&self, jobs: &[DeliveryJob]) -> StoreResult<()> {
        // Kept as long as their events stay in the feed.
        let expires = Utc::now() + chrono::Duration::days(30);
        for job in jobs {
            self.put_plain(with_body(outbox_key(job), json(job)?, Some(expires)))
                .await?;
        }
        Ok(())
    }

    async fn unqueued(&self, limit: usize) -> StoreResult<Vec<DeliveryJob>> {
        let pk = OUTBOX_PK.to_string();
        let items = self
            .query_items(pk, None, false, limit as u64, ReadKind::PositionItems)
            .await?;
        items.iter().map(parse).collect()
    }

    async fn queued(&self, jobs: &[DeliveryJob]) -> StoreResult<()> {
        for job in jobs {
            self.delete_plain(outbox_key(job)).await?;
        }
        Ok(())
    }

    async fn count_test(&self, owner: &str, webhook: &str, minute: i64) -> StoreResult<u64> {
        let sort = format!("TESTS#{webhook}#{minute}");
        self.add_to_counter(owner, sort, (minute + 2) * 60).await
    }

    async fn record_event(
        &self,
        event: &AlertEvent,
        expires: DateTime<Utc>,
        allowance: u64,
    ) -> StoreResult<Recorded> {
        // Counted first: a cause seen again (rare: overlapping syncs) costs its hour one count.
        let count = if allowance == UNCOUNTED {
            0
        } else {
            self.count_in_hour(event).await?
        };
        let over = count > allowance;
        let mut kept = event.clone();
        if over {
            kept.not_delivered = Some(super::super::alerts_memory::over_allowance(allowance));
        }
        let body = json(&kept)?;
        let canonical = with_body(
            event_key(&event.owner, &event.id),
            body.clone(),
            Some(expires),
        );
        let feed = with_body(feed_key(event), body, Some(expires));
        let unconditioned = Put::builder()
            .table_name(&self.table)
            .set_item(Some(feed))
            .build()
            .map_err(build_error)?;
        let written = self
            .client
            .transact_write_items()
            .transact_items(self.put(canonical, "attribute_not_exists(PK)")?)
            .transact_items(TransactWriteItem::builder().put(unconditioned).build())
            .send()
            .await;
        match written.map_err(classify_transaction) {
            Ok(_) if over => Ok(Recorded::OverAllowance),
            Ok(_) => Ok(Recorded::New),
            Err(StoreError::Conflict) => Ok(Recorded::Seen),
            Err(e) => Err(e),
        }
    }

    async fn events(
        &self,
        owner: &str,
        filter: &EventFilter,
        page: PageRequest,
    ) -> StoreResult<(Vec<AlertEvent>, u64)> {
        let now = Utc::now().timestamp();
        let mut all = Vec::new();
        for item in self.partition(feed_pk(owner), false).await? {
            // The TTL deletes within days of expiry: an expired item is not shown meanwhile.
            let expired = item
                .get(EXPIRES)
                .and_then(|e| e.as_n().ok())
                .and_then(|e| e.parse::<i64>().ok())
                .is_some_and(|e| e <= now);
            let event = owned_event(&item, owner)?;
            if !expired && super::super::alerts_memory::matches(&event, filter) {
                all.push(event);
            }
        }
        Ok(paged(all, page))
    }

    async fn event(&self, owner: &str, id: &str) -> StoreResult<Option<AlertEvent>> {
        let item = self.item(event_key(owner, id), &[]).await?;
        item.map(|i| owned_event(&i, owner)).transpose()
    }

    async fn retract_event(
        &self,
        owner: &str,
        id: &str,
        by: &str,
    ) -> StoreResult<Option<AlertEvent>> {
        let Some(event) = self.event(owner, id).await? else {
            return Ok(None);
        };
        if event.retracted_by.is_some() {
            return Ok(None);
        }
        let mark = |item: Item, condition: &str| {
            let update = Update::builder()
                .table_name(&self.table)
                .set_key(Some(item))
                .update_expression("SET retractedBy = :by")
                .condition_expression(condition)
                .expression_attribute_values(":by", s(by.to_string()))
                .build()
                .map_err(build_error)?;
            Ok::<_, StoreError>(TransactWriteItem::builder().update(update).build())
        };
        let unmarked = "attribute_exists(PK) AND attribute_not_exists(retractedBy)";
        let written = self
            .client
            .transact_write_items()
            .transact_items(mark(event_key(owner, id), unmarked)?)
            .transact_items(mark(feed_key(&event), unmarked)?)
            .send()
            .await;
        match written.map_err(classify_transaction) {
            Ok(_) => Ok(Some(event)),
            Err(StoreError::Conflict) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn insert_webhook(&self, webhook: &Webhook, max: usize) -> StoreResult<()> {
        let item = with_body(
            webhook_key(&webhook.owner, &webhook.id),
            json(webhook)?,
            None,
        );
        let count = Update::builder()
            .table_name(&self.table)
            .set_key(Some(counter_key(&webhook.owner)))
            .update_expression("ADD webhooks :one")
            .condition_expression("attribute_not_exists(webhooks) OR webhooks < :max")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":max", AttributeValue::N(max.to_string()))
            .build()
            .map_err(build_error)?;
        self.client
            .transact_write_items()
            .transact_items(self.put(item, "attribute_not_exists(PK)")?)
            .transact_items(TransactWriteItem::builder().update(count).build())
            .send()
            .await
            .map_err(classify_transaction)?;
        Ok(())
    }

    async fn webhooks(&self, owner: &str) -> StoreResult<Vec<Webhook>> {
        let items = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk AND begins_with(SK, :wh)")
            .expression_attribute_values(":pk", s(user_pk(owner)))
            .expression_attribute_values(":wh", s("WH#"))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        // At most five: one page.
        items.items().iter().map(parse).collect()
    }

    async fn webhook(&self, owner: &str, id: &str) -> StoreResult<Option<Webhook>> {
        let item = self.item(webhook_key(owner, id), &[]).await?;
        item.as_ref().map(parse).transpose()
    }

    async fn update_webhook(&self, webhook: &Webhook, previous: &Webhook) -> StoreResult<()> {
        let item = with_body(
            webhook_key(&webhook.owner, &webhook.id),
            json(webhook)?,
            None,
        );
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("body = :previous")
            .expression_attribute_values(":previous", json(previous)?)
            .send()
            .await
            .map_err(classify_put)?;
        Ok(())
    }

    async fn delete_webhook(&self, owner: &str, id: &str) -> StoreResult<bool> {
        let remove = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(webhook_key(owner, id)))
            .condition_expression("attribute_exists(PK)")
            .build()
            .map_err(build_error)?;
        let count = Update::builder()
            .table_name(&self.table)
            .set_key(Some(counter_key(owner)))
            .update_expression("ADD webhooks :less")
            .expression_attribute_values(":less", AttributeValue::N("-1".into()))
            .build()
            .map_err(build_error)?;
        let done = self
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().delete(remove).build())
            .transact_items(TransactWriteItem::builder().update(count).build())
            .send()
            .await;
        // Its attempts' log is left to the TTL: nothing reaches it once the endpoint is gone.
        match done.map_err(classify_transaction) {
            Ok(_) => Ok(true),
            Err(StoreError::Conflict) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn record_delivery(
        &self,
        delivery: &Delivery,
        expires: DateTime<Utc>,
    ) -> StoreResult<()> {
        let pk = deliveries_pk(&delivery.owner, &delivery.webhook_id);
        let item = with_body(key(pk, delivery.id.clone()), json(delivery)?, Some(expires));
        self.put_plain(item).await
    }

    async fn delivery(
        &self,
        owner: &str,
        webhook: &str,
        id: &str,
    ) -> StoreResult<Option<Delivery>> {
        let item = self
            .item(key(deliveries_pk(owner, webhook), id.to_string()), &[])
            .await?;
        let delivery: Option<Delivery> = item.as_ref().map(parse).transpose()?;
        Ok(delivery.map(|d| Delivery {
            owner: owner.to_string(),
            ..d
        }))
    }

    async fn deliveries(
        &self,
        owner: &str,
        webhook: &str,
        page: PageRequest,
    ) -> StoreResult<(Vec<Delivery>, u64)> {
        let items = self.partition(deliveries_pk(owner, webhook), false).await?;
        let all = items
            .iter()
            .map(parse)
            .map(|d: StoreResult<Delivery>| {
                d.map(|d| Delivery {
                    owner: owner.to_string(),
                    ..d
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(paged(all, page))
    }
}
