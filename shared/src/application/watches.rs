//! What makes alert events (decision 61): a wallet position watched on its pool while open
//! (its watch kept in step with each read), each synced state's range and fee-threshold events
//! for the positions watched on it, each history read's events; every event recorded once (its
//! id is its cause) and then queued for each endpoint that wants it.

use crate::application::alert_ports::{Alerts, DeliveryJob, Recorded, Watched};
use crate::application::ports::{Market, PositionStore, StoreError};
use crate::domain::alerts::range::{
    fees_crossed, observe, Observation, Range, RangeChange, RangeWatch, Side,
};
use crate::domain::alerts::settings::AlertSettings;
use crate::domain::alerts::{
    event_id, from_history, retraction, retraction_id, sequence, AlertEvent, Cause, EventType,
    Subject, FEED_DAYS,
};
use crate::domain::catalog::{Catalog, Pool};
use crate::domain::history::{EventKind, PositionEvent};
use crate::domain::holdings::holding_view;
use crate::domain::holdings::WITHDRAWN;
use crate::domain::math::U256;
use crate::domain::model::{Position, Status};
use crate::domain::webhooks::delivery::HOURLY_EVENTS;
use bigdecimal::BigDecimal;
use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

/// Records `events` (each once) and queues each new one for the owner's endpoints that want
/// it. Answers how many were new. A queue that refuses leaves them in the feed, logged.
pub async fn emit(alerts: &Alerts, events: Vec<AlertEvent>) -> Result<usize, StoreError> {
    let mut new = 0;
    let mut jobs = Vec::new();
    let mut endpoints = HashMap::new();
    for event in events {
        let expires = event.created_at + Duration::days(FEED_DAYS);
        match alerts
            .store
            .record_event(&event, expires, HOURLY_EVENTS)
            .await?
        {
            Recorded::Seen => continue,
            Recorded::OverAllowance => {
                new += 1;
                continue;
            }
            Recorded::New => new += 1,
        }
        if !endpoints.contains_key(&event.owner) {
            let hooks = alerts.store.webhooks(&event.owner).await?;
            endpoints.insert(event.owner.clone(), hooks);
        }
        let hooks = &endpoints[&event.owner];
        jobs.extend(
            hooks
                .iter()
                .filter(|h| h.disabled_reason.is_none() && h.wants_event(&event))
                .map(|h| DeliveryJob {
                    owner: event.owner.clone(),
                    webhook_id: h.id.clone(),
                    event_id: event.id.clone(),
                    attempt: 1,
                }),
        );
    }
    if let (Some(queue), false) = (&alerts.queue, jobs.is_empty()) {
        if let Err(e) = queue.enqueue(&jobs).await {
            // Their events are in the feed: their deliveries wait in the outbox for the next
            // sync to queue them, never lost.
            tracing::error!(cause = %e, jobs = jobs.len(), "deliveries not queued: kept in the outbox");
            alerts.store.keep_unqueued(&jobs).await?;
        }
    }
    Ok(new)
}

/// Deliveries the outbox holds queued again, at most [`OUTBOX_PER_RUN`] a run (each sync's):
/// how many. One read of the outbox when it is empty.
pub async fn flush_outbox(alerts: &Alerts) -> Result<usize, StoreError> {
    let Some(queue) = &alerts.queue else {
        return Ok(0);
    };
    let jobs = alerts.store.unqueued(OUTBOX_PER_RUN).await?;
    if jobs.is_empty() {
        return Ok(0);
    }
    if let Err(e) = queue.enqueue(&jobs).await {
        tracing::error!(cause = %e, jobs = jobs.len(), "the outbox's deliveries not queued yet");
        return Ok(0);
    }
    alerts.store.queued(&jobs).await?;
    Ok(jobs.len())
}

/// Deliveries one run queues from the outbox at most.
pub const OUTBOX_PER_RUN: usize = 100;

/// Whether a wallet position's range is watched: while it is open with liquidity.
pub fn watching(position: &Position) -> bool {
    position.status == Status::Active && position.liquidity > 0
}

