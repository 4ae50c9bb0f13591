//! The use cases of `application`, called as a queue message, a schedule or a CLI would call
//! them: plain inputs, no `Request`. Each endpoint's logic answers here what its route answers
//! (the handlers' own tests cover the HTTP side).

use bigdecimal::BigDecimal;
use shared::application::actions::{self, Asked};
use shared::application::error::UseCaseError;
use shared::application::inputs::{CreateRequest, OrderLimits};
use shared::application::portfolio::portfolio_of;
use shared::application::positions::{self, MAX_OPEN_RANGES_PER_POOL};
use shared::application::wallets::{self, LinkRequest};
use shared::application::{keys, orders};
use shared::model::{
    Chain, Filter, KeyAnswer, PageRequest, PositionEntry, Protocol, Status, StoredResponse,
};
use shared::App;
use std::str::FromStr;
use std::sync::Mutex;
use test_support::bodies::ETH_USDC;
use test_support::wallets::EvmWallet;

const LIMITS: OrderLimits = OrderLimits {
    slippage_bps: 50,
    deadline_seconds: 600,
    permit_signature: false,
    swap: false,
};

fn offer(lower: &str, upper: &str) -> CreateRequest {
    CreateRequest {
        chain: Chain::Ethereum,
        protocol: Protocol::UniswapV3,
        pool: ETH_USDC.to_string(),
        amount_a: "1".into(),
        amount_b: "3000".into(),
        price_lower: BigDecimal::from_str(lower).unwrap(),
        price_upper: BigDecimal::from_str(upper).unwrap(),
        on_chain: None,
    }
}

fn page() -> PageRequest {
    PageRequest {
        offset: 0,
        limit: 20,
    }
}

fn valued(entry: &PositionEntry) -> &shared::model::PositionView {
    match entry {
        PositionEntry::Valued(view) => view,
        other => panic!("not valued: {other:?}"),
    }
}

#[tokio::test]
async fn a_simulated_position_from_create_to_close_without_a_request() {
    let app = App::in_memory();
    let created = positions::create(&app, "alice".into(), &offer("2500", "3500"), None)
        .await
        .unwrap();
    let id = created.id().to_string();
    assert_eq!(valued(&created).status, Status::Active);

    let listed = positions::list(&app, "alice", Filter::default(), page())
        .await
        .unwrap();
    assert_eq!(listed.total, 1);
    assert_eq!(listed.data[0].id(), id);
    let read = positions::get(&app, "alice", &id).await.unwrap();
    assert_eq!(
        serde_json::to_value(&read).unwrap(),
        serde_json::to_value(&created).unwrap()
    );
    let portfolio = portfolio_of(&app, "alice", false).await.unwrap();
    assert_eq!(
        serde_json::to_value(&portfolio).unwrap()["totalValueUsd"],
        serde_json::to_value(valued(&created)).unwrap()["valueUsd"]
    );

    // Another caller: not found, as a route answers 404.
    let stranger = positions::get(&app, "bob", &id).await.unwrap_err();
    assert!(
        matches!(stranger, UseCaseError::NotFound(_)),
        "{stranger:?}"
    );

    // The close keeps its key's answer with the write: the function it is given sees what it
    // shows, and the key then replays it.
    let now = chrono::Utc::now();
    let shared::model::KeyClaim::Claimed { lease } =
        keys::claim(&app, "alice", "k", "print", now).await.unwrap()
    else {
        panic!("a new key is claimed");
    };
    let seen = Mutex::new(None::<String>);
    let answering = |shown: &PositionEntry| {
        *seen.lock().unwrap() = Some(shown.id().to_string());
        KeyAnswer {
            owner: "alice".into(),
            key: "k".into(),
            lease: lease.clone(),
            response: StoredResponse {
                status: 200,
                body: shown.id().to_string(),
                location: None,
            },
            expires_at: now + chrono::Duration::hours(24),
        }
    };
    let closed = positions::close(&app, "alice", &id, LIMITS, Some(&answering))
        .await
        .unwrap();
    assert_eq!(valued(&closed).status, Status::Closed);
    assert_eq!(seen.lock().unwrap().as_deref(), Some(id.as_str()));
    match keys::claim(&app, "alice", "k", "print", now).await.unwrap() {
        shared::model::KeyClaim::Answered(stored) => assert_eq!(stored.body, id),
        other => panic!("the key keeps the close's answer: {other:?}"),
    }
    let again = positions::close(&app, "alice", &id, LIMITS, None)
        .await
        .unwrap_err();
    assert!(matches!(again, UseCaseError::Conflict(_)), "{again:?}");

    let history = positions::history(&app, "alice", &id, page())
        .await
        .unwrap();
    let kinds: Vec<String> = history
        .data
        .iter()
        .map(|e| serde_json::to_value(e).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(history.total, 3, "{kinds:?}");
    assert!(kinds[2].contains("closed"), "{kinds:?}");
}

#[tokio::test]
async fn a_create_refuses_what_the_catalog_and_the_cap_refuse() {
    let app = App::in_memory();
    let unknown = CreateRequest {
        pool: "0x0000000000000000000000000000000000000001".into(),
        ..offer("2500", "3500")
    };
    let refused = positions::create(&app, "carol".into(), &unknown, None)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, UseCaseError::BadRequest(_)),
        "{refused:?}"
    );
    let nothing = CreateRequest {
        amount_a: "0".into(),
        amount_b: "0".into(),
        ..offer("2500", "3500")
    };
    let refused = positions::create(&app, "carol".into(), &nothing, None)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("above zero"), "{refused}");

    for i in 0..MAX_OPEN_RANGES_PER_POOL {
        let upper = (3500 + 10 * i).to_string();
        positions::create(&app, "carol".into(), &offer("2500", &upper), None)
            .await
            .unwrap();
    }
    let over = positions::create(&app, "carol".into(), &offer("2000", "4000"), None)
        .await
        .unwrap_err();
    assert!(matches!(over, UseCaseError::Conflict(_)), "{over:?}");
    let listed = positions::list(&app, "carol", Filter::default(), page())
        .await
        .unwrap();
    assert_eq!(listed.total, MAX_OPEN_RANGES_PER_POOL as u64);
}

