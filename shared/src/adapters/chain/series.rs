//! The pools' series recorded by each sync (decision 66): for every boundary a chain's
//! confirmed block has passed since the last one recorded, the last block at or before it
//! (found by batched probes between blocks of known times), every catalog pool of the chain
//! read at that block in one batch (`pools::read_pools`: their followed ticks too) and priced
//! there by the catalog's routes, one point per pool. A recorded boundary whose block a reorg
//! replaced is recorded again. EVM chains (Solana serves no past account state).

use super::evm::{self, Block};
use super::rpc::{RpcClient, RpcError};
use super::staking::FarmAsk;
use super::{pools, staking};
use crate::application::ports::SeriesStore;
use crate::domain::catalog::{Catalog, Pool};
use crate::domain::chart::{
    due_boundaries, FarmPoint, FollowedStake, PoolPoint, RecordedBoundary, SeriesCursor, StakeEnd,
    Tier, DAY,
};
use crate::domain::history::{EventKind, PositionEvent};
use crate::domain::market::{PoolKey, PoolState};
use crate::domain::math::U256;
use crate::domain::model::Chain;
use alloy_primitives::Address;
use chrono::DateTime;
use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::time::Instant;

/// Days one sync backfills on a chain at most (one pool's), oldest first.
pub const DAYS_PER_SYNC: usize = 30;
/// How far back a backfill reaches.
pub const MAX_BACKFILL_DAYS: i64 = 1_100;

/// Boundaries whose blocks one round of probes looks for together.
pub const BOUNDARIES_AT_ONCE: usize = 24;

/// What one chain's recording did: the boundaries recorded, the points stored, and the
/// boundaries due that its time left to the next sync.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    pub boundaries: usize,
    pub points: usize,
    pub left: usize,
}

fn time_of(block: &Block) -> Result<i64, RpcError> {
    block
        .timestamp
        .and_then(|t| i64::try_from(t).ok())
        .ok_or(RpcError::Malformed("a block came without its time"))
}

/// A block at or before a boundary `behind` seconds before `target`, with none recorded yet:
/// one as many blocks back as a quarter-second chain makes in four times that, else genesis;
/// `None` when the chain starts after the boundary (it has no block there).
async fn first_low(
    rpc: &RpcClient,
    target: &Block,
    behind: i64,
) -> Result<Option<Block>, RpcError> {
    let boundary = time_of(target)? - behind;
    let back = u64::try_from(behind.max(0)).unwrap_or(0).saturating_mul(16) + 1;
    let near = target.number.saturating_sub(back);
    for number in [near, 0] {
        let found = evm::blocks(rpc, &[number])
            .await?
            .into_iter()
            .flatten()
            .next();
        match found {
            Some(block) if time_of(&block)? <= boundary => return Ok(Some(block)),
            Some(_) if number == 0 => return Ok(None),
            _ => {}
        }
    }
    Err(RpcError::Malformed("the node knows no genesis block"))
}

