//! Whether a position's range was left or entered, without flapping: a side is confirmed when
//! the tick is past a bound by a buffer, or on the same side at two consecutive synced states;
//! at most one exit or entry per cooldown, and after it only a state that differs from the last
//! one told is told; approaches have a cooldown of their own, so that an approach never holds
//! back an exit or an entry. Subscribing (a first state seen) tells nothing.

use super::settings::AlertSettings;
use super::EventType;
use bigdecimal::BigDecimal;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// Where a pool's tick is against a position's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Below,
    Inside,
    Above,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Below => "below",
            Side::Inside => "inside",
            Side::Above => "above",
        }
    }
}

/// A position's range and its pool's tick spacing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub lower: i32,
    pub upper: i32,
    pub spacing: i32,
}

/// At most this many ticks of buffer, however wide the range.
pub const MAX_BUFFER: i64 = 100;

impl Range {
    fn width(self) -> i64 {
        i64::from(self.upper) - i64::from(self.lower)
    }

    /// In range means `lower <= tick < upper`, as the protocols count a position's liquidity.
    pub fn side(self, tick: i32) -> Side {
        if tick < self.lower {
            Side::Below
        } else if tick < self.upper {
            Side::Inside
        } else {
            Side::Above
        }
    }

    /// `max(tickSpacing, 5 % of the width)`, at most [`MAX_BUFFER`] ticks.
    pub fn buffer(self) -> i64 {
        (i64::from(self.spacing).max(self.width() * 5 / 100)).min(MAX_BUFFER)
    }

    /// Whether `tick` is on its side by the buffer at least (confirmed by one state).
    fn deep(self, tick: i32) -> bool {
        let (tick, buffer) = (i64::from(tick), self.buffer());
        let (lower, upper) = (i64::from(self.lower), i64::from(self.upper));
        match self.side(tick as i32) {
            Side::Below => tick < lower - buffer,
            Side::Above => tick >= upper + buffer,
            Side::Inside => tick >= lower + buffer && tick < upper - buffer,
        }
    }

    /// The bound `tick` is within `percent` of the width of, if any (inside only).
    pub fn near(self, tick: i32, percent: u32) -> Option<Side> {
        let share = self.width() * i64::from(percent) / 100;
        let tick = i64::from(tick);
        if tick - i64::from(self.lower) < share {
            Some(Side::Below)
        } else if i64::from(self.upper) - tick <= share {
            Some(Side::Above)
        } else {
            None
        }
    }
}

/// What a position's watch remembers between synced states.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RangeWatch {
    /// The side last told (or first seen, which is not told).
    pub told: Side,
    /// When an exit or an entry was last told: their cooldown runs from it.
    pub told_at: Option<DateTime<Utc>>,
    /// When an approach was last told: its own cooldown runs from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near_told_at: Option<DateTime<Utc>>,
    /// The side at the last synced state and its block: a second state on the same side
    /// confirms it; a state at or before this block is stale.
    pub seen: Side,
    pub block: u64,
    /// An approach told since the price was last away from the bounds.
    pub near_told: bool,
    /// A fee threshold told since the fees were last under it.
    pub fees_told: bool,
}

/// One synced state of the position's pool.
#[derive(Debug, Clone, Copy)]
pub struct Observation {
    pub tick: i32,
    pub block: u64,
    pub at: DateTime<Utc>,
}

/// What a state tells of a position's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeChange {
    /// Left on this side.
    Exited(Side),
    Entered,
    /// Inside, near this bound.
    Approaching(Side),
}

impl RangeChange {
    pub fn event_type(self) -> EventType {
        match self {
            RangeChange::Exited(_) => EventType::RangeExited,
            RangeChange::Entered => EventType::RangeEntered,
            RangeChange::Approaching(_) => EventType::RangeApproaching,
        }
    }

    /// What the event's id names besides the position and the block.
    pub fn transition(self) -> &'static str {
        match self {
            RangeChange::Exited(Side::Below) => "exited-below",
            RangeChange::Exited(_) => "exited-above",
            RangeChange::Entered => "entered",
            RangeChange::Approaching(Side::Below) => "approaching-lower",
            RangeChange::Approaching(_) => "approaching-upper",
        }
    }
}

