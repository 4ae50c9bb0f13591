//! The store contract, written once and run against every store: the in-memory one and
//! `DynamoDbStore` on a real DynamoDB-API server. [`store_contract!`](crate::store_contract)
//! expands to one test per clause.

use crate::fixtures::{position, unique_owner};
use bigdecimal::BigDecimal;
use shared::math::U256;
use shared::model::{Chain, Closing, Filter, PageRequest, Position, Realized, Status, TokenPair};
use shared::store::{PositionStore, StoreError};
use std::collections::HashSet;
use std::str::FromStr;
use std::sync::Arc;

/// Positions over every status and chain, one second apart, in creation order.
pub fn mixed(owner: &str, count: usize) -> Vec<Position> {
    (0..count)
        .map(|i| {
            let status = Status::ALL[i % 3];
            let chain = Chain::ALL[(i / 3) % 5];
            position(owner, status, chain, 1_790_000_000_000 + i as i64 * 1000)
        })
        .collect()
}

pub async fn insert_all(store: &dyn PositionStore, positions: &[Position]) {
    for p in positions {
        store.insert(p).await.unwrap();
    }
}

/// Every list variant of `owner` returns exactly `positions`' matches, newest first, with the
/// exact total.
pub async fn assert_every_list(store: &dyn PositionStore, owner: &str, positions: &[Position]) {
    for filter in every_filter() {
        let want = expected(positions, filter);
        assert_eq!(
            ids(store, owner, filter, 0, 100).await,
            (want.clone(), want.len() as u64),
            "{filter:?}"
        );
    }
}

/// What a list should return: matching positions, newest first.
pub fn expected(positions: &[Position], filter: Filter) -> Vec<String> {
    let mut ids: Vec<String> = positions
        .iter()
        .filter(|p| filter.matches(p))
        .map(|p| p.id.clone())
        .collect();
    ids.sort_by(|a, b| b.cmp(a));
    ids
}

pub fn every_filter() -> Vec<Filter> {
    let mut filters = vec![Filter::default()];
    for &status in Status::ALL {
        filters.push(Filter {
            status: Some(status),
            chain: None,
        });
    }
    for &chain in Chain::ALL {
        filters.push(Filter {
            status: None,
            chain: Some(chain),
        });
        for &status in Status::ALL {
            filters.push(Filter {
                status: Some(status),
                chain: Some(chain),
            });
        }
    }
    filters
}

pub async fn ids(
    store: &dyn PositionStore,
    owner: &str,
    filter: Filter,
    offset: u64,
    limit: u32,
) -> (Vec<String>, u64) {
    let page = store
        .list(owner, filter, PageRequest { offset, limit })
        .await
        .unwrap();
    (page.items.into_iter().map(|p| p.id).collect(), page.total)
}

pub async fn insert_then_get(store: &dyn PositionStore) {
    let owner = unique_owner("get");
    let p = position(&owner, Status::Active, Chain::Base, 1_790_000_000_123);
    store.insert(&p).await.unwrap();
    assert_eq!(store.get(&owner, &p.id).await.unwrap(), Some(p.clone()));
    assert_eq!(
        store.get(&unique_owner("other"), &p.id).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .get(&owner, "01ARZ3NDEKTSV4RRFFQ69G5FAV")
            .await
            .unwrap(),
        None
    );
}