/// Records the boundaries `chain`'s confirmed block `target` has passed (and those whose
/// block a reorg replaced) for every catalog pool of the chain, oldest first, until `deadline`:
/// [`BOUNDARIES_AT_ONCE`] at a time, their blocks found together (`blocks_at`), then one batch
/// of pool reads per boundary, the cursor saved with each. What the deadline leaves is the next
/// sync's, from where this one stopped: the lag shrinks at any schedule.
pub async fn record(
    rpc: &RpcClient,
    series: &dyn SeriesStore,
    catalog: &Catalog,
    chain: Chain,
    (target, deadline): (&Block, Instant),
) -> Result<Recorded, String> {
    let cursor = series
        .series_cursor(chain)
        .await
        .map_err(|e| e.to_string())?;
    let target_time = time_of(target).map_err(|e| e.to_string())?;
    let mut due = due_boundaries(cursor.through, target_time);
    // The recent boundaries' blocks, checked in one batch: a replaced one is read again.
    let numbers: Vec<u64> = cursor.recent.iter().map(|r| r.block).collect();
    let known = evm::blocks(rpc, &numbers)
        .await
        .map_err(|e| e.to_string())?;
    for (recorded, block) in cursor.recent.iter().zip(&known) {
        if block.as_ref().is_none_or(|b| b.hash != recorded.hash) {
            tracing::warn!(%chain, boundary = recorded.time, "a point's block was replaced: recorded again");
            due.push(recorded.time);
        }
    }
    due.sort_unstable();
    due.dedup();
    due.retain(|boundary| *boundary <= target_time);
    let pools: Vec<&Pool> = catalog.pools.iter().filter(|p| p.chain == chain).collect();
    let stakes = if due.is_empty() {
        Vec::new()
    } else {
        stakes_on(series, catalog, chain, &pools).await?
    };
    let mut done = Vec::new();
    let mut recorded = Recorded {
        left: due.len(),
        ..Recorded::default()
    };
    // The lowest block known at or before each boundary: the last recorded one before it.
    let mut lows: BTreeMap<i64, Block> = cursor
        .recent
        .iter()
        .zip(&known)
        .filter_map(|(r, b)| Some((r.time, b.clone().filter(|b| b.hash == r.hash)?)))
        .collect();
    for chunk in due.chunks(BOUNDARIES_AT_ONCE) {
        if Instant::now() >= deadline {
            break;
        }
        let low = match lows.range(..=chunk[0]).next_back() {
            Some((_, b)) => Some(b.clone()),
            None => first_low(rpc, target, target_time - chunk[0])
                .await
                .map_err(|e| e.to_string())?,
        };
        let blocks = match low {
            Some(low) => blocks_at(rpc, chunk, low, target.clone())
                .await
                .map_err(|e| e.to_string())?,
            // The chain starts after the first: the others are found from its genesis.
            None => {
                let genesis = evm::blocks(rpc, &[0]).await.map_err(|e| e.to_string())?;
                match genesis.into_iter().flatten().next() {
                    Some(genesis) => blocks_at(rpc, chunk, genesis, target.clone())
                        .await
                        .map_err(|e| e.to_string())?,
                    None => vec![None; chunk.len()],
                }
            }
        };
        for (boundary, block) in chunk.iter().zip(blocks) {
            if Instant::now() >= deadline {
                break;
            }
            recorded.left -= 1;
            let Some(block) = block else {
                // Before the chain's first block: nothing to record, the cursor moves past it.
                let past = SeriesCursor {
                    through: cursor.through.max(Some(*boundary)),
                    ..cursor.after(&done)
                };
                series
                    .save_points(chain, &[], Some(&past))
                    .await
                    .map_err(|e| e.to_string())?;
                continue;
            };
            let points = points_at(rpc, catalog, (&pools, &stakes), &block, *boundary).await?;
            recorded.points += points.len();
            let mark = RecordedBoundary {
                time: *boundary,
                block: block.number,
                hash: block.hash.clone(),
            };
            done.push(mark);
            lows.insert(*boundary, block);
            series
                .save_points(chain, &points, Some(&cursor.after(&done)))
                .await
                .map_err(|e| e.to_string())?;
            recorded.boundaries += 1;
        }
    }
    Ok(recorded)
}

/// Where `pool`'s positions are staked: its deployment's farm (PancakeSwap's MasterChefV3), or
/// a Slipstream pool's own gauge (as its state read it).
fn farm_of(catalog: &Catalog, pool: &Pool) -> Option<Address> {
    if let Some(own) = pool.state.as_ref().and_then(|s| s.slipstream.as_ref()) {
        return Address::from_str(own.gauge.as_deref()?).ok();
    }
    catalog
        .deployments_on(pool.chain)
        .filter(|d| d.protocol == pool.protocol)
        .find_map(|d| Address::from_str(d.staking.as_deref()?).ok())
}

/// The staked positions followed on `chain`, read only where one of `pools` is a farm's (one
/// `Query`): a chain without farms, or a sync with no boundary due, reads none.
async fn stakes_on(
    series: &dyn SeriesStore,
    catalog: &Catalog,
    chain: Chain,
    pools: &[&Pool],
) -> Result<Vec<FollowedStake>, String> {
    if !pools.iter().any(|p| farm_of(catalog, p).is_some()) {
        return Ok(Vec::new());
    }
    series
        .followed_stakes(chain)
        .await
        .map_err(|e| e.to_string())
}

