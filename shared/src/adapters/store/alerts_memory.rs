//! Alerts in memory (the embedded default's and the fast tests'), and the sealer that keeps a
//! secret as given: for memory and local runs only, never deployed (KMS seals there).

use crate::application::alert_ports::{
    paged, AlertStore, DeliveryJob, EventFilter, Recorded, Sealer, Watched, UNCOUNTED,
};
use crate::application::ports::{StoreError, StoreResult};
use crate::domain::alerts::settings::AlertSettings;
use crate::domain::alerts::AlertEvent;
use crate::domain::model::{Chain, PageRequest, Protocol};
use crate::domain::webhooks::{Delivery, Webhook};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;

type Owner = String;
/// A pool as the catalog names it.
type PoolKey = (Chain, Protocol, String);

#[derive(Default)]
struct Alerts {
    settings: HashMap<(Owner, Option<String>), AlertSettings>,
    /// By pool, then (owner, position).
    watched: BTreeMap<PoolKey, BTreeMap<(Owner, String), Watched>>,
    /// Each owner's events in the order recorded.
    events: HashMap<Owner, Vec<AlertEvent>>,
    /// Each owner's events recorded per hour (the allowance).
    hourly: HashMap<(Owner, i64), u64>,
    /// Tests per endpoint and minute.
    tests: HashMap<(Owner, String, i64), u64>,
    /// Deliveries the queue refused, in the order kept.
    unqueued: Vec<DeliveryJob>,
    webhooks: HashMap<Owner, Vec<Webhook>>,
    deliveries: HashMap<(Owner, String), Vec<Delivery>>,
}

#[derive(Default)]
pub struct MemoryAlerts {
    inner: RwLock<Alerts>,
}

impl MemoryAlerts {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Alerts> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Alerts> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }
}

fn pool_key(w: &Watched) -> PoolKey {
    (w.chain, w.protocol, w.pool.clone())
}

#[async_trait]
impl AlertStore for MemoryAlerts {
    async fn settings(
        &self,
        owner: &str,
        position: Option<&str>,
    ) -> StoreResult<Option<AlertSettings>> {
        let key = (owner.to_string(), position.map(str::to_string));
        Ok(self.read().settings.get(&key).cloned())
    }

    async fn put_settings(
        &self,
        owner: &str,
        position: Option<&str>,
        settings: &AlertSettings,
    ) -> StoreResult<()> {
        let key = (owner.to_string(), position.map(str::to_string));
        self.write().settings.insert(key, settings.clone());
        Ok(())
    }

