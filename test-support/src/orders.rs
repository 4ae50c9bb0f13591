//! The store contract of on-chain orders, run on both stores: an order waits on its pool's
//! pending index (a pending open, an active position's close), is replaced only over the order
//! it was read with, a confirmed mint takes the wallet's token key once, and a close takes it off
//! the index.

use crate::contract::closing;
use crate::fixtures::{position, unique_owner};
use shared::model::{
    Chain, ChainOrder, HeldToken, OrderKind, Position, Protocol, Status, WalletHolding,
};
use shared::store::{PositionStore, StoreError};

const WALLET: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

fn order(kind: OrderKind) -> ChainOrder {
    let at = |s| chrono::DateTime::from_timestamp(s, 0).unwrap();
    ChainOrder {
        kind,
        wallet: WALLET.into(),
        manager: "0xC36442b4a4522E871399CD717aBDD847Ab11FE88".into(),
        requested_at: at(1_795_000_000),
        expires_at: at(1_795_001_200),
        height: 21_000_000,
        slippage_bps: 50,
        transactions: Vec::new(),
        hash: None,
        moved: None,
        permit: None,
    }
}

fn holding(token: &str, height: u64) -> WalletHolding {
    let token_of = |symbol: &str| HeldToken {
        symbol: symbol.into(),
        address: format!("0x{symbol}"),
        decimals: 18,
    };
    WalletHolding {
        wallet: WALLET.into(),
        manager: "0xC36442b4a4522E871399CD717aBDD847Ab11FE88".into(),
        token: token.into(),
        height,
        read_at: chrono::DateTime::from_timestamp(1_795_000_100, 0).unwrap(),
        tokens: [token_of("USDC"), token_of("WETH")],
        amounts: ["1".into(), "2".into()],
        fees: ["0".into(), "0".into()],
        sqrt_price: "79228162514264337593543950336".into(),
        tick: 0,
        first_value_usd: Some("10".into()),
        close_reason: None,
        read_error: None,
        history: None,
        moved_from: None,
        moved_to: None,
        fee_state: None,
        tracked: false,
        watched: false,
        staked: None,
    }
}

/// An open from the wallet, waiting for its mint.
fn open(owner: &str, millis: i64) -> Position {
    Position {
        liquidity: 1_000,
        order: Some(Box::new(order(OrderKind::Open))),
        ..position(owner, Status::Pending, Chain::Ethereum, millis)
    }
}

async fn waiting(store: &dyn PositionStore, sample: &Position) -> Vec<String> {
    let (chain, protocol) = (Chain::Ethereum, Protocol::UniswapV3);
    store
        .pending_on(chain, protocol, &sample.pool)
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.owner == sample.owner)
        .map(|p| p.id)
        .collect()
}

