//! The series' boundaries and periods, a pool's point, and where a chain's series stands.

use crate::domain::market::PoolState;
use bigdecimal::BigDecimal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::str::FromStr;

pub const FIVE_MINUTES: i64 = 300;
pub const HOUR: i64 = 3_600;
pub const DAY: i64 = 86_400;
/// The most points a chart answers (`all` widens its interval to stay within).
pub const MAX_POINTS: i64 = 400;

named_enum!(
    /// A chart's span.
    Period {
        Day => "1d",
        Week => "7d",
        Month => "30d",
        Quarter => "90d",
        Year => "1y",
        All => "all",
    }
);

/// The series a boundary is kept in: its coarsest. A day's boundary is an hour's and a
/// 5-minute one too, and kept once, for ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    Minutes,
    Hours,
    Days,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Minutes, Tier::Hours, Tier::Days];

    pub fn of(time: i64) -> Tier {
        if time % DAY == 0 {
            Tier::Days
        } else if time % HOUR == 0 {
            Tier::Hours
        } else {
            Tier::Minutes
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Minutes => "5m",
            Tier::Hours => "1h",
            Tier::Days => "1d",
        }
    }

    /// How long its points are kept (`None`: for ever): 2 days, 95 days.
    pub fn kept_for(self) -> Option<i64> {
        match self {
            Tier::Minutes => Some(2 * DAY),
            Tier::Hours => Some(95 * DAY),
            Tier::Days => None,
        }
    }

    /// The tiers holding every boundary of a chart with this interval.
    pub fn holding(interval: i64) -> &'static [Tier] {
        if interval % DAY == 0 {
            &[Tier::Days]
        } else if interval % HOUR == 0 {
            &[Tier::Hours, Tier::Days]
        } else {
            &Tier::ALL
        }
    }
}

impl Period {
    pub fn seconds(self) -> Option<i64> {
        match self {
            Period::Day => Some(DAY),
            Period::Week => Some(7 * DAY),
            Period::Month => Some(30 * DAY),
            Period::Quarter => Some(90 * DAY),
            Period::Year => Some(365 * DAY),
            Period::All => None,
        }
    }

    /// The chart's interval and its boundaries, oldest first, ending at the last boundary at
    /// or before `now`: 1d every 5 minutes (288), 7d hourly (168), 30d every 4 hours (180), 90d
    /// every 12 hours (180), 1y daily (365), all daily from `since` (the book's first time), or
    /// every N days to stay within [`MAX_POINTS`].
    pub fn boundaries(self, now: i64, since: Option<i64>) -> (i64, Vec<i64>) {
        let (interval, count) = match self {
            Period::Day => (FIVE_MINUTES, 288),
            Period::Week => (HOUR, 168),
            Period::Month => (4 * HOUR, 180),
            Period::Quarter => (12 * HOUR, 180),
            Period::Year => (DAY, 365),
            Period::All => {
                let since = since.unwrap_or(now).min(now);
                let days = (now - since) / DAY + 1;
                let every = (days + MAX_POINTS - 1) / MAX_POINTS;
                let interval = every.max(1) * DAY;
                (interval, (now - since) / interval + 1)
            }
        };
        let last = now.div_euclid(interval) * interval;
        let first = last - (count - 1) * interval;
        (interval, (0..count).map(|i| first + i * interval).collect())
    }
}