    async fn watched(
        &self,
        chain: Chain,
        protocol: Protocol,
        pool: &str,
    ) -> StoreResult<Vec<Watched>> {
        let key = (chain, protocol, pool.to_string());
        Ok(self
            .read()
            .watched
            .get(&key)
            .map(|w| w.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn watch(&self, watched: &Watched) -> StoreResult<()> {
        self.save_watch(watched).await
    }

    async fn save_watch(&self, watched: &Watched) -> StoreResult<()> {
        let entry = (watched.owner.clone(), watched.position.clone());
        self.write()
            .watched
            .entry(pool_key(watched))
            .or_default()
            .insert(entry, watched.clone());
        Ok(())
    }

    async fn unwatch(&self, watched: &Watched) -> StoreResult<()> {
        let entry = (watched.owner.clone(), watched.position.clone());
        if let Some(pool) = self.write().watched.get_mut(&pool_key(watched)) {
            pool.remove(&entry);
        }
        Ok(())
    }

    async fn keep_unqueued(&self, jobs: &[DeliveryJob]) -> StoreResult<()> {
        let mut alerts = self.write();
        for job in jobs {
            if !alerts.unqueued.contains(job) {
                alerts.unqueued.push(job.clone());
            }
        }
        Ok(())
    }

    async fn unqueued(&self, limit: usize) -> StoreResult<Vec<DeliveryJob>> {
        Ok(self.read().unqueued.iter().take(limit).cloned().collect())
    }

    async fn queued(&self, jobs: &[DeliveryJob]) -> StoreResult<()> {
        self.write().unqueued.retain(|kept| !jobs.contains(kept));
        Ok(())
    }

    async fn count_test(&self, owner: &str, webhook: &str, minute: i64) -> StoreResult<u64> {
        let mut alerts = self.write();
        let count = alerts
            .tests
            .entry((owner.to_string(), webhook.to_string(), minute))
            .or_default();
        *count += 1;
        Ok(*count)
    }

    async fn record_event(
        &self,
        event: &AlertEvent,
        _expires: DateTime<Utc>,
        allowance: u64,
    ) -> StoreResult<Recorded> {
        let mut alerts = self.write();
        let seen = alerts
            .events
            .get(&event.owner)
            .is_some_and(|e| e.iter().any(|e| e.id == event.id));
        if seen {
            return Ok(Recorded::Seen);
        }
        let over = allowance != UNCOUNTED && {
            let hour = (event.owner.clone(), event.created_at.timestamp() / 3600);
            let count = alerts.hourly.entry(hour).or_default();
            *count += 1;
            *count > allowance
        };
        let mut kept = event.clone();
        if over {
            kept.not_delivered = Some(over_allowance(allowance));
        }
        alerts
            .events
            .entry(event.owner.clone())
            .or_default()
            .push(kept);
        Ok(if over {
            Recorded::OverAllowance
        } else {
            Recorded::New
        })
    }

    async fn events(
        &self,
        owner: &str,
        filter: &EventFilter,
        page_request: PageRequest,
    ) -> StoreResult<(Vec<AlertEvent>, u64)> {
        let alerts = self.read();
        let mut all: Vec<&AlertEvent> = alerts
            .events
            .get(owner)
            .map(|e| e.iter().filter(|e| matches(e, filter)).collect())
            .unwrap_or_default();
        all.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(paged(all.into_iter().cloned().collect(), page_request))
    }

    async fn event(&self, owner: &str, id: &str) -> StoreResult<Option<AlertEvent>> {
        Ok(self
            .read()
            .events
            .get(owner)
            .and_then(|e| e.iter().find(|e| e.id == id).cloned()))
    }

    async fn retract_event(
        &self,
        owner: &str,
        id: &str,
        by: &str,
    ) -> StoreResult<Option<AlertEvent>> {
        let mut alerts = self.write();
        let event = alerts
            .events
            .get_mut(owner)
            .and_then(|e| e.iter_mut().find(|e| e.id == id))
            .filter(|e| e.retracted_by.is_none());
        Ok(event.map(|event| {
            let was = event.clone();
            event.retracted_by = Some(by.to_string());
            was
        }))
    }

    async fn insert_webhook(&self, webhook: &Webhook, max: usize) -> StoreResult<()> {
        let mut alerts = self.write();
        let hooks = alerts.webhooks.entry(webhook.owner.clone()).or_default();
        if hooks.len() >= max || hooks.iter().any(|h| h.id == webhook.id) {
            return Err(StoreError::Conflict);
        }
        hooks.push(webhook.clone());
        Ok(())
    }

    async fn webhooks(&self, owner: &str) -> StoreResult<Vec<Webhook>> {
        Ok(self.read().webhooks.get(owner).cloned().unwrap_or_default())
    }

    async fn webhook(&self, owner: &str, id: &str) -> StoreResult<Option<Webhook>> {
        Ok(self
            .read()
            .webhooks
            .get(owner)
            .and_then(|h| h.iter().find(|h| h.id == id).cloned()))
    }

    async fn update_webhook(&self, webhook: &Webhook, previous: &Webhook) -> StoreResult<()> {
        let mut alerts = self.write();
        let stored = alerts
            .webhooks
            .get_mut(&webhook.owner)
            .and_then(|h| h.iter_mut().find(|h| h.id == webhook.id));
        match stored {
            Some(stored) if stored == previous => {
                *stored = webhook.clone();
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }

    async fn delete_webhook(&self, owner: &str, id: &str) -> StoreResult<bool> {
        let mut alerts = self.write();
        let Some(hooks) = alerts.webhooks.get_mut(owner) else {
            return Ok(false);
        };
        let before = hooks.len();
        hooks.retain(|h| h.id != id);
        let removed = hooks.len() < before;
        alerts
            .deliveries
            .remove(&(owner.to_string(), id.to_string()));
        Ok(removed)
    }

    async fn record_delivery(
        &self,
        delivery: &Delivery,
        _expires: DateTime<Utc>,
    ) -> StoreResult<()> {
        let key = (delivery.owner.clone(), delivery.webhook_id.clone());
        self.write()
            .deliveries
            .entry(key)
            .or_default()
            .push(delivery.clone());
        Ok(())
    }

    async fn delivery(
        &self,
        owner: &str,
        webhook: &str,
        id: &str,
    ) -> StoreResult<Option<Delivery>> {
        let key = (owner.to_string(), webhook.to_string());
        Ok(self
            .read()
            .deliveries
            .get(&key)
            .and_then(|log| log.iter().find(|d| d.id == id).cloned()))
    }

    async fn deliveries(
        &self,
        owner: &str,
        webhook: &str,
        page_request: PageRequest,
    ) -> StoreResult<(Vec<Delivery>, u64)> {
        let alerts = self.read();
        let log = alerts
            .deliveries
            .get(&(owner.to_string(), webhook.to_string()))
            .cloned()
            .unwrap_or_default();
        Ok(paged(log.into_iter().rev().collect(), page_request))
    }
}

/// Whether an event passes a feed's filter.
pub(crate) fn matches(event: &AlertEvent, filter: &EventFilter) -> bool {
    filter
        .position
        .as_deref()
        .is_none_or(|p| event.position_id.as_deref() == Some(p))
        && filter.event_type.is_none_or(|t| event.event_type == t)
}

/// What the feed says of an event past the hourly allowance.
pub(crate) fn over_allowance(allowance: u64) -> String {
    format!("past the allowance of {allowance} events an hour: kept in the feed, not delivered")
}

/// Keeps a secret as given: memory and local runs only (nothing of it outlives the process
/// but on a local moto); deployed, KMS seals.
pub struct KeptAsGiven;

#[async_trait]
impl Sealer for KeptAsGiven {
    async fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, String> {
        Ok(plain.to_vec())
    }

    async fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, String> {
        Ok(sealed.to_vec())
    }
}

/// The sealer of a deployed function given no key: it refuses, rather than keep a secret in
/// the clear (creating or rotating an endpoint then fails, and nothing is stored).
pub struct NoKey;

#[async_trait]
impl Sealer for NoKey {
    async fn seal(&self, _: &[u8]) -> Result<Vec<u8>, String> {
        Err("no key is configured to seal webhook secrets (WEBHOOK_KEY_ID)".into())
    }

    async fn open(&self, _: &[u8]) -> Result<Vec<u8>, String> {
        Err("no key is configured to open webhook secrets (WEBHOOK_KEY_ID)".into())
    }
}