pub async fn duplicate_insert_changes_nothing(store: &dyn PositionStore) {
    let owner = unique_owner("dup");
    let p = position(&owner, Status::Pending, Chain::Solana, 1_790_000_000_000);
    store.insert(&p).await.unwrap();
    let mut again = p.clone();
    again.status = Status::Active;
    assert!(matches!(
        store.insert(&again).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(store.get(&owner, &p.id).await.unwrap(), Some(p.clone()));
    assert_every_list(store, &owner, std::slice::from_ref(&p)).await;
}

pub async fn every_list_variant_pages_newest_first_with_exact_totals(store: &dyn PositionStore) {
    let owner = unique_owner("list");
    let positions = mixed(&owner, 45);
    insert_all(store, &positions).await;
    for filter in every_filter() {
        let want = expected(&positions, filter);
        let (all, total) = ids(store, &owner, filter, 0, 100).await;
        assert_eq!(all, want, "{filter:?}");
        assert_eq!(total, want.len() as u64, "{filter:?}");
        for (offset, limit) in [
            (0u64, 1u32),
            (1, 2),
            (2, 5),
            (want.len() as u64, 5),
            (1000, 20),
        ] {
            let (page, total) = ids(store, &owner, filter, offset, limit).await;
            let slice: Vec<String> = want
                .iter()
                .skip(offset as usize)
                .take(limit as usize)
                .cloned()
                .collect();
            assert_eq!(page, slice, "{filter:?} offset {offset} limit {limit}");
            assert_eq!(total, want.len() as u64);
        }
    }
}

pub async fn open_positions_exclude_closed(store: &dyn PositionStore) {
    let owner = unique_owner("open");
    let positions = mixed(&owner, 12);
    insert_all(store, &positions).await;
    let open: HashSet<String> = store
        .open_positions(&owner)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    let want: HashSet<String> = positions
        .iter()
        .filter(|p| p.status != Status::Closed)
        .map(|p| p.id.clone())
        .collect();
    assert_eq!(open, want);
    assert!(store
        .open_positions(&unique_owner("nobody"))
        .await
        .unwrap()
        .is_empty());
}

pub async fn closing_moves_lists_and_counts(store: &dyn PositionStore) {
    let owner = unique_owner("close");
    let mut positions = mixed(&owner, 9);
    insert_all(store, &positions).await;
    let target = positions
        .iter()
        .position(|p| p.status == Status::Active)
        .unwrap();
    let id = positions[target].id.clone();
    // Wrong `from`: refused, nothing changes.
    assert!(matches!(
        store
            .set_status(&owner, &id, Status::Pending, Status::Closed)
            .await,
        Err(StoreError::Conflict)
    ));
    store
        .set_status(&owner, &id, Status::Active, Status::Closed)
        .await
        .unwrap();
    positions[target].status = Status::Closed;
    assert_eq!(
        store.get(&owner, &id).await.unwrap().unwrap().status,
        Status::Closed
    );
    assert_every_list(store, &owner, &positions).await;
    assert!(!store
        .open_positions(&owner)
        .await
        .unwrap()
        .iter()
        .any(|p| p.id == id));
    assert!(matches!(
        store
            .set_status(
                &owner,
                "01ARZ3NDEKTSV4RRFFQ69G5FAV",
                Status::Active,
                Status::Closed
            )
            .await,
        Err(StoreError::Conflict)
    ));
}

pub async fn owners_are_isolated(store: &dyn PositionStore) {
    let (alice, bob) = (unique_owner("alice"), unique_owner("bob"));
    let a = mixed(&alice, 6);
    let b = mixed(&bob, 4);
    insert_all(store, &a).await;
    insert_all(store, &b).await;
    assert_eq!(ids(store, &alice, Filter::default(), 0, 100).await.1, 6);
    assert_eq!(ids(store, &bob, Filter::default(), 0, 100).await.1, 4);
    assert_eq!(store.get(&bob, &a[0].id).await.unwrap(), None);
    let (listed, _) = ids(store, &bob, Filter::default(), 0, 100).await;
    assert!(listed.iter().all(|id| b.iter().any(|p| &p.id == id)));
}

pub async fn concurrent_inserts_count_exactly(store: Arc<dyn PositionStore>, count: usize) {
    let owner = unique_owner("burst");
    let positions = mixed(&owner, count);
    let tasks: Vec<_> = positions
        .iter()
        .cloned()
        .map(|p| {
            let store = store.clone();
            tokio::spawn(async move { store.insert(&p).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    for filter in every_filter() {
        let want = expected(&positions, filter);
        let (got, total) = ids(store.as_ref(), &owner, filter, 0, 100).await;
        assert_eq!(total, want.len() as u64, "{filter:?}");
        assert_eq!(
            got,
            want.into_iter().take(100).collect::<Vec<_>>(),
            "{filter:?}"
        );
    }
}

pub async fn a_move_to_the_same_status_changes_nothing(store: &dyn PositionStore) {
    let owner = unique_owner("same");
    let positions = mixed(&owner, 6);
    insert_all(store, &positions).await;
    for p in &positions {
        store
            .set_status(&owner, &p.id, p.status, p.status)
            .await
            .unwrap();
        let other = Status::ALL
            .iter()
            .copied()
            .find(|s| *s != p.status)
            .unwrap();
        assert!(matches!(
            store.set_status(&owner, &p.id, other, other).await,
            Err(StoreError::Conflict)
        ));
        assert_eq!(store.get(&owner, &p.id).await.unwrap().as_ref(), Some(p));
    }
    assert_every_list(store, &owner, &positions).await;
}

/// Close figures with this realized PnL and cost basis (decimal strings).
pub fn closing(pnl: &str, cost_basis: &str) -> Closing {
    let d = |s: &str| BigDecimal::from_str(s).unwrap();
    Closing {
        closed_at: chrono::DateTime::from_timestamp_millis(1_795_000_000_123).unwrap(),
        price: d("3000.5"),
        withdrawn: TokenPair {
            a: U256::from(10u64.pow(18)),
            b: U256::from(7u8),
        },
        fees: TokenPair {
            a: U256::ZERO,
            b: U256::from(1u8) << 130,
        },
        value_a: d("3000.5"),
        value_b: d("0.000007"),
        fees_usd_a: d("0"),
        fees_usd_b: d("12.25"),
        hodl_usd: Some(d("3100")),
        pnl_usd: d(pnl),
        cost_basis_usd: d(cost_basis),
    }
}

pub async fn close_freezes_figures_and_adds_realized(store: &dyn PositionStore) {
    let owner = unique_owner("realize");
    let mut positions = mixed(&owner, 9);
    insert_all(store, &positions).await;
    assert_eq!(store.realized(&owner).await.unwrap(), Realized::default());
    let active = positions
        .iter()
        .position(|p| p.status == Status::Active)
        .unwrap();
    let pending = positions
        .iter()
        .position(|p| p.status == Status::Pending)
        .unwrap();
    let (gain, cancel) = (closing("1.500000000001", "100"), closing("0", "0"));
    for (i, figures) in [(active, &gain), (pending, &cancel)] {
        let p = &mut positions[i];
        // Wrong `from`: refused, nothing changes.
        let wrong = if p.status == Status::Active {
            Status::Pending
        } else {
            Status::Active
        };
        assert!(matches!(
            store.close(&owner, &p.id, wrong, figures).await,
            Err(StoreError::Conflict)
        ));
        store.close(&owner, &p.id, p.status, figures).await.unwrap();
        p.status = Status::Closed;
        p.closing = Some(figures.clone());
        assert_eq!(store.get(&owner, &p.id).await.unwrap().as_ref(), Some(&*p));
        for from in Status::ALL {
            assert!(
                matches!(
                    store.close(&owner, &p.id, *from, figures).await,
                    Err(StoreError::Conflict)
                ),
                "closing twice is refused"
            );
        }
    }
    assert_every_list(store, &owner, &positions).await;
    assert_eq!(
        store.realized(&owner).await.unwrap(),
        Realized {
            pnl_usd: BigDecimal::from_str("1.500000000001").unwrap(),
            cost_basis_usd: BigDecimal::from(100),
        }
    );
    assert!(matches!(
        store
            .close(&owner, "01ARZ3NDEKTSV4RRFFQ69G5FAV", Status::Active, &gain)
            .await,
        Err(StoreError::Conflict)
    ));
}

/// Creates and closes at once (at least 100 operations, 20 of them racing closes of one
/// position): one close wins per position, counters equal entries, the realized totals count
/// each close once.
pub async fn concurrent_closes_and_inserts_stay_exact(store: Arc<dyn PositionStore>) {
    let owner = unique_owner("race");
    let mut positions: Vec<Position> = (0..40)
        .map(|i| {
            position(
                &owner,
                Status::Active,
                Chain::ALL[i % 5],
                1_790_000_000_000 + i as i64,
            )
        })
        .collect();
    insert_all(store.as_ref(), &positions).await;
    let fresh = mixed(&owner, 60)
        .into_iter()
        .map(|mut p| {
            p.created_at += chrono::Duration::days(1);
            p.id = ulid::Ulid::from_datetime(p.created_at.into()).to_string();
            p
        })
        .collect::<Vec<_>>();
    let figures = closing("-2.25", "100");
    let mut tasks = Vec::new();
    for p in &fresh {
        let (store, p) = (store.clone(), p.clone());
        tasks.push(tokio::spawn(
            async move { store.insert(&p).await.map(|_| true) },
        ));
    }
    // Twenty closes of the first position, one of each of the next nineteen.
    let targets = std::iter::repeat_n(0, 20).chain(1..20);
    for i in targets {
        let (store, owner, id, figures) = (
            store.clone(),
            owner.clone(),
            positions[i].id.clone(),
            figures.clone(),
        );
        tasks.push(tokio::spawn(async move {
            match store.close(&owner, &id, Status::Active, &figures).await {
                Ok(()) => Ok(true),
                Err(StoreError::Conflict) => Ok(false),
                Err(e) => Err(e),
            }
        }));
    }
    assert!(tasks.len() >= 99);
    let mut closed = 0;
    for (i, task) in tasks.into_iter().enumerate() {
        let won = task.await.unwrap().unwrap();
        if i >= fresh.len() && won {
            closed += 1;
        }
    }
    assert_eq!(closed, 20, "one close wins per position");
    for p in positions.iter_mut().take(20) {
        p.status = Status::Closed;
    }
    positions.extend(fresh);
    assert_every_list(store.as_ref(), &owner, &positions).await;
    assert_eq!(
        store.realized(&owner).await.unwrap(),
        Realized {
            pnl_usd: BigDecimal::from_str("-45").unwrap(),
            cost_basis_usd: BigDecimal::from(2000),
        }
    );
}

/// One `#[tokio::test]` per clause of the contract, on the store `$make` builds, in a module
/// named `$store`; `$burst` concurrent inserts for the counting clause.
#[macro_export]
macro_rules! store_contract {
    ($store:ident, $make:expr, $burst:expr) => {
        mod $store {
            $crate::store_contract!(
                @clauses $make;
                insert_then_get,
                duplicate_insert_changes_nothing,
                every_list_variant_pages_newest_first_with_exact_totals,
                open_positions_exclude_closed,
                closing_moves_lists_and_counts,
                a_move_to_the_same_status_changes_nothing,
                close_freezes_figures_and_adds_realized,
                owners_are_isolated
            );

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn concurrent_closes_and_inserts_stay_exact() {
                $crate::contract::concurrent_closes_and_inserts_stay_exact(std::sync::Arc::new($make))
                    .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn concurrent_inserts_count_exactly() {
                $crate::contract::concurrent_inserts_count_exactly(std::sync::Arc::new($make), $burst)
                    .await;
            }
        }
    };
    (@clauses $make:expr; $($clause:ident),+) => {
        $(
            #[tokio::test]
            async fn $clause() {
                $crate::contract::$clause(&$make).await;
            }
        )+
    };
}
