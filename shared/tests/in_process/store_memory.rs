//! The store contract and the fee scenario on the in-memory store.

test_support::store_contract!(contract, shared::store::MemoryStore::new(), 200);

/// The fee scenario on a live in-memory market (states saved by hand, as a sync would).
#[tokio::test]
async fn fees_follow_the_pools_fee_growth_in_memory() {
    use shared::market::Freshness;
    use shared::store::{MemoryMarket, MemoryStore};
    use std::sync::Arc;
    let market = MemoryMarket::new(
        shared::catalog::embedded_records(),
        Freshness::Live {
            stale_after: std::time::Duration::from_secs(300),
        },
    )
    .unwrap();
    let app = shared::App {
        store: Arc::new(MemoryStore::new()),
        market: Arc::new(market),
        ..shared::App::in_memory()
    };
    test_support::earnings::fees_follow_the_pools_fee_growth(&app, "alice", || app.clone()).await;
}

/// The pending scenario on a live in-memory market never synced (states saved by hand, then
/// the pending positions settled as the sync settles them).
#[tokio::test]
async fn offers_wait_for_a_fresh_state_in_memory() {
    use shared::market::Freshness;
    use shared::store::{MemoryMarket, MemoryStore};
    use std::sync::Arc;
    let stale_after = std::time::Duration::from_secs(300);
    let market = MemoryMarket::new(
        shared::catalog::embedded_records(),
        Freshness::Live { stale_after },
    )
    .unwrap();
    let app = shared::App {
        store: Arc::new(MemoryStore::new()),
        market: Arc::new(market),
        ..shared::App::in_memory()
    };
    test_support::lifecycle::offers_wait_for_a_fresh_state(&app, "alice", "bob", stale_after).await;
}

/// Idempotency keys through the handlers on the in-memory store.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retried_writes_apply_once_in_memory() {
    test_support::idempotency::retried_writes_apply_once(&shared::App::in_memory(), "alice", "bob")
        .await;
}

/// Wallets linked by signature through the handlers, in memory.
#[tokio::test]
async fn wallets_link_by_signature_in_memory() {
    test_support::wallets::wallets_link_by_signature(&shared::App::in_memory()).await;
}

/// Watched addresses through the handlers, in memory.
#[tokio::test]
async fn watched_addresses_are_counted_apart_in_memory() {
    test_support::watched::watched_addresses_are_counted_apart(&shared::App::in_memory()).await;
}

/// A position moved between two wallets of one owner, in memory.
#[tokio::test]
async fn positions_follow_their_owners_wallets_in_memory() {
    test_support::wallets::positions_follow_their_owners_wallets(&shared::App::in_memory()).await;
}

/// A wallet position's bounds tracked while it is open, in memory.
#[tokio::test]
async fn wallet_positions_track_their_bounds_while_open_in_memory() {
    test_support::wallets::wallet_positions_track_their_bounds_while_open(&shared::App::in_memory())
        .await;
}

/// Reads of a linked wallet, in memory.
#[tokio::test]
async fn wallet_reads_never_go_back_in_memory() {
    test_support::wallets::wallet_reads_never_go_back(&shared::App::in_memory()).await;
}

#[tokio::test]
async fn unlinking_removes_the_wallets_positions_in_memory() {
    test_support::wallets::unlinking_removes_the_wallets_positions(&shared::App::in_memory()).await;
}

#[tokio::test]
async fn history_appends_once_and_pages_in_chain_order() {
    let store = shared::store::MemoryHistory::default();
    test_support::history::history_appends_once_and_pages_in_chain_order(&store).await;
}

#[tokio::test]
async fn the_alert_store_contract_in_memory() {
    let store = shared::store::MemoryAlerts::default();
    test_support::alerts::alert_store_keeps_its_contract(&store).await;
}

#[tokio::test]
async fn series_points_are_kept_per_pool_and_boundary() {
    let store = shared::store::MemorySeries::default();
    test_support::history::series_points_are_kept_per_pool_and_boundary(&store).await;
}

#[tokio::test]
async fn series_follows_stakes() {
    let store = shared::store::MemorySeries::default();
    test_support::history::series_follows_stakes(&store).await;
}
