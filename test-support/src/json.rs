//! Reading the API's and the devnet's JSON in assertions.

use serde_json::Value;

/// A JSON value as text: a string's own text (no quotes), anything else as JSON.
pub fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `field` of each element of the array `array`, as text (e.g. each transaction's `kind`).
pub fn texts(array: &Value, field: &str) -> Vec<String> {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"))
        .iter()
        .map(|e| text(&e[field]))
        .collect()
}
