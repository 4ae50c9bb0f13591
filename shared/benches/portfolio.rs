//! The portfolio's own CPU once its inputs are in memory: valuing 1,000 open positions (simulated
//! and wallet ones, over every pool and chain of the catalog, at synced states with their fee
//! records) and writing the answer's JSON. `cargo bench -p shared --bench portfolio`; the target
//! is at most 1 ms (docs/figures/portfolio.md).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use shared::model::Realized;
use shared::portfolio::portfolio;
use test_support::sample;

const POSITIONS: usize = 1_000;

fn valuation(c: &mut Criterion) {
    let catalog = sample::catalog();
    let positions = sample::book("whale", &catalog, POSITIONS, false);
    let realized = Realized::default();
    let now = chrono::DateTime::from_timestamp(1_795_000_100, 0).unwrap();

    // What is timed values every position, fees included: a bench of nothing would pass.
    let view = portfolio(&positions, &realized, &catalog, now).expect("valued");
    assert_eq!(view.unpriced_positions, 0);
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(json["positions"], POSITIONS, "{json}");
    assert_ne!(json["totalFeesEarnedUsd"], 0, "{json}");

    c.bench_function("portfolio: value 1,000 open positions", |b| {
        b.iter(|| portfolio(black_box(&positions), &realized, &catalog, now).unwrap());
    });
    c.bench_function(
        "portfolio: value 1,000 open positions and write the JSON",
        |b| {
            b.iter(|| {
                let view = portfolio(black_box(&positions), &realized, &catalog, now).unwrap();
                serde_json::to_vec(&view).unwrap()
            });
        },
    );
}

criterion_group!(benches, valuation);
criterion_main!(benches);