/// Keeps a wallet position's watch in step with a read of it: `before` the position as
/// watched now (`None`: not watched), `after` as read; watched on its pool and range while
/// [`watching`], no longer once it closes. Nothing is written when neither changed.
pub async fn rewatch(
    alerts: &Alerts,
    before: Option<&Position>,
    after: &Position,
) -> Result<(), StoreError> {
    let spot = |p: &Position| {
        (
            p.chain,
            p.protocol,
            p.pool.clone(),
            p.tick_lower,
            p.tick_upper,
        )
    };
    let was = before;
    let is = watching(after).then_some(after);
    if was.map(spot) == is.map(spot) {
        return Ok(());
    }
    let watched = |p: &Position| Watched {
        owner: p.owner.clone(),
        position: p.id.clone(),
        chain: p.chain,
        protocol: p.protocol,
        pool: p.pool.clone(),
        tick_lower: p.tick_lower,
        tick_upper: p.tick_upper,
        watch: None,
        settings: None,
    };
    if let Some(was) = was {
        alerts.store.unwatch(&watched(was)).await?;
    }
    if let Some(is) = is {
        let settings = alerts.store.settings(&is.owner, Some(&is.id)).await?;
        alerts
            .store
            .watch(&Watched {
                settings,
                ..watched(is)
            })
            .await?;
    }
    Ok(())
}

/// Ends the watch of each of `positions` watched: they are gone (their wallet was unlinked).
pub async fn unwatch_all(alerts: &Alerts, positions: &[Position]) -> Result<(), StoreError> {
    for position in positions {
        if position.holding.as_ref().is_some_and(|h| h.watched) {
            let gone = Position {
                status: Status::Closed,
                ..position.clone()
            };
            rewatch(alerts, Some(position), &gone).await?;
        }
    }
    Ok(())
}

/// One synced, confirmed state of a pool: its tick at its block.
#[derive(Debug, Clone, Copy)]
pub struct SyncedState {
    pub tick: i32,
    pub block: u64,
    pub sqrt_price: U256,
}

/// What one sync's pass over its updated pools reads once: each owner's settings, and, only
/// when a position's fee threshold asks for it, the catalog at the states just stored (and that
/// position, to value its unclaimed fees as its view does).
pub struct SyncPass<'a> {
    positions: &'a dyn PositionStore,
    market: &'a dyn Market,
    owners: HashMap<String, AlertSettings>,
    catalog: Option<Arc<Catalog>>,
}

impl<'a> SyncPass<'a> {
    pub fn new(positions: &'a dyn PositionStore, market: &'a dyn Market) -> SyncPass<'a> {
        SyncPass {
            positions,
            market,
            owners: HashMap::new(),
            catalog: None,
        }
    }

    async fn settings(
        &mut self,
        alerts: &Alerts,
        item: &Watched,
    ) -> Result<AlertSettings, StoreError> {
        if let Some(own) = &item.settings {
            return Ok(own.clone());
        }
        if !self.owners.contains_key(&item.owner) {
            let settings = alerts.store.settings(&item.owner, None).await?;
            self.owners
                .insert(item.owner.clone(), settings.unwrap_or_default());
        }
        Ok(self.owners[&item.owner].clone())
    }

    /// The position's unclaimed fees in USD as its view shows them now; `None` where it has no
    /// price or is gone.
    async fn unclaimed_usd(&mut self, item: &Watched) -> Result<Option<BigDecimal>, StoreError> {
        if self.catalog.is_none() {
            self.catalog = Some(self.market.catalog().await?);
        }
        let Some(catalog) = self.catalog.as_deref() else {
            return Ok(None);
        };
        let Some(position) = self.positions.get(&item.owner, &item.position).await? else {
            return Ok(None);
        };
        let Some(holding) = position.holding.as_deref() else {
            return Ok(None);
        };
        let figures = holding_view(&position, holding, catalog).1;
        Ok(figures
            .fees
            .zip(figures.fees_collected)
            .map(|(all, collected)| all - collected))
    }
}

