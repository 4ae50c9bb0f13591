//! Cost benchmark of the DynamoDB store: loads 10,000 positions for one user over every chain
//! and status, then reports what list pages and the portfolio read.
//!
//! Run with `scripts/bench-cost.sh` (starts moto's server), or against any DynamoDB-API
//! endpoint: `DYNAMODB_ENDPOINT=http://127.0.0.1:8000 cargo run --release -p shared --example dynamodb_cost`.

use bigdecimal::BigDecimal;
use shared::model::{Chain, Filter, PageRequest, Position, Protocol, Status};
use shared::store::dynamodb::local_client;
use shared::store::{DynamoDbStore, PositionStore};

const POSITIONS: usize = 10_000;

fn position(owner: &str, i: usize) -> Position {
    let created_at = chrono::DateTime::from_timestamp_millis(1_790_000_000_000 + i as i64).unwrap();
    Position {
        id: ulid::Ulid::from_datetime(created_at.into()).to_string(),
        owner: owner.to_string(),
        chain: Chain::ALL[i % Chain::ALL.len()],
        protocol: Protocol::UniswapV3,
        pool: "0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640".to_string(),
        status: Status::ALL[(i / Chain::ALL.len()) % Status::ALL.len()],
        tick_lower: -80_000,
        tick_upper: -70_000,
        liquidity: 1_000_000_000_000_000,
        cost_basis_usd: BigDecimal::from(1000),
        deposit: None,
        fee_checkpoint: None,
        closing: None,
        created_at,
        holding: None,
        order: None,
    }
}

#[tokio::main]
async fn main() {
    let endpoint =
        std::env::var("DYNAMODB_ENDPOINT").expect("set DYNAMODB_ENDPOINT to a DynamoDB-API server");
    let table = format!("bench-{}", ulid::Ulid::new().to_string().to_lowercase());
    let store = DynamoDbStore::new(local_client(&endpoint), table).with_read_metrics();
    store.prepare_local().await.expect("table ready");
    let owner = "whale";

    // moto copies the whole table for every transaction, so 10,000 transactional inserts would
    // take hours there; the bulk import writes the same items and counters in batches.
    let started = std::time::Instant::now();
    let positions: Vec<Position> = (0..POSITIONS).map(|i| position(owner, i)).collect();
    store
        .bulk_import(owner, &positions)
        .await
        .expect("bulk import");
    println!(
        "loaded {POSITIONS} positions in {:.1} s\n",
        started.elapsed().as_secs_f64()
    );

    println!("| read | offset | items returned | total | requests | position items | list keys | counter items | bytes read | RCU (strong) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let filters = [
        ("list, no filter", Filter::default()),
        (
            "list, status=active",
            Filter {
                status: Some(Status::Active),
                ..Filter::default()
            },
        ),
        (
            "list, chain=ethereum",
            Filter {
                chain: Some(Chain::Ethereum),
                ..Filter::default()
            },
        ),
        (
            "list, status=active&chain=ethereum",
            Filter {
                status: Some(Status::Active),
                chain: Some(Chain::Ethereum),
                source: None,
            },
        ),
    ];
    for (name, filter) in filters {
        for offset in [0u64, 1_000, 9_980] {
            let before = metrics(&store);
            let page = store
                .list(owner, filter, PageRequest { offset, limit: 20 })
                .await
                .expect("list");
            report(
                name,
                &offset.to_string(),
                page.items.len(),
                page.total,
                before,
                metrics(&store),
            );
        }
    }
    let before = metrics(&store);
    let open = store.open_positions(owner).await.expect("portfolio inputs");
    report(
        "portfolio inputs (open positions)",
        "-",
        open.len(),
        open.len() as u64,
        before,
        metrics(&store),
    );
}

fn report(name: &str, offset: &str, items: usize, total: u64, before: [u64; 6], after: [u64; 6]) {
    let d: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
    println!(
        "| {name} | {offset} | {items} | {total} | {} | {} | {} | {} | {} | {} |",
        d[0], d[1], d[2], d[3], d[4], d[5]
    );
}

fn metrics(store: &DynamoDbStore) -> [u64; 6] {
    store
        .read_metrics()
        .expect("the benchmark's store counts its reads")
        .snapshot()
}
