//! Wallet positions' events on the table: each event one item in its position's own partition,
//! `EV#{owner}#{id}` / `{block:020}#{logIndex:010}` (chain order is key order, and an event
//! read twice is the same item), beside the position's progress item `#progress` (through
//! which block, from the mint or not, how many events), which sorts first. An append writes
//! its events, then moves the progress on condition that it is still the one the read
//! continued from; a page is one `Query` from the partition's start.

use super::errors::{build_error, classify_put};
use super::item::{malformed, parsed, text};
use super::keys::{s, Item};
use super::metrics::ReadKind;
use super::store::DynamoDbStore;
use crate::application::ports::{HistoryStore, StoreError, StoreResult};
use crate::domain::history::{decimals, EventKind, HistoryProgress, Kept, PositionEvent, Priced};
use crate::domain::math::U256;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Items one transaction takes.
const TRANSACTION_ITEMS: usize = 100;
const PROGRESS_SK: &str = "#progress";

fn partition(owner: &str, id: &str) -> String {
    format!("EV#{owner}#{id}")
}

/// An event as its item's `event` attribute holds it (JSON; integers as strings).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EventRecord {
    kind: String,
    block: u64,
    block_hash: String,
    transaction: String,
    log_index: u64,
    liquidity: String,
    amounts: [String; 2],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timestamp: Option<u64>,
    /// A harvest's reward (base units of the farm's reward token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reward: Option<String>,
    /// Wei its transaction cost the holder (on the transaction's first event it sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gas: Option<String>,
    /// Whether the holder acted in its transaction, where its receipt was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    acted: Option<bool>,
    /// Uniswap v4: the fees its modification paid out (base units).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    paid: Option<[String; 2]>,
    /// USD per whole token at its block (decimal text), where priced.
    #[serde(default)]
    prices: [Option<String>; 2],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    priced: Option<String>,
    /// What the manager kept at its block: `[insideLast, owed]`, each per token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kept: Option<[[String; 2]; 2]>,
}

fn event_item(owner: &str, id: &str, event: &PositionEvent) -> Result<Item, StoreError> {
    let record = EventRecord {
        kind: event.kind.as_str().into(),
        block: event.block,
        block_hash: event.block_hash.clone(),
        transaction: event.transaction.clone(),
        log_index: event.log_index,
        liquidity: event.liquidity.to_string(),
        amounts: event.amounts.map(|a| a.to_string()),
        from: event.from.clone(),
        to: event.to.clone(),
        timestamp: event.timestamp,
        reward: event.reward.map(|r| r.to_string()),
        gas: event.gas.map(|g| g.to_string()),
        acted: event.acted,
        paid: event.paid.map(|p| p.map(|a| a.to_string())),
        prices: event
            .prices
            .clone()
            .map(|p| p.map(|p| p.normalized().to_string())),
        priced: event.priced.map(|p| p.as_str().to_string()),
        kept: event
            .kept
            .as_ref()
            .map(|k| [k.inside_last, k.owed].map(|pair| pair.map(|v| v.to_string()))),
    };
    let json = serde_json::to_string(&record).map_err(|e| StoreError::Failure(e.into()))?;
    Ok(Item::from([
        ("PK".into(), s(partition(owner, id))),
        (
            "SK".into(),
            s(format!("{:020}#{:010}", event.block, event.log_index)),
        ),
        ("event".into(), s(json)),
    ]))
}

fn event_of(item: &Item) -> Result<PositionEvent, StoreError> {
    let record: EventRecord =
        serde_json::from_str(text(item, "event")?).map_err(|_| malformed("event"))?;
    let amount = |a: &str| U256::from_str(a).map_err(|_| malformed("event amounts"));
    Ok(PositionEvent {
        kind: EventKind::parse(&record.kind).ok_or_else(|| malformed("event kind"))?,
        block: record.block,
        block_hash: record.block_hash,
        transaction: record.transaction,
        log_index: record.log_index,
        liquidity: record
            .liquidity
            .parse()
            .map_err(|_| malformed("event liquidity"))?,
        amounts: [amount(&record.amounts[0])?, amount(&record.amounts[1])?],
        from: record.from,
        to: record.to,
        timestamp: record.timestamp,
        reward: record.reward.as_deref().map(amount).transpose()?,
        gas: record.gas.as_deref().map(amount).transpose()?,
        acted: record.acted,
        paid: match &record.paid {
            Some([a, b]) => Some([amount(a)?, amount(b)?]),
            None => None,
        },
        prices: decimals(&record.prices),
        priced: match record.priced {
            Some(p) => Some(Priced::parse(&p).ok_or_else(|| malformed("event priced"))?),
            None => None,
        },
        kept: match &record.kept {
            Some([[i0, i1], [o0, o1]]) => Some(Kept {
                inside_last: [amount(i0)?, amount(i1)?],
                owed: [amount(o0)?, amount(o1)?],
            }),
            None => None,
        },
    })
}

