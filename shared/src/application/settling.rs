//! The life cycle over the store: the pending positions of pools a sync just updated, settled
//! at the states the market now holds (each activated or closed unfunded by the domain's
//! `lifecycle`), and the ticks of a closed position released.

use crate::application::ports::{Market, PositionStore, StoreError};
use crate::domain::catalog::Pool;
use crate::domain::lifecycle::{activate, Activation};
use crate::domain::model::{Chain, Position, Status};
use chrono::{DateTime, Utc};

/// The ticks of a position that just closed (at `now`) are one use fewer; one no position uses
/// any more is still read until the series has recorded past `now` (its points before the
/// close hold the position's ticks however late they are recorded; Solana has no series). A
/// failure only leaves a count that costs the sync one read per tick (logged), never a figure.
pub async fn release_ticks(
    market: &dyn Market,
    pool: &Pool,
    position: &Position,
    now: DateTime<Utc>,
) {
    let ticks = [position.tick_lower, position.tick_upper];
    let released_at = (pool.chain != Chain::Solana).then(|| now.timestamp());
    if let Err(e) = market.release_ticks(pool, ticks, released_at).await {
        tracing::warn!(position = %position.id, cause = %e, "ticks of a closed position left tracked");
    }
}

/// The positions waiting on `pools` (their pending index), with the index of their pool.
pub async fn waiting_on(
    store: &dyn PositionStore,
    pools: &[&Pool],
) -> Result<Vec<(usize, Position)>, StoreError> {
    let mut waiting = Vec::new();
    for (i, pool) in pools.iter().enumerate() {
        for position in store
            .pending_on(pool.chain, pool.protocol, &pool.id)
            .await?
        {
            waiting.push((i, position));
        }
    }
    Ok(waiting)
}

/// Settles the pending positions of `pools` (just updated by a sync) at the states the market
/// now holds: [`waiting_on`], then [`settle_offers`].
pub async fn settle_pending(
    store: &dyn PositionStore,
    market: &dyn Market,
    pools: &[&Pool],
    now: DateTime<Utc>,
) -> Result<Vec<(u32, u32)>, StoreError> {
    let waiting = waiting_on(store, pools).await?;
    settle_offers(store, market, pools, waiting, now).await
}

/// Settles the simulated offers among `waiting` (positions on `pools`, as [`waiting_on`]
/// answers): each activated as a create at the market's state would size it, or closed when
/// its offer funds nothing there. Orders wait for their chain's transactions instead
/// (`chain::orders`). One store transaction per position; one that moved on meanwhile (a
/// cancel) is left alone. Answers (activated, unfunded) per pool.
pub async fn settle_offers(
    store: &dyn PositionStore,
    market: &dyn Market,
    pools: &[&Pool],
    waiting: Vec<(usize, Position)>,
    now: DateTime<Utc>,
) -> Result<Vec<(u32, u32)>, StoreError> {
    let waiting: Vec<_> = waiting
        .into_iter()
        .filter(|(_, p)| p.order.is_none() && p.status == Status::Pending)
        .collect();
    let mut settled = vec![(0, 0); pools.len()];
    if waiting.is_empty() {
        return Ok(settled);
    }
    // The states just stored, with the USD prices derived from them.
    let fresh = market.catalog().await?;
    for (i, position) in waiting {
        let outcome = match activate(&position, &fresh, now) {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!(position = %position.id, cause = %e, "pending position not sized");
                continue;
            }
        };
        let stored = match &outcome {
            Activation::Active(active) => store.activate(active).await,
            Activation::Unfunded(closing) => {
                let (owner, id) = (&position.owner, &position.id);
                store.close(owner, id, Status::Pending, closing).await
            }
            Activation::NotYet => continue,
        };
        match stored {
            Ok(()) => {
                let active = matches!(outcome, Activation::Active(_));
                tracing::info!(position = %position.id, active, "pending position settled");
                if active {
                    settled[i].0 += 1;
                } else {
                    settled[i].1 += 1;
                    release_ticks(market, pools[i], &position, now).await;
                }
            }
            Err(StoreError::Conflict) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(settled)
}
