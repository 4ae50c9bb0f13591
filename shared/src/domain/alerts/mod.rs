//! Alerts (decision 61): what the service tells a user about their positions, as events kept in
//! a feed and delivered to their webhooks. An event's id is fixed by its cause, so a cause seen
//! twice (overlapping syncs, retries, a re-scan) is one event.

pub mod range;
pub mod settings;

use crate::domain::history::{EventKind, PositionEvent};
use crate::domain::model::Chain;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

named_enum!(
    /// What an event tells.
    EventType {
        RangeExited => "position.range.exited",
        RangeEntered => "position.range.entered",
        RangeApproaching => "position.range.approaching",
        FeesThreshold => "position.fees.threshold",
        LiquidityChanged => "position.liquidity.changed",
        FeesCollected => "position.fees.collected",
        Closed => "position.closed",
        Transferred => "position.transferred",
        Staked => "position.staked",
        Unstaked => "position.unstaked",
        Retracted => "position.event.retracted",
        WebhookTest => "webhook.test",
    }
);

impl EventType {
    /// The types a user may subscribe to (`webhook.test` is sent on request only).
    pub fn subscribable() -> impl Iterator<Item = EventType> {
        EventType::ALL
            .iter()
            .copied()
            .filter(|t| *t != EventType::WebhookTest)
    }
}

/// How long the feed keeps an event (the item's TTL): 30 days.
pub const FEED_DAYS: i64 = 30;

/// One event of a user's, as kept in the feed and sent to their webhooks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlertEvent {
    pub id: String,
    #[serde(skip)]
    pub owner: String,
    #[serde(rename = "type")]
    pub event_type: EventType,
    #[serde(serialize_with = "crate::domain::json::api_time")]
    pub created_at: DateTime<Utc>,
    pub position_id: Option<String>,
    pub chain: Option<Chain>,
    /// The confirmed block (or slot) the event is of.
    pub block: Option<u64>,
    /// Increases with the event's place on its chain, per position: a consumer orders a
    /// position's events by it (deliveries are not ordered).
    pub sequence: u64,
    pub data: Value,
    /// Why it was kept in the feed and not delivered (past the hourly allowance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_delivered: Option<String>,
    /// The `position.event.retracted` event that took it back: its block was replaced by a
    /// reorg deeper than the confirmations and the chain holds it no more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retracted_by: Option<String>,
}

