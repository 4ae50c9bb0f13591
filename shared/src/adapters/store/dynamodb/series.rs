//! The pools' series in the table (decision 66): one item per pool and boundary,
//! `SERIES#{chain}#{pool}` / `{tier}#{time}` holding the point (JSON; past 1,000 ticks the rest
//! in items of 1,000 beside it, `{tier}#{time}#{part}`) and, for the 5-minute and hourly tiers,
//! `expiresAt` (2 days, 95 days on); a day's point is kept for ever. One item per
//! chain, `SERIES#{chain}` / `CURSOR`, says where its series stands; `SERIES#{chain}` /
//! `WANT#{pool}` holds from when a pool's past days are wanted, `SERIES#{chain}` /
//! `STAKE#{pool}#{token}` (its `farm`; once ended, `until` and `endedAt`, expiring three days
//! on) a staked position whose pending reward the points hold. A chart reads one `Query`
//! per pool and tier (eventually consistent: a point is written once, at a confirmed block).

use super::errors::{classify, classify_conditional, json_failure};
use super::item::{malformed, parsed, text};
use super::keys::{s, Item};
use super::metrics::ReadKind;
use super::store::DynamoDbStore;
use crate::adapters::store::series_pool;
use crate::application::ports::{SeriesStore, StoreError, StoreResult};
use crate::domain::chart::{FollowedStake, PoolPoint, SeriesCursor, StakeEnd, Tier};
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

/// The sort key prefix of the followed stakes, under their chain's partition.
const STAKE: &str = "STAKE#";
/// How long an ended stake is kept after its end: past any sync's catching up (the 5-minute
/// points' two days).
const STAKE_KEPT: i64 = 3 * 86_400;

