//! A wallet position's story as the position manager's events tell it (Uniswap v3 and
//! PancakeSwap v3 share them): its mint and transfers, its deposits and withdrawals, what each
//! `collect` paid, and the ledger that follows, which tells fees from principal. The manager's
//! `decreaseLiquidity` adds the withdrawn principal to the position's `tokensOwed` and only
//! `collect` pays it out, so what `collect` pays is fees *and* uncollected principal; the
//! ledger splits each payment **principal first**: a `Collect` pays, per token, the principal
//! withdrawn and not yet collected before it (up to its amount), and only the rest is fees.

mod events;
mod summary;
mod views;

pub use events::{mark_staking, EventKind, HistoryProgress, Kept, Ledger, PositionEvent, Priced};
pub use summary::{
    count_end, count_start, counted_for, decimals, summarize, units, usd_of, Departure, FeeState,
    Handed, Handovers, HistorySummary,
};
pub use views::{event_views, EventTokenView, EventView, HistoryView, TokenHistoryView};

/// An event of `kind` at `block` moving `amounts`, nothing else known: the tests' start.
#[cfg(test)]
pub(crate) fn sample_event(kind: EventKind, block: u64, amounts: [u64; 2]) -> PositionEvent {
    PositionEvent {
        kind,
        block,
        block_hash: format!("0x{block:064x}"),
        transaction: format!("0x{block:064x}"),
        log_index: 0,
        liquidity: 0,
        amounts: amounts.map(crate::domain::math::U256::from),
        from: None,
        to: None,
        timestamp: None,
        reward: None,
        gas: None,
        acted: None,
        paid: None,
        prices: [None, None],
        priced: None,
        kept: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::math::U256;

    fn event(kind: EventKind, block: u64, amounts: [u64; 2]) -> PositionEvent {
        sample_event(kind, block, amounts)
    }

    fn units(values: [u64; 2]) -> [U256; 2] {
        values.map(U256::from)
    }

    #[test]
    fn a_withdrawal_left_uncollected_is_principal_not_fees() {
        use EventKind::*;
        let events = [
            event(Mint, 1, [0, 0]),
            event(Deposit, 1, [1_000, 2_000]),
            // Half withdrawn, nothing collected: the manager now owes 500/1,000 of principal
            // beside 7/9 of fees.
            event(Withdraw, 5, [500, 1_000]),
        ];
        let ledger = Ledger::of(&events);
        assert_eq!(ledger.deposited, units([1_000, 2_000]));
        assert_eq!(ledger.withdrawn, units([500, 1_000]));
        assert_eq!(ledger.uncollected_principal, units([500, 1_000]));
        assert_eq!(ledger.fees_collected, units([0, 0]));
        let owed = units([507, 1_009]);
        assert_eq!(ledger.fees_unclaimed(owed), units([7, 9]));
        assert_eq!(ledger.fees_earned(owed), units([7, 9]));
    }

    #[test]
    fn a_collect_pays_principal_first_then_fees() {
        use EventKind::*;
        let events = [
            event(Deposit, 1, [1_000, 2_000]),
            event(Withdraw, 5, [500, 1_000]),
            // A partial collect: 300 of token0's 500 principal; 1,004 of token1 is its 1,000 of
            // principal and 4 of fees.
            event(Collect, 6, [300, 1_004]),
            event(Collect, 7, [210, 3]),
        ];
        let ledger = Ledger::of(&events);
        assert_eq!(ledger.principal_collected, units([500, 1_000]));
        assert_eq!(ledger.fees_collected, units([10, 7]));
        assert_eq!(ledger.uncollected_principal, units([0, 0]));
        // Fees collected alone (no withdrawal before) are all fees.
        let fees_only = Ledger::of(&[event(Deposit, 1, [5, 5]), event(Collect, 2, [3, 4])]);
        assert_eq!(fees_only.fees_collected, units([3, 4]));
        assert_eq!(fees_only.fees_earned(units([1, 0])), units([4, 4]));
    }

    #[test]
    fn what_is_owed_below_the_uncollected_principal_is_no_fee() {
        let ledger = Ledger::of(&[event(EventKind::Withdraw, 1, [10, 10])]);
        assert_eq!(ledger.fees_unclaimed(units([9, 10])), units([0, 0]));
    }

    fn at(mut e: PositionEvent, time: u64, prices: [&str; 2]) -> PositionEvent {
        e.timestamp = Some(time);
        e.prices = prices.map(|p| Some(p.parse().unwrap()));
        e.priced = Some(Priced::AtBlock);
        e
    }

    const WALLET: &str = "0x00000000000000000000000000000000000000aa";

    fn to(mut e: PositionEvent, from: &str, to: &str) -> PositionEvent {
        e.from = Some(from.into());
        e.to = Some(to.into());
        e
    }

    #[test]
    fn the_holders_sums_value_each_event_at_its_own_prices() {
        use EventKind::*;
        let zero = "0x0000000000000000000000000000000000000000";
        // Token0 6 decimals (a stablecoin at 1), token1 18 decimals priced 2,000 then 3,000.
        let events = [
            at(
                to(event(Mint, 1, [0, 0]), zero, WALLET),
                1_000,
                ["1", "2000"],
            ),
            at(
                event(Deposit, 1, [2_000_000_000, 1_000_000_000_000_000_000]),
                1_000,
                ["1", "2000"],
            ),
            at(
                event(Withdraw, 2, [1_000_000_000, 500_000_000_000_000_000]),
                4_600,
                ["1", "3000"],
            ),
            // Pays the 1,000 USDC of principal first, then 5 USDC of fees; token1 all principal.
            at(
                event(Collect, 3, [1_005_000_000, 100_000_000_000_000_000]),
                8_200,
                ["1", "3000"],
            ),
        ];
        let summary = summarize(&events, WALLET, [6, 18], (3, true), Handovers::default());
        assert!(summary.complete, "{summary:?}");
        assert_eq!(summary.counted_from, Some(1));
        assert_eq!(summary.fees_collected, ["5000000".to_string(), "0".into()]);
        assert_eq!(
            summary.uncollected_principal,
            ["0".to_string(), "400000000000000000".into()]
        );
        let usd = |v: &[Option<String>; 2]| v.clone().map(|v| v.unwrap().parse::<f64>().unwrap());
        assert_eq!(usd(&summary.deposited_usd), [2_000.0, 2_000.0]);
        assert_eq!(usd(&summary.withdrawn_usd), [1_000.0, 1_500.0]);
        assert_eq!(usd(&summary.fees_collected_usd), [5.0, 0.0]);
        // 4,000 USD held 3,600 s, then the 2,500 USD left (at the withdrawal's prices) 3,600 s.
        let weight: f64 = summary.capital_usd_seconds.unwrap().parse().unwrap();
        assert_eq!(weight, 4_000.0 * 3_600.0 + 2_500.0 * 3_600.0);
        // Read without its mint: not complete, with the reason.
        let partial = summarize(&events, WALLET, [6, 18], (3, false), Handovers::default());
        assert!(!partial.complete && partial.reason.is_some());
    }

    #[test]
    fn a_move_between_the_owners_wallets_continues_the_count() {
        use EventKind::*;
        let (zero, other, stranger) = (
            "0x0000000000000000000000000000000000000000",
            "0x00000000000000000000000000000000000000cc",
            "0x00000000000000000000000000000000000000bb",
        );
        // Minted to the owner's other wallet, moved to this one, then to a stranger and back.
        let events = [
            at(to(event(Mint, 1, [0, 0]), zero, other), 10, ["1", "1"]),
            at(event(Deposit, 1, [100, 100]), 10, ["1", "1"]),
            at(
                to(event(Transfer, 2, [0, 0]), other, WALLET),
                20,
                ["2", "1"],
            ),
        ];
        let own = [other.to_string(), WALLET.to_string()];
        let counted = counted_for(&events, &own, WALLET);
        let summary = summarize(&counted, WALLET, [0, 0], (2, true), Handovers::default());
        assert!(summary.complete, "no arrival to read: {summary:?}");
        assert_eq!(summary.counted_from, Some(1), "from its mint");
        assert_eq!(summary.deposited, ["100".to_string(), "100".into()]);
        assert_eq!(
            summary.deposited_usd,
            [Some("100".into()), Some("100".into())]
        );
        // Read without the other wallet: a new count at the move.
        let alone = summarize(&events, WALLET, [0, 0], (2, true), Handovers::default());
        assert_eq!(alone.counted_from, Some(2));
        // Back from a stranger: an arrival, whoever held it before.
        let mut round = events.to_vec();
        round.push(at(
            to(event(Transfer, 3, [0, 0]), WALLET, stranger),
            30,
            ["2", "1"],
        ));
        round.push(at(
            to(event(Transfer, 4, [0, 0]), stranger, other),
            40,
            ["2", "1"],
        ));
        let counted = counted_for(&round, &own, WALLET);
        assert_eq!(count_start(&counted, WALLET), Some(4));
    }

    #[test]
    fn a_position_transferred_in_counts_from_what_it_held_there() {
        use EventKind::*;
        let (zero, minter) = (
            "0x0000000000000000000000000000000000000000",
            "0x00000000000000000000000000000000000000bb",
        );
        let events = [
            at(to(event(Mint, 1, [0, 0]), zero, minter), 10, ["1", "1"]),
            at(event(Deposit, 1, [100, 100]), 10, ["1", "1"]),
            at(event(Withdraw, 2, [10, 10]), 20, ["1", "1"]),
            at(
                to(event(Transfer, 3, [0, 0]), minter, WALLET),
                30,
                ["2", "1"],
            ),
            at(event(Collect, 4, [15, 5]), 40, ["2", "1"]),
        ];
        let arrival = Handed {
            principal: [U256::from(90), U256::from(90)],
            owed: [U256::from(12), U256::from(10)],
        };
        let handed = Handovers {
            arrival: Some(arrival),
            departure: None,
        };
        let summary = summarize(&events, WALLET, [0, 0], (4, true), handed);
        assert!(summary.complete, "{summary:?}");
        assert_eq!(summary.counted_from, Some(3));
        // What its liquidity held, and the 10 of principal withdrawn before and still owed: in
        // the holder's deposit and withdrawn at once, at the transfer's prices (decision 58).
        assert_eq!(summary.deposited, ["100".to_string(), "100".into()]);
        assert_eq!(summary.withdrawn, ["10".to_string(), "10".into()]);
        assert_eq!(
            summary.withdrawn_usd,
            [Some("20".into()), Some("10".into())]
        );
        assert_eq!(summary.arrived_with, Some(["90".to_string(), "90".into()]));
        // What it held (principal and owed) at the transfer's prices: 102 × 2 + 100 × 1.
        assert_eq!(
            summary.deposited_usd,
            [Some("204".into()), Some("100".into())]
        );
        // The collect pays the 10 of principal it came with first.
        assert_eq!(summary.fees_collected, ["5".to_string(), "0".into()]);
        assert_eq!(summary.uncollected_principal, ["0".to_string(), "5".into()]);
        // Without what it held there, no figure is stood behind.
        let unread = summarize(&events, WALLET, [0, 0], (4, true), Handovers::default());
        assert!(!unread.complete && unread.reason.is_some());
        // The views: the events before are listed, the transfer named for the holder.
        let views = event_views(
            &events,
            Some(&summary),
            (WALLET, [0, 0], [0, 1]),
            (0, 10),
            |_| None,
        );
        let kinds: Vec<&str> = views.iter().map(|v| v.kind).collect();
        assert_eq!(
            kinds,
            ["mint", "deposit", "withdraw", "transfer-in", "collect"]
        );
        assert_eq!(views[2].liquidity.as_deref(), Some("0"));
        assert_eq!(views[3].token_a.as_ref().unwrap().amount, "90");
        let collect = views[4].token_a.as_ref().unwrap();
        assert_eq!(
            (collect.principal.as_deref(), collect.fees.as_deref()),
            (Some("10"), Some("5"))
        );
        let paged = event_views(
            &events,
            Some(&summary),
            (WALLET, [0, 0], [0, 1]),
            (3, 1),
            |_| None,
        );
        assert_eq!(paged.len(), 1);
        assert_eq!(paged[0].kind, "transfer-in");
    }

    #[test]
    fn a_transfer_away_ends_the_count_with_all_it_held_taken_out() {
        use EventKind::*;
        let (zero, stranger) = (
            "0x0000000000000000000000000000000000000000",
            "0x00000000000000000000000000000000000000bb",
        );
        let events = [
            at(to(event(Mint, 1, [0, 0]), zero, WALLET), 10, ["1", "1"]),
            at(event(Deposit, 1, [100, 100]), 10, ["1", "1"]),
            // 10 of each withdrawn and left owed, then the position sent to a stranger, who
            // collects: none of it is the holder's.
            at(event(Withdraw, 2, [10, 10]), 20, ["1", "1"]),
            at(
                to(event(Transfer, 3, [0, 0]), WALLET, stranger),
                30,
                ["2", "1"],
            ),
            at(event(Collect, 4, [50, 50]), 40, ["2", "1"]),
        ];
        assert_eq!(count_end(&events, 0, WALLET), Some(3));
        // At the transfer: 85/90 of principal, and 13/11 owed (the 10/10 withdrawn among it).
        let departure = Handed {
            principal: [U256::from(85), U256::from(90)],
            owed: [U256::from(13), U256::from(11)],
        };
        let handed = Handovers {
            arrival: None,
            departure: Some(departure),
        };
        let summary = summarize(&events, WALLET, [0, 0], (4, true), handed);
        assert!(summary.complete, "{summary:?}");
        assert_eq!(summary.withdrawn, ["95".to_string(), "100".into()]);
        assert_eq!(summary.fees_collected, ["3".to_string(), "1".into()]);
        assert_eq!(summary.uncollected_principal, ["0".to_string(), "0".into()]);
        // The withdrawal at its prices (10 + 10), the principal at the transfer's (85 × 2, 90).
        assert_eq!(
            summary.withdrawn_usd,
            [Some("180".into()), Some("100".into())]
        );
        assert_eq!(
            summary.fees_collected_usd,
            [Some("6".into()), Some("1".into())]
        );
        assert_eq!(summary.departure.as_ref().map(|d| d.block), Some(3));
        assert_eq!(
            summary.last_time,
            Some(30),
            "the stranger's collect not counted"
        );
        // Unread, no figure stood behind.
        let unread = summarize(&events, WALLET, [0, 0], (4, true), Handovers::default());
        assert!(!unread.complete && unread.reason.is_some());
    }
}
