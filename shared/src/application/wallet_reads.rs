//! What one read of a linked wallet makes of the positions stored for it: new ones keyed once,
//! later reads over earlier ones, the ones it no longer holds closed (the domain's `holdings`
//! says how each is read and shown).

use crate::application::alert_ports::Alerts;
use crate::application::ports::{Market, PositionStore, StoreError};
use crate::application::settling::release_ticks;
use crate::application::watches::{emit_withdrawn, rewatch, watching};
use crate::domain::catalog::{Catalog, Pool};
use crate::domain::holdings::{
    holding_of, usd_price, value_of, ReadPosition, Staked, TRANSFERRED, WITHDRAWN,
};
use crate::domain::model::{Chain, Position, Status, WalletHolding};
use crate::domain::orders::settle::MOVED;
use crate::domain::wallets::LinkedWallet;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// What one read of a wallet made of its stored positions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// How many positions the wallet holds.
    pub held: u64,
    /// The positions the read wrote, each with what it changed: none when the events had kept
    /// the wallet's positions as the chain holds them (what a reconciliation counts).
    pub changed: Vec<Change>,
}

/// One position a read wrote, and what differed from the stored one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub position: String,
    pub fields: Vec<&'static str>,
}

/// What differs between a stored position and the same position as read: the chain state its
/// figures follow from (an EVM position's fee state; an Orca position's read figures), never
/// figures that only follow from its pool's state.
fn differences(before: &Position, after: &Position) -> Vec<&'static str> {
    let (Some(b), Some(a)) = (before.holding.as_deref(), after.holding.as_deref()) else {
        return vec!["holding"];
    };
    let mut fields = Vec::new();
    let mut differ = |name, different: bool| {
        if different {
            fields.push(name);
        }
    };
    differ("status", before.status != after.status);
    differ("liquidity", before.liquidity != after.liquidity);
    differ(
        "ticks",
        (before.tick_lower, before.tick_upper) != (after.tick_lower, after.tick_upper),
    );
    differ("wallet", b.wallet != a.wallet);
    differ("readError", b.read_error != a.read_error);
    differ("closeReason", b.close_reason != a.close_reason);
    differ("tracked", b.tracked != a.tracked);
    differ("watched", b.watched != a.watched);
    // A stake, an unstake, or its pending reward moved (decision 60).
    differ("staked", b.staked != a.staked);
    match (&b.fee_state, &a.fee_state) {
        (Some(x), Some(y)) => differ("feeState", x != y),
        (None, None) => differ(
            "figures",
            (&b.amounts, &b.fees, &b.sqrt_price) != (&a.amounts, &a.fees, &a.sqrt_price),
        ),
        _ => differ("feeState", true),
    }
    fields
}

/// A staked read keeps the block it was first seen staked at while it stays in the same farm;
/// a position no longer staked keeps its farm's record, unstaked (its harvests' token).
fn staked_since(before: &WalletHolding, read: Option<Staked>) -> Option<Staked> {
    let was = before.staked.as_ref();
    match read {
        Some(mut staked) => {
            let same = was.filter(|w| w.contract == staked.contract && !w.unstaked);
            if let Some(was) = same {
                staked.since_height = was.since_height;
            }
            Some(staked)
        }
        None => was.map(|w| Staked {
            unstaked: true,
            rewards_pending: "0".into(),
            ..w.clone()
        }),
    }
}

/// Whether a wallet position's bounds belong among its pool's tracked ticks: open, with a fee
/// state to value it at read, on a pool the catalog has.
fn wants_ticks(catalog: &Catalog, position: &Position) -> bool {
    position.status == Status::Active
        && position
            .holding
            .as_ref()
            .is_some_and(|h| h.fee_state.is_some())
        && catalog
            .find(position.chain, position.protocol, &position.pool)
            .is_some()
}

/// Counts `next`'s bounds among its pool's tracked ticks if it should be and `was_tracked`
/// says it is not (before its write: a count left by a write that then fails costs one tick
/// read per sync, never a figure), and marks it; answers the pool whose ticks to release once
/// the write stands, when it no longer should be.
async fn prepare_ticks<'a>(
    market: &dyn Market,
    catalog: &'a Catalog,
    was_tracked: bool,
    next: &mut Position,
) -> Option<&'a Pool> {
    let pool = catalog.find(next.chain, next.protocol, &next.pool);
    let wanted = wants_ticks(catalog, next);
    let ticks = [next.tick_lower, next.tick_upper];
    let tracked = match (wanted, was_tracked, pool) {
        (true, false, Some(pool)) => match market.track_ticks(pool, ticks, &[]).await {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(position = %next.id, cause = %e, "a wallet position's ticks not tracked: valued at its reads");
                false
            }
        },
        (wanted, _, _) => wanted && was_tracked,
    };
    if let Some(holding) = next.holding.as_deref_mut() {
        holding.tracked = tracked;
    }
    (was_tracked && !tracked).then_some(pool).flatten()
}

