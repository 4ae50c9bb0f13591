//! The store contract, written once and run against every store: the in-memory one and
//! `DynamoDbStore` on a real DynamoDB-API server. [`store_contract!`](crate::store_contract)
//! expands to one test per clause.

use crate::fixtures::{position, unique_owner};
use bigdecimal::BigDecimal;
use shared::math::U256;
use shared::model::{
    Chain, Closing, Filter, KeyAnswer, KeyClaim, PageRequest, Position, Realized, Source, Status,
    StoredResponse, TokenPair,
};
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
        let total = want.len() as u64;
        let first_page = want.into_iter().take(100).collect();
        assert_eq!(
            ids(store, owner, filter, 0, 100).await,
            (first_page, total),
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

/// Every combination of the list's filters (status, chain, source), none to all.
pub fn every_filter() -> Vec<Filter> {
    let mut filters = Vec::new();
    for source in std::iter::once(None).chain(Source::ALL.iter().copied().map(Some)) {
        for status in std::iter::once(None).chain(Status::ALL.iter().copied().map(Some)) {
            for chain in std::iter::once(None).chain(Chain::ALL.iter().copied().map(Some)) {
                filters.push(Filter {
                    status,
                    chain,
                    source,
                });
            }
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
        reason: None,
    }
}

/// The owner's positions in the pending indexes of the fixture's pool on every chain, oldest
/// first per chain.
async fn pending_ids(store: &dyn PositionStore, owner: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for &chain in Chain::ALL {
        let p = position(owner, Status::Pending, chain, 0);
        for found in store.pending_on(chain, p.protocol, &p.pool).await.unwrap() {
            assert_eq!(
                found.status,
                Status::Pending,
                "the index holds pending ones only"
            );
            if found.owner == owner {
                ids.push(found.id);
            }
        }
    }
    ids
}

/// `pending` sized at a state: what the sync stores when it activates it.
pub fn activated(pending: &Position) -> Position {
    Position {
        status: Status::Active,
        liquidity: 123_456_789,
        cost_basis_usd: BigDecimal::from_str("99.5").unwrap(),
        deposit: Some(TokenPair {
            a: U256::from(5u8),
            b: U256::from(1u8) << 100,
        }),
        fee_checkpoint: Some(shared::model::FeeCheckpoint {
            height: 19_000_000,
            growth: [U256::MAX, U256::from(3u8)],
        }),
        ..pending.clone()
    }
}

pub async fn pending_index_follows_every_transition(store: &dyn PositionStore) {
    let owner = unique_owner("pending");
    let mut positions = mixed(&owner, 9);
    insert_all(store, &positions).await;
    let pending: Vec<usize> = (0..positions.len())
        .filter(|&i| positions[i].status == Status::Pending)
        .collect();
    // In index order: by chain, then oldest first.
    let ids = |is: &[usize], ps: &[Position]| -> Vec<String> {
        let mut ids: Vec<&Position> = is.iter().map(|&i| &ps[i]).collect();
        ids.sort_by_key(|p| (p.chain, p.id.clone()));
        ids.into_iter().map(|p| p.id.clone()).collect()
    };
    assert_eq!(pending_ids(store, &owner).await, ids(&pending, &positions));
    // Only pending positions activate; what is stored is the sized position.
    let active = positions
        .iter()
        .find(|p| p.status == Status::Active)
        .unwrap();
    assert!(matches!(
        store.activate(&activated(active)).await,
        Err(StoreError::Conflict)
    ));
    let first = activated(&positions[pending[0]]);
    store.activate(&first).await.unwrap();
    assert_eq!(
        store.get(&owner, &first.id).await.unwrap().as_ref(),
        Some(&first)
    );
    positions[pending[0]] = first.clone();
    assert!(matches!(
        store.activate(&first).await,
        Err(StoreError::Conflict)
    ));
    // A cancelled offer leaves the index; it cannot be activated after.
    let second = &mut positions[pending[1]];
    let cancel = closing("0", "0");
    store
        .close(&owner, &second.id, Status::Pending, &cancel)
        .await
        .unwrap();
    second.status = Status::Closed;
    second.closing = Some(cancel);
    assert!(matches!(
        store.activate(&activated(second)).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        pending_ids(store, &owner).await,
        ids(&pending[2..], &positions)
    );
    assert_every_list(store, &owner, &positions).await;
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

fn at(seconds: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(1_900_000_000 + seconds, 0).unwrap()
}

async fn claimed(
    store: &dyn PositionStore,
    owner: &str,
    key: &str,
    print: &str,
    now: i64,
) -> String {
    match store.claim_key(owner, key, print, at(now)).await.unwrap() {
        KeyClaim::Claimed { lease } => lease,
        other => panic!("{key} not claimed: {other:?}"),
    }
}

fn answer(owner: &str, key: &str, lease: &str, status: u16, now: i64) -> KeyAnswer {
    KeyAnswer {
        owner: owner.to_string(),
        key: key.to_string(),
        lease: lease.to_string(),
        response: StoredResponse {
            status,
            body: format!(r#"{{"status":{status},"exact":"0.000000000000000001"}}"#),
            location: (status == 201).then(|| "/positions/x".to_string()),
        },
        expires_at: at(now + 24 * 3600),
    }
}

pub async fn idempotency_keys_claim_answer_and_expire(store: &dyn PositionStore) {
    let (alice, bob) = (unique_owner("keys"), unique_owner("keys"));
    let lease = claimed(store, &alice, "k 1", "first", 0).await;
    // In flight: the same request waits out the lease, another request is refused.
    assert_eq!(
        store
            .claim_key(&alice, "k 1", "first", at(10))
            .await
            .unwrap(),
        KeyClaim::InFlight {
            retry_after_seconds: 20
        }
    );
    assert_eq!(
        store
            .claim_key(&alice, "k 1", "second", at(10))
            .await
            .unwrap(),
        KeyClaim::OtherRequest
    );
    // Keys are per user.
    claimed(store, &bob, "k 1", "first", 10).await;
    // A write answering under a lease that is not the key's writes nothing at all.
    let p = position(&alice, Status::Active, Chain::Base, 1_790_000_000_000);
    let wrong = answer(&alice, "k 1", "not-the-lease", 201, 10);
    assert!(matches!(
        store.insert_answering(&p, Some(&wrong)).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(store.get(&alice, &p.id).await.unwrap(), None);
    assert_eq!(ids(store, &alice, Filter::default(), 0, 10).await.1, 0);
    // Under its lease: the position and the answer together; the same request then replays.
    let right = answer(&alice, "k 1", &lease, 201, 10);
    store.insert_answering(&p, Some(&right)).await.unwrap();
    assert_eq!(store.get(&alice, &p.id).await.unwrap().as_ref(), Some(&p));
    for now in [11, 24 * 3600 + 9] {
        assert_eq!(
            store
                .claim_key(&alice, "k 1", "first", at(now))
                .await
                .unwrap(),
            KeyClaim::Answered(right.response.clone())
        );
        assert_eq!(
            store
                .claim_key(&alice, "k 1", "second", at(now))
                .await
                .unwrap(),
            KeyClaim::OtherRequest
        );
    }
    // Retention over: the key is new again.
    claimed(store, &alice, "k 1", "second", 24 * 3600 + 10).await;

    // A crashed attempt: its lease runs out and a retry takes the key; the old lease can no
    // longer answer.
    let crashed = claimed(store, &alice, "k 2", "first", 0).await;
    let retry = claimed(store, &alice, "k 2", "first", 30).await;
    assert!(matches!(
        store
            .answer_key(&answer(&alice, "k 2", &crashed, 400, 30))
            .await,
        Err(StoreError::Conflict)
    ));
    let bad = answer(&alice, "k 2", &retry, 400, 31);
    store.answer_key(&bad).await.unwrap();
    assert_eq!(
        store
            .claim_key(&alice, "k 2", "first", at(40))
            .await
            .unwrap(),
        KeyClaim::Answered(bad.response)
    );
    // Released (a server error): claimed afresh at once.
    let failed = claimed(store, &alice, "k 3", "first", 0).await;
    store.release_key(&alice, "k 3", &failed).await.unwrap();
    claimed(store, &alice, "k 3", "first", 1).await;
    // A close answers its key in its transaction too.
    let lease = claimed(store, &alice, "k 4", "close", 50).await;
    let closed = answer(&alice, "k 4", &lease, 200, 50);
    store
        .close_answering(
            &alice,
            &p.id,
            Status::Active,
            &closing("1", "100"),
            Some(&closed),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .claim_key(&alice, "k 4", "close", at(51))
            .await
            .unwrap(),
        KeyClaim::Answered(closed.response)
    );
}

/// Creates, closes and activations at once (at least 100 operations: 20 racing closes of one
/// position, activations racing cancels of the same offers): one transition wins per position,
/// counters equal entries, the realized totals count each close once, the pending index holds
/// exactly the positions still pending.
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
    let offers: Vec<Position> = (0..20)
        .map(|i| {
            position(
                &owner,
                Status::Pending,
                Chain::Ethereum,
                1_790_000_100_000 + i as i64,
            )
        })
        .collect();
    positions.extend(offers.iter().cloned());
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
    let closes = tasks.len();
    // Every offer activated; the last ten cancelled at the same time.
    let mut settles = Vec::new();
    for (i, offer) in offers.iter().enumerate() {
        let (shared, sized) = (store.clone(), activated(offer));
        settles.push(tokio::spawn(async move {
            match shared.activate(&sized).await {
                Ok(()) => Ok(Some(Status::Active)),
                Err(StoreError::Conflict) => Ok(None),
                Err(e) => Err(e),
            }
        }));
        if i >= 10 {
            let (shared, owner, id) = (store.clone(), owner.clone(), offer.id.clone());
            let cancel = closing("0", "0");
            settles.push(tokio::spawn(async move {
                match shared.close(&owner, &id, Status::Pending, &cancel).await {
                    Ok(()) => Ok(Some(Status::Closed)),
                    Err(StoreError::Conflict) => Ok(None),
                    Err(e) => Err(e),
                }
            }));
        }
    }
    assert!(tasks.len() + settles.len() >= 100);
    let mut closed = 0;
    for (i, task) in tasks.into_iter().enumerate() {
        let won = task.await.unwrap().unwrap();
        if i >= fresh.len() && i < closes && won {
            closed += 1;
        }
    }
    assert_eq!(closed, 20, "one close wins per position");
    for p in positions.iter_mut().take(20) {
        p.status = Status::Closed;
    }
    let mut outcomes = Vec::new();
    for task in settles {
        outcomes.extend(task.await.unwrap().unwrap());
    }
    assert_eq!(outcomes.len(), 20, "one transition wins per offer");
    for p in positions.iter_mut().filter(|p| p.status == Status::Pending) {
        p.status = store.get(&owner, &p.id).await.unwrap().unwrap().status;
        assert_ne!(p.status, Status::Pending);
    }
    assert_eq!(
        positions
            .iter()
            .filter(|p| p.status == Status::Active)
            .count(),
        20 + outcomes.iter().filter(|s| **s == Status::Active).count()
    );
    positions.extend(fresh);
    let mut still: Vec<&Position> = positions
        .iter()
        .filter(|p| p.status == Status::Pending)
        .collect();
    still.sort_by_key(|p| (p.chain, p.id.clone()));
    let still: Vec<String> = still.into_iter().map(|p| p.id.clone()).collect();
    assert_eq!(pending_ids(store.as_ref(), &owner).await, still);
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
                pending_index_follows_every_transition,
                idempotency_keys_claim_answer_and_expire,
                owners_are_isolated
            );

            #[tokio::test]
            async fn orders_wait_on_the_index_and_settle_once() {
                $crate::orders::orders_wait_on_the_index_and_settle_once(&$make).await;
            }

            #[tokio::test]
            async fn a_refused_move_stores_nothing() {
                $crate::orders::a_refused_move_stores_nothing(&$make).await;
            }

            #[tokio::test]
            async fn pages_answer_what_get_answers() {
                $crate::orders::pages_answer_what_get_answers(&$make).await;
            }

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
