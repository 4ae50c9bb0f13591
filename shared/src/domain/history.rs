//! A wallet position's story as the position manager's events tell it (Uniswap v3 and
//! PancakeSwap v3 share them): its mint and transfers, its deposits and withdrawals, what each
//! `collect` paid, and the ledger that follows, which tells fees from principal. The manager's
//! `decreaseLiquidity` adds the withdrawn principal to the position's `tokensOwed` and only
//! `collect` pays it out, so what `collect` pays is fees *and* uncollected principal; the
//! ledger splits each payment **principal first**: a `Collect` pays, per token, the principal
//! withdrawn and not yet collected before it (up to its amount), and only the rest is fees.

use crate::domain::math::U256;

/// What happened to a position in one log of its position manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// `Transfer` from the zero address.
    Mint,
    /// `IncreaseLiquidity` (a mint's own deposit too).
    Deposit,
    /// `DecreaseLiquidity`: principal added to what the position is owed, not paid yet.
    Withdraw,
    /// `Collect`: paid out to a recipient, principal first then fees.
    Collect,
    /// `Transfer` between two wallets.
    Transfer,
    /// `Transfer` to the zero address.
    Burn,
}

impl EventKind {
    const NAMES: [(EventKind, &'static str); 6] = [
        (EventKind::Mint, "mint"),
        (EventKind::Deposit, "deposit"),
        (EventKind::Withdraw, "withdraw"),
        (EventKind::Collect, "collect"),
        (EventKind::Transfer, "transfer"),
        (EventKind::Burn, "burn"),
    ];

    pub fn as_str(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(kind, _)| *kind == self)
            .map_or("", |(_, name)| name)
    }

    pub fn parse(name: &str) -> Option<EventKind> {
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(kind, _)| *kind)
    }
}

/// One event of a position, where the chain put it. Amounts in base units, protocol order
/// (token0, token1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionEvent {
    pub kind: EventKind,
    pub block: u64,
    /// `0x` and 64 lower-case hex digits: a log whose block a reorg replaced is never kept.
    pub block_hash: String,
    pub transaction: String,
    pub log_index: u64,
    /// The liquidity a deposit adds or a withdrawal takes (0 for the other kinds).
    pub liquidity: u128,
    pub amounts: [U256; 2],
    /// A transfer's sender and recipient (lower-case addresses; the zero address for a mint or
    /// a burn); a collect's recipient as `to`.
    pub from: Option<String>,
    pub to: Option<String>,
    /// Its block's unix time, where the node answered it.
    pub timestamp: Option<u64>,
}

impl PositionEvent {
    /// Chain order: by block, then by the log's index in it.
    pub fn order(&self) -> (u64, u64) {
        (self.block, self.log_index)
    }
}

/// How far a position's events have been read and stored: through which block, whether from
/// its mint (the whole story) or only from later on, and how many there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryProgress {
    pub through: u64,
    pub from_mint: bool,
    pub events: u64,
}

/// What a position's events add up to, per token (protocol order, base units).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    /// What its `IncreaseLiquidity` events took in.
    pub deposited: [U256; 2],
    /// The principal its `DecreaseLiquidity` events withdrew.
    pub withdrawn: [U256; 2],
    /// The fee parts of its `Collect` payments.
    pub fees_collected: [U256; 2],
    /// The principal parts of its `Collect` payments.
    pub principal_collected: [U256; 2],
    /// Withdrawn and not yet collected: owed to the holder beside its fees.
    pub uncollected_principal: [U256; 2],
}

impl Ledger {
    /// The ledger of `events` (in chain order), principal first.
    pub fn of<'a>(events: impl IntoIterator<Item = &'a PositionEvent>) -> Ledger {
        let mut ledger = Ledger::default();
        for event in events {
            for t in 0..2 {
                let amount = event.amounts[t];
                match event.kind {
                    EventKind::Deposit => ledger.deposited[t] += amount,
                    EventKind::Withdraw => {
                        ledger.withdrawn[t] += amount;
                        ledger.uncollected_principal[t] += amount;
                    }
                    EventKind::Collect => {
                        let principal = amount.min(ledger.uncollected_principal[t]);
                        ledger.uncollected_principal[t] -= principal;
                        ledger.principal_collected[t] += principal;
                        ledger.fees_collected[t] += amount - principal;
                    }
                    EventKind::Mint | EventKind::Transfer | EventKind::Burn => {}
                }
            }
        }
        ledger
    }

    /// The fees not yet collected, from what `collect` would pay now (`owed`: fees and
    /// uncollected principal together, as the position manager owes them).
    pub fn fees_unclaimed(&self, owed: [U256; 2]) -> [U256; 2] {
        [0, 1].map(|t| owed[t].saturating_sub(self.uncollected_principal[t]))
    }

    /// Every fee the position earned: collected, and still owed beside the principal.
    pub fn fees_earned(&self, owed: [U256; 2]) -> [U256; 2] {
        let unclaimed = self.fees_unclaimed(owed);
        [0, 1].map(|t| self.fees_collected[t] + unclaimed[t])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, block: u64, amounts: [u64; 2]) -> PositionEvent {
        PositionEvent {
            kind,
            block,
            block_hash: format!("0x{block:064x}"),
            transaction: format!("0x{block:064x}"),
            log_index: 0,
            liquidity: 0,
            amounts: amounts.map(U256::from),
            from: None,
            to: None,
            timestamp: None,
        }
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
}
