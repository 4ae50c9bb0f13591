//! What `GET /portfolio` reads on DynamoDB (moto, behind a counting forwarder: an independent
//! meter of the requests): one read pass of the positions whatever their number, and its
//! `changes` only when asked for, their history reads run a few at a time. Prints the figures
//! `docs/figures/portfolio.md` gives
//! (`cargo test -p shared --test dynamodb portfolio_costs -- --nocapture`).

use shared::application::portfolio::portfolio_of;
use shared::store::dynamodb::local_client;
use shared::store::DynamoDbStore;
use std::sync::Arc;
use test_support::dynamodb::CountingDynamoDb;
use test_support::sample;

#[tokio::test]
async fn portfolio_costs() {
    let counting = CountingDynamoDb::start().await;
    let table = format!("portfolio-{}", ulid::Ulid::new().to_string().to_lowercase());
    let store = DynamoDbStore::new(local_client(&counting.url), table);
    store.ensure_table().await.unwrap();
    let catalog = sample::catalog();
    let store = Arc::new(store);
    let app = shared::App {
        store: store.clone(),
        wallets: store.clone(),
        history: store.clone(),
        series: store.clone(),
        ..shared::App::in_memory()
    };
    let mut bare = Vec::new();
    for (owner, open) in [("hundred", 100), ("thousand", 1_000)] {
        let book = sample::book(owner, &catalog, open, false);
        store.bulk_import(owner, &book).await.unwrap();
        counting.take();
        let view = portfolio_of(&app, owner, false).await.unwrap();
        assert!(view.changes.is_none());
        let requests = counting.take();
        let operations: Vec<&str> = requests.iter().map(|(op, _)| op.as_str()).collect();
        println!("figures: GET /portfolio of {open} open positions: {operations:?}");
        // One read pass: no read per position.
        assert!(requests.len() <= 3, "{open}: {operations:?}");
        bare.push(requests.len());
        if open == 100 {
            portfolio_of(&app, owner, true).await.unwrap();
            let asked = counting.take();
            let histories = book.iter().filter(|p| p.holding.is_some()).count();
            println!(
                "figures: GET /portfolio?include=changes of {open} open positions ({histories} \
                 from wallets): {} requests",
                asked.len()
            );
            assert!(
                asked.len() > histories,
                "the histories are read: {}",
                asked.len()
            );
        }
    }
    assert_eq!(
        bare[0], bare[1],
        "the same requests at 100 and 1,000 positions"
    );
}
