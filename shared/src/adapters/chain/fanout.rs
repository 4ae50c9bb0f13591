//! Whole reads of wallets on the engine AWS gives (decision 45): the sync function sends
//! one message per wallet to read (batches of ten) to a queue: the wallets a sync's chain scan
//! found touched, each hour's share of the reconciliation, the Orca wallets on their own
//! schedule. The `refresh-wallets` function takes them in batches, reads each wallet (one read
//! at one block, one write per position whose chain state changed) and reports the wallets that
//! failed (`ReportBatchItemFailures`), which the queue retries and, after five receives, moves
//! to its dead-letter queue.

use crate::adapters::webhooks::queue::{answer_batch, send_all};
use crate::application::app::{App, WholeRead};
use crate::domain::model::Chain;
use crate::domain::wallets::LinkedWallet;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One wallet to read whole, as a queue message carries it, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefreshMessage {
    pub owner: String,
    pub chain: Chain,
    pub address: String,
    /// `true`: the reconciliation's read, whose changes are corrections (logged, counted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconcile: bool,
}

/// The wallets whose reconciliation falls in `hour` (hours since the epoch) when every wallet
/// is read once in `hours`: each wallet in one hour of the round, the same one every round
/// (its key's SHA-256 picks it), so the reads spread evenly over the round.
pub fn due(wallets: Vec<LinkedWallet>, hour: u64, hours: u32) -> Vec<LinkedWallet> {
    use sha2::{Digest, Sha256};
    let hours = u64::from(hours.max(1));
    wallets
        .into_iter()
        .filter(|w| {
            let key = format!("{}\n{}\n{}", w.owner, w.chain, w.address);
            let digest = Sha256::digest(key.as_bytes());
            let mut first = [0u8; 8];
            first.copy_from_slice(&digest[..8]);
            u64::from_be_bytes(first) % hours == hour % hours
        })
        .collect()
}

/// Sends one message per wallet to the queue, ten a request; how many were sent. An entry the
/// queue refuses fails the whole fan-out (the scheduler's next run sends every wallet again).
pub async fn enqueue(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    wallets: &[LinkedWallet],
    why: WholeRead,
) -> Result<usize, String> {
    let bodies = wallets
        .iter()
        .map(|w| {
            serde_json::to_string(&RefreshMessage {
                owner: w.owner.clone(),
                chain: w.chain,
                address: w.address.clone(),
                reconcile: why == WholeRead::Reconcile,
            })
            .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, String>>()?;
    send_all(sqs, queue_url, &bodies).await
}

/// Refreshes the wallets of an SQS event's records, side by side; answers the partial batch
/// response naming the records whose wallet failed (or whose body is not a refresh message).
pub async fn refresh_batch(app: &App, event: &Value) -> Value {
    answer_batch(event, |record| async move {
        let id = record.get("messageId").and_then(Value::as_str).unwrap_or_default();
        let message = record
            .get("body")
            .and_then(Value::as_str)
            .and_then(|body| serde_json::from_str::<RefreshMessage>(body).ok());
        let Some(message) = message else {
            tracing::error!(message = id, "not a wallet refresh message");
            return Some(id.to_string());
        };
        // A wallet unlinked since it was sent is not read (its positions are gone); a linked
        // one is read as stored (its retry, if its last read stopped, counts on).
        let wallet = match app.wallets.wallets(&message.owner).await {
            Ok(linked) => {
                linked
                    .into_iter()
                    .find(|w| w.chain == message.chain && w.address == message.address)?
            }
            Err(e) => {
                tracing::warn!(message = id, cause = %e, "wallet refresh deferred");
                return Some(id.to_string());
            }
        };
        let why = if message.reconcile {
            WholeRead::Reconcile
        } else {
            WholeRead::Refresh
        };
        let (refreshed, _) = app.read_wallet(wallet, why).await;
        match refreshed.refresh_error {
            None => None,
            Some(reason) => {
                tracing::warn!(message = id, chain = %refreshed.chain, address = %refreshed.address, %reason, "wallet refresh failed");
                Some(id.to_string())
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::wallets::WalletKind;

    #[test]
    fn each_wallet_is_due_in_exactly_one_hour_of_the_round_and_the_hours_share_them() {
        let wallets: Vec<LinkedWallet> = (0..2_400)
            .map(|i| {
                let wallet = (Chain::Ethereum, format!("0x{i:040x}"));
                let at = chrono::DateTime::UNIX_EPOCH;
                LinkedWallet::new(format!("user-{}", i % 700), wallet, at, WalletKind::Eoa)
            })
            .collect();
        let start = 493_000; // any hour: the round repeats
        let per_hour: Vec<usize> = (start..start + 24)
            .map(|hour| due(wallets.clone(), hour, 24).len())
            .collect();
        assert_eq!(per_hour.iter().sum::<usize>(), wallets.len());
        // Spread: no hour takes more than twice its share (100).
        assert!(
            per_hour.iter().all(|n| (50..=200).contains(n)),
            "{per_hour:?}"
        );
        assert_eq!(
            due(wallets.clone(), start, 24),
            due(wallets.clone(), start + 24, 24)
        );
        assert_eq!(due(wallets.clone(), start, 1).len(), wallets.len());
    }
}