/// The watch after `state`, and the range event it tells if any (only the types `settings`
/// tell). `None` in: the first state seen, remembered and not told. A state not after the
/// watch's block changes nothing.
pub fn observe(
    watch: Option<&RangeWatch>,
    range: Range,
    state: Observation,
    settings: &AlertSettings,
) -> (RangeWatch, Option<RangeChange>) {
    let seen = range.side(state.tick);
    let Some(watch) = watch else {
        let first = RangeWatch {
            told: seen,
            told_at: None,
            near_told_at: None,
            seen,
            block: state.block,
            near_told: false,
            fees_told: false,
        };
        return (first, None);
    };
    if state.block <= watch.block {
        return (watch.clone(), None);
    }
    let confirmed = (range.deep(state.tick) || seen == watch.seen).then_some(seen);
    let cooldown = Duration::minutes(i64::from(settings.cooldown_minutes));
    let cooled_since =
        |told: Option<DateTime<Utc>>| told.is_none_or(|at| state.at >= at + cooldown);
    let (cooled, near_cooled) = (
        cooled_since(watch.told_at),
        cooled_since(watch.near_told_at),
    );
    let mut next = RangeWatch {
        seen,
        block: state.block,
        ..watch.clone()
    };
    let inside = |side: Side| side == Side::Inside;
    let change = match confirmed {
        Some(side) if inside(side) != inside(watch.told) => {
            let change = if inside(side) {
                RangeChange::Entered
            } else {
                RangeChange::Exited(side)
            };
            (cooled && settings.tells(change.event_type())).then_some(change)
        }
        // Below to above (or back) in one step: still out of range, nothing to tell.
        Some(side) if side != Side::Inside => {
            next.told = side;
            None
        }
        Some(_) => match range.near(state.tick, settings.approach_percent) {
            Some(bound) if !watch.near_told => {
                let change = RangeChange::Approaching(bound);
                (near_cooled && settings.tells(change.event_type())).then_some(change)
            }
            Some(_) => None,
            None => {
                next.near_told = false;
                None
            }
        },
        None => None,
    };
    match change {
        Some(RangeChange::Approaching(_)) => {
            next.near_told = true;
            next.near_told_at = Some(state.at);
        }
        Some(RangeChange::Exited(side)) => {
            next.told = side;
            next.told_at = Some(state.at);
            next.near_told = false;
        }
        Some(RangeChange::Entered) => {
            next.told = Side::Inside;
            next.told_at = Some(state.at);
            // Coming back in near a bound is an entry, not also an approach.
            next.near_told = range.near(state.tick, settings.approach_percent).is_some();
        }
        None => {}
    }
    (next, change)
}