/// The farms of `pools` and, for each, the followed staked positions on them (one batch at a
/// point: their reward token and pending rewards).
fn farms_of(
    catalog: &Catalog,
    pools: &[&Pool],
    stakes: &[&FollowedStake],
) -> BTreeMap<Address, FarmAsk> {
    let mut farms: BTreeMap<Address, FarmAsk> = BTreeMap::new();
    for pool in pools {
        let Some(farm) = farm_of(catalog, pool) else {
            continue;
        };
        let asked = farms.entry(farm).or_insert_with(|| FarmAsk {
            gauge: pool.protocol.is_slipstream(),
            tokens: Vec::new(),
        });
        for stake in stakes.iter().filter(|s| pool.is_named(&s.pool)) {
            let same_farm = Address::from_str(&stake.farm).is_ok_and(|f| f == farm);
            let staker = stake
                .staker
                .as_deref()
                .and_then(|s| Address::from_str(s).ok());
            match U256::from_str(&stake.token) {
                Ok(token) if same_farm && !asked.tokens.iter().any(|(t, _)| *t == token) => {
                    asked.tokens.push((token, staker));
                }
                _ => {}
            }
        }
    }
    farms
}

/// Every pool's point at `block` for `boundary`: one batch of reads, priced by the catalog's
/// routes at those states; a pool of a deployment with a farm holds the farm's reward price and
/// the followed `stakes`' pending rewards there (a second batch). A pool that would not answer
/// is a point not read.
async fn points_at(
    rpc: &RpcClient,
    catalog: &Catalog,
    (pools, stakes): (&[&Pool], &[FollowedStake]),
    block: &Block,
    boundary: i64,
) -> Result<Vec<(String, PoolPoint)>, String> {
    let block_time = time_of(block).map_err(|e| e.to_string())?;
    let observed = DateTime::from_timestamp(block_time, 0).unwrap_or_default();
    let reads = pools::read_pools(rpc, pools, block, observed).await;
    let states: HashMap<PoolKey, PoolState> = pools
        .iter()
        .zip(&reads)
        .filter_map(|(p, r)| Some((p.key(), r.as_ref().ok()?.clone())))
        .collect();
    // None answered: the node is down or serves no state that old; the caller decides.
    if states.is_empty() && !pools.is_empty() {
        return Err(format!("no pool answered at block {}", block.number));
    }
    let Some(chain) = pools.first().map(|p| p.chain) else {
        return Ok(Vec::new());
    };
    let priced = catalog.at_states(chain, &states);
    let prices: HashMap<String, String> = priced
        .pools
        .iter()
        .flat_map(|p| [&p.token_a, &p.token_b])
        .filter(|t| t.priced)
        .map(|t| {
            (
                t.address.to_ascii_lowercase(),
                t.price_usd.normalized().to_string(),
            )
        })
        .collect();
    let stakes: Vec<&FollowedStake> = stakes
        .iter()
        .filter(|s| s.staked_at(block.number))
        .collect();
    let wanted = farms_of(catalog, pools, &stakes);
    let farms = staking::farms_at(rpc, &wanted, block)
        .await
        .unwrap_or_else(|why| {
            tracing::warn!(block = block.number, cause = %why, "the farms' rewards not read at a point");
            BTreeMap::new()
        });
    let farm_point = |pool: &Pool| {
        let at = farms.get(&farm_of(catalog, pool)?)?;
        let reward_token = at.reward_token.to_string().to_ascii_lowercase();
        let pending = stakes
            .iter()
            .filter(|s| pool.is_named(&s.pool))
            .filter_map(|s| {
                let owed = at.pending.get(&U256::from_str(&s.token).ok()?)?;
                Some((s.token.clone(), owed.to_string()))
            })
            .collect();
        Some(FarmPoint {
            reward_price: prices.get(&reward_token).cloned(),
            reward_token,
            pending,
        })
    };
    // A pool that did not answer while others did is named, not left out: a point not read.
    Ok(pools
        .iter()
        .zip(reads)
        .map(|(pool, read)| {
            let state = match read {
                Ok(state) => state,
                Err(why) => {
                    let why = format!(
                        "the pool's state at block {} was not read: {why}",
                        block.number
                    );
                    return (pool.id.clone(), unread_point(block, boundary, why));
                }
            };
            let (t0, t1) = if pool.orientation.base_is_token0 {
                (&pool.token_a, &pool.token_b)
            } else {
                (&pool.token_b, &pool.token_a)
            };
            let price = |t: &crate::domain::catalog::Token| {
                prices.get(&t.address.to_ascii_lowercase()).cloned()
            };
            let point = PoolPoint {
                time: boundary,
                block_time,
                state,
                prices: [price(t0), price(t1)],
                unread: None,
                farm: farm_point(pool),
            };
            (pool.id.clone(), point)
        })
        .collect())
}

