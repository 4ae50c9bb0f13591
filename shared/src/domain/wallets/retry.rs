//! Wallets whose whole read or a position's history stopped part way (a provider's outage, a
//! range refused past its splits, a rate limit): retried by the following syncs, with backoff
//! and a bound per sync, without reading any idle wallet; still stopped after an hour, they are
//! said so with a metric (decision 58).

use super::LinkedWallet;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// Wallets one sync retries at most: the rest wait for the next syncs, the longest waiting
/// first.
pub const RETRIES_PER_SYNC: usize = 20;

/// The first retry is the next sync's; then [`FIRST_WAIT_SECONDS`], doubled by each failed
/// retry up to [`LONGEST_WAIT_SECONDS`].
pub const FIRST_WAIT_SECONDS: i64 = 60;
pub const LONGEST_WAIT_SECONDS: i64 = 3_600;

/// A read stopped for this long waits [`DAILY_WAIT_SECONDS`] between retries: what fails for a
/// day is failing for good until someone fixes it, and an hourly retry for ever only costs.
pub const DAILY_AFTER_SECONDS: i64 = 86_400;
pub const DAILY_WAIT_SECONDS: i64 = 86_400;

/// How long a wallet's read may stay stopped before the metric says so.
pub const STALLED_AFTER_SECONDS: i64 = 3_600;

/// A wallet's stopped read, kept on its registry entry until a read goes through whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retry {
    /// Reads that stopped since the last whole one.
    pub attempts: u32,
    /// When the first of them stopped.
    pub since: DateTime<Utc>,
    /// Not retried before then.
    pub next_at: DateTime<Utc>,
    /// Why the last one stopped.
    pub reason: String,
}

impl Retry {
    /// The retry after a read at `now` stopped for `reason`, following `previous` if any.
    pub fn after(previous: Option<&Retry>, reason: String, now: DateTime<Utc>) -> Retry {
        let attempts = previous.map_or(1, |r| r.attempts.saturating_add(1));
        let since = previous.map_or(now, |r| r.since);
        let wait = match attempts {
            _ if now - since >= Duration::seconds(DAILY_AFTER_SECONDS) => DAILY_WAIT_SECONDS,
            1 => 0,
            n => (FIRST_WAIT_SECONDS << (n - 2).min(16)).min(LONGEST_WAIT_SECONDS),
        };
        Retry {
            attempts,
            since,
            next_at: now + Duration::seconds(wait),
            reason,
        }
    }

    /// Stopped for longer than [`STALLED_AFTER_SECONDS`] at `now`.
    pub fn stalled(&self, now: DateTime<Utc>) -> bool {
        now - self.since >= Duration::seconds(STALLED_AFTER_SECONDS)
    }
}

/// The wallets of `linked` whose retry is due at `now`, the longest waiting first, at most
/// `limit`.
pub fn due(linked: &[LinkedWallet], now: DateTime<Utc>, limit: usize) -> Vec<LinkedWallet> {
    let mut due: Vec<&LinkedWallet> = linked
        .iter()
        .filter(|w| w.retry.as_ref().is_some_and(|r| r.next_at <= now))
        .collect();
    due.sort_by_key(|w| w.retry.as_ref().map(|r| r.next_at));
    due.into_iter().take(limit).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::Chain;
    use crate::domain::wallets::WalletKind;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_795_000_000 + seconds, 0).unwrap()
    }

    fn wallet(i: usize, retry: Option<Retry>) -> LinkedWallet {
        let wallet = (Chain::Ethereum, format!("0x{i:040x}"));
        LinkedWallet {
            retry,
            ..LinkedWallet::new(format!("user-{i}"), wallet, at(0), WalletKind::Eoa)
        }
    }

    #[test]
    fn waits_double_up_to_an_hour_and_keep_when_it_first_stopped() {
        let first = Retry::after(None, "outage".into(), at(0));
        assert_eq!(
            (first.attempts, first.since, first.next_at),
            (1, at(0), at(0))
        );
        let mut retry = first;
        let mut waits = Vec::new();
        for n in 1..10 {
            let now = at(n * 10_000);
            retry = Retry::after(Some(&retry), "outage".into(), now);
            waits.push((retry.next_at - now).num_seconds());
            assert_eq!(retry.since, at(0));
        }
        assert_eq!(waits, [60, 120, 240, 480, 960, 1920, 3600, 3600, 86_400]);
        assert!(!Retry::after(None, "x".into(), at(0)).stalled(at(3_599)));
        assert!(Retry::after(None, "x".into(), at(0)).stalled(at(3_600)));
    }

    #[test]
    fn a_read_stopped_for_a_day_is_retried_daily_and_stays_stalled() {
        let mut retry = Retry::after(None, "no endpoint".into(), at(0));
        let mut now = at(0);
        while now < at(DAILY_AFTER_SECONDS) {
            now = retry.next_at.max(now + Duration::seconds(1));
            retry = Retry::after(Some(&retry), "no endpoint".into(), now);
        }
        assert_eq!((retry.next_at - now).num_seconds(), DAILY_WAIT_SECONDS);
        let before = retry.attempts;
        // Hourly retries for a day: 24 or so, then one a day.
        assert!((20..40).contains(&before), "{before}");
        let later = Retry::after(Some(&retry), "no endpoint".into(), retry.next_at);
        assert_eq!(
            (later.next_at - retry.next_at).num_seconds(),
            DAILY_WAIT_SECONDS
        );
        assert!(later.stalled(retry.next_at), "the alarm stays");
    }

    #[test]
    fn only_due_wallets_are_retried_the_longest_waiting_first_and_bounded() {
        let stopped = |next: i64| {
            Some(Retry {
                attempts: 1,
                since: at(0),
                next_at: at(next),
                reason: "outage".into(),
            })
        };
        let mut linked = vec![
            wallet(0, None),
            wallet(1, stopped(500)),
            wallet(2, stopped(50)),
        ];
        linked.extend((3..40).map(|i| wallet(i, stopped(100 + i as i64))));
        let picked = due(&linked, at(100), RETRIES_PER_SYNC);
        let owners: Vec<&str> = picked.iter().map(|w| w.owner.as_str()).collect();
        assert_eq!(owners, ["user-2"], "idle and not-yet-due wallets wait");
        let picked = due(&linked, at(1_000), RETRIES_PER_SYNC);
        assert_eq!(picked.len(), RETRIES_PER_SYNC);
        assert_eq!(picked[0].owner, "user-2");
        assert!(picked
            .iter()
            .all(|w| w.owner != "user-0" && w.owner != "user-1"));
    }
}