/// The ticks of the wallet positions of `positions` whose bounds are tracked, released: they
/// are gone (their wallet was unlinked).
pub async fn release_tracked(market: &dyn Market, catalog: &Catalog, positions: &[Position]) {
    for position in positions {
        if position.holding.as_ref().is_some_and(|h| h.tracked) {
            let pool = catalog.find(position.chain, position.protocol, &position.pool);
            release_after(market, pool, position).await;
        }
    }
}

/// Releases the position's ticks, now: a chain's time is never ahead of the clock, so the
/// series keeps them through the close.
async fn release_after(market: &dyn Market, pool: Option<&Pool>, position: &Position) {
    if let Some(pool) = pool {
        release_ticks(market, pool, position, Utc::now()).await;
    }
}

/// Stores what one read of `wallet` found at `height` over `stored` (the wallet's positions as
/// stored): positions seen for the first time get an id; positions already stored take the read
/// where it changed their chain state (unless a newer read was stored meanwhile: one write per
/// changed position, none for fees or prices that only moved with the pool); the wallet's open
/// positions the read did not find are closed as transferred. The bounds of open EVM positions
/// are tracked on their pools while they are open (valued at read, decision 57).
pub async fn record(
    (store, market, alerts): (&dyn PositionStore, &dyn Market, &Alerts),
    catalog: &Catalog,
    wallet: &LinkedWallet,
    (height, read): (u64, Vec<ReadPosition>),
    stored: Vec<Position>,
    now: DateTime<Utc>,
) -> Result<Recorded, StoreError> {
    let chain = wallet.chain;
    let mut by_key: HashMap<String, Position> = stored
        .into_iter()
        .filter_map(|p| Some((p.holding.as_ref()?.key(chain), p)))
        .collect();
    let mut recorded = Recorded {
        held: read.len() as u64,
        changed: Vec::new(),
    };
    for found in read {
        let holding = holding_of(&wallet.address, &found, height, now);
        let status = if found.liquidity == 0 {
            Status::Closed
        } else {
            Status::Active
        };
        match by_key.remove(&holding.key(chain)) {
            Some(previous) => {
                let Some(before) = previous.holding.as_deref() else {
                    continue;
                };
                if before.height > height {
                    continue;
                }
                let mut read = Position {
                    status,
                    tick_lower: found.tick_lower,
                    tick_upper: found.tick_upper,
                    liquidity: found.liquidity,
                    // Its history's sums stay until the history read that follows replaces them.
                    holding: Some(Box::new(WalletHolding {
                        first_value_usd: before.first_value_usd.clone(),
                        history: before.history.clone(),
                        moved_from: before.moved_from.clone(),
                        moved_to: before.moved_to.clone(),
                        tracked: before.tracked,
                        watched: before.watched,
                        staked: staked_since(before, holding.staked.clone()),
                        ..holding
                    })),
                    ..previous.clone()
                };
                // Nothing of its chain state changed (fees and prices that moved with the pool
                // are computed when read): no write. A read at the same height that differs
                // replaces figures that were not read from the chain (those a confirmed mint
                // starts with).
                let unchanged = differences(&previous, &read).is_empty();
                if unchanged
                    && wants_ticks(catalog, &read) == before.tracked
                    && watching(&read) == before.watched
                {
                    continue;
                }
                let release = prepare_ticks(market, catalog, before.tracked, &mut read).await;
                watch_as_read(alerts, &previous, &mut read).await?;
                let fields = differences(&previous, &read);
                if ignore_lost_race(store.update_holding(&read, &previous).await)? {
                    release_after(market, release, &read).await;
                    if previous.status != Status::Closed && read.status == Status::Closed {
                        emit_withdrawn(alerts, &read, height, now).await?;
                    }
                    recorded.changed.push(Change {
                        position: read.id.clone(),
                        fields,
                    });
                }
            }
            None => {
                let prices = found
                    .tokens
                    .clone()
                    .map(|t| usd_price(catalog, chain, &t.address));
                let first_value = value_of(&prices, &found.tokens, found.amounts);
                let created_at =
                    DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now);
                let mut position = Position {
                    id: ulid::Ulid::from_datetime(created_at.into()).to_string(),
                    owner: wallet.owner.clone(),
                    chain,
                    protocol: found.protocol,
                    pool: found.pool.clone(),
                    status,
                    tick_lower: found.tick_lower,
                    tick_upper: found.tick_upper,
                    liquidity: found.liquidity,
                    cost_basis_usd: first_value.clone().unwrap_or_default(),
                    deposit: None,
                    fee_checkpoint: None,
                    closing: None,
                    created_at,
                    activated_at: None,
                    holding: Some(Box::new(WalletHolding {
                        first_value_usd: first_value.map(|v| v.to_plain_string()),
                        ..holding
                    })),
                    order: None,
                };
                // Tracked (and watched) before it is stored, as a simulated position's ticks are.
                prepare_ticks(market, catalog, false, &mut position).await;
                watch_as_read(alerts, &position.clone(), &mut position).await?;
                match store.insert(&position).await {
                    // The key is the owner's already: another of the owner's wallets held it
                    // (it moved here, and keeps its id, history and figures), or a racing
                    // refresh of this wallet stored it first (its read stands). The count
                    // just taken goes back: the stored position keeps its own.
                    Err(StoreError::Conflict) => {
                        if position.holding.as_ref().is_some_and(|h| h.tracked) {
                            let pool = catalog.find(chain, position.protocol, &position.pool);
                            release_after(market, pool, &position).await;
                        }
                        let key = holding_key(chain, &position);
                        // A read of the wallet it left may close it meanwhile ("transferred",
                        // at the same block): read it again and move it over that.
                        for _ in 0..3 {
                            let Some(previous) = store.holding(&wallet.owner, chain, &key).await?
                            else {
                                break;
                            };
                            let moving = (store, market, catalog);
                            match moved(moving, &previous, &position, height).await {
                                Err(StoreError::Conflict) => continue,
                                other => {
                                    recorded.changed.extend(other?);
                                    break;
                                }
                            }
                        }
                    }
                    other => {
                        other?;
                        recorded.changed.push(Change {
                            position: position.id.clone(),
                            fields: vec!["new"],
                        });
                    }
                }
            }
        }
    }
    // Open positions the wallet no longer holds: transferred, figures of the last read kept.
    let gone = (store, market, alerts);
    for previous in by_key.into_values() {
        let closed = close_gone(gone, catalog, &previous, (height, now), false).await?;
        recorded.changed.extend(closed);
    }
    Ok(recorded)
}