/// The range (and fee threshold) events of the positions watched on `pool` at a state the sync
/// just stored: each watch observed, written only where it changed, its events recorded and
/// queued. Answers how many events were new.
pub async fn watch_pool(
    alerts: &Alerts,
    pool: &Pool,
    state: SyncedState,
    now: DateTime<Utc>,
    pass: &mut SyncPass<'_>,
) -> Result<usize, StoreError> {
    let watched = alerts
        .store
        .watched(pool.chain, pool.protocol, &pool.id)
        .await?;
    let mut events = Vec::new();
    for mut item in watched {
        let settings = pass.settings(alerts, &item).await?;
        let range = Range {
            lower: item.tick_lower,
            upper: item.tick_upper,
            spacing: pool.tick_spacing,
        };
        let observation = Observation {
            tick: state.tick,
            block: state.block,
            at: now,
        };
        let (mut next, change) = observe(item.watch.as_ref(), range, observation, &settings);
        if let Some(change) = change {
            events.push(range_event(&item, pool, range, change, state, now));
        }
        if settings.fee_threshold_usd.is_some() && settings.tells(EventType::FeesThreshold) {
            if let Some(usd) = pass.unclaimed_usd(&item).await? {
                if fees_crossed(&mut next, &usd, &settings) {
                    events.push(fee_event(&item, pool, &usd, &settings, state, now));
                }
            }
        }
        // Only the block moved: nothing to write (the pool's stored state is forward-only).
        let moved = item.watch.as_ref().is_none_or(|w| {
            RangeWatch {
                block: 0,
                ..w.clone()
            } != RangeWatch {
                block: 0,
                ..next.clone()
            }
        });
        if moved {
            item.watch = Some(next);
            alerts.store.save_watch(&item).await?;
        }
    }
    emit(alerts, events).await
}

fn fee_event(
    item: &Watched,
    pool: &Pool,
    usd: &BigDecimal,
    settings: &AlertSettings,
    state: SyncedState,
    now: DateTime<Utc>,
) -> AlertEvent {
    let cause = Cause::State {
        transition: "fees-threshold",
        block: state.block,
    };
    let threshold = settings.fee_threshold_usd.clone().unwrap_or_default();
    AlertEvent {
        id: event_id(&item.owner, Some(&item.position), &cause),
        owner: item.owner.clone(),
        event_type: EventType::FeesThreshold,
        created_at: now,
        position_id: Some(item.position.clone()),
        chain: Some(pool.chain),
        block: Some(state.block),
        sequence: sequence(state.block, None),
        data: json!({
            "pool": pool.id,
            "tokens": [pool.token_a.symbol, pool.token_b.symbol],
            "feesUnclaimedUsd": usd.with_scale_round(2, bigdecimal::RoundingMode::HalfUp).to_plain_string(),
            "thresholdUsd": threshold.normalized().to_plain_string(),
        }),
        not_delivered: None,
        retracted_by: None,
    }
}

fn range_event(
    item: &Watched,
    pool: &Pool,
    range: Range,
    change: RangeChange,
    state: SyncedState,
    now: DateTime<Utc>,
) -> AlertEvent {
    let cause = Cause::State {
        transition: change.transition(),
        block: state.block,
    };
    let (side, bound) = match change {
        RangeChange::Exited(side) | RangeChange::Approaching(side) => (side, Some(side)),
        RangeChange::Entered => (range.side(state.tick), None),
    };
    let mut data = json!({
        "pool": pool.id,
        "tick": state.tick,
        "tickLower": range.lower,
        "tickUpper": range.upper,
        "side": side.as_str(),
        "bufferTicks": range.buffer(),
        "tokens": [pool.token_a.symbol, pool.token_b.symbol],
    });
    if let Some(bound) = bound {
        data["bound"] = json!(if bound == Side::Below {
            "lower"
        } else {
            "upper"
        });
    }
    let price = pool.orientation.human_price_precise(state.sqrt_price, 12);
    data["price"] = json!(price.normalized().to_plain_string());
    AlertEvent {
        id: event_id(&item.owner, Some(&item.position), &cause),
        owner: item.owner.clone(),
        event_type: change.event_type(),
        created_at: now,
        position_id: Some(item.position.clone()),
        chain: Some(pool.chain),
        block: Some(state.block),
        sequence: sequence(state.block, None),
        data,
        not_delivered: None,
        retracted_by: None,
    }
}

/// A `webhook.test` event of the user's, made on request.
pub fn test_event(owner: &str, request: &str, now: DateTime<Utc>) -> AlertEvent {
    AlertEvent {
        id: event_id(owner, None, &Cause::Request(request)),
        owner: owner.to_string(),
        event_type: EventType::WebhookTest,
        created_at: now,
        position_id: None,
        chain: None,
        block: None,
        sequence: 0,
        data: json!({"message": "a test event, sent on request"}),
        not_delivered: None,
        retracted_by: None,
    }
}