/// The boundaries a sync records on a chain whose confirmed block is at `block_time`, after
/// `through` (the last recorded; `None`: only the latest), oldest first: every one passed,
/// whatever the schedule, none that its tier no longer keeps (past the 5-minute points' days,
/// hours only; past the hours', days only). A sync whose time runs out records the oldest
/// first and the next goes on from there (the cursor moves to the last one recorded).
pub fn due_boundaries(through: Option<i64>, block_time: i64) -> Vec<i64> {
    let latest = block_time.div_euclid(FIVE_MINUTES) * FIVE_MINUTES;
    let Some(through) = through else {
        return vec![latest];
    };
    let kept = |t: i64| Tier::of(t).kept_for().is_none_or(|k| t > block_time - k);
    let mut due = Vec::new();
    let mut t = (through.div_euclid(FIVE_MINUTES) + 1) * FIVE_MINUTES;
    while t <= latest {
        if kept(t) {
            due.push(t);
        }
        // Past what 5-minute points are kept for, only hours are due, and past the hours' only
        // days: step by them.
        t += if kept(t + FIVE_MINUTES) || t % HOUR != 0 {
            FIVE_MINUTES
        } else if kept(t + HOUR) || t % DAY != 0 {
            HOUR
        } else {
            DAY
        };
    }
    due
}

/// One pool's point: its state at the last confirmed block at or before `time` (its ticks the
/// ones followed positions used then, as the chain keeps them) and its tokens' USD prices
/// there by the catalog's routes (protocol order), decimal strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolPoint {
    /// The boundary, unix seconds.
    pub time: i64,
    pub block_time: i64,
    pub state: PoolState,
    pub prices: [Option<String>; 2],
    /// Why the pool's state at the point's block could not be read (a backfill from a node that
    /// keeps no state that old): `state` then holds only its block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
    /// A pool of a deployment with a farm: the farm's reward and what it owed the followed
    /// staked positions at the point's block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub farm: Option<FarmPoint>,
}

/// A farm at a point (decision 60's rewards over time): its reward token's USD price there by
/// the catalog's routes, and `pendingCake` at the point's block of each staked position the
/// series follows on the pool, by token id (base units, decimal strings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FarmPoint {
    /// Lower case.
    pub reward_token: String,
    pub reward_price: Option<String>,
    pub pending: BTreeMap<String, String>,
}

/// A staked position whose farm's pending reward the series reads at each point of its pool:
/// followed from its history's stake, for points before its unstake or burn (`until`: a sync
/// catching up records points before it after it was read).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FollowedStake {
    pub pool: String,
    pub farm: String,
    pub token: String,
    pub until: Option<StakeEnd>,
    /// Who staked it: a Slipstream gauge's `earned` is asked per owner and token.
    pub staker: Option<String>,
}

/// Where a followed stake ended: its unstake's or burn's block and time (unix seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StakeEnd {
    pub block: u64,
    pub time: i64,
}

impl FollowedStake {
    /// Whether a point at `block` holds its pending reward.
    pub fn staked_at(&self, block: u64) -> bool {
        self.until.is_none_or(|end| block < end.block)
    }
}

impl PoolPoint {
    pub fn block(&self) -> u64 {
        self.state.height
    }

    pub fn prices(&self) -> [Option<BigDecimal>; 2] {
        self.prices
            .clone()
            .map(|p| p.and_then(|p| BigDecimal::from_str(&p).ok()))
    }
}

/// Where a chain's series stands: the last boundary recorded and the blocks of the latest ones,
/// which each sync checks against the chain (a point whose block a reorg replaced is read again).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeriesCursor {
    pub through: Option<i64>,
    pub recent: Vec<RecordedBoundary>,
}

/// How many recorded boundaries a cursor keeps to check for reorgs.
pub const RECENT_KEPT: usize = 6;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedBoundary {
    pub time: i64,
    pub block: u64,
    pub hash: String,
}