/// Closes `burned`, the open positions of a wallet whose tokens no longer exist at `height`
/// (their manager burned them: `ownerOf` reverts): each a close as a withdrawal closed on
/// chain is, holding nothing (decision 63), not a transfer away.
pub async fn close_burned(
    (store, market, alerts): (&dyn PositionStore, &dyn Market, &Alerts),
    catalog: &Catalog,
    burned: &[Position],
    (height, now): (u64, DateTime<Utc>),
) -> Result<Vec<Change>, StoreError> {
    let mut changed = Vec::new();
    for previous in burned {
        let gone = (store, market, alerts);
        changed.extend(close_gone(gone, catalog, previous, (height, now), true).await?);
    }
    Ok(changed)
}

/// Why a position gone from its wallet closed: burnt (`moved` where a range move of ours burnt
/// it: a Uniswap v4 move closes its old position so), or transferred away.
fn close_reason(before: &WalletHolding, burned: bool) -> &'static str {
    match (burned, &before.moved_to) {
        (true, Some(_)) => MOVED,
        (true, None) => WITHDRAWN,
        (false, _) => TRANSFERRED,
    }
}

/// Closes the open `previous`, no longer the wallet's at `height`: transferred away (the
/// figures of its last read kept), or `burned` (nothing left in it); its ticks released, its
/// watch dropped. The change, unless a newer read stood or it was closed already.
async fn close_gone(
    (store, market, alerts): (&dyn PositionStore, &dyn Market, &Alerts),
    catalog: &Catalog,
    previous: &Position,
    (height, now): (u64, DateTime<Utc>),
    burned: bool,
) -> Result<Option<Change>, StoreError> {
    let Some(before) = previous.holding.as_deref() else {
        return Ok(None);
    };
    if previous.status == Status::Closed || before.height >= height {
        return Ok(None);
    }
    let zero = || ["0".to_string(), "0".to_string()];
    let mut read = Position {
        status: Status::Closed,
        liquidity: if burned { 0 } else { previous.liquidity },
        holding: Some(Box::new(WalletHolding {
            height,
            close_reason: Some(close_reason(before, burned).to_string()),
            amounts: if burned {
                zero()
            } else {
                before.amounts.clone()
            },
            fees: if burned { zero() } else { before.fees.clone() },
            ..before.clone()
        })),
        ..previous.clone()
    };
    let release = prepare_ticks(market, catalog, before.tracked, &mut read).await;
    watch_as_read(alerts, previous, &mut read).await?;
    if !ignore_lost_race(store.update_holding(&read, previous).await)? {
        return Ok(None);
    }
    release_after(market, release, &read).await;
    if burned {
        emit_withdrawn(alerts, &read, height, now).await?;
    }
    Ok(Some(Change {
        position: read.id.clone(),
        fields: vec![if burned { "burned" } else { "transferred" }],
    }))
}

