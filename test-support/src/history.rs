//! The history store's contract, for any [`HistoryStore`]: events appended once each under
//! their position, in chain order, paged from any offset, the progress moving only from the
//! one an append continued from, and taken back from a replaced block on.

use shared::chart::{
    FarmPoint, FollowedStake, PoolPoint, RecordedBoundary, SeriesCursor, StakeEnd, Tier, DAY, HOUR,
};
use shared::history::{EventKind, HistoryProgress, Kept, PositionEvent, Priced};
use shared::market::{PoolState, TickState};
use shared::math::U256;
use shared::model::Chain;
use shared::store::{HistoryStore, SeriesStore, StoreError};

fn event(i: u64) -> PositionEvent {
    let kinds = [
        EventKind::Deposit,
        EventKind::Withdraw,
        EventKind::Collect,
        EventKind::Transfer,
    ];
    PositionEvent {
        kind: kinds[(i % 4) as usize],
        block: 100 + i / 3,
        block_hash: format!("0x{:064x}", 100 + i / 3),
        transaction: format!("0x{i:064x}"),
        log_index: i % 3,
        liquidity: if i == 0 { u128::MAX } else { u128::from(i) * 7 },
        amounts: [U256::MAX - U256::from(i), U256::from(i)],
        from: (i % 4 == 3).then(|| format!("0x{:040x}", i)),
        to: (i % 4 >= 2).then(|| format!("0x{:040x}", i + 1)),
        timestamp: (i % 2 == 0).then_some(1_700_000_000 + i),
        reward: (i % 5 == 4).then(|| U256::from(1_000 + i)),
        gas: (i % 3 == 1).then(|| U256::from(21_000u64 * 30_000_000_000 + i)),
        acted: [None, Some(true), Some(false)][(i % 3) as usize],
        paid: (i % 7 == 6).then(|| [U256::from(7 + i), U256::ZERO]),
        // Prices survive the store exactly, or say there was none.
        prices: [
            (i % 5 != 0).then(|| format!("{i}.000000000000000000123").parse().unwrap()),
            Some(format!("0.{i:030}7").parse().unwrap()),
        ],
        priced: match i % 3 {
            0 => None,
            1 => Some(Priced::AtBlock),
            _ => Some(Priced::Nearest),
        },
        kept: (i % 2 == 1).then(|| Kept {
            inside_last: [U256::MAX - U256::from(i), U256::from(i)],
            owed: [U256::from(u128::MAX), U256::from(i * 3)],
        }),
    }
}

pub async fn history_appends_once_and_pages_in_chain_order(store: &dyn HistoryStore) {
    let (owner, id) = ("alice", "01HISTORY");
    assert_eq!(store.history_progress(owner, id).await.unwrap(), None);
    assert!(store
        .history_page(owner, id, 0, 20)
        .await
        .unwrap()
        .is_empty());

    // More events than one transaction takes.
    let events: Vec<PositionEvent> = (0..153).map(event).collect();
    let first = HistoryProgress {
        through: 150,
        from_mint: true,
        events: 150,
    };
    store
        .append_history(owner, id, None, &events[..150], &first)
        .await
        .unwrap();
    // Another read that started from nothing as well stored nothing.
    let again = store
        .append_history(owner, id, None, &events[..1], &first)
        .await;
    assert!(matches!(again, Err(StoreError::Conflict)), "{again:?}");
    assert_eq!(
        store.history_progress(owner, id).await.unwrap(),
        Some(first)
    );
    assert_eq!(
        store.history_page(owner, id, 0, 20).await.unwrap(),
        events[..20]
    );
    assert_eq!(
        store.history_page(owner, id, 140, 20).await.unwrap(),
        events[140..150]
    );
    assert!(store
        .history_page(owner, id, 150, 5)
        .await
        .unwrap()
        .is_empty());

    // The next read continues from the stored progress; a stale one is refused.
    let second = HistoryProgress {
        through: 160,
        from_mint: true,
        events: 153,
    };
    store
        .append_history(owner, id, Some(&first), &events[150..], &second)
        .await
        .unwrap();
    let stale = store
        .append_history(owner, id, Some(&first), &events[150..], &second)
        .await;
    assert!(matches!(stale, Err(StoreError::Conflict)), "{stale:?}");
    assert_eq!(
        store.history_page(owner, id, 148, 10).await.unwrap(),
        events[148..]
    );
    assert_eq!(store.history_page(owner, id, 0, 200).await.unwrap(), events);
    // A reorg replaced blocks 140 on: their events are taken back (more than one transaction's
    // worth would be the same), the progress first; from a stale progress, nothing.
    let back = HistoryProgress {
        through: 139,
        from_mint: true,
        events: 120,
    };
    let stale = store.rewind_history(owner, id, &first, 140, &back).await;
    assert!(matches!(stale, Err(StoreError::Conflict)), "{stale:?}");
    store
        .rewind_history(owner, id, &second, 140, &back)
        .await
        .unwrap();
    assert_eq!(store.history_progress(owner, id).await.unwrap(), Some(back));
    assert_eq!(
        store.history_page(owner, id, 0, 200).await.unwrap(),
        events[..120]
    );
    // Read again at the new blocks: the history is whole again, nothing twice.
    store
        .append_history(owner, id, Some(&back), &events[120..], &second)
        .await
        .unwrap();
    assert_eq!(store.history_page(owner, id, 0, 200).await.unwrap(), events);
    // Another owner's position of the same id, another position of the owner: nothing.
    assert!(store
        .history_page("bob", id, 0, 20)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.history_progress(owner, "01OTHER").await.unwrap(),
        None
    );
}

