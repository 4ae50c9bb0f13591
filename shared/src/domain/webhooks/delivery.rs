//! When a delivery is tried again, and when an endpoint is given up on.

use chrono::{DateTime, Duration, Utc};

/// The waits before the second, third, ... attempt (±10 % jitter each): 5 s, 5 min, 30 min,
/// 2 h, 5 h, 10 h, 10 h; after the eighth attempt the event is given up on.
pub const RETRY_SCHEDULE_SECONDS: [u64; 7] = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];
/// An answer slower than this is a failure.
pub const TIMEOUT_SECONDS: u64 = 10;
/// Five days of failures (no success since) disable an endpoint.
pub const FAILING_DAYS: i64 = 5;
/// At most this many events per user an hour are delivered; the rest are counted.
pub const HOURLY_EVENTS: u64 = 600;
/// A body over this is not sent (the event's data is cut to fit).
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The wait before attempt `attempt + 1` after `attempt` failed (1-based), scaled by `scale`
/// (1 deployed; smaller in tests), with `jitter` in [-1, 1] as a tenth of it; `None`: give up.
pub fn retry_after(attempt: u32, scale: f64, jitter: f64) -> Option<std::time::Duration> {
    let base = *RETRY_SCHEDULE_SECONDS.get(attempt.checked_sub(1)? as usize)?;
    let seconds = base as f64 * scale * (1.0 + 0.1 * jitter.clamp(-1.0, 1.0));
    Some(std::time::Duration::from_secs_f64(seconds.max(0.0)))
}

/// What an attempt's answer makes of the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Delivered,
    /// Try again later (if the schedule allows).
    Retry,
    /// Disable the endpoint, for this reason.
    Disable(String),
}

/// An answer's status (or none: a timeout, a refused connection) judged: any 2xx delivers; a
/// 410 disables; a redirect is never followed (a failure like any other); five days of
/// failures disable.
pub fn judge(
    status: Option<u16>,
    failing_since: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Verdict {
    match status {
        Some(200..=299) => Verdict::Delivered,
        Some(410) => Verdict::Disable("the endpoint answered 410 Gone".into()),
        _ if failing_since.is_some_and(|since| now - since >= Duration::days(FAILING_DAYS)) => {
            Verdict::Disable(format!(
                "every delivery failed for {FAILING_DAYS} days (since {})",
                failing_since.map(|s| s.to_rfc3339()).unwrap_or_default()
            ))
        }
        _ => Verdict::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_seven_retries_with_a_tenth_of_jitter() {
        let secs = |a, j| retry_after(a, 1.0, j).map(|d| d.as_secs_f64());
        assert_eq!(secs(1, 0.0), Some(5.0));
        assert_eq!(secs(2, 1.0), Some(330.0));
        assert_eq!(secs(7, -1.0), Some(32_400.0));
        assert_eq!(secs(8, 0.0), None);
        assert_eq!(secs(0, 0.0), None);
        assert_eq!(retry_after(3, 0.001, 0.0).unwrap().as_secs_f64(), 1.8);
    }

    #[test]
    fn a_2xx_delivers_a_410_disables_and_five_days_of_failures_disable() {
        let now = Utc::now();
        assert_eq!(judge(Some(204), None, now), Verdict::Delivered);
        assert_eq!(judge(Some(302), None, now), Verdict::Retry);
        assert_eq!(
            judge(None, Some(now - Duration::days(1)), now),
            Verdict::Retry
        );
        assert!(matches!(judge(Some(410), None, now), Verdict::Disable(_)));
        assert!(matches!(
            judge(Some(500), Some(now - Duration::days(5)), now),
            Verdict::Disable(_)
        ));
    }
}
