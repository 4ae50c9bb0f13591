//! Deliveries where no queue runs (local-api, the embedded default's tests): a task per job
//! that delivers, waits as the schedule says and tries again, as the queue's visibility would;
//! at most [`PER_ENDPOINT`] attempts to one endpoint at a time, as the stack's queue hands its
//! function at most a batch of them at once.

use crate::application::alert_ports::Alerts;
use crate::application::alert_ports::{DeliveryJob, DeliveryQueue};
use crate::application::webhooks::deliver;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// Attempts to one endpoint at once: the deliver function's SQS batch size.
pub const PER_ENDPOINT: usize = 10;

/// `alerts` without a queue of its own: its retries are this task's.
pub struct TaskDeliveries {
    alerts: Alerts,
    /// Each endpoint's slots, by its id.
    slots: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl TaskDeliveries {
    pub fn new(alerts: Alerts) -> TaskDeliveries {
        TaskDeliveries {
            alerts,
            slots: Mutex::new(HashMap::new()),
        }
    }

    fn slots_of(&self, webhook: &str) -> Arc<Semaphore> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .entry(webhook.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(PER_ENDPOINT)))
            .clone()
    }
}

#[async_trait]
impl DeliveryQueue for TaskDeliveries {
    async fn enqueue(&self, jobs: &[DeliveryJob]) -> Result<(), String> {
        for job in jobs {
            let (alerts, mut job) = (self.alerts.clone(), job.clone());
            let slots = self.slots_of(&job.webhook_id);
            tokio::spawn(async move {
                loop {
                    // A slot for the attempt only, never for the wait before the next one.
                    let Ok(slot) = slots.acquire().await else {
                        break;
                    };
                    let now = chrono::Utc::now();
                    let outcome = deliver(&alerts, &job, now).await;
                    drop(slot);
                    match outcome {
                        Ok(Some(wait)) => {
                            tokio::time::sleep(wait).await;
                            job.attempt += 1;
                        }
                        Ok(None) => break,
                        Err(e) => {
                            tracing::error!(cause = %e, event = %job.event_id, "delivery not recorded");
                            break;
                        }
                    }
                }
            });
        }
        Ok(())
    }
}