/// The last block at or before each of `times` (ascending), all searched at once: each round
/// one batch probing every unresolved time (by the pace between its bounds, every other round
/// halfway); `None` for a time before `low`.
async fn blocks_at(
    rpc: &RpcClient,
    times: &[i64],
    low: Block,
    high: Block,
) -> Result<Vec<Option<Block>>, RpcError> {
    let mut bounds: Vec<(Block, Block)> = vec![(low, high); times.len()];
    for round in 0..64 {
        let mut numbers: Vec<u64> = Vec::new();
        for ((lo, hi), time) in bounds.iter().zip(times) {
            if hi.number <= lo.number + 1 || time_of(lo)? > *time || time_of(hi)? <= *time {
                continue;
            }
            let span = hi.number - lo.number;
            let guess = if round % 2 == 0 {
                let pace =
                    (time - time_of(lo)?) as f64 / (time_of(hi)? - time_of(lo)?).max(1) as f64;
                (span as f64 * pace) as u64
            } else {
                span / 2
            };
            numbers.push(lo.number + guess.clamp(1, span - 1));
        }
        if numbers.is_empty() {
            break;
        }
        numbers.sort_unstable();
        numbers.dedup();
        let found: Vec<Block> = evm::blocks(rpc, &numbers)
            .await?
            .into_iter()
            .flatten()
            .collect();
        for ((lo, hi), time) in bounds.iter_mut().zip(times) {
            for block in &found {
                if block.number > lo.number && block.number < hi.number {
                    if time_of(block)? <= *time {
                        *lo = block.clone();
                    } else {
                        *hi = block.clone();
                    }
                }
            }
        }
    }
    bounds
        .into_iter()
        .zip(times)
        .map(|((lo, hi), time)| {
            if time_of(&hi)? <= *time {
                Ok(Some(hi))
            } else if time_of(&lo)? <= *time {
                Ok(Some(lo))
            } else {
                Ok(None)
            }
        })
        .collect()
}

/// One step of the daily points a position older than the series wants
/// (`SeriesStore::want_days`): one wanted pool of `chain` a sync, its missing days oldest first,
/// at most [`DAYS_PER_SYNC`]: their blocks found at once (`blocks_at`), then the pool and those
/// pricing its tokens read at each block (one batch a day). A day the node cannot serve (a
/// pruned node: no state that old) is kept as a point not read, with why: its positions' figures
/// there are `null`, said so, never zero.
pub async fn backfill_days(
    rpc: &RpcClient,
    series: &dyn SeriesStore,
    catalog: &Catalog,
    chain: Chain,
    target: &Block,
) -> Result<usize, String> {
    let text = |e: &dyn std::fmt::Display| e.to_string();
    let wanted = series.wanted_days(chain).await.map_err(|e| text(&e))?;
    let Some((id, since)) = wanted.into_iter().next() else {
        return Ok(0);
    };
    let Some(pool) = catalog
        .pools
        .iter()
        .find(|p| p.chain == chain && p.is_named(&id))
    else {
        // No longer in the catalog: nothing to record.
        return series
            .days_done(chain, &id, since, None)
            .await
            .map(|_| 0)
            .map_err(|e| text(&e));
    };
    let target_time = time_of(target).map_err(|e| text(&e))?;
    let first = since.max(target_time - MAX_BACKFILL_DAYS * DAY);
    let first = (first + DAY - 1).div_euclid(DAY) * DAY;
    let last = target_time.div_euclid(DAY) * DAY;
    let have = series
        .points(chain, &pool.id, (first, last), &[Tier::Days])
        .await
        .map_err(|e| text(&e))?;
    let all_missing: Vec<i64> = (0..)
        .map(|i| first + i * DAY)
        .take_while(|d| *d <= last)
        .filter(|d| !have.iter().any(|p| p.time == *d))
        .collect();
    let missing: Vec<i64> = all_missing.iter().copied().take(DAYS_PER_SYNC).collect();
    if missing.is_empty() {
        return series
            .days_done(chain, &id, since, None)
            .await
            .map(|_| 0)
            .map_err(|e| text(&e));
    }
    let genesis = evm::blocks(rpc, &[0])
        .await
        .map_err(|e| text(&e))?
        .into_iter()
        .flatten()
        .next()
        .ok_or("the node knows no genesis block")?;
    let blocks = blocks_at(rpc, &missing, genesis, target.clone())
        .await
        .map_err(|e| text(&e))?;
    let tokens = [pool.token_a.address.as_str(), pool.token_b.address.as_str()];
    // A farm's pool: every pool of the chain, as a live point, for its reward token's price.
    let mut read: Vec<&Pool> = match farm_of(catalog, pool) {
        Some(_) => catalog.pools.iter().filter(|p| p.chain == chain).collect(),
        None => catalog.pricing_pools(chain, &tokens),
    };
    if !read.iter().any(|p| p.key() == pool.key()) {
        read.push(pool);
    }
    let stakes = stakes_on(series, catalog, chain, &read).await?;
    let mut points = Vec::new();
    for (day, block) in missing.iter().zip(blocks) {
        let Some(block) = block else { continue };
        match points_at(rpc, catalog, (&read, &stakes), &block, *day).await {
            Ok(found) => points.extend(found),
            Err(why) => {
                let why = format!("{why} (the node serves no state this old: not an archive node)");
                points.push((pool.id.clone(), unread_point(&block, *day, why)));
            }
        }
    }
    let written = points.len();
    series
        .save_points(chain, &points, None)
        .await
        .map_err(|e| text(&e))?;
    let through = (all_missing.len() > missing.len()).then(|| missing[missing.len() - 1]);
    series
        .days_done(chain, &id, since, through)
        .await
        .map_err(|e| text(&e))?;
    Ok(written)
}

