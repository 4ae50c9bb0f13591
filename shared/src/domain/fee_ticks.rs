//! The bound ticks' fee accounting the service keeps for itself, and the fee growth inside a
//! range built on it.
//!
//! A position's fees are the growth of `inside = below(upper) − below(lower)` since its
//! checkpoint, so each tick's `below` only needs a constant offset over a position's life, not
//! the pool's own value. Where a tick is initialized on chain the service follows the pool's
//! `feeGrowthOutside` exactly (plus the tick's constant offset); where it is not, the service
//! keeps the tick as the pool would: set at first use (`outside = global` if `tick ≤ current`,
//! else 0) and flipped (`outside = global − outside`) when a sync sees the current tick cross it.
//! A switch between the two carries the `below` over, so fees never jump.

use crate::domain::market::{PoolState, TickState};
use crate::domain::math::fees::{BoundTick, FeeAccounting};
use crate::domain::math::U256;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One tick's fee growth outside, per token, as the service keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeeTick {
    pub tick: i32,
    /// The pool's current tick the `outside` values are relative to (the side they are on).
    pub at_tick: i32,
    #[serde(with = "crate::domain::market::integer_string")]
    pub outside0: U256,
    #[serde(with = "crate::domain::market::integer_string")]
    pub outside1: U256,
    /// Initialized on chain at the last sync: `outside` then follows the pool's values.
    pub on_chain: bool,
    /// While on chain: the service's `below` minus the pool's, per token (constant while the
    /// tick stays initialized).
    #[serde(with = "crate::domain::market::integer_string")]
    pub offset0: U256,
    #[serde(with = "crate::domain::market::integer_string")]
    pub offset1: U256,
}

/// Fee growth below tick `t` from its outside value, with the pool at `current`; the same
/// formula turns a below value back into an outside one.
fn below(accounting: FeeAccounting, t: i32, current: i32, global: U256, outside: U256) -> U256 {
    if current >= t {
        outside
    } else {
        accounting.wrapping_sub(global, outside)
    }
}

fn globals(state: &PoolState) -> [U256; 2] {
    [state.fee_growth_global0, state.fee_growth_global1]
}

impl FeeTick {
    fn outside(&self) -> [U256; 2] {
        [self.outside0, self.outside1]
    }

    /// The record of a tick first used with the pool at `state`, as the pool initializes a tick
    /// (or the pool's own values when the tick is initialized on chain there).
    pub fn first_use(tick: i32, state: &PoolState, chain: Option<&TickState>) -> FeeTick {
        match chain {
            // Offset 0: the pool's own values from the start.
            Some(chain) if chain.initialized => {
                let outside = [chain.fee_growth_outside0, chain.fee_growth_outside1];
                FeeTick::with(tick, state.tick, outside, true, [U256::ZERO; 2])
            }
            _ => {
                let outside = if tick <= state.tick {
                    globals(state)
                } else {
                    [U256::ZERO; 2]
                };
                FeeTick::with(tick, state.tick, outside, false, [U256::ZERO; 2])
            }
        }
    }

    fn with(
        tick: i32,
        at_tick: i32,
        outside: [U256; 2],
        on_chain: bool,
        offset: [U256; 2],
    ) -> FeeTick {
        FeeTick {
            tick,
            at_tick,
            outside0: outside[0],
            outside1: outside[1],
            on_chain,
            offset0: offset[0],
            offset1: offset[1],
        }
    }

    /// The outside values with the pool at `state`: flipped if the current tick crossed this
    /// tick since the record was written (the crossing's exact global growth is not known; the
    /// one at `state` stands in for it).
    pub fn outside_at(&self, accounting: FeeAccounting, state: &PoolState) -> [U256; 2] {
        let crossed = (self.at_tick >= self.tick) != (state.tick >= self.tick);
        let global = globals(state);
        let outside = self.outside();
        if crossed {
            [0, 1].map(|i| accounting.wrapping_sub(global[i], outside[i]))
        } else {
            outside
        }
    }

