//! The functions' configuration, read from the environment once at start and passed in from
//! there: nothing deeper reads the environment.

pub use crate::domain::market::{Confirmations, LogRanges};
use crate::domain::market::{Freshness, MarketRules, DEFAULT_MIN_DISCOVERED_DEPTH_USD};
use crate::domain::model::Chain;
use crate::domain::wallets::challenge::SigningDomain;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a warm container reuses the catalog before reading it again, unless configured.
pub const DEFAULT_CATALOG_TTL: Duration = Duration::from_secs(60);

/// How old a pool's synced state may get before it is stale, unless configured.
pub const DEFAULT_STALE_AFTER: Duration = Duration::from_secs(300);

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
    /// How old a synced state may get (`MARKET_STALE_AFTER_SECONDS`, default 300).
    pub stale_after: Duration,
    /// How much USD of a priced token a discovered pool must hold to price its other token
    /// (`MIN_DISCOVERED_DEPTH_USD`, whole USD, default 10,000).
    pub min_discovered_depth_usd: u64,
    /// Per chain, the SSM parameter holding its RPC URL (`RPC_PARAMETER_<CHAIN>`, e.g.
    /// `RPC_PARAMETER_ETHEREUM`; unset or empty: the chain is not synced). Only the sync
    /// function reads them.
    pub rpc_parameters: BTreeMap<Chain, String>,
    /// The log filter (`RUST_LOG`, default `info`).
    pub log_level: String,
    /// Blocks on top of what the service takes, per chain (`CONFIRMATION_BLOCKS`: `N`, or
    /// `chain=N,...`; 0 takes the head, as on a devnet).
    pub confirmation_blocks: Confirmations,
    /// Blocks one `eth_getLogs` of a position's history asks for at most, per chain
    /// (`LOG_RANGE_BLOCKS`: `N`, or `chain=N,...`; default 10,000).
    pub log_ranges: LogRanges,
    /// The queue the scheduled sync sends one message per linked wallet to (`WALLET_QUEUE_URL`;
    /// unset: no fan-out). Only the sync function reads it.
    pub wallet_queue_url: Option<String>,
    /// The domain and URI a wallet signs in to (`SIGNING_DOMAIN`, `SIGNING_URI`; defaults
    /// local-api's own).
    pub signing: SigningDomain,
    /// Every linked wallet is read whole once in this many hours, a share of them each hour
    /// (`RECONCILE_HOURS`, 1 to 168, default 24). Only the sync function reads it.
    pub reconcile_hours: u32,
    /// The queue webhook deliveries wait on (`WEBHOOK_QUEUE_URL`; unset: events are kept in
    /// the feed and not delivered from this function).
    pub webhook_queue_url: Option<String>,
    /// The KMS key that seals webhook secrets (`WEBHOOK_KEY_ID`; unset: this function refuses
    /// to seal or open one).
    pub webhook_key_id: Option<String>,
}

