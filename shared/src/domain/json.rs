//! Exact decimal numbers in JSON. Values are computed as decimals and rounded only here, when
//! written, so no USD figure or price passes through a binary float.

use bigdecimal::{BigDecimal, RoundingMode};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

/// A decimal written as a JSON number rounded half-up to `PLACES` decimal places
/// (trailing zeros dropped: `12.5`, not `12.50`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rounded<const PLACES: i64>(pub BigDecimal);

/// USD amounts: cents.
pub type Usd = Rounded<2>;
/// Percentages on a 0-100 scale: two places.
pub type Percent = Rounded<2>;

impl<const PLACES: i64> Rounded<PLACES> {
    pub fn new(value: BigDecimal) -> Self {
        Rounded(value)
    }
}

/// A decimal written as a JSON number exactly as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Exact(pub BigDecimal);

/// The plain (non-scientific) text of a decimal rounded half-up to `places`, trailing zeros
/// dropped.
pub fn plain(value: &BigDecimal, places: i64) -> String {
    trim_zeros(
        value
            .with_scale_round(places, RoundingMode::HalfUp)
            .to_plain_string(),
    )
}

/// The plain text of a decimal with no rounding, trailing zeros dropped.
pub fn plain_exact(value: &BigDecimal) -> String {
    trim_zeros(value.to_plain_string())
}

fn trim_zeros(text: String) -> String {
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    if text == "-0" {
        "0".to_string()
    } else {
        text
    }
}

fn write_number<S: Serializer>(text: String, serializer: S) -> Result<S::Ok, S::Error> {
    let raw = RawValue::from_string(text).map_err(serde::ser::Error::custom)?;
    raw.serialize(serializer)
}

impl<const PLACES: i64> Serialize for Rounded<PLACES> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        write_number(plain(&self.0, PLACES), serializer)
    }
}

impl Serialize for Exact {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        write_number(plain_exact(&self.0), serializer)
    }
}

/// RFC 3339 UTC with milliseconds, the API's one time format.
pub fn format_time(time: &chrono::DateTime<chrono::Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Serializes a time in the API's format ([`format_time`]).
pub fn api_time<S: Serializer>(
    time: &chrono::DateTime<chrono::Utc>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format_time(time))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> BigDecimal {
        s.parse().expect("a decimal")
    }

    #[test]
    fn rounds_half_up_to_cents_and_trims() {
        assert_eq!(
            serde_json::to_string(&Usd::new(d("1.005"))).unwrap(),
            "1.01"
        );
        assert_eq!(serde_json::to_string(&Usd::new(d("1.004"))).unwrap(), "1");
        assert_eq!(serde_json::to_string(&Usd::new(d("3000"))).unwrap(), "3000");
        assert_eq!(serde_json::to_string(&Usd::new(d("-0.001"))).unwrap(), "0");
        assert_eq!(serde_json::to_string(&Usd::new(d("-2.5"))).unwrap(), "-2.5");
        assert_eq!(serde_json::to_string(&Usd::new(d("0"))).unwrap(), "0");
    }

    #[test]
    fn huge_values_keep_every_digit() {
        let big = "340282366920938463463374607431768211455.55";
        assert_eq!(serde_json::to_string(&Usd::new(d(big))).unwrap(), big);
        assert_eq!(
            serde_json::to_string(&Exact(d("0.0001"))).unwrap(),
            "0.0001"
        );
    }
}