/// The alerts a wallet position's newly read events make (a history read on from where it was:
/// a first read tells nothing of the past), as its settings tell them; recorded and queued. A
/// burn tells `position.closed` unless the read that found its liquidity gone told it already.
pub async fn emit_history(
    alerts: &Alerts,
    position: &Position,
    events: &[PositionEvent],
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let holding = position.holding.as_deref();
    let subject = subject_of(position);
    if events.iter().any(|e| e.kind == EventKind::Collect) {
        arm_fees_again(alerts, position).await?;
    }
    let told_closed = holding.is_some_and(|h| h.close_reason.as_deref() == Some(WITHDRAWN));
    let made = events
        .iter()
        .filter(|e| !(told_closed && e.kind == EventKind::Burn))
        .filter_map(|e| from_history(&subject, e, now))
        .collect();
    tell(alerts, position, made).await
}

fn subject_of(position: &Position) -> Subject<'_> {
    let holding = position.holding.as_deref();
    Subject {
        owner: &position.owner,
        position_id: &position.id,
        chain: position.chain,
        symbols: holding.map(|h| [h.tokens[0].symbol.as_str(), h.tokens[1].symbol.as_str()]),
        decimals: holding.map(|h| [h.tokens[0].decimals, h.tokens[1].decimals]),
    }
}

/// Events of `position` whose blocks a reorg replaced (`gone`) and that the canonical chain's
/// read (`found_again`) does not hold again: each one told is marked retracted in the feed and
/// a `position.event.retracted` event naming it is told (to every endpoint that was told it,
/// whatever the settings say now). Answers how many were retracted. One read per event told,
/// and one transaction of two writes per event taken back.
pub async fn retract_history(
    alerts: &Alerts,
    position: &Position,
    gone: &[PositionEvent],
    found_again: &[PositionEvent],
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let subject = subject_of(position);
    let again: Vec<String> = found_again
        .iter()
        .filter_map(|e| from_history(&subject, e, now))
        .map(|e| e.id)
        .collect();
    let mut retractions = Vec::new();
    for told in gone.iter().filter_map(|e| from_history(&subject, e, now)) {
        if again.contains(&told.id) {
            continue;
        }
        let by = retraction_id(&told);
        if let Some(was) = alerts
            .store
            .retract_event(&told.owner, &told.id, &by)
            .await?
        {
            retractions.push(retraction(&was, now));
        }
    }
    emit(alerts, retractions).await
}

/// A collect took the position's unclaimed fees: its fee threshold is armed again at once, so
/// that fees passing it again are told even when no synced state saw them under it (the sync's
/// pool pass may run before the collect is read). One read of its pool's watches, one write
/// where the threshold had been told.
async fn arm_fees_again(alerts: &Alerts, position: &Position) -> Result<(), StoreError> {
    if !position.holding.as_ref().is_some_and(|h| h.watched) {
        return Ok(());
    }
    let watched = alerts
        .store
        .watched(position.chain, position.protocol, &position.pool)
        .await?;
    for mut item in watched.into_iter().filter(|w| w.position == position.id) {
        if let Some(watch) = item.watch.as_mut().filter(|w| w.fees_told) {
            watch.fees_told = false;
            alerts.store.save_watch(&item).await?;
        }
    }
    Ok(())
}

/// A wallet position a read found closed with no liquidity left: `position.closed` at that
/// read's block (once: its id is the transition and the block).
pub async fn emit_withdrawn(
    alerts: &Alerts,
    position: &Position,
    height: u64,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let cause = Cause::State {
        transition: "closed",
        block: height,
    };
    let closed = AlertEvent {
        id: event_id(&position.owner, Some(&position.id), &cause),
        owner: position.owner.clone(),
        event_type: EventType::Closed,
        created_at: now,
        position_id: Some(position.id.clone()),
        chain: Some(position.chain),
        block: Some(height),
        sequence: sequence(height, None),
        data: json!({"reason": WITHDRAWN, "pool": position.pool, "symbols": subject_of(position).symbols}),
        not_delivered: None,
        retracted_by: None,
    };
    tell(alerts, position, vec![closed]).await
}

/// `made` as the position's settings (its own, else its owner's) tell them, recorded and queued.
async fn tell(
    alerts: &Alerts,
    position: &Position,
    made: Vec<AlertEvent>,
) -> Result<usize, StoreError> {
    if made.is_empty() {
        return Ok(0);
    }
    let store = &alerts.store;
    let settings = match store.settings(&position.owner, Some(&position.id)).await? {
        Some(own) => own,
        None => store
            .settings(&position.owner, None)
            .await?
            .unwrap_or_default(),
    };
    let told = made
        .into_iter()
        .filter(|e| settings.tells(e.event_type))
        .collect();
    emit(alerts, told).await
}