/// How many hours a reconciliation round takes, unless configured: each wallet once a day.
pub const DEFAULT_RECONCILE_HOURS: u32 = 24;

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
        let seconds =
            |name: &str, default: Duration| match non_empty(name) {
                None => Ok(default),
                Some(text) => text.trim().parse().map(Duration::from_secs).map_err(|_| {
                    ConfigError(format!("{name} must be whole seconds, not {text:?}"))
                }),
            };
        let rpc_parameters = Chain::ALL
            .iter()
            .filter_map(|chain| {
                let name = format!("RPC_PARAMETER_{}", chain.as_str().to_ascii_uppercase());
                non_empty(&name).map(|parameter| (*chain, parameter.trim().to_string()))
            })
            .collect();
        Ok(Config {
            table_name,
            dynamodb_endpoint: non_empty("DYNAMODB_ENDPOINT"),
            catalog_ttl: seconds("CATALOG_TTL_SECONDS", DEFAULT_CATALOG_TTL)?,
            stale_after: seconds("MARKET_STALE_AFTER_SECONDS", DEFAULT_STALE_AFTER)?,
            min_discovered_depth_usd: match non_empty("MIN_DISCOVERED_DEPTH_USD") {
                None => DEFAULT_MIN_DISCOVERED_DEPTH_USD,
                Some(text) => text.trim().parse().map_err(|_| {
                    ConfigError(format!(
                        "MIN_DISCOVERED_DEPTH_USD must be whole USD, not {text:?}"
                    ))
                })?,
            },
            rpc_parameters,
            log_level: non_empty("RUST_LOG").unwrap_or_else(|| DEFAULT_LOG_LEVEL.to_string()),
            confirmation_blocks: match non_empty("CONFIRMATION_BLOCKS") {
                None => Confirmations::default(),
                Some(text) => Confirmations::parse(&text)
                    .map_err(|e| ConfigError(format!("CONFIRMATION_BLOCKS: {e}")))?,
            },
            log_ranges: match non_empty("LOG_RANGE_BLOCKS") {
                None => LogRanges::default(),
                Some(text) => LogRanges::parse(&text)
                    .map_err(|e| ConfigError(format!("LOG_RANGE_BLOCKS: {e}")))?,
            },
            wallet_queue_url: non_empty("WALLET_QUEUE_URL").map(|u| u.trim().to_string()),
            webhook_queue_url: non_empty("WEBHOOK_QUEUE_URL").map(|u| u.trim().to_string()),
            webhook_key_id: non_empty("WEBHOOK_KEY_ID").map(|k| k.trim().to_string()),
            reconcile_hours: match non_empty("RECONCILE_HOURS") {
                None => DEFAULT_RECONCILE_HOURS,
                Some(text) => text
                    .trim()
                    .parse()
                    .ok()
                    .filter(|h| (1..=168).contains(h))
                    .ok_or_else(|| {
                        ConfigError(format!(
                            "RECONCILE_HOURS must be 1 to 168 hours, not {text:?}"
                        ))
                    })?,
            },
            signing: {
                let default = SigningDomain::default();
                SigningDomain {
                    domain: non_empty("SIGNING_DOMAIN").unwrap_or(default.domain),
                    uri: non_empty("SIGNING_URI").unwrap_or(default.uri),
                }
            },
        })
    }

    /// The market's rules: states live, stale after `stale_after`; discovered pools as deep
    /// as configured.
    pub fn market_rules(&self) -> MarketRules {
        MarketRules {
            freshness: Freshness::live(self.stale_after),
            min_discovered_depth_usd: self.min_discovered_depth_usd,
        }
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
                stale_after: DEFAULT_STALE_AFTER,
                min_discovered_depth_usd: 10_000,
                rpc_parameters: BTreeMap::new(),
                log_level: "info".into(),
                confirmation_blocks: Confirmations::default(),
                log_ranges: LogRanges::default(),
                wallet_queue_url: None,
                signing: SigningDomain::default(),
                reconcile_hours: 24,
                webhook_queue_url: None,
                webhook_key_id: None,
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
            ("MARKET_STALE_AFTER_SECONDS", "90"),
            ("MIN_DISCOVERED_DEPTH_USD", "2500"),
            ("RPC_PARAMETER_SOLANA", "/positions/rpc/solana"),
            ("RPC_PARAMETER_BASE", ""),
            ("RUST_LOG", "debug"),
            ("RECONCILE_HOURS", "6"),
            ("WEBHOOK_QUEUE_URL", "https://sqs.example/q"),
            ("WEBHOOK_KEY_ID", "alias/webhooks"),
        ])
        .unwrap();
        assert_eq!(got.reconcile_hours, 6);
        assert_eq!(
            got.webhook_queue_url.as_deref(),
            Some("https://sqs.example/q")
        );
        assert_eq!(got.webhook_key_id.as_deref(), Some("alias/webhooks"));
        for refused in ["0", "169", "a day"] {
            assert!(config(&[("TABLE_NAME", "t"), ("RECONCILE_HOURS", refused)]).is_err());
        }
        assert_eq!(got.stale_after, Duration::from_secs(90));
        assert_eq!(got.min_discovered_depth_usd, 2_500);
        assert_eq!(
            got.rpc_parameters,
            BTreeMap::from([(Chain::Solana, "/positions/rpc/solana".to_string())])
        );
        assert_eq!(
            got.dynamodb_endpoint.as_deref(),
            Some("http://127.0.0.1:8000")
        );
        assert_eq!(got.catalog_ttl, Duration::from_secs(5));
        assert_eq!(got.log_level, "debug");
        assert!(config(&[("TABLE_NAME", "t"), ("CATALOG_TTL_SECONDS", "soon")]).is_err());
        assert!(config(&[("TABLE_NAME", "t"), ("MARKET_STALE_AFTER_SECONDS", "-1")]).is_err());
        assert!(config(&[("TABLE_NAME", "t"), ("MIN_DISCOVERED_DEPTH_USD", "1e4")]).is_err());
    }

    #[test]
    fn confirmations_are_per_chain() {
        let defaults = Confirmations::default();
        assert_eq!(defaults.of(Chain::Ethereum), 2);
        assert_eq!(defaults.of(Chain::Base), 1);
        let got = config(&[("TABLE_NAME", "t"), ("CONFIRMATION_BLOCKS", "0")]).unwrap();
        assert!(Chain::ALL
            .iter()
            .all(|c| got.confirmation_blocks.of(*c) == 0));
        let got = config(&[
            ("TABLE_NAME", "t"),
            ("CONFIRMATION_BLOCKS", "ethereum=5, bsc=3"),
        ])
        .unwrap();
        assert_eq!(got.confirmation_blocks.of(Chain::Ethereum), 5);
        assert_eq!(got.confirmation_blocks.of(Chain::Bsc), 3);
        assert_eq!(got.confirmation_blocks.of(Chain::Arbitrum), 1);
        for bad in [
            "-1",
            "65",
            "ethereum",
            "ethereum=x",
            "mars=1",
            "ethereum=1,",
        ] {
            assert!(
                config(&[("TABLE_NAME", "t"), ("CONFIRMATION_BLOCKS", bad)]).is_err(),
                "{bad}"
            );
        }
    }
}