/// A point whose pool state was not read at `block`: its block, and `why` no figure stands.
fn unread_point(block: &Block, time: i64, why: String) -> PoolPoint {
    let block_time = time_of(block).unwrap_or(time);
    PoolPoint {
        time,
        block_time,
        state: PoolState {
            sqrt_price: U256::ZERO,
            tick: 0,
            liquidity: 0,
            fee_growth_global0: U256::ZERO,
            fee_growth_global1: U256::ZERO,
            height: block.number,
            block_hash: Some(block.hash.clone()),
            observed_at: DateTime::from_timestamp(block_time, 0).unwrap_or_default(),
            ticks: Vec::new(),
            balances: None,
            slipstream: None,
        },
        prices: [None, None],
        unread: Some(why),
        farm: None,
    }
}

/// What the series needs after a history read of position `(pool, token)` found `events`: a
/// `first` read asks for its pool's days since its first event the series lacks; on a farm's
/// deployment, its pending reward is followed at its pool's points from a stake, up to the
/// block of an unstake or burn, as the newest of them says. A failure costs points, never a figure
/// (said at read).
pub async fn after_history(
    series: &dyn SeriesStore,
    chain: Chain,
    (pool, token): (&str, &str),
    (farm, first): (Option<(&str, &str)>, bool),
    events: &[PositionEvent],
) {
    let start = events.iter().filter_map(|e| e.timestamp).min();
    if let (true, Some(start)) = (first, start) {
        let since = i64::try_from(start).unwrap_or(i64::MAX);
        let asked = series.want_days(chain, pool, since).await;
        asked.unwrap_or_else(|e| tracing::warn!(cause = %e, "past days not asked"));
    }
    let staking = [EventKind::Stake, EventKind::Unstake, EventKind::Burn];
    let newest = events.iter().rev().find(|e| staking.contains(&e.kind));
    let (Some(farm), Some(newest)) = (farm, newest) else {
        return;
    };
    let until = (newest.kind != EventKind::Stake).then(|| StakeEnd {
        block: newest.block,
        time: newest
            .timestamp
            .and_then(|t| i64::try_from(t).ok())
            .unwrap_or_default(),
    });
    let (farm, staker) = farm;
    let stake = FollowedStake {
        pool: pool.to_string(),
        farm: farm.to_string(),
        token: token.to_string(),
        until,
        staker: Some(staker.to_ascii_lowercase()),
    };
    if let Err(e) = series.follow_stake(chain, &stake).await {
        tracing::warn!(%token, cause = %e, "a stake's rewards not followed at points");
    }
}
