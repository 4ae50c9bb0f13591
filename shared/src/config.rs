//! The functions' configuration, read from the environment once at start and passed in from
//! there: nothing deeper reads the environment.

use std::time::Duration;

/// How long a warm container reuses the catalog before reading it again, unless configured.
pub const DEFAULT_CATALOG_TTL: Duration = Duration::from_secs(60);

/// The log filter unless `RUST_LOG` says otherwise.
pub const DEFAULT_LOG_LEVEL: &str = "info";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The DynamoDB table (`TABLE_NAME`, required).
    pub table_name: String,
    /// An endpoint override for DynamoDB (`DYNAMODB_ENDPOINT`), e.g. a local server.
    pub dynamodb_endpoint: Option<String>,
    /// The catalog cache's lifetime (`CATALOG_TTL_SECONDS`, default 60).
    pub catalog_ttl: Duration,
    /// The log filter (`RUST_LOG`, default `info`).
    pub log_level: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("configuration: {0}")]
pub struct ConfigError(String);

impl Config {
    /// From the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// From any source of variables (tests pass a map).
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let non_empty = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let table_name =
            non_empty("TABLE_NAME").ok_or_else(|| ConfigError("TABLE_NAME is not set".into()))?;
        let catalog_ttl = match non_empty("CATALOG_TTL_SECONDS") {
            None => DEFAULT_CATALOG_TTL,
            Some(text) => text.trim().parse().map(Duration::from_secs).map_err(|_| {
                ConfigError(format!(
                    "CATALOG_TTL_SECONDS must be whole seconds, not {text:?}"
                ))
            })?,
        };
        Ok(Config {
            table_name,
            dynamodb_endpoint: non_empty("DYNAMODB_ENDPOINT"),
            catalog_ttl,
            log_level: non_empty("RUST_LOG").unwrap_or_else(|| DEFAULT_LOG_LEVEL.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn defaults_apply_and_the_table_is_required() {
        assert_eq!(
            config(&[("TABLE_NAME", "positions")]),
            Ok(Config {
                table_name: "positions".into(),
                dynamodb_endpoint: None,
                catalog_ttl: DEFAULT_CATALOG_TTL,
                log_level: "info".into(),
            })
        );
        assert!(config(&[]).is_err());
        assert!(config(&[("TABLE_NAME", " ")]).is_err());
    }

    #[test]
    fn every_variable_is_read() {
        let got = config(&[
            ("TABLE_NAME", "t"),
            ("DYNAMODB_ENDPOINT", "http://127.0.0.1:8000"),
            ("CATALOG_TTL_SECONDS", "5"),
            ("RUST_LOG", "debug"),
        ])
        .unwrap();
        assert_eq!(
            got.dynamodb_endpoint.as_deref(),
            Some("http://127.0.0.1:8000")
        );
        assert_eq!(got.catalog_ttl, Duration::from_secs(5));
        assert_eq!(got.log_level, "debug");
        assert!(config(&[("TABLE_NAME", "t"), ("CATALOG_TTL_SECONDS", "soon")]).is_err());
    }
}