    /// The record after a sync read the pool at `state` and the tick as `chain`.
    pub fn advance(
        &self,
        accounting: FeeAccounting,
        state: &PoolState,
        chain: Option<&TickState>,
    ) -> FeeTick {
        let estimate = self.outside_at(accounting, state);
        let Some(chain) = chain.filter(|c| c.initialized) else {
            return FeeTick::with(self.tick, state.tick, estimate, false, [U256::ZERO; 2]);
        };
        let global = globals(state);
        let on_chain = [chain.fee_growth_outside0, chain.fee_growth_outside1];
        let below_of =
            |i: usize, outside: U256| below(accounting, self.tick, state.tick, global[i], outside);
        let offset = if self.on_chain {
            [self.offset0, self.offset1]
        } else {
            // Initialized on chain since the last sync: keep the service's below, from here on
            // moving with the pool's.
            [0, 1].map(|i| {
                accounting.wrapping_sub(below_of(i, estimate[i]), below_of(i, on_chain[i]))
            })
        };
        let outside = [0, 1].map(|i| {
            let service_below = accounting.wrapping_add(below_of(i, on_chain[i]), offset[i]);
            below_of(i, service_below)
        });
        FeeTick::with(self.tick, state.tick, outside, true, offset)
    }
}

/// The records of `ticks` after a sync read `state`: advanced where a record exists, started
/// where the tick is tracked without one.
pub fn advance_all(
    accounting: FeeAccounting,
    tracked: &[i32],
    records: &BTreeMap<i32, FeeTick>,
    state: &PoolState,
) -> Vec<FeeTick> {
    tracked
        .iter()
        .map(|&tick| {
            let chain = state.ticks.iter().find(|t| t.tick == tick);
            match records.get(&tick) {
                Some(record) => record.advance(accounting, state, chain),
                None => FeeTick::first_use(tick, state, chain),
            }
        })
        .collect()
}

/// Fee growth inside `[lower, upper)` per token (token0, token1) at `state`, from the service's
/// records of the two ticks; `None` when either has none.
pub fn growth_inside(
    accounting: FeeAccounting,
    state: &PoolState,
    records: &BTreeMap<i32, FeeTick>,
    lower: i32,
    upper: i32,
) -> Option<[U256; 2]> {
    let outside_lower = records.get(&lower)?.outside_at(accounting, state);
    let outside_upper = records.get(&upper)?.outside_at(accounting, state);
    let global = globals(state);
    Some([0, 1].map(|i| {
        let bound = |tick, outside| BoundTick {
            tick,
            initialized: true,
            outside,
        };
        accounting.growth_inside(
            state.tick,
            global[i],
            bound(lower, outside_lower[i]),
            bound(upper, outside_upper[i]),
        )
    }))
}