/// The cause an event's id is fixed by.
pub enum Cause<'a> {
    /// A log of the chain: its transaction and index.
    Log {
        transaction: &'a str,
        log_index: u64,
    },
    /// A state the position reached: what it became, at which block.
    State { transition: &'a str, block: u64 },
    /// A user's request (a webhook test): its own unique id.
    Request(&'a str),
    /// The retraction of an event: its id.
    Retraction(&'a str),
}

/// `evt_` and 32 hex digits of SHA-256 over the owner, the position and the cause.
pub fn event_id(owner: &str, position: Option<&str>, cause: &Cause<'_>) -> String {
    let cause = match cause {
        Cause::Log {
            transaction,
            log_index,
        } => format!("log:{}:{log_index}", transaction.to_ascii_lowercase()),
        Cause::State { transition, block } => format!("state:{transition}:{block}"),
        Cause::Request(id) => format!("request:{id}"),
        Cause::Retraction(id) => format!("retraction:{id}"),
    };
    let digest = Sha256::digest(format!("{owner}\n{}\n{cause}", position.unwrap_or("")));
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("evt_{hex}")
}

/// Room for a block's logs in [`sequence`]: a state read at a block comes after all of its logs.
const PER_BLOCK: u64 = 100_000;

/// The sequence of an event at `block`: its log's index there, or after every log for a state.
/// Under 2^53 for any block below 9 × 10^10: exact in every JSON reader.
pub fn sequence(block: u64, log_index: Option<u64>) -> u64 {
    let within = log_index.map_or(PER_BLOCK - 1, |i| i.min(PER_BLOCK - 2));
    block.saturating_mul(PER_BLOCK).saturating_add(within)
}

/// What a position's event of the chain tells, if anything: a mint and a harvest tell nothing
/// (the mint is the position's start, a harvest moves no liquidity).
pub fn event_type_of(kind: EventKind) -> Option<EventType> {
    match kind {
        EventKind::Deposit | EventKind::Withdraw => Some(EventType::LiquidityChanged),
        EventKind::Collect => Some(EventType::FeesCollected),
        EventKind::Transfer => Some(EventType::Transferred),
        EventKind::Burn => Some(EventType::Closed),
        EventKind::Stake => Some(EventType::Staked),
        EventKind::Unstake => Some(EventType::Unstaked),
        EventKind::Mint | EventKind::Harvest => None,
    }
}

/// The position's whereabouts an event of the chain is about.
pub struct Subject<'a> {
    pub owner: &'a str,
    pub position_id: &'a str,
    pub chain: Chain,
    /// The token's symbols, protocol order, where known.
    pub symbols: Option<[&'a str; 2]>,
    /// Their decimals, protocol order, where known: the amounts' base units as whole tokens.
    pub decimals: Option<[u8; 2]>,
}

/// The alert an event of a position's history makes, if its kind tells one.
pub fn from_history(
    subject: &Subject<'_>,
    event: &PositionEvent,
    now: DateTime<Utc>,
) -> Option<AlertEvent> {
    let event_type = event_type_of(event.kind)?;
    let mut data = serde_json::json!({
        "kind": event.kind.as_str(),
        "transaction": event.transaction,
        "logIndex": event.log_index,
    });
    // When it happened (its block's time), beside when the service told it (`createdAt`): a
    // day's events read at once are told at one time.
    let block_time = event
        .timestamp
        .and_then(|t| i64::try_from(t).ok())
        .and_then(|t| DateTime::from_timestamp(t, 0));
    if let Some(at) = block_time {
        data["blockTime"] = Value::String(crate::domain::json::format_time(&at));
    }
    if matches!(event.kind, EventKind::Deposit | EventKind::Withdraw) {
        data["liquidityDelta"] = if event.kind == EventKind::Withdraw {
            Value::String(format!("-{}", event.liquidity))
        } else {
            Value::String(event.liquidity.to_string())
        };
    }
    if matches!(
        event.kind,
        EventKind::Deposit | EventKind::Withdraw | EventKind::Collect
    ) {
        data["amounts"] =
            serde_json::json!([event.amounts[0].to_string(), event.amounts[1].to_string()]);
        if let Some(decimals) = subject.decimals {
            data["decimals"] = serde_json::json!(decimals);
        }
        if let [Some(p0), Some(p1)] = &event.prices {
            data["pricesUsd"] = serde_json::json!([p0.to_string(), p1.to_string()]);
        }
    }
    if let Some(symbols) = subject.symbols {
        data["symbols"] = serde_json::json!(symbols);
    }
    if let Some(from) = &event.from {
        data["from"] = Value::String(from.clone());
    }
    if let Some(to) = &event.to {
        data["to"] = Value::String(to.clone());
    }
    let cause = Cause::Log {
        transaction: &event.transaction,
        log_index: event.log_index,
    };
    Some(AlertEvent {
        id: event_id(subject.owner, Some(subject.position_id), &cause),
        owner: subject.owner.to_string(),
        event_type,
        created_at: now,
        position_id: Some(subject.position_id.to_string()),
        chain: Some(subject.chain),
        block: Some(event.block),
        sequence: sequence(event.block, Some(event.log_index)),
        data,
        not_delivered: None,
        retracted_by: None,
    })
}

/// The `position.event.retracted` event that takes `event` back (its block replaced by a reorg
/// deeper than the confirmations): it names the event, its type and its log, and keeps the
/// event's block and sequence (it says nothing of a place on the chain of its own).
pub fn retraction(event: &AlertEvent, now: DateTime<Utc>) -> AlertEvent {
    let data = serde_json::json!({
        "retractedEventId": event.id,
        "retractedType": event.event_type.as_str(),
        "transaction": event.data.get("transaction"),
        "logIndex": event.data.get("logIndex"),
    });
    AlertEvent {
        id: retraction_id(event),
        owner: event.owner.clone(),
        event_type: EventType::Retracted,
        created_at: now,
        position_id: event.position_id.clone(),
        chain: event.chain,
        block: event.block,
        sequence: event.sequence,
        data,
        not_delivered: None,
        retracted_by: None,
    }
}

/// The id of the retraction of `event`: fixed by the event it takes back.
pub fn retraction_id(event: &AlertEvent) -> String {
    let cause = Cause::Retraction(&event.id);
    event_id(&event.owner, event.position_id.as_deref(), &cause)
}

/// The type of the event a retraction takes back (`None` for any other event).
pub fn retracted_type(event: &AlertEvent) -> Option<EventType> {
    if event.event_type != EventType::Retracted {
        return None;
    }
    event.data["retractedType"].as_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_id_is_its_cause_and_nothing_else() {
        let log = Cause::Log {
            transaction: "0xAB",
            log_index: 3,
        };
        let a = event_id("u", Some("p"), &log);
        assert_eq!(a, event_id("u", Some("p"), &log));
        let lower = Cause::Log {
            transaction: "0xab",
            log_index: 3,
        };
        assert_eq!(a, event_id("u", Some("p"), &lower));
        assert_ne!(a, event_id("v", Some("p"), &log));
        assert_ne!(a, event_id("u", Some("q"), &log));
        let state = |block| Cause::State {
            transition: "exited",
            block,
        };
        assert_ne!(
            event_id("u", Some("p"), &state(9)),
            event_id("u", Some("p"), &state(10))
        );
        assert!(a.starts_with("evt_") && a.len() == 36);
    }

    #[test]
    fn sequences_follow_blocks_then_logs_and_a_state_comes_last_in_its_block() {
        assert!(sequence(10, Some(5)) < sequence(10, Some(6)));
        assert!(sequence(10, Some(99_999_999)) < sequence(10, None));
        assert!(sequence(10, None) < sequence(11, Some(0)));
        assert!(sequence(90_000_000_000, None) < 1 << 53);
    }

    #[test]
    fn webhook_test_is_not_subscribable() {
        assert!(EventType::subscribable().all(|t| t != EventType::WebhookTest));
        assert_eq!(EventType::subscribable().count(), EventType::ALL.len() - 1);
    }
}