/// What a wallet position's `readError` says when the wallet's whole read failed (one text,
/// so a read failing again writes nothing).
pub const WALLET_NOT_READ: &str =
    "the wallet could not be read (its refreshError says why): these are the figures of its last good read";

/// Marks each of `positions` not taken by the wallet's last read with why, keeping its last
/// good read: one write per position whose reason changed, none for one already marked so.
pub async fn mark_unread(
    store: &dyn PositionStore,
    positions: impl IntoIterator<Item = (Position, String)>,
) -> Result<(), StoreError> {
    for (previous, reason) in positions {
        let Some(before) = previous.holding.as_deref() else {
            continue;
        };
        if previous.status == Status::Closed || before.read_error.as_ref() == Some(&reason) {
            continue;
        }
        let marked = Position {
            holding: Some(Box::new(WalletHolding {
                read_error: Some(reason),
                ..before.clone()
            })),
            ..previous.clone()
        };
        ignore_lost_race(store.update_holding(&marked, &previous).await)?;
    }
    Ok(())
}

/// A write that lost to a racing refresh's is not a failure: the newer read stands. Whether
/// the write stood.
fn ignore_lost_race(result: Result<(), StoreError>) -> Result<bool, StoreError> {
    match result {
        Err(StoreError::Conflict) => Ok(false),
        other => other.map(|()| true),
    }
}

/// Watches `read` for alerts while it is open with liquidity (its watch moved with its range,
/// dropped when it closes), before it is stored: a read stored as watched has its watch
/// (decision 61). `stored` is the position as stored (`read` itself when new).
async fn watch_as_read(
    alerts: &Alerts,
    stored: &Position,
    read: &mut Position,
) -> Result<(), StoreError> {
    let was = stored
        .holding
        .as_ref()
        .is_some_and(|h| h.watched)
        .then_some(stored);
    let wanted = watching(read);
    if let Some(holding) = read.holding.as_mut() {
        holding.watched = wanted;
    }
    rewatch(alerts, was, read).await
}

fn holding_key(chain: Chain, position: &Position) -> String {
    position
        .holding
        .as_ref()
        .map(|h| h.key(chain))
        .unwrap_or_default()
}

/// Stores `found` (read from the wallet now holding it) over `previous`, the same position as
/// another of the owner's wallets last read it: same id, first value and history, the new
/// wallet and read. A read older than the stored one, or one of the same wallet (a racing
/// refresh), changes nothing; `Conflict` when `previous` is no longer what is stored.
async fn moved(
    (store, market, catalog): (&dyn PositionStore, &dyn Market, &Catalog),
    previous: &Position,
    found: &Position,
    height: u64,
) -> Result<Option<Change>, StoreError> {
    let (Some(before), Some(now)) = (previous.holding.as_deref(), found.holding.as_deref()) else {
        return Ok(None);
    };
    if before.wallet == now.wallet || before.height > height {
        return Ok(None);
    }
    let mut read = Position {
        status: found.status,
        tick_lower: found.tick_lower,
        tick_upper: found.tick_upper,
        liquidity: found.liquidity,
        // Its figures stay its own until the history, read on for the new wallet, replaces them.
        holding: Some(Box::new(WalletHolding {
            first_value_usd: before.first_value_usd.clone(),
            history: before.history.clone(),
            moved_from: before.moved_from.clone(),
            moved_to: before.moved_to.clone(),
            tracked: before.tracked,
            watched: before.watched,
            ..now.clone()
        })),
        ..previous.clone()
    };
    let release = prepare_ticks(market, catalog, before.tracked, &mut read).await;
    let fields = differences(previous, &read);
    store.update_holding(&read, previous).await?;
    release_after(market, release, &read).await;
    tracing::info!(position = %previous.id, from = %before.wallet, to = %now.wallet, "wallet position moved between the owner's wallets");
    Ok(Some(Change {
        position: previous.id.clone(),
        fields,
    }))
}