fn stake_key(chain: Chain, stake: &FollowedStake) -> Item {
    let pool = series_pool(chain, &stake.pool);
    Item::from([
        ("PK".into(), s(format!("SERIES#{chain}"))),
        ("SK".into(), s(format!("{STAKE}{pool}#{}", stake.token))),
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

/// The most ticks one item of a point holds: about 150 bytes each, 150 KB an item, far below
/// DynamoDB's 400 KB (issue 61: anyone can mint dust positions with ranges of their own to the
/// addresses a user watches).
pub const TICKS_PER_ITEM: usize = 1_000;

/// A point as items: the point with its first [`TICKS_PER_ITEM`] ticks (and, past them, how
/// many items it takes, `parts`), then each further chunk of ticks its own item,
/// `{tier}#{time}#{part:03}`, beside it (with the point's block: a point recorded again at
/// another block never takes the parts of the one it replaced).
fn point_items(chain: Chain, pool: &str, point: &PoolPoint) -> Result<Vec<Item>, StoreError> {
    let key = point_sort_key(point.time);
    let mut chunks = point.state.ticks.chunks(TICKS_PER_ITEM);
    let mut first = point.clone();
    first.state.ticks = chunks.next().unwrap_or_default().to_vec();
    let parts = chunks.len() + 1;
    let expires = Tier::of(point.time)
        .kept_for()
        .map(|kept| AttributeValue::N((point.time + kept).to_string()));
    let item = |sk: String, attributes: Vec<(&str, AttributeValue)>| {
        let mut item = Item::from([
            ("PK".into(), s(pool_partition(chain, pool))),
            ("SK".into(), s(sk)),
        ]);
        item.extend(attributes.into_iter().map(|(k, v)| (k.to_string(), v)));
        if let Some(at) = &expires {
            item.insert(EXPIRES.into(), at.clone());
        }
        item
    };
    let json = serde_json::to_string(&first).map_err(json_failure)?;
    let mut head = vec![("point", s(json))];
    if parts > 1 {
        head.push(("parts", n(parts as i64)));
    }
    let mut items = vec![item(key.clone(), head)];
    for (i, ticks) in chunks.enumerate() {
        let json = serde_json::to_string(ticks).map_err(json_failure)?;
        let block = n(point.state.height as i64);
        let part = vec![("ticks", s(json)), ("block", block)];
        items.push(item(format!("{key}#{:03}", i + 1), part));
    }
    Ok(items)
}

/// The points of a partition's items, in sort-key order: each point then its parts.
fn points_of(items: &[Item]) -> Result<Vec<PoolPoint>, StoreError> {
    let number = |item: &Item, name: &str| -> Option<i64> {
        match item.get(name) {
            Some(AttributeValue::N(v)) => v.parse().ok(),
            _ => None,
        }
    };
    let mut points: Vec<(PoolPoint, i64)> = Vec::new();
    for item in items {
        let Some(ticks) = item.get("ticks") else {
            let point: PoolPoint = serde_json::from_str(text(item, "point")?)
                .map_err(|_| malformed("series point"))?;
            points.push((point, number(item, "parts").unwrap_or(1)));
            continue;
        };
        let part = match item.get("SK") {
            Some(AttributeValue::S(sk)) => {
                sk.rsplit('#').next().and_then(|p| p.parse::<i64>().ok())
            }
            _ => None,
        };
        let (Some((point, parts)), Some(part), AttributeValue::S(ticks)) =
            (points.last_mut(), part, ticks)
        else {
            continue;
        };
        // A part of the point it was written with: its block, within its count.
        if number(item, "block") == Some(point.state.height as i64) && part < *parts {
            let more: Vec<crate::domain::market::TickState> =
                serde_json::from_str(ticks).map_err(|_| malformed("series point ticks"))?;
            point.state.ticks.extend(more);
        }
    }
    Ok(points.into_iter().map(|(point, _)| point).collect())
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
        let mut items: Vec<Item> = Vec::new();
        for (pool, point) in points {
            items.extend(point_items(chain, pool, point)?);
        }
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
        self.chain_items(chain, WANT)
            .await?
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

    async fn follow_stake(&self, chain: Chain, stake: &FollowedStake) -> StoreResult<()> {
        let mut item = stake_key(chain, stake);
        item.insert("farm".into(), s(&stake.farm));
        if let Some(staker) = &stake.staker {
            item.insert("staker".into(), s(staker));
        }
        if let Some(end) = stake.until {
            item.insert("until".into(), n(end.block as i64));
            item.insert("endedAt".into(), n(end.time));
            item.insert(EXPIRES.into(), n(end.time + STAKE_KEPT));
        }
        self.put_plain(item).await
    }

    async fn followed_stakes(&self, chain: Chain) -> StoreResult<Vec<FollowedStake>> {
        self.chain_items(chain, STAKE)
            .await?
            .iter()
            .map(|item| {
                let key = text(item, "SK")?.trim_start_matches(STAKE);
                let (pool, token) = key.rsplit_once('#').ok_or_else(|| malformed("SK"))?;
                let until = match item.get("until") {
                    None => None,
                    Some(_) => Some(StakeEnd {
                        block: parsed(item, "until")?,
                        time: parsed(item, "endedAt")?,
                    }),
                };
                Ok(FollowedStake {
                    pool: pool.to_string(),
                    farm: text(item, "farm")?.to_string(),
                    token: token.to_string(),
                    until,
                    staker: item.get("staker").and_then(|v| v.as_s().ok()).cloned(),
                })
            })
            .collect()
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
            // The last point's parts sort after it (`#001`…): `~` after them all.
            let condition = (
                "SK BETWEEN :a AND :b",
                [bound(from.max(0)), format!("{}#~", bound(to.max(0)))],
            );
            let items = self
                .series_items(pool_partition(chain, pool), condition)
                .await?;
            points.extend(points_of(&items)?);
        }
        points.sort_by_key(|p| p.time);
        Ok(points)
    }
}

impl DynamoDbStore {
    /// The items of `chain`'s series partition whose sort key starts with `prefix`.
    async fn chain_items(&self, chain: Chain, prefix: &str) -> StoreResult<Vec<Item>> {
        let condition = ("begins_with(SK, :a)", [prefix.to_string()]);
        self.series_items(format!("SERIES#{chain}"), condition)
            .await
    }

    /// Every item of partition `pk` whose sort key meets `condition` (on `:a` and `:b`, bound to its
    /// values in order), page after page, eventually consistent.
    async fn series_items<const N: usize>(
        &self,
        pk: String,
        (condition, values): (&str, [String; N]),
    ) -> StoreResult<Vec<Item>> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            self.meter.request();
            let mut query = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression(format!("PK = :pk AND {condition}"))
                .expression_attribute_values(":pk", s(pk.clone()));
            for (name, value) in [":a", ":b"].iter().zip(&values) {
                query = query.expression_attribute_values(*name, s(value));
            }
            let page = query
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            self.meter
                .items(ReadKind::PositionItems, page.items(), false);
            items.extend(page.items().iter().cloned());
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                return Ok(items);
            }
        }
    }
}