#[tokio::test]
async fn actions_and_hashes_need_a_wallet_position() {
    let app = App::in_memory();
    let created = positions::create(&app, "dave".into(), &offer("2500", "3500"), None)
        .await
        .unwrap();
    let id = created.id();
    let refused = actions::act(&app, "dave", id, &Asked::Collect(LIMITS), None)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("simulated"), "{refused}");
    let hash = format!("0x{}", "ab".repeat(32));
    let refused = orders::report_transaction(&app, "dave", id, &hash, None)
        .await
        .unwrap_err();
    assert!(matches!(refused, UseCaseError::Conflict(_)), "{refused:?}");
    let unknown = actions::act(&app, "erin", id, &Asked::Collect(LIMITS), None)
        .await
        .unwrap_err();
    assert!(matches!(unknown, UseCaseError::NotFound(_)), "{unknown:?}");
}

#[tokio::test]
async fn a_wallet_links_by_its_signature_lists_and_unlinks() {
    let app = App::in_memory();
    let wallet = EvmWallet::from_seed(7);
    let issued = wallets::challenge(
        &app,
        "frank".into(),
        (Chain::Ethereum, wallet.address.clone()),
        None,
    )
    .await
    .unwrap();
    let asked = |signature: String| LinkRequest {
        chain: Chain::Ethereum,
        address: wallet.address.clone(),
        message: issued.message.clone(),
        signature,
    };
    let forged = EvmWallet::from_seed(8).sign(&issued.message);
    let refused = wallets::link(&app, "frank".into(), asked(forged))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, UseCaseError::BadRequest(_)),
        "{refused:?}"
    );
    assert_eq!(wallets::list(&app, "frank").await.unwrap().total, 0);

    let linked = wallets::link(&app, "frank".into(), asked(wallet.sign(&issued.message)))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&linked).unwrap()["address"],
        wallet.address
    );
    assert_eq!(wallets::list(&app, "frank").await.unwrap().total, 1);
    let reused = wallets::link(&app, "frank".into(), asked(wallet.sign(&issued.message)))
        .await
        .unwrap_err();
    assert!(reused.to_string().contains("already used"), "{reused}");

    wallets::unlink(&app, "frank", Chain::Ethereum, &wallet.address)
        .await
        .unwrap();
    let gone = wallets::unlink(&app, "frank", Chain::Ethereum, &wallet.address)
        .await
        .unwrap_err();
    assert!(matches!(gone, UseCaseError::NotFound(_)), "{gone:?}");
}

#[tokio::test]
async fn the_pools_and_a_sync_where_no_chain_is_read() {
    let app = App::in_memory();
    let pools = positions::pools(&app).await.unwrap();
    let catalog = positions::catalog(&app).await.unwrap();
    assert_eq!(pools.total, catalog.pools.len() as u64);
    let report = positions::sync(&app, false).await.unwrap();
    let report = serde_json::to_value(&report).unwrap();
    assert_eq!(report["updated"], 0);
    assert_eq!(report["notUpdated"], catalog.pools.len());
    // A key's claim is a use case too: the first claims it, the same request finds it taken.
    let now = chrono::Utc::now();
    let first = keys::claim(&app, "gina", "key-1", "print", now)
        .await
        .unwrap();
    assert!(matches!(first, shared::model::KeyClaim::Claimed { .. }));
    let second = keys::claim(&app, "gina", "key-1", "print", now)
        .await
        .unwrap();
    assert!(
        matches!(second, shared::model::KeyClaim::InFlight { .. }),
        "{second:?}"
    );
}