impl SeriesCursor {
    /// The cursor after recording `done`, in order.
    pub fn after(&self, done: &[RecordedBoundary]) -> SeriesCursor {
        let mut recent: Vec<RecordedBoundary> = self
            .recent
            .iter()
            .filter(|r| !done.iter().any(|d| d.time == r.time))
            .chain(done)
            .cloned()
            .collect();
        recent.sort_by_key(|r| r.time);
        let skip = recent.len().saturating_sub(RECENT_KEPT);
        SeriesCursor {
            through: done.iter().map(|d| d.time).chain(self.through).max(),
            recent: recent.split_off(skip),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_have_their_resolutions() {
        let now = 1_700_000_123;
        for (period, interval, count) in [
            (Period::Day, 300, 288),
            (Period::Week, 3_600, 168),
            (Period::Month, 14_400, 180),
            (Period::Quarter, 43_200, 180),
            (Period::Year, 86_400, 365),
        ] {
            let (i, points) = period.boundaries(now, None);
            assert_eq!((i, points.len()), (interval, count), "{period:?}");
            assert!(points.iter().all(|t| t % interval == 0));
            assert!(*points.last().unwrap() <= now && now - points.last().unwrap() < interval);
        }
        // Ten years daily would be 3,651 points: every 10 days, at most 400.
        let (interval, points) = Period::All.boundaries(now, Some(now - 3_650 * DAY));
        assert_eq!(interval, 10 * DAY);
        assert!(
            points.len() <= 400 && points.len() >= 365,
            "{}",
            points.len()
        );
        let (interval, points) = Period::All.boundaries(now, Some(now - 3 * DAY));
        assert_eq!((interval, points.len()), (DAY, 4));
    }

    #[test]
    fn tiers_keep_each_boundary_once() {
        assert_eq!(Tier::of(DAY * 5), Tier::Days);
        assert_eq!(Tier::of(DAY * 5 + HOUR), Tier::Hours);
        assert_eq!(Tier::of(DAY * 5 + 300), Tier::Minutes);
        assert_eq!(Tier::holding(4 * HOUR), &[Tier::Hours, Tier::Days]);
        assert_eq!(Tier::holding(DAY), &[Tier::Days]);
    }

    #[test]
    fn a_sync_records_the_boundaries_it_passed() {
        let day = 20_000 * DAY;
        // First: only the latest.
        assert_eq!(due_boundaries(None, day + 301), vec![day + 300]);
        // Ten minutes on: two.
        assert_eq!(
            due_boundaries(Some(day + 300), day + 901),
            vec![day + 600, day + 900]
        );
        // Down three days (or a sync every three days): every boundary, in order, hours only
        // where 5-minute points are no longer kept: the first day's 24 hours, then the last two
        // days' 576 5-minute boundaries.
        let due = due_boundaries(Some(day), day + 3 * DAY + 10);
        assert_eq!(due[0], day + HOUR);
        assert_eq!(due.len(), 24 + 576);
        assert!(due[..24].iter().all(|t| t % HOUR == 0));
        assert_eq!(
            due[24..],
            (1..=576).map(|i| day + DAY + i * 300).collect::<Vec<_>>()
        );
        assert!(due.windows(2).all(|w| w[0] < w[1]));
        // Down 200 days: days where hours are no longer kept, then hours, then 5 minutes.
        let due = due_boundaries(Some(day), day + 200 * DAY);
        // 105 days; the hours of the 93 days after (95 are kept); 576 5-minute boundaries.
        assert_eq!(due.len(), 105 + 93 * 24 + 576);
        assert_eq!(due[104], day + 105 * DAY);
        assert_eq!(due[105], day + 105 * DAY + HOUR);
        assert!(due.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_cursor_keeps_the_latest_blocks() {
        let mark = |time: i64| RecordedBoundary {
            time,
            block: time as u64,
            hash: format!("{time}"),
        };
        let done: Vec<_> = (1..=8).map(|t| mark(t * 300)).collect();
        let cursor = SeriesCursor::default().after(&done);
        assert_eq!(cursor.through, Some(2_400));
        assert_eq!(cursor.recent.len(), RECENT_KEPT);
        assert_eq!(cursor.recent[0].time, 900);
        // A boundary read again replaces its entry, the cursor does not go back.
        let again = cursor.after(&[mark(1_200)]);
        assert_eq!(again.through, Some(2_400));
        assert_eq!(again.recent.len(), RECENT_KEPT);
    }
}
