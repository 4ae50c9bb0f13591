//! Idempotency keys on the table: one item per owner and key (`U#{owner}` / `K#{key}`). A
//! claim is a conditional `PutItem`; the answer of a create or close is an `Update` inside
//! that write's transaction; `expiresAt` (epoch seconds) is the table's TTL attribute, and
//! reads treat an expired item as absent (TTL deletes lazily).

use super::errors::{build_error, classify};
use super::item::{malformed, parsed, text};
use super::keys::{idempotency_key, s, Item};
use super::store::DynamoDbStore;
use crate::application::ports::StoreResult;
use crate::domain::model::{KeyAnswer, KeyClaim, StoredResponse, KEY_LEASE, KEY_RETENTION};
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use chrono::{DateTime, Utc};

const IN_FLIGHT: &str = "in-flight";
const ANSWERED: &str = "answered";

fn n(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn millis_after(now: DateTime<Utc>, by: std::time::Duration) -> i64 {
    now.timestamp_millis()
        .saturating_add(i64::try_from(by.as_millis()).unwrap_or(i64::MAX))
}

/// What a stored key says to a request with `fingerprint` at `now`; `None` when the key is
/// free to claim (expired, or its lease ran out).
fn verdict(item: &Item, fingerprint: &str, now: DateTime<Utc>) -> StoreResult<Option<KeyClaim>> {
    let expires_at: i64 = parsed(item, "expiresAt")?;
    if expires_at <= now.timestamp() {
        return Ok(None);
    }
    let state = text(item, "state")?;
    if state == IN_FLIGHT {
        let until: i64 = parsed(item, "leaseUntil")?;
        if until <= now.timestamp_millis() {
            return Ok(None);
        }
        if text(item, "fingerprint")? != fingerprint {
            return Ok(Some(KeyClaim::OtherRequest));
        }
        let left = u64::try_from(until - now.timestamp_millis()).unwrap_or(0);
        return Ok(Some(KeyClaim::InFlight {
            retry_after_seconds: left.div_ceil(1000).max(1),
        }));
    }
    if state != ANSWERED {
        return Err(malformed("idempotency state"));
    }
    if text(item, "fingerprint")? != fingerprint {
        return Ok(Some(KeyClaim::OtherRequest));
    }
    Ok(Some(KeyClaim::Answered(StoredResponse {
        status: parsed(item, "responseStatus")?,
        body: text(item, "responseBody")?.to_string(),
        location: match item.get("responseLocation") {
            None => None,
            Some(_) => Some(text(item, "responseLocation")?.to_string()),
        },
    })))
}

impl DynamoDbStore {
    /// The `Update` that completes a claimed key with its answer, only under its lease.
    pub(super) fn answer_item(&self, answer: &KeyAnswer) -> StoreResult<TransactWriteItem> {
        let mut expression =
            "SET #state = :answered, responseStatus = :status, responseBody = :body, \
             expiresAt = :expires"
                .to_string();
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(idempotency_key(&answer.owner, &answer.key)))
            .condition_expression("lease = :lease")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":answered", s(ANSWERED))
            .expression_attribute_values(":status", n(i64::from(answer.response.status)))
            .expression_attribute_values(":body", s(&answer.response.body))
            .expression_attribute_values(":expires", n(answer.expires_at.timestamp()))
            .expression_attribute_values(":lease", s(&answer.lease));
        if let Some(location) = &answer.response.location {
            expression.push_str(", responseLocation = :location");
            update = update.expression_attribute_values(":location", s(location));
        }
        let update = update
            .update_expression(format!("{expression} REMOVE leaseUntil"))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    pub(super) async fn claim(
        &self,
        owner: &str,
        key: &str,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> StoreResult<KeyClaim> {
        // A claim that fails its condition reads the item; one that vanished or freed up in
        // between is claimed again, a few times at most.
        for _ in 0..3 {
            let lease = ulid::Ulid::new().to_string();
            let mut item = idempotency_key(owner, key);
            item.extend([
                ("fingerprint".to_string(), s(fingerprint)),
                ("state".to_string(), s(IN_FLIGHT)),
                ("lease".to_string(), s(&lease)),
                ("leaseUntil".to_string(), n(millis_after(now, KEY_LEASE))),
                (
                    "expiresAt".to_string(),
                    n(millis_after(now, KEY_RETENTION) / 1000),
                ),
            ]);
            let put = self
                .client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression(
                    "attribute_not_exists(PK) OR expiresAt <= :now \
                     OR (#state = :in_flight AND leaseUntil <= :now_ms)",
                )
                .expression_attribute_names("#state", "state")
                .expression_attribute_values(":now", n(now.timestamp()))
                .expression_attribute_values(":now_ms", n(now.timestamp_millis()))
                .expression_attribute_values(":in_flight", s(IN_FLIGHT))
                .send()
                .await;
            match put {
                Ok(_) => return Ok(KeyClaim::Claimed { lease }),
                Err(e) if e.code() == Some("ConditionalCheckFailedException") => {}
                Err(e) => return Err(classify(e)),
            }
            if let Some(item) = self.item(idempotency_key(owner, key), &[]).await? {
                if let Some(claim) = verdict(&item, fingerprint, now)? {
                    return Ok(claim);
                }
            }
        }
        Ok(KeyClaim::InFlight {
            retry_after_seconds: 1,
        })
    }

    pub(super) async fn answer(&self, answer: &KeyAnswer) -> StoreResult<()> {
        self.transact(vec![self.answer_item(answer)?], None).await
    }

    pub(super) async fn release(&self, owner: &str, key: &str, lease: &str) -> StoreResult<()> {
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(idempotency_key(owner, key)))
            .condition_expression("lease = :lease")
            .expression_attribute_values(":lease", s(lease))
            .send()
            .await;
        match deleted {
            // Someone else's lease now: theirs to answer.
            Err(e) if e.code() == Some("ConditionalCheckFailedException") => Ok(()),
            Err(e) => Err(classify(e)),
            Ok(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(state: &str, fingerprint: &str, lease_until: i64, expires_at: i64) -> Item {
        let mut item = idempotency_key("alice", "k");
        item.extend([
            ("fingerprint".to_string(), s(fingerprint)),
            ("state".to_string(), s(state)),
            ("leaseUntil".to_string(), n(lease_until)),
            ("expiresAt".to_string(), n(expires_at)),
            ("responseStatus".to_string(), n(201)),
            ("responseBody".to_string(), s("{}")),
        ]);
        item
    }

    #[test]
    fn a_stored_key_answers_by_its_state_and_fingerprint() {
        let now = DateTime::from_timestamp_millis(1_800_000_000_500).unwrap();
        let (ms, secs) = (now.timestamp_millis(), now.timestamp());
        let answered = item(ANSWERED, "f", 0, secs + 10);
        assert!(matches!(
            verdict(&answered, "f", now).unwrap(),
            Some(KeyClaim::Answered(StoredResponse { status: 201, .. }))
        ));
        assert_eq!(
            verdict(&answered, "g", now).unwrap(),
            Some(KeyClaim::OtherRequest)
        );
        assert_eq!(
            verdict(&item(ANSWERED, "f", 0, secs), "f", now).unwrap(),
            None
        );
        assert_eq!(
            verdict(&item(IN_FLIGHT, "f", ms + 2_001, secs + 10), "f", now).unwrap(),
            Some(KeyClaim::InFlight {
                retry_after_seconds: 3
            })
        );
        assert_eq!(
            verdict(&item(IN_FLIGHT, "f", ms, secs + 10), "f", now).unwrap(),
            None,
            "a lease that ran out frees the key"
        );
    }
}
