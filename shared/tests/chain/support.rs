//! Catalog records, markets and syncers for the chain tests.

use serde_json::{json, Value};
use shared::catalog::{Pool, PoolRecord};
use shared::chain::rpc::RpcClient;
use shared::chain::sync::Syncer;
use shared::clock::SystemClock;
use shared::market::Freshness;
use shared::model::Chain;
use shared::store::{Market, MemoryMarket, MemoryStore};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A market of `records`, live (states go stale after 300 s).
pub fn market(records: &[Value]) -> Arc<MemoryMarket> {
    let records: Vec<PoolRecord> = records
        .iter()
        .map(|r| serde_json::from_value(r.clone()).expect("a catalog record"))
        .collect();
    Arc::new(
        MemoryMarket::new(
            records,
            Freshness::Live {
                stale_after: Duration::from_secs(300),
            },
        )
        .unwrap(),
    )
}

/// A syncer reading each chain from its URL, giving up on a request after `timeout`.
pub fn syncer(market: Arc<MemoryMarket>, urls: &[(Chain, &str)], timeout: Duration) -> Syncer {
    let endpoints = urls
        .iter()
        .map(|(chain, url)| (*chain, Arc::new(RpcClient::new(url, timeout).unwrap())))
        .collect::<BTreeMap<_, _>>();
    Syncer::new(
        endpoints,
        market,
        Arc::new(MemoryStore::new()),
        Arc::new(SystemClock),
    )
}

/// The catalog's pool named `id`, as the market holds it now.
pub async fn pool(market: &MemoryMarket, id: &str) -> Pool {
    let catalog = market.catalog().await.unwrap();
    catalog
        .pools
        .iter()
        .find(|p| p.is_named(id))
        .expect("the pool is in the catalog")
        .clone()
}

/// A sync's report as the API answers it.
pub async fn sync(syncer: &Syncer) -> Value {
    use shared::app::MarketSync;
    serde_json::to_value(syncer.sync().await.unwrap()).unwrap()
}

/// The report's entry for pool `id`.
pub fn entry<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["pools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pool"].as_str().unwrap().eq_ignore_ascii_case(id))
        .unwrap_or_else(|| panic!("{id} is in the report: {report}"))
}

/// A Uniswap v3 USDC/USDT pool on `chain` at `address` (6 decimals both, price 1).
pub fn stable_pool(chain: &str, address: &str) -> Value {
    json!({
        "chain": chain, "protocol": "uniswap-v3", "pool": address,
        "feeTier": 100, "tickSpacing": 1,
        "token0": {"symbol": "USDC", "address": "0x00000000000000000000000000000000000000a0", "decimals": 6, "priceUsd": "1"},
        "token1": {"symbol": "USDT", "address": "0x00000000000000000000000000000000000000b0", "decimals": 6, "priceUsd": "1"},
        "base": "token0", "currentPrice": "1"
    })
}