fn progress_of(item: &Item) -> Result<HistoryProgress, StoreError> {
    Ok(HistoryProgress {
        through: parsed(item, "through")?,
        from_mint: matches!(item.get("fromMint"), Some(AttributeValue::Bool(true))),
        events: parsed(item, "events")?,
    })
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

impl DynamoDbStore {
    /// The progress item, on condition that the stored one is still `previous` (`None`: none).
    async fn put_progress(
        &self,
        owner: &str,
        id: &str,
        previous: Option<&HistoryProgress>,
        progress: &HistoryProgress,
    ) -> StoreResult<()> {
        let item = Item::from([
            ("PK".into(), s(partition(owner, id))),
            ("SK".into(), s(PROGRESS_SK)),
            ("through".into(), n(progress.through)),
            ("fromMint".into(), AttributeValue::Bool(progress.from_mint)),
            ("events".into(), n(progress.events)),
        ]);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item));
        let put = match previous {
            None => put.condition_expression("attribute_not_exists(PK)"),
            Some(p) => put
                .condition_expression("through = :through AND events = :events")
                .expression_attribute_values(":through", n(p.through))
                .expression_attribute_values(":events", n(p.events)),
        };
        put.send().await.map(|_| ()).map_err(classify_put)
    }
}

#[async_trait]
impl HistoryStore for DynamoDbStore {
    /// The events in transactions of up to 100 unconditioned `Put`s (an event written twice
    /// is the same item), then the progress `Put` on condition that it is still `previous`:
    /// a reader sees an event only once the progress covers it.
    async fn append_history(
        &self,
        owner: &str,
        id: &str,
        previous: Option<&HistoryProgress>,
        events: &[PositionEvent],
        progress: &HistoryProgress,
    ) -> StoreResult<()> {
        for chunk in events.chunks(TRANSACTION_ITEMS) {
            let mut items = Vec::with_capacity(chunk.len());
            for event in chunk {
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(event_item(owner, id, event)?))
                    .build()
                    .map_err(build_error)?;
                items.push(TransactWriteItem::builder().put(put).build());
            }
            self.transact(items, None).await?;
        }
        self.put_progress(owner, id, previous, progress).await
    }

    /// The progress put back first (on its condition), then the replaced events deleted, a
    /// hundred a transaction.
    async fn rewind_history(
        &self,
        owner: &str,
        id: &str,
        previous: &HistoryProgress,
        from: u64,
        progress: &HistoryProgress,
    ) -> StoreResult<()> {
        self.put_progress(owner, id, Some(previous), progress)
            .await?;
        let items = self
            .query_items(
                partition(owner, id),
                None,
                false,
                u64::MAX,
                ReadKind::PositionItems,
            )
            .await?;
        let mut replaced = Vec::new();
        for item in &items {
            let sk = text(item, "SK")?;
            let block = sk.split('#').next().and_then(|b| b.parse::<u64>().ok());
            if block.is_some_and(|b| b >= from) {
                let key =
                    Item::from([("PK".into(), s(partition(owner, id))), ("SK".into(), s(sk))]);
                replaced.push(self.delete(key)?);
            }
        }
        let mut replaced = replaced.into_iter().peekable();
        while replaced.peek().is_some() {
            let chunk: Vec<_> = replaced.by_ref().take(TRANSACTION_ITEMS).collect();
            self.transact(chunk, None).await?;
        }
        Ok(())
    }

    async fn history_progress(
        &self,
        owner: &str,
        id: &str,
    ) -> StoreResult<Option<HistoryProgress>> {
        let key = Item::from([
            ("PK".into(), s(partition(owner, id))),
            ("SK".into(), s(PROGRESS_SK)),
        ]);
        self.item(key, &["through", "fromMint", "events"])
            .await?
            .map(|item| progress_of(&item))
            .transpose()
    }

    /// One `Query` from the partition's start (paged by 1 MB): the progress item, then the
    /// events up to `offset + limit`; events past the progress (an append that stopped
    /// before its progress) are not shown.
    async fn history_page(
        &self,
        owner: &str,
        id: &str,
        offset: u64,
        limit: u64,
    ) -> StoreResult<Vec<PositionEvent>> {
        let wanted = offset.saturating_add(limit).saturating_add(1);
        let items = self
            .query_items(
                partition(owner, id),
                None,
                false,
                wanted,
                ReadKind::PositionItems,
            )
            .await?;
        let Some((first, events)) = items.split_first() else {
            return Ok(Vec::new());
        };
        if text(first, "SK")? != PROGRESS_SK {
            return Ok(Vec::new());
        }
        let progress = progress_of(first)?;
        events
            .iter()
            .skip(usize::try_from(offset).unwrap_or(usize::MAX))
            .map(event_of)
            .filter(|e| e.as_ref().map_or(true, |e| e.block <= progress.through))
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .collect()
    }
}
