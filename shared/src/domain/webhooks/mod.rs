//! Webhook endpoints (decision 61): a user's URLs that events are delivered to, signed as the
//! Standard Webhooks specification says, never into our own network.

pub mod address;
pub mod delivery;
pub mod signing;

use super::alerts::{retracted_type, AlertEvent, EventType};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// At most this many endpoints per user.
pub const MAX_ENDPOINTS: usize = 5;
/// A description's length in characters, at most.
pub const MAX_DESCRIPTION: usize = 256;
/// A URL's length, at most.
pub const MAX_URL: usize = 2048;

/// A user's webhook endpoint as stored: its secrets sealed (never in the clear at rest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub id: String,
    pub owner: String,
    pub url: String,
    /// The types delivered; empty: every type.
    pub event_types: Vec<EventType>,
    pub description: String,
    pub created_at: DateTime<Utc>,
    /// The secret that signs, sealed.
    #[serde(with = "sealed_bytes")]
    pub secret: Vec<u8>,
    /// A rotated-out secret that still signs beside it until `until`.
    pub previous_secret: Option<Retired>,
    pub disabled_reason: Option<String>,
    /// Since when every delivery failed (reset by a success): five days of it disable.
    pub failing_since: Option<DateTime<Utc>>,
}

/// A rotated-out secret, sealed, and when it stops signing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retired {
    #[serde(with = "sealed_bytes")]
    pub secret: Vec<u8>,
    pub until: DateTime<Utc>,
}

impl Webhook {
    pub fn wants(&self, event_type: EventType) -> bool {
        event_type == EventType::WebhookTest
            || self.event_types.is_empty()
            || self.event_types.contains(&event_type)
    }

    /// Whether `event` is delivered here: a retraction also where the event it takes back was.
    pub fn wants_event(&self, event: &AlertEvent) -> bool {
        self.wants(event.event_type) || retracted_type(event).is_some_and(|t| self.wants(t))
    }

    pub fn view(&self) -> WebhookView {
        WebhookView {
            id: self.id.clone(),
            url: self.url.clone(),
            event_types: self.event_types.clone(),
            description: self.description.clone(),
            created_at: self.created_at,
            enabled: self.disabled_reason.is_none(),
            disabled_reason: self.disabled_reason.clone(),
            secret: None,
        }
    }
}

/// An endpoint as the API shows it: its secret only in the answer that made it (or rotated it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    pub id: String,
    pub url: String,
    pub event_types: Vec<EventType>,
    pub description: String,
    #[serde(serialize_with = "crate::domain::json::api_time")]
    pub created_at: DateTime<Utc>,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// One attempt at delivering an event to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub id: String,
    #[serde(skip)]
    pub owner: String,
    pub webhook_id: String,
    pub event_id: String,
    pub event_type: EventType,
    pub attempt: u32,
    #[serde(serialize_with = "crate::domain::json::api_time")]
    pub at: DateTime<Utc>,
    /// The answer's status, if one came.
    pub status_code: Option<u16>,
    /// Why no answer came, or why it does not count as delivered.
    pub error: Option<String>,
    pub duration_ms: u64,
    pub delivered: bool,
}

/// Sealed bytes as base64 text in a stored item.
mod sealed_bytes {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        STANDARD
            .decode(String::deserialize(d)?)
            .map_err(serde::de::Error::custom)
    }
}
