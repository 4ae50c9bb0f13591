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

use crate::market::{PoolState, TickState};
use crate::math::fees::{BoundTick, FeeAccounting};
use crate::math::U256;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One tick's fee growth outside, per token, as the service keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeeTick {
    pub tick: i32,
    /// The pool's current tick the `outside` values are relative to (the side they are on).
    pub at_tick: i32,
    #[serde(with = "crate::market::integer_string")]
    pub outside0: U256,
    #[serde(with = "crate::market::integer_string")]
    pub outside1: U256,
    /// Initialized on chain at the last sync: `outside` then follows the pool's values.
    pub on_chain: bool,
    /// While on chain: the service's `below` minus the pool's, per token (constant while the
    /// tick stays initialized).
    #[serde(with = "crate::market::integer_string")]
    pub offset0: U256,
    #[serde(with = "crate::market::integer_string")]
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
