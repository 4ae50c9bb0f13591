//! Deliveries where no queue runs (local-api, the embedded default's tests): a task per job
//! that delivers, waits as the schedule says and tries again, as the queue's visibility would.

use crate::application::alert_ports::Alerts;
use crate::application::alert_ports::{DeliveryJob, DeliveryQueue};
use crate::application::webhooks::deliver;
use async_trait::async_trait;

/// `alerts` without a queue of its own: its retries are this task's.
pub struct TaskDeliveries {
    pub alerts: Alerts,
}

#[async_trait]
impl DeliveryQueue for TaskDeliveries {
    async fn enqueue(&self, jobs: &[DeliveryJob]) -> Result<(), String> {
        for job in jobs {
            let (alerts, mut job) = (self.alerts.clone(), job.clone());
            tokio::spawn(async move {
                loop {
                    let now = chrono::Utc::now();
                    match deliver(&alerts, &job, now).await {
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