/// Whether unclaimed fees worth `fees_usd` cross the threshold now (told once, until they fall
/// under it again: after a collect); the watch's `fees_told` moved accordingly.
pub fn fees_crossed(
    watch: &mut RangeWatch,
    fees_usd: &BigDecimal,
    settings: &AlertSettings,
) -> bool {
    let Some(threshold) = &settings.fee_threshold_usd else {
        return false;
    };
    let over = fees_usd > threshold;
    let tell = over && !watch.fees_told && settings.tells(EventType::FeesThreshold);
    watch.fees_told = over;
    tell
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    const RANGE: Range = Range {
        lower: -600,
        upper: 600,
        spacing: 60,
    };

    fn quick() -> AlertSettings {
        AlertSettings {
            cooldown_minutes: 0,
            ..AlertSettings::default()
        }
    }

    struct Run {
        watch: Option<RangeWatch>,
        block: u64,
        minute: i64,
        settings: AlertSettings,
    }

    impl Run {
        fn new(settings: AlertSettings) -> Run {
            Run {
                watch: None,
                block: 0,
                minute: 0,
                settings,
            }
        }

        fn at(&mut self, tick: i32) -> Option<RangeChange> {
            self.block += 1;
            self.minute += 10;
            let at = Utc
                .timestamp_opt(1_700_000_000 + self.minute * 60, 0)
                .unwrap();
            let state = Observation {
                tick,
                block: self.block,
                at,
            };
            let (next, change) = observe(self.watch.as_ref(), RANGE, state, &self.settings);
            self.watch = Some(next);
            change
        }
    }

    #[test]
    fn the_buffer_is_the_spacing_or_five_percent_of_the_width_at_most_100() {
        assert_eq!(RANGE.buffer(), 60);
        let wide = Range {
            lower: -10_000,
            upper: 10_000,
            spacing: 10,
        };
        assert_eq!(wide.buffer(), 100);
        let narrow = Range {
            lower: 0,
            upper: 10,
            spacing: 1,
        };
        assert_eq!(narrow.buffer(), 1);
        assert_eq!(RANGE.side(-600), Side::Inside);
        assert_eq!(RANGE.side(600), Side::Above);
        assert_eq!(RANGE.side(-601), Side::Below);
    }

    #[test]
    fn a_first_state_tells_nothing_and_a_deep_exit_and_entry_tell_once_each() {
        let mut run = Run::new(quick());
        assert_eq!(run.at(700), None, "subscribing tells nothing of the past");
        assert_eq!(run.at(0), Some(RangeChange::Entered));
        assert_eq!(run.at(0), None);
        assert_eq!(run.at(700), Some(RangeChange::Exited(Side::Above)));
        assert_eq!(run.at(800), None);
        assert_eq!(run.at(-900), None, "above to below is still out");
        assert_eq!(run.at(0), Some(RangeChange::Entered));
    }

    #[test]
    fn a_swing_inside_the_buffer_that_comes_back_tells_nothing_and_one_that_stays_tells() {
        let mut run = Run::new(quick());
        run.at(0);
        assert_eq!(run.at(610), None, "10 ticks out: within the buffer");
        assert_eq!(run.at(0), None, "back by the next sync");
        assert_eq!(run.at(610), None);
        assert_eq!(
            run.at(620),
            Some(RangeChange::Exited(Side::Above)),
            "out at two consecutive states"
        );
        assert_eq!(run.at(590), None, "just inside once: unconfirmed");
        assert_eq!(
            run.at(595),
            Some(RangeChange::Entered),
            "inside at two states"
        );
        assert_eq!(
            run.at(596),
            None,
            "an entry near a bound is not also an approach"
        );
    }

    #[test]
    fn the_cooldown_holds_back_a_flap_and_tells_a_changed_state_after_it() {
        let mut run = Run::new(AlertSettings {
            cooldown_minutes: 60,
            ..AlertSettings::default()
        });
        run.at(0);
        assert_eq!(run.at(900), Some(RangeChange::Exited(Side::Above)));
        assert_eq!(run.at(0), None, "10 minutes later: cooling down");
        assert_eq!(run.at(900), None, "out again: the state last told");
        for _ in 0..4 {
            assert_eq!(run.at(900), None);
        }
        assert_eq!(run.at(0), Some(RangeChange::Entered), "after the hour");
    }

    #[test]
    fn an_approach_never_holds_back_an_exit_or_an_entry() {
        let mut run = Run::new(AlertSettings {
            cooldown_minutes: 60,
            ..AlertSettings::default()
        });
        run.at(0);
        assert_eq!(run.at(500), Some(RangeChange::Approaching(Side::Above)));
        assert_eq!(
            run.at(900),
            Some(RangeChange::Exited(Side::Above)),
            "10 minutes after the approach: the exit is told at once"
        );
        // Approaches keep a cooldown of their own: the next one within the hour waits.
        let mut near = Run::new(AlertSettings {
            cooldown_minutes: 60,
            ..AlertSettings::default()
        });
        near.at(0);
        assert_eq!(near.at(500), Some(RangeChange::Approaching(Side::Above)));
        assert_eq!(near.at(0), None);
        assert_eq!(near.at(-550), None, "20 minutes after the last approach");
    }

    #[test]
    fn an_approach_is_told_once_until_the_price_moves_away_from_the_bounds() {
        let mut run = Run::new(quick());
        run.at(0);
        assert_eq!(run.at(500), Some(RangeChange::Approaching(Side::Above)));
        assert_eq!(run.at(510), None);
        assert_eq!(run.at(0), None);
        assert_eq!(run.at(-550), Some(RangeChange::Approaching(Side::Below)));
        let mut quiet = Run::new(AlertSettings {
            types: vec![EventType::RangeExited],
            ..quick()
        });
        quiet.at(0);
        assert_eq!(quiet.at(500), None, "approach not subscribed");
        assert_eq!(quiet.at(900), Some(RangeChange::Exited(Side::Above)));
    }

    #[test]
    fn a_stale_state_changes_nothing() {
        let mut run = Run::new(quick());
        run.at(0);
        let watch = run.watch.clone().unwrap();
        let stale = Observation {
            tick: 900,
            block: watch.block,
            at: Utc::now(),
        };
        assert_eq!(observe(Some(&watch), RANGE, stale, &quick()), (watch, None));
    }

    #[test]
    fn a_fee_threshold_is_told_once_until_the_fees_fall_under_it() {
        let settings = AlertSettings {
            types: vec![EventType::FeesThreshold],
            fee_threshold_usd: Some(BigDecimal::from(10)),
            ..AlertSettings::default()
        };
        let mut run = Run::new(settings.clone());
        run.at(0);
        let mut watch = run.watch.unwrap();
        assert!(!fees_crossed(&mut watch, &BigDecimal::from(9), &settings));
        assert!(fees_crossed(&mut watch, &BigDecimal::from(11), &settings));
        assert!(!fees_crossed(&mut watch, &BigDecimal::from(12), &settings));
        assert!(!fees_crossed(&mut watch, &BigDecimal::from(0), &settings));
        assert!(fees_crossed(&mut watch, &BigDecimal::from(11), &settings));
    }
}
