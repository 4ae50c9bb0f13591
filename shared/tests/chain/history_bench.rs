//! Benchmark (ignored; `scripts/bench-history.sh`): the backfill of a position with 10 and with
//! 1,000 events on the devnet (a bot collecting one unit at a time), read whole at the default
//! log range, valued at each event's block and stored in memory and on DynamoDB (moto): the
//! JSON-RPC requests and calls, the history's writes and the milliseconds. Prints the figures;
//! asserts only that every event is stored once.

use async_trait::async_trait;
use shared::catalog::{Catalog, CatalogFile};
use shared::chain::backfill::HistoryReader;
use shared::chain::refresh::confirmed_block;
use shared::chain::{RpcClient, RPC_TIMEOUT};
use shared::history::{HistoryProgress, PositionEvent};
use shared::market::DEFAULT_LOG_RANGE;
use shared::model::{Chain, HeldToken, Position, Protocol, Status, WalletHolding};
use shared::store::{HistoryStore, MemoryHistory, MemoryStore, PositionStore, StoreResult};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use test_support::devnet::Devnet;

/// A history store counting what is written to it.
struct Counted {
    inner: Arc<dyn HistoryStore>,
    appends: AtomicU64,
    events: AtomicU64,
    pages: AtomicU64,
}

#[async_trait]
impl HistoryStore for Counted {
    async fn append_history(
        &self,
        owner: &str,
        id: &str,
        previous: Option<&HistoryProgress>,
        events: &[PositionEvent],
        progress: &HistoryProgress,
    ) -> StoreResult<()> {
        self.appends.fetch_add(1, Ordering::SeqCst);
        self.events.fetch_add(events.len() as u64, Ordering::SeqCst);
        let stored = self
            .inner
            .append_history(owner, id, previous, events, progress);
        stored.await
    }

    async fn rewind_history(
        &self,
        owner: &str,
        id: &str,
        previous: &HistoryProgress,
        from: u64,
        progress: &HistoryProgress,
    ) -> StoreResult<()> {
        let rewound = self
            .inner
            .rewind_history(owner, id, previous, from, progress);
        rewound.await
    }

    async fn history_progress(
        &self,
        owner: &str,
        id: &str,
    ) -> StoreResult<Option<HistoryProgress>> {
        self.inner.history_progress(owner, id).await
    }

    async fn history_page(
        &self,
        owner: &str,
        id: &str,
        offset: u64,
        limit: u64,
    ) -> StoreResult<Vec<PositionEvent>> {
        self.pages.fetch_add(1, Ordering::SeqCst);
        self.inner.history_page(owner, id, offset, limit).await
    }
}

/// The devnet's catalog file as a catalog.
fn catalog(devnet: &Devnet) -> Catalog {
    let file: CatalogFile =
        serde_json::from_str(&std::fs::read_to_string(&devnet.catalog).unwrap()).unwrap();
    Catalog::from_records(&file.pools)
        .unwrap()
        .with_deployments(file.deployments)
}

/// The wallet position of `token`, as a read stores it.
fn wallet_position(devnet: &Devnet, wallet: &str, token: &str) -> Position {
    let held = |name: &str| HeldToken {
        symbol: name.to_uppercase(),
        address: devnet.address(name),
        decimals: 18,
    };
    let [t0, t1] = if devnet.usdc_is_token0() {
        ["usdc", "weth"]
    } else {
        ["weth", "usdc"]
    };
    let mut position = test_support::fixtures::position(
        &format!("bench-{token}"),
        Status::Active,
        Chain::Ethereum,
        0,
    );
    position.protocol = Protocol::UniswapV3;
    position.pool = devnet.address("pool");
    position.holding = Some(Box::new(WalletHolding {
        wallet: wallet.to_string(),
        manager: devnet.address("manager"),
        token: token.to_string(),
        height: 1,
        read_at: chrono::Utc::now(),
        tokens: [held(t0), held(t1)],
        amounts: ["0".into(), "0".into()],
        fees: ["0".into(), "0".into()],
        sqrt_price: "79228162514264337593543950336".into(),
        tick: 0,
        first_value_usd: None,
        close_reason: None,
        read_error: None,
        history: None,
        moved_from: None,
        moved_to: None,
        fee_state: None,
        tracked: false,
        watched: false,
        staked: None,
    }));
    position
}

#[tokio::test]
#[ignore]
async fn bench_backfill() {
    let devnet = Devnet::up(3000).await;
    let wallet = devnet.account(1).await;
    let range = devnet.range_around(600).await;
    let mut tokens = Vec::new();
    for events in [10u64, 1_000] {
        let token = devnet
            .mint_to(&wallet, range, None, "1000000000000000000000")
            .await;
        // The mint's Transfer and IncreaseLiquidity, then one Collect a transaction.
        let count = (events - 2).to_string();
        devnet
            .run(
                "churn",
                &[
                    "--account",
                    &wallet,
                    "--token-id",
                    &token,
                    "--count",
                    &count,
                ],
            )
            .await;
        tokens.push((events, token));
    }
    let catalog = catalog(&devnet);
    println!("| events | store | JSON-RPC requests | calls | appends | events written | event pages | ms |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for (events, token) in &tokens {
        for on_dynamodb in [false, true] {
            let (store, history): (Arc<dyn PositionStore>, Arc<dyn HistoryStore>) = if on_dynamodb {
                let store = test_support::dynamodb::dynamodb_store().await;
                (Arc::new(store.clone()), Arc::new(store))
            } else {
                (
                    Arc::new(MemoryStore::new()),
                    Arc::new(MemoryHistory::default()),
                )
            };
            let counted = Counted {
                inner: history,
                appends: AtomicU64::new(0),
                events: AtomicU64::new(0),
                pages: AtomicU64::new(0),
            };
            let position = wallet_position(&devnet, &wallet, token);
            store.insert(&position).await.unwrap();
            let rpc = RpcClient::new(&devnet.rpc, RPC_TIMEOUT).unwrap();
            let head = confirmed_block(&rpc, 0).await.unwrap();
            let (requests, calls) = (
                rpc.stats.requests.load(Ordering::SeqCst),
                rpc.stats.calls.load(Ordering::SeqCst),
            );
            let reader = HistoryReader {
                rpc: &rpc,
                chain: Chain::Ethereum,
                catalog: &catalog,
                history: &counted,
                series: None,
                store: store.as_ref(),
                alerts: &shared::App::in_memory().alerts,
                log_range: DEFAULT_LOG_RANGE,
                own: &[],
            };
            let started = Instant::now();
            let done = reader.follow(std::slice::from_ref(&position), &head).await;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(done.events, *events, "{done:?}");
            assert!(done.stopped.is_empty(), "{done:?}");
            let stored = store
                .get(&position.owner, &position.id)
                .await
                .unwrap()
                .unwrap();
            let summary = stored.holding.unwrap().history.unwrap();
            assert!(summary.complete, "{summary:?}");
            println!(
                "| {events} | {} | {} | {} | {} | {} | {} | {ms:.0} |",
                if on_dynamodb {
                    "DynamoDB (moto)"
                } else {
                    "memory"
                },
                rpc.stats.requests.load(Ordering::SeqCst) - requests,
                rpc.stats.calls.load(Ordering::SeqCst) - calls,
                counted.appends.load(Ordering::SeqCst),
                counted.events.load(Ordering::SeqCst),
                counted.pages.load(Ordering::SeqCst),
            );
        }
    }
}