/// A pool's point at `time`, its state's big integers past 2^53 (they must survive the store).
fn point(time: i64, block: u64) -> PoolPoint {
    PoolPoint {
        time,
        block_time: time - 7,
        state: PoolState {
            sqrt_price: U256::from(u128::MAX) * U256::from(3u8),
            tick: -887_000,
            liquidity: u128::MAX - 5,
            fee_growth_global0: U256::MAX - U256::from(block),
            fee_growth_global1: U256::from(block),
            height: block,
            block_hash: Some(format!("0x{block:064x}")),
            observed_at: chrono::DateTime::from_timestamp(time - 7, 0).unwrap(),
            ticks: vec![TickState {
                tick: -60,
                initialized: true,
                fee_growth_outside0: U256::MAX,
                fee_growth_outside1: U256::from(9u8),
            }],
            balances: None,
            slipstream: None,
        },
        prices: [Some("3012.000000000000000000001".into()), None],
        unread: (block % 2 == 0).then(|| "not an archive node".to_string()),
        farm: (block % 3 == 0).then(|| FarmPoint {
            reward_token: "0x0e09fabb73bd3ade0a17ecc321fd13a19e81ce82".into(),
            reward_price: Some("2.5".into()),
            pending: [("7".to_string(), U256::MAX.to_string())].into(),
        }),
    }
}

/// The series store's contract (decision 66): points kept per pool (EVM ids in any case) and
/// boundary, read by range and tier, oldest first; a boundary recorded again replaced; the
/// cursor as saved; chains and pools apart.
pub async fn series_points_are_kept_per_pool_and_boundary(store: &dyn SeriesStore) {
    let chain = Chain::Ethereum;
    let pool = "0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640";
    assert_eq!(
        store.series_cursor(chain).await.unwrap(),
        SeriesCursor::default()
    );
    let day = 20_000 * DAY;
    let times = [day - 300, day, day + 300, day + HOUR, day + 2 * HOUR];
    for (i, time) in times.iter().enumerate() {
        let marks = [RecordedBoundary {
            time: *time,
            block: 100 + i as u64,
            hash: format!("0x{:064x}", 100 + i),
        }];
        let cursor = store.series_cursor(chain).await.unwrap().after(&marks);
        let points = [(pool.to_string(), point(*time, 100 + i as u64))];
        store
            .save_points(chain, &points, Some(&cursor))
            .await
            .unwrap();
    }
    let cursor = store.series_cursor(chain).await.unwrap();
    assert_eq!(cursor.through, Some(day + 2 * HOUR));
    assert_eq!(cursor.recent.len(), times.len());
    let all = store
        .points(chain, &pool.to_lowercase(), (0, i64::MAX), &Tier::ALL)
        .await
        .unwrap();
    assert_eq!(all.iter().map(|p| p.time).collect::<Vec<_>>(), times);
    assert_eq!(all[1], point(day, 101), "kept exactly");
    // Hours and days only; a range.
    let hourly = store
        .points(chain, pool, (day, day + HOUR), Tier::holding(HOUR))
        .await
        .unwrap();
    assert_eq!(
        hourly.iter().map(|p| p.time).collect::<Vec<_>>(),
        [day, day + HOUR]
    );
    // A boundary recorded again (a reorg's) is replaced.
    let again = [(pool.to_string(), point(day + HOUR, 999))];
    store.save_points(chain, &again, None).await.unwrap();
    assert_eq!(
        store.series_cursor(chain).await.unwrap(),
        cursor,
        "no cursor: kept"
    );
    let replaced = store
        .points(chain, pool, (day + HOUR, day + HOUR), &Tier::ALL)
        .await
        .unwrap();
    assert_eq!(replaced, [point(day + HOUR, 999)]);
    // Another chain or pool has none.
    let other = store
        .points(Chain::Base, pool, (0, i64::MAX), &Tier::ALL)
        .await
        .unwrap();
    assert!(other.is_empty());
    let backwards = store
        .points(chain, pool, (day, day - 1), &Tier::ALL)
        .await
        .unwrap();
    assert!(backwards.is_empty(), "an empty range, no error");
    assert_eq!(
        store.series_cursor(Chain::Base).await.unwrap(),
        SeriesCursor::default()
    );
    a_point_of_any_size_is_kept(store).await;
}