/// Fee growth inside `[lower, upper)` per token as the pool itself computes it at `state`
/// (what a position's `feeGrowthInside{0,1}LastX128` is a checkpoint of): from the records of
/// the two ticks while both follow the pool, written by the sync that read `state`, their
/// offsets taken off; `None` otherwise (a tick not tracked, not initialized on chain, or its
/// record from before a crossing the state has seen).
pub fn chain_growth_inside(
    accounting: FeeAccounting,
    state: &PoolState,
    records: &BTreeMap<i32, FeeTick>,
    lower: i32,
    upper: i32,
) -> Option<[U256; 2]> {
    // A record on the other side of the current tick than the state's was written before a
    // crossing the state has seen (its successor not stored yet): not current. On the same
    // side an unchanged record is not written again, and stays current.
    let following = |tick: i32| {
        records
            .get(&tick)
            .filter(|r| r.on_chain && (r.at_tick >= r.tick) == (state.tick >= r.tick))
    };
    let (lower_record, upper_record) = (following(lower)?, following(upper)?);
    let global = globals(state);
    let pool_outside = |record: &FeeTick, i: usize| {
        let service_below = below(
            accounting,
            record.tick,
            state.tick,
            global[i],
            record.outside()[i],
        );
        let offset = [record.offset0, record.offset1][i];
        let pool_below = accounting.wrapping_sub(service_below, offset);
        BoundTick {
            tick: record.tick,
            initialized: true,
            outside: below(accounting, record.tick, state.tick, global[i], pool_below),
        }
    };
    Some([0, 1].map(|i| {
        accounting.growth_inside(
            state.tick,
            global[i],
            pool_outside(lower_record, i),
            pool_outside(upper_record, i),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    const EVM: FeeAccounting = FeeAccounting::Evm;

    fn u(v: u128) -> U256 {
        U256::from(v)
    }

    fn state(tick: i32, global: u128, ticks: Vec<TickState>) -> PoolState {
        PoolState {
            sqrt_price: U256::from(1u8) << 96,
            tick,
            liquidity: 0,
            fee_growth_global0: u(global),
            fee_growth_global1: u(global * 2),
            height: 1,
            block_hash: None,
            observed_at: Utc::now(),
            ticks,
            balances: None,
            slipstream: None,
        }
    }

    fn on_chain(tick: i32, outside: u128) -> TickState {
        TickState {
            tick,
            initialized: true,
            fee_growth_outside0: u(outside),
            fee_growth_outside1: u(outside * 2),
        }
    }

    fn inside(records: &[FeeTick], at: &PoolState) -> U256 {
        let map = records.iter().map(|r| (r.tick, *r)).collect();
        growth_inside(EVM, at, &map, -60, 60).unwrap()[0]
    }

    #[test]
    fn first_use_initializes_as_the_pool_does() {
        let at = state(0, 100, vec![]);
        assert_eq!(FeeTick::first_use(-60, &at, None).outside0, u(100));
        assert_eq!(
            FeeTick::first_use(0, &at, None).outside0,
            u(100),
            "tick ≤ current"
        );
        assert_eq!(FeeTick::first_use(60, &at, None).outside0, u(0));
        // Initialized on chain: the pool's own values, offset 0.
        let first = FeeTick::first_use(60, &at, Some(&on_chain(60, 7)));
        assert!(first.on_chain);
        assert_eq!(
            (first.outside0, first.outside1, first.offset0),
            (u(7), u(14), u(0))
        );
    }

    #[test]
    fn a_crossing_seen_by_a_sync_flips_the_service_tick() {
        let opened = state(0, 100, vec![]);
        let records = [-60, 60].map(|t| FeeTick::first_use(t, &opened, None));
        assert_eq!(inside(&records, &opened), u(0));
        // Inside the range, all growth is inside.
        let later = state(10, 150, vec![]);
        let records = records.map(|r| r.advance(EVM, &later, None));
        assert_eq!(inside(&records, &later), u(50));
        // Below the range: the lower tick flips at the sync's global; growth below the range
        // is not inside.
        let below = state(-100, 180, vec![]);
        let records = records.map(|r| r.advance(EVM, &below, None));
        assert_eq!(records[0].outside0, u(180 - 100));
        assert_eq!(
            inside(&records, &below),
            u(80),
            "the crossing's growth counts as inside"
        );
        let still = state(-100, 400, vec![]);
        let records = records.map(|r| r.advance(EVM, &still, None));
        assert_eq!(inside(&records, &still), u(80));
        // A record written after the last sync is read at the state it meets.
        assert_eq!(
            records[0].outside_at(EVM, &state(0, 400, vec![]))[0],
            u(400 - 80)
        );
    }

    #[test]
    fn switching_to_and_from_the_pools_values_keeps_fees_continuous() {
        let opened = state(0, 100, vec![]);
        let records = [-60, 60].map(|t| FeeTick::first_use(t, &opened, None));
        let synced = state(5, 130, vec![]);
        let records = records.map(|r| r.advance(EVM, &synced, None));
        let before = inside(&records, &synced);
        // Another provider initializes both ticks on chain, with their own outside values.
        let chain = state(5, 130, vec![on_chain(-60, 125), on_chain(60, 3)]);
        let switched =
            records.map(|r| r.advance(EVM, &chain, chain.ticks.iter().find(|t| t.tick == r.tick)));
        assert!(switched.iter().all(|r| r.on_chain));
        assert_eq!(inside(&switched, &chain), before, "no jump at the switch");
        // From then on the pool's values lead: growth below the range moves the lower tick's
        // outside on chain exactly, and inside follows.
        let moved = state(-100, 200, vec![on_chain(-60, 190), on_chain(60, 3)]);
        let followed =
            switched.map(|r| r.advance(EVM, &moved, moved.ticks.iter().find(|t| t.tick == r.tick)));
        // On chain: inside = below(60) − below(−60) changes by the pool's own difference.
        let pool_inside = |s: &PoolState| {
            let ticks: BTreeMap<i32, FeeTick> = s
                .ticks
                .iter()
                .map(|t| (t.tick, FeeTick::first_use(t.tick, s, Some(t))))
                .collect();
            growth_inside(EVM, s, &ticks, -60, 60).unwrap()[0]
        };
        assert_eq!(
            EVM.wrapping_sub(inside(&followed, &moved), inside(&switched, &chain)),
            EVM.wrapping_sub(pool_inside(&moved), pool_inside(&chain)),
        );
        // The ticks are uninitialized again: the service carries on from the last values.
        let gone = state(-100, 260, vec![]);
        let after = followed.map(|r| r.advance(EVM, &gone, None));
        assert!(after.iter().all(|r| !r.on_chain));
        assert_eq!(inside(&after, &gone), inside(&followed, &moved));
    }

    #[test]
    fn orca_offsets_wrap_in_128_bits() {
        let orca = FeeAccounting::Orca;
        let opened = state(0, 5, vec![]);
        let record = FeeTick::first_use(-60, &opened, None);
        // The pool's outside is larger than the service's below: the offset wraps mod 2^128.
        let chain = state(0, 5, vec![on_chain(-60, 9)]);
        let switched = record.advance(orca, &chain, chain.ticks.first());
        assert_eq!(switched.offset0, u(u128::MAX - 3));
        assert_eq!(
            switched.outside0,
            u(5),
            "below carried: 9 + (2^128 − 4) mod 2^128"
        );
    }

    #[test]
    fn the_pools_own_inside_comes_back_through_offsets() {
        // Ticks first used while not initialized on chain, so their records carry offsets.
        let opened = state(0, 100, vec![]);
        let records = [-60, 60].map(|t| FeeTick::first_use(t, &opened, None));
        let at = state(30, 400, vec![on_chain(-60, 170), on_chain(60, 20)]);
        let advanced: BTreeMap<i32, FeeTick> = records
            .map(|r| r.advance(EVM, &at, at.ticks.iter().find(|t| t.tick == r.tick)))
            .into_iter()
            .map(|r| (r.tick, r))
            .collect();
        assert!(advanced.values().any(|r| r.offset0 != U256::ZERO));
        // The pool's: global − below(lower) − above(upper) = 400 − 170 − 20.
        let inside = chain_growth_inside(EVM, &at, &advanced, -60, 60).unwrap();
        assert_eq!(inside, [u(210), u(420)]);
        // Later, on the same side of both ticks: the records still hold (the sync writes none
        // that did not change); across a tick not yet written again, none.
        let later = state(31, 401, at.ticks.clone());
        assert_eq!(
            chain_growth_inside(EVM, &later, &advanced, -60, 60),
            Some([u(211), u(422)])
        );
        let crossed = state(70, 401, at.ticks);
        assert_eq!(chain_growth_inside(EVM, &crossed, &advanced, -60, 60), None);
        let off_chain: BTreeMap<i32, FeeTick> = records.map(|r| (r.tick, r)).into();
        assert_eq!(chain_growth_inside(EVM, &opened, &off_chain, -60, 60), None);
    }
}