pub async fn orders_wait_on_the_index_and_settle_once(store: &dyn PositionStore) {
    let owner = unique_owner("orders");
    let first = open(&owner, 1_795_000_000_000);
    let second = open(&owner, 1_795_000_001_000);
    store.insert(&first).await.unwrap();
    store.insert(&second).await.unwrap();
    assert_eq!(
        store.get(&owner, &first.id).await.unwrap().as_ref(),
        Some(&first)
    );
    assert_eq!(
        waiting(store, &first).await,
        [first.id.clone(), second.id.clone()]
    );

    // A hash replaces the order it was read with, only that one.
    let reported = Position {
        order: Some(Box::new(ChainOrder {
            hash: Some(format!("0x{}", "ab".repeat(32))),
            ..order(OrderKind::Open)
        })),
        ..first.clone()
    };
    let stale = ChainOrder {
        hash: Some(format!("0x{}", "cd".repeat(32))),
        ..order(OrderKind::Open)
    };
    assert!(matches!(
        store.set_order(&reported, Some(&stale)).await,
        Err(StoreError::Conflict)
    ));
    store
        .set_order(&reported, first.order.as_deref())
        .await
        .unwrap();
    assert_eq!(
        store.get(&owner, &first.id).await.unwrap().as_ref(),
        Some(&reported)
    );
    assert!(matches!(
        store.set_order(&reported, first.order.as_deref()).await,
        Err(StoreError::Conflict)
    ));

    // The confirmed mint: active, the order gone, the token's key taken; once.
    let minted = Position {
        status: Status::Active,
        liquidity: 999,
        holding: Some(Box::new(holding("7", 100))),
        order: None,
        ..reported.clone()
    };
    store.activate(&minted).await.unwrap();
    assert_eq!(
        store.get(&owner, &first.id).await.unwrap().as_ref(),
        Some(&minted)
    );
    assert!(matches!(
        store.activate(&minted).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        waiting(store, &first).await,
        std::slice::from_ref(&second.id)
    );
    // Another open can never take the same token.
    let twin = Position {
        status: Status::Active,
        holding: Some(Box::new(holding("7", 100))),
        order: None,
        ..second.clone()
    };
    assert!(matches!(
        store.activate(&twin).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store.get(&owner, &second.id).await.unwrap().unwrap().status,
        Status::Pending
    );
    let held = store
        .holdings(&owner, Chain::Ethereum, WALLET)
        .await
        .unwrap();
    assert_eq!(held, std::slice::from_ref(&minted));

    // A close to sign: the active position waits on the index again; a wallet read that did
    // not see the order cannot overwrite it.
    let closing_order = Position {
        order: Some(Box::new(order(OrderKind::Close))),
        ..minted.clone()
    };
    store.set_order(&closing_order, None).await.unwrap();
    assert_eq!(
        waiting(store, &first).await,
        [first.id.clone(), second.id.clone()]
    );
    let later_read = Position {
        holding: Some(Box::new(holding("7", 101))),
        ..minted.clone()
    };
    assert!(matches!(
        store.update_holding(&later_read, &minted).await,
        Err(StoreError::Conflict)
    ));
    let later_read = Position {
        holding: Some(Box::new(holding("7", 101))),
        ..closing_order.clone()
    };
    store
        .update_holding(&later_read, &closing_order)
        .await
        .unwrap();

    // An order written over a read older than the stored one is refused: the read stands.
    let over_older_read = Position {
        order: Some(Box::new(ChainOrder {
            hash: Some(format!("0x{}", "ef".repeat(32))),
            ..order(OrderKind::Close)
        })),
        ..closing_order.clone()
    };
    assert!(matches!(
        store
            .set_order(&over_older_read, closing_order.order.as_deref())
            .await,
        Err(StoreError::Conflict)
    ));

    // Confirmed: closed, off the index, its PnL realized once.
    let paid = closing("12.5", "10");
    store
        .close(&owner, &first.id, Status::Active, &paid)
        .await
        .unwrap();
    assert!(matches!(
        store.close(&owner, &first.id, Status::Active, &paid).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        waiting(store, &first).await,
        std::slice::from_ref(&second.id)
    );
    let realized = store.realized(&owner).await.unwrap();
    assert_eq!(realized.pnl_usd, paid.pnl_usd);

    // A close cleared (it reverted): the active position leaves the index, stays active.
    let third = Position {
        id: ulid::Ulid::from_datetime(
            chrono::DateTime::from_timestamp_millis(1_795_000_002_000)
                .unwrap()
                .into(),
        )
        .to_string(),
        status: Status::Active,
        holding: Some(Box::new(holding("8", 100))),
        order: None,
        ..second.clone()
    };
    store.insert(&third).await.unwrap();
    let third_closing = Position {
        order: Some(Box::new(order(OrderKind::Close))),
        ..third.clone()
    };
    store.set_order(&third_closing, None).await.unwrap();
    assert!(waiting(store, &first).await.contains(&third.id));
    store
        .set_order(&third, third_closing.order.as_deref())
        .await
        .unwrap();
    assert!(!waiting(store, &first).await.contains(&third.id));
    assert_eq!(
        store.get(&owner, &third.id).await.unwrap().as_ref(),
        Some(&third)
    );
}

/// A move of a range stores its new position and the old one's order at once, and a move
/// refused (another order stored first) stores neither: no trace in the owner's lists.
pub async fn a_refused_move_stores_nothing(store: &dyn PositionStore) {
    let owner = unique_owner("moves");
    let held = Position {
        holding: Some(Box::new(holding("7", 100))),
        ..position(&owner, Status::Active, Chain::Ethereum, 1_795_000_000_000)
    };
    store.insert(&held).await.unwrap();
    let moving = |millis: i64| {
        let new = open(&owner, millis);
        let moved = Position {
            order: Some(Box::new(ChainOrder {
                moved: Some(new.id.clone()),
                ..order(OrderKind::Rebalance)
            })),
            ..held.clone()
        };
        (moved, new)
    };
    let (first, first_new) = moving(1_795_000_002_000);
    store
        .set_move_order(&first, None, &first_new)
        .await
        .unwrap();
    assert_eq!(
        store.get(&owner, &first_new.id).await.unwrap().as_ref(),
        Some(&first_new)
    );
    assert_eq!(
        store.get(&owner, &held.id).await.unwrap().as_ref(),
        Some(&first)
    );
    assert_eq!(
        waiting(store, &held).await.len(),
        2,
        "both wait on the pool"
    );

    // A second move built over the position as it was before the first: refused whole.
    let (second, second_new) = moving(1_795_000_003_000);
    assert!(matches!(
        store.set_move_order(&second, None, &second_new).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(store.get(&owner, &second_new.id).await.unwrap(), None);
    assert_eq!(
        store.get(&owner, &held.id).await.unwrap().as_ref(),
        Some(&first)
    );
    let all = store
        .list(
            &owner,
            Default::default(),
            shared::model::PageRequest {
                limit: 100,
                offset: 0,
            },
        )
        .await
        .unwrap();
    assert_eq!(all.total, 2, "the position and the first move's only");
    let pending = shared::model::Filter {
        status: Some(Status::Pending),
        ..Default::default()
    };
    let page = shared::model::PageRequest {
        limit: 100,
        offset: 0,
    };
    assert_eq!(store.list(&owner, pending, page).await.unwrap().total, 1);
    // A new position whose id is taken refuses the move too, and the order stays as it was.
    let (third, _) = moving(1_795_000_004_000);
    assert!(matches!(
        store
            .set_move_order(&third, first.order.as_deref(), &first_new)
            .await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store.get(&owner, &held.id).await.unwrap().as_ref(),
        Some(&first)
    );
}

/// Every list page, the first and deeper ones, and the open positions answer each position
/// exactly as `get` does after every kind of write: inserts, an order stored, a wallet read
/// replaced, activations, a close, a withdrawal read. A store that keeps copies of positions
/// for its pages keeps them equal to the positions.
pub async fn pages_answer_what_get_answers(store: &dyn PositionStore) {
    use crate::contract::{activated, every_filter, insert_all, mixed};
    use shared::model::PageRequest;

    let owner = unique_owner("pages");
    let positions = mixed(&owner, 12);
    insert_all(store, &positions).await;

    // A wallet position: an order on it, then a newer read, then the read that withdrew it.
    let held = Position {
        holding: Some(Box::new(holding("9", 100))),
        ..position(&owner, Status::Active, Chain::Ethereum, 1_795_000_000_000)
    };
    store.insert(&held).await.unwrap();
    let ordered = Position {
        order: Some(Box::new(order(OrderKind::Close))),
        ..held.clone()
    };
    store.set_order(&ordered, None).await.unwrap();
    let reread = Position {
        holding: Some(Box::new(WalletHolding {
            fees: ["5".into(), "6".into()],
            ..holding("9", 101)
        })),
        ..ordered.clone()
    };
    store.update_holding(&reread, &ordered).await.unwrap();
    let other = Position {
        holding: Some(Box::new(holding("11", 100))),
        ..position(&owner, Status::Active, Chain::Base, 1_795_000_001_000)
    };
    store.insert(&other).await.unwrap();
    let withdrawn = Position {
        status: Status::Closed,
        holding: Some(Box::new(WalletHolding {
            close_reason: Some("withdrawn".into()),
            ..holding("11", 102)
        })),
        ..other.clone()
    };
    store.update_holding(&withdrawn, &other).await.unwrap();

    // An open from a wallet, minted; a simulated offer sized; a simulated close.
    let opened = open(&owner, 1_795_000_002_000);
    store.insert(&opened).await.unwrap();
    let minted = Position {
        status: Status::Active,
        liquidity: 5,
        holding: Some(Box::new(holding("10", 100))),
        order: None,
        ..opened.clone()
    };
    store.activate(&minted).await.unwrap();
    let offer = positions
        .iter()
        .find(|p| p.status == Status::Pending)
        .unwrap();
    store.activate(&activated(offer)).await.unwrap();
    let active = positions
        .iter()
        .find(|p| p.status == Status::Active)
        .unwrap();
    store
        .close(&owner, &active.id, Status::Active, &closing("-5", "100"))
        .await
        .unwrap();

    let mut seen = 0;
    for filter in every_filter() {
        for offset in [0u64, 1, 4] {
            let page = store
                .list(&owner, filter, PageRequest { offset, limit: 3 })
                .await
                .unwrap();
            for p in &page.items {
                let stored = store.get(&owner, &p.id).await.unwrap();
                assert_eq!(Some(p), stored.as_ref(), "{filter:?} at {offset}");
                seen += 1;
            }
        }
    }
    assert!(seen > 100, "the pages held {seen} positions");
    let open_now = store.open_positions(&owner).await.unwrap();
    assert_eq!(open_now.len(), 9);
    for p in &open_now {
        assert_eq!(Some(p), store.get(&owner, &p.id).await.unwrap().as_ref());
    }
}
