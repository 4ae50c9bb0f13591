//! What a user wants to be told: their defaults, and a position's own that override them.

use super::EventType;
use bigdecimal::BigDecimal;
use serde::{Deserialize, Serialize};

/// The share of a range's width from a bound within which a price is "approaching" it, unless
/// set: 10 %.
pub const DEFAULT_APPROACH_PERCENT: u32 = 10;
/// At most one range event per position per this many minutes, unless set.
pub const DEFAULT_COOLDOWN_MINUTES: u32 = 60;
/// The bounds a client may set.
pub const APPROACH_PERCENT_RANGE: (u32, u32) = (1, 49);
pub const COOLDOWN_MINUTES_RANGE: (u32, u32) = (0, 10_080);

/// A user's alert settings (`GET`/`PUT /alerts`), or a position's own
/// (`PUT /positions/{id}/alerts`), which replace the user's for that position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlertSettings {
    /// The types told (the feed and the webhooks); the others are not made at all.
    pub types: Vec<EventType>,
    pub approach_percent: u32,
    /// Unclaimed fees past this many USD make a `position.fees.threshold` event; `None`: never.
    #[serde(with = "optional_decimal_string")]
    pub fee_threshold_usd: Option<BigDecimal>,
    pub cooldown_minutes: u32,
}

impl Default for AlertSettings {
    /// Every subscribable type but the fee threshold (which needs an amount), 10 %, 60 minutes.
    fn default() -> Self {
        AlertSettings {
            types: EventType::subscribable()
                .filter(|t| *t != EventType::FeesThreshold)
                .collect(),
            approach_percent: DEFAULT_APPROACH_PERCENT,
            fee_threshold_usd: None,
            cooldown_minutes: DEFAULT_COOLDOWN_MINUTES,
        }
    }
}

impl AlertSettings {
    pub fn tells(&self, event_type: EventType) -> bool {
        event_type == EventType::WebhookTest || self.types.contains(&event_type)
    }
}

mod optional_decimal_string {
    use bigdecimal::BigDecimal;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::str::FromStr;

    pub fn serialize<S: Serializer>(v: &Option<BigDecimal>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(d) => s.serialize_str(&d.normalized().to_plain_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BigDecimal>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| BigDecimal::from_str(&s).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_tell_every_type_but_the_threshold_and_a_position_holds_its_own() {
        let user = AlertSettings::default();
        assert!(user.tells(EventType::RangeExited));
        assert!(!user.tells(EventType::FeesThreshold));
        let own = AlertSettings {
            types: vec![EventType::FeesThreshold],
            fee_threshold_usd: Some(BigDecimal::from(25)),
            ..AlertSettings::default()
        };
        assert!(!own.tells(EventType::RangeExited));
        let json = serde_json::to_value(&own).unwrap();
        assert_eq!(json["feeThresholdUsd"], "25");
        let back: AlertSettings = serde_json::from_value(json).unwrap();
        assert_eq!(back, own);
    }
}