/// A point of `ticks` followed ticks at `block`: as many as dust positions of ranges of their
/// own make.
fn wide_point(time: i64, block: u64, ticks: usize) -> PoolPoint {
    let mut wide = point(time, block);
    wide.state.ticks = (0..ticks)
        .map(|i| TickState {
            tick: -887_220 + 60 * i as i32,
            initialized: i % 7 != 3,
            fee_growth_outside0: U256::MAX - U256::from(i),
            fee_growth_outside1: U256::from(i) << 200,
        })
        .collect();
    wide
}

/// No number of followed ticks stops a series (issue 61): a point of 3,000 ticks (past what
/// one DynamoDB item holds, 400 KB) kept exactly, as the last of a range too; recorded again at
/// another block with fewer, it is the new one alone.
async fn a_point_of_any_size_is_kept(store: &dyn SeriesStore) {
    let (chain, pool) = (
        Chain::Arbitrum,
        "0xc6962004f452be9203591991d15f6b388e09e8d0",
    );
    let day = 20_001 * DAY;
    let wide = wide_point(day + 300, 7, 3_000);
    let json = serde_json::to_string(&wide).unwrap().len();
    println!("figures: a point of 3,000 ticks is {json} bytes of JSON");
    let points = [
        (pool.to_string(), point(day, 6)),
        (pool.to_string(), wide.clone()),
    ];
    store.save_points(chain, &points, None).await.unwrap();
    let read = store
        .points(chain, pool, (day, day + 300), &Tier::ALL)
        .await
        .unwrap();
    assert_eq!(read.len(), 2);
    assert_eq!(read[1], wide, "kept exactly");
    let before = store
        .points(chain, pool, (day, day), &Tier::ALL)
        .await
        .unwrap();
    assert_eq!(before, [point(day, 6)], "its neighbour untouched");
    // Recorded again (a reorg) at another block with fewer ticks.
    let again = wide_point(day + 300, 8, 1_500);
    store
        .save_points(chain, &[(pool.to_string(), again.clone())], None)
        .await
        .unwrap();
    let read = store
        .points(chain, pool, (day + 300, day + 300), &Tier::ALL)
        .await
        .unwrap();
    assert_eq!(read, [again]);
}

/// The series store's followed stakes (decision 66): followed per chain, an EVM pool in any
/// case, followed again replaced (its end), never twice.
pub async fn series_follows_stakes(store: &dyn SeriesStore) {
    let chain = Chain::Bsc;
    let stake = |pool: &str, token: &str, until: Option<StakeEnd>| FollowedStake {
        pool: pool.to_string(),
        farm: "0x556B9306565093C855AEA9AE92A594704c2Cd59e".into(),
        token: token.to_string(),
        until,
        // Kept as given (a gauge's `earned` is asked per staker).
        staker: Some("0x70997970c51812dc3a010c7d01b50e0d17dc79c8".into()),
    };
    let pool = "0x36696169C63e42cd08ce11f5deeBbCeBae652050";
    assert!(store.followed_stakes(chain).await.unwrap().is_empty());
    for token in ["12", "13", "12"] {
        store
            .follow_stake(chain, &stake(pool, token, None))
            .await
            .unwrap();
    }
    let lower = pool.to_lowercase();
    let mut followed = store.followed_stakes(chain).await.unwrap();
    followed.sort();
    assert_eq!(
        followed,
        [stake(&lower, "12", None), stake(&lower, "13", None)]
    );
    assert!(store
        .followed_stakes(Chain::Ethereum)
        .await
        .unwrap()
        .is_empty());
    // Unstaked: followed for the points before its block.
    let end = Some(StakeEnd {
        block: 51_000_000,
        time: 1_780_000_000,
    });
    store
        .follow_stake(chain, &stake(pool, "12", end))
        .await
        .unwrap();
    let mut followed = store.followed_stakes(chain).await.unwrap();
    followed.sort();
    assert_eq!(
        followed,
        [stake(&lower, "12", end), stake(&lower, "13", None)]
    );
    assert!(followed[0].staked_at(50_999_999) && !followed[0].staked_at(51_000_000));
}
