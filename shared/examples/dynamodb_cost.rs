//! Cost benchmark of the DynamoDB store: a whale's 10,000 positions (simulated and wallet ones,
//! every status, every chain) and another user's 1,000 open positions beside 500 closed ones;
//! then what list pages and the portfolio's reads cost, counted by the store as DynamoDB bills
//! them (strongly consistent: 4 KB units per item for `GetItem`, per request's summed items for
//! `Query`). Fails when a read costs more than docs/figures/dynamodb-cost.md allows.
//!
//! Run with `scripts/bench-cost.sh` (starts moto's server), or against any DynamoDB-API
//! endpoint: `DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo run --release -p shared --example dynamodb_cost`.

use shared::model::{Chain, Filter, PageRequest, Position, Source, Status};
use shared::store::dynamodb::local_client;
use shared::store::{DynamoDbStore, PositionStore};
use test_support::sample;

const POSITIONS: usize = 10_000;
const OPEN: usize = 1_000;
const CLOSED: usize = 500;

/// The ceilings: a first page of 20, a page at offset 1,000, and the portfolio's reads of 1,000
/// open positions (its requests per MB read).
const FIRST_PAGE_RCU: u64 = 4;
const FIRST_PAGE_REQUESTS: u64 = 2;
const DEEP_PAGE_RCU: u64 = 32;
const PORTFOLIO_RCU: u64 = 150;
const PORTFOLIO_REQUESTS_PER_MB: u64 = 3;

struct Row {
    name: String,
    offset: String,
    items: usize,
    total: u64,
    read: [u64; 6],
}

#[tokio::main]
async fn main() {
    let endpoint =
        std::env::var("DYNAMODB_ENDPOINT").expect("set DYNAMODB_ENDPOINT to a DynamoDB-API server");
    let table = format!("bench-{}", ulid::Ulid::new().to_string().to_lowercase());
    let store = DynamoDbStore::new(local_client(&endpoint), table).with_read_metrics();
    store.prepare_local().await.expect("table ready");
    let catalog = sample::catalog();

    // moto copies the whole table for every transaction, so 10,000 transactional inserts would
    // take hours there; the bulk import writes the same items and counters in batches.
    let started = std::time::Instant::now();
    let whale: Vec<Position> = (0..POSITIONS)
        .map(|i| sample::position_at("whale", &catalog, i, i % 3 == 2))
        .collect();
    store
        .bulk_import("whale", &whale)
        .await
        .expect("bulk import");
    let mut holder = sample::book("holder", &catalog, OPEN, false);
    holder.extend((OPEN..OPEN + CLOSED).map(|i| sample::position_at("holder", &catalog, i, true)));
    store
        .bulk_import("holder", &holder)
        .await
        .expect("bulk import");
    println!(
        "loaded {} positions in {:.1} s\n",
        whale.len() + holder.len(),
        started.elapsed().as_secs_f64()
    );

    let status = Some(Status::Active);
    let chain = Some(Chain::Ethereum);
    let wallet = Some(Source::Wallet);
    let filters = [
        ("no filter", Filter::default()),
        (
            "status=active",
            Filter {
                status,
                ..Filter::default()
            },
        ),
        (
            "chain=ethereum",
            Filter {
                chain,
                ..Filter::default()
            },
        ),
        (
            "status=active&chain=ethereum",
            Filter {
                status,
                chain,
                source: None,
            },
        ),
        (
            "source=wallet",
            Filter {
                source: wallet,
                ..Filter::default()
            },
        ),
        (
            "source=simulated",
            Filter {
                source: Some(Source::Simulated),
                ..Filter::default()
            },
        ),
        (
            "source=wallet&status=active&chain=ethereum",
            Filter {
                status,
                chain,
                source: wallet,
            },
        ),
    ];
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (name, filter) in filters {
        for offset in [0u64, 1_000, 9_980] {
            let before = metrics(&store);
            let page = store
                .list("whale", filter, PageRequest { offset, limit: 20 })
                .await
                .expect("list");
            let read = delta(before, metrics(&store));
            let [requests, .., rcu] = read;
            if offset == 0 && (rcu > FIRST_PAGE_RCU || requests > FIRST_PAGE_REQUESTS) {
                failures.push(format!("list {name} at 0: {requests} requests, {rcu} RCU"));
            }
            if offset == 1_000 && rcu > DEEP_PAGE_RCU {
                failures.push(format!("list {name} at 1000: {rcu} RCU"));
            }
            rows.push(Row {
                name: format!("list, {name}"),
                offset: offset.to_string(),
                items: page.items.len(),
                total: page.total,
                read,
            });
        }
    }

    // What GET /portfolio reads: the open positions and the realized totals, at once.
    let before = metrics(&store);
    let inputs = store
        .portfolio_inputs("holder")
        .await
        .expect("portfolio inputs");
    let open = inputs.open;
    let read = delta(before, metrics(&store));
    let [requests, .., bytes, rcu] = read;
    let per_mb = bytes.div_ceil(1 << 20).max(1) * PORTFOLIO_REQUESTS_PER_MB;
    if rcu > PORTFOLIO_RCU || requests > per_mb {
        failures.push(format!(
            "portfolio: {requests} requests, {rcu} RCU for {bytes} bytes"
        ));
    }
    assert_eq!(open.len(), OPEN, "the holder's open positions");
    rows.push(Row {
        name: format!(
            "portfolio inputs ({OPEN} open, {CLOSED} closed beside them, {} of them wallet positions closed on chain)",
            inputs.closed_on_chain.len()
        ),
        offset: "-".into(),
        items: open.len(),
        total: open.len() as u64,
        read,
    });

    println!("| read | offset | items returned | total | requests | position items | list keys | counter items | bytes read | RCU (strong) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &rows {
        let [requests, positions, keys, counters, bytes, rcu] = row.read;
        println!(
            "| {} | {} | {} | {} | {requests} | {positions} | {keys} | {counters} | {bytes} | {rcu} |",
            row.name, row.offset, row.items, row.total
        );
    }
    println!(
        "\nceilings: a first page {FIRST_PAGE_RCU} RCU in {FIRST_PAGE_REQUESTS} requests; a page at \
         offset 1,000 {DEEP_PAGE_RCU} RCU; the portfolio {PORTFOLIO_RCU} RCU and \
         {PORTFOLIO_REQUESTS_PER_MB} requests per MB read"
    );
    if !failures.is_empty() {
        eprintln!("over the ceilings:\n  {}", failures.join("\n  "));
        std::process::exit(1);
    }
    println!("every read within its ceiling");
}

fn metrics(store: &DynamoDbStore) -> [u64; 6] {
    store.read_metrics().expect("metrics on").snapshot()
}

fn delta(before: [u64; 6], after: [u64; 6]) -> [u64; 6] {
    std::array::from_fn(|i| after[i] - before[i])
}
