//! The pools' series in the table (decision 66): one item per pool and boundary,
//! `SERIES#{chain}#{pool}` / `{tier}#{time}` holding the point (JSON) and, for the 5-minute and
//! hourly tiers, `expiresAt` (2 days, 95 days on); a day's point is kept for ever. One item per
//! chain, `SERIES#{chain}` / `CURSOR`, says where its series stands; `SERIES#{chain}` /
//! `WANT#{pool}` holds from when a pool's past days are wanted. A chart reads one `Query`
//! per pool and tier (eventually consistent: a point is written once, at a confirmed block).

use super::errors::{classify, classify_conditional};
use super::item::{malformed, parsed, text};
use super::keys::{s, Item};
use super::metrics::ReadKind;
use super::store::DynamoDbStore;
use crate::adapters::store::series_pool;
use crate::application::ports::{SeriesStore, StoreError, StoreResult};
use crate::domain::chart::{PoolPoint, SeriesCursor, Tier};
use crate::domain::model::Chain;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;

const EXPIRES: &str = "expiresAt";

fn pool_partition(chain: Chain, pool: &str) -> String {
    format!("SERIES#{chain}#{}", series_pool(chain, pool))
}

fn point_sort_key(time: i64) -> String {
    format!("{}#{time:012}", Tier::of(time).as_str())
}

/// The sort key prefix of a pool's wanted days, under its chain's partition.
const WANT: &str = "WANT#";

fn want_key(chain: Chain, pool: &str) -> Item {
    Item::from([
        ("PK".into(), s(format!("SERIES#{chain}"))),
        (
            "SK".into(),
            s(format!("{WANT}{}", series_pool(chain, pool))),
        ),
    ])
}

fn n(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn cursor_key(chain: Chain) -> Item {
    Item::from([
        ("PK".into(), s(format!("SERIES#{chain}"))),
        ("SK".into(), s("CURSOR")),
    ])
}

fn json_failure(e: serde_json::Error) -> StoreError {
    StoreError::Failure(Box::new(e))
}

fn point_item(chain: Chain, pool: &str, point: &PoolPoint) -> Result<Item, StoreError> {
    let mut item = Item::from([
        ("PK".into(), s(pool_partition(chain, pool))),
        ("SK".into(), s(point_sort_key(point.time))),
        (
            "point".into(),
            s(serde_json::to_string(point).map_err(json_failure)?),
        ),
    ]);
    if let Some(kept) = Tier::of(point.time).kept_for() {
        let at = AttributeValue::N((point.time + kept).to_string());
        item.insert(EXPIRES.into(), at);
    }
    Ok(item)
}

#[async_trait]
impl SeriesStore for DynamoDbStore {
    async fn series_cursor(&self, chain: Chain) -> StoreResult<SeriesCursor> {
        match self.item(cursor_key(chain), &["cursor"]).await? {
            None => Ok(SeriesCursor::default()),
            Some(item) => {
                serde_json::from_str(text(&item, "cursor")?).map_err(|_| malformed("series cursor"))
            }
        }
    }

    async fn save_points(
        &self,
        chain: Chain,
        points: &[(String, PoolPoint)],
        cursor: Option<&SeriesCursor>,
    ) -> StoreResult<()> {
        let items: Vec<Item> = points
            .iter()
            .map(|(pool, point)| point_item(chain, pool, point))
            .collect::<Result<_, _>>()?;
        self.put_all(&items).await?;
        // The cursor last: a sync that fails before it records the same boundary again.
        let Some(cursor) = cursor else {
            return Ok(());
        };
        let mut item = cursor_key(chain);
        let json = serde_json::to_string(cursor).map_err(json_failure)?;
        item.insert("cursor".into(), s(json));
        self.put_plain(item).await
    }

    async fn want_days(&self, chain: Chain, pool: &str, since: i64) -> StoreResult<()> {
        let update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(want_key(chain, pool)))
            .update_expression("SET since = :s")
            .condition_expression("attribute_not_exists(since) OR since > :s")
            .expression_attribute_values(":s", n(since))
            .send()
            .await;
        match update.map_err(classify_conditional) {
            Ok(_) | Err(StoreError::Conflict) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn wanted_days(&self, chain: Chain) -> StoreResult<Vec<(String, i64)>> {
        self.meter.request();
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk AND begins_with(SK, :want)")
            .expression_attribute_values(":pk", s(format!("SERIES#{chain}")))
            .expression_attribute_values(":want", s(WANT))
            .send()
            .await
            .map_err(classify)?;
        page.items()
            .iter()
            .map(|item| {
                let pool = text(item, "SK")?.trim_start_matches(WANT).to_string();
                Ok((pool, parsed(item, "since")?))
            })
            .collect()
    }

    async fn days_done(
        &self,
        chain: Chain,
        pool: &str,
        since: i64,
        through: Option<i64>,
    ) -> StoreResult<()> {
        let key = Some(want_key(chain, pool));
        let done = match through {
            Some(through) => self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(key)
                .update_expression("SET since = :next")
                .condition_expression("since = :s")
                .expression_attribute_values(":s", n(since))
                .expression_attribute_values(":next", n(through + 1))
                .send()
                .await
                .map(|_| ())
                .map_err(classify_conditional),
            None => self
                .client
                .delete_item()
                .table_name(&self.table)
                .set_key(key)
                .condition_expression("since = :s")
                .expression_attribute_values(":s", n(since))
                .send()
                .await
                .map(|_| ())
                .map_err(classify_conditional),
        };
        match done {
            // An earlier `since` was asked meanwhile: it stands.
            Ok(()) | Err(StoreError::Conflict) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn points(
        &self,
        chain: Chain,
        pool: &str,
        (from, to): (i64, i64),
        tiers: &[Tier],
    ) -> StoreResult<Vec<PoolPoint>> {
        let mut points = Vec::new();
        if from > to {
            return Ok(points);
        }
        for tier in tiers {
            let bound = |t: i64| format!("{}#{t:012}", tier.as_str());
            let mut start = None;
            loop {
                self.meter.request();
                let page = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .key_condition_expression("PK = :pk AND SK BETWEEN :a AND :b")
                    .expression_attribute_values(":pk", s(pool_partition(chain, pool)))
                    .expression_attribute_values(":a", s(bound(from.max(0))))
                    .expression_attribute_values(":b", s(bound(to.max(0))))
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(classify)?;
                self.meter
                    .items(ReadKind::PositionItems, page.items(), false);
                for item in page.items() {
                    let point: PoolPoint = serde_json::from_str(text(item, "point")?)
                        .map_err(|_| malformed("series point"))?;
                    points.push(point);
                }
                start = page.last_evaluated_key().cloned();
                if start.is_none() {
                    break;
                }
            }
        }
        points.sort_by_key(|p| p.time);
        Ok(points)
    }
}
