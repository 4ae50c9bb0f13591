//! Reading the API's and the devnet's JSON in assertions.

use serde_json::Value;

/// A JSON value as text: a string's own text (no quotes), anything else as JSON.
pub fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
