//! The events of a position and the ledger they keep.

use crate::domain::math::U256;
use bigdecimal::BigDecimal;

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
    /// `Transfer` to its deployment's farm: a change of custody, never a close (decision 60).
    Stake,
    /// `Transfer` from its deployment's farm back to a wallet.
    Unstake,
    /// The farm's `Harvest`: its reward paid to the staker (`reward`).
    Harvest,
}

impl EventKind {
    const NAMES: [(EventKind, &'static str); 9] = [
        (EventKind::Mint, "mint"),
        (EventKind::Deposit, "deposit"),
        (EventKind::Withdraw, "withdraw"),
        (EventKind::Collect, "collect"),
        (EventKind::Transfer, "transfer"),
        (EventKind::Burn, "burn"),
        (EventKind::Stake, "staked"),
        (EventKind::Unstake, "unstaked"),
        (EventKind::Harvest, "harvest"),
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
    /// A harvest's reward, base units of the farm's reward token.
    pub reward: Option<U256>,
    /// Wei its transaction cost the holder (`gasUsed × effectiveGasPrice`, and an OP-stack
    /// chain's `l1Fee`), on the first event of a transaction the holder sent; `None` on the
    /// others and where the receipt was not read.
    pub gas: Option<U256>,
    /// Whether the holder acted in its transaction: sent it, was the account it called (a
    /// Safe's `execTransaction`), or paid a token in it; `None` where its receipt was not read.
    /// A deposit the holder did not act in (a stranger's mint to its wallet) is an arrival.
    pub acted: Option<bool>,
    /// Uniswap v4: the fees the modification paid out itself (v4 pays a position's accrued
    /// fees, and a withdrawal's principal, at every modification: nothing is left owed).
    pub paid: Option<[U256; 2]>,
    /// USD per whole token (protocol order) at its block by the pricing rule, where a price
    /// was found; set when the event is valued.
    pub prices: [Option<BigDecimal>; 2],
    pub priced: Option<Priced>,
    /// What the position manager kept of the position at the end of this event's block, where
    /// it was read: what its fees at any later block are computed from (decision 66).
    pub kept: Option<Kept>,
}

/// A position's `feeGrowthInside{0,1}LastX128` and `tokensOwed{0,1}` as its manager keeps them
/// (Uniswap v4: the growth inside it was last paid to, nothing owed): changed only by an event
/// of the position, so what `collect` pays at a later block is `owed` and the growth since.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    pub inside_last: [U256; 2],
    pub owed: [U256; 2],
}

/// Marks the transfers to and from `farm` (the deployment's staking contract) as stakes and
/// unstakes, for the position's `holder`: the position stays its staker's, its count goes on
/// (decision 60). The farm's transfer to another than the one who staked it, in a history read
/// for another holder than the staker, stays a transfer: the position arrived there from the
/// farm, and its holder's count starts as a transfer's does (decision 63). A farm's transfer
/// whose stake is not among `events` (read before) is its holder's unstake.
pub fn mark_staking(events: &mut [PositionEvent], farm: &str, holder: &str) {
    let same =
        |a: &Option<String>, b: &str| a.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(b));
    let mut staker: Option<String> = None;
    for event in events.iter_mut().filter(|e| e.kind == EventKind::Transfer) {
        if same(&event.to, farm) {
            event.kind = EventKind::Stake;
            staker.clone_from(&event.from);
        } else if same(&event.from, farm) {
            let unstake = match staker.take() {
                Some(staker) => staker.eq_ignore_ascii_case(holder) || same(&event.to, &staker),
                None => true,
            };
            if unstake {
                event.kind = EventKind::Unstake;
            }
        }
    }
}

/// Which state an event's USD prices come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priced {
    /// The pools' state at the event's own block.
    AtBlock,
    /// The nearest state the service has (the node could not serve the block's): said so.
    Nearest,
}

impl Priced {
    pub fn as_str(self) -> &'static str {
        match self {
            Priced::AtBlock => "at-block",
            Priced::Nearest => "nearest",
        }
    }

    pub fn parse(name: &str) -> Option<Priced> {
        [Priced::AtBlock, Priced::Nearest]
            .into_iter()
            .find(|p| p.as_str() == name)
    }
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
        events.into_iter().fold(Ledger::default(), Ledger::then)
    }

    /// The ledger after one more event.
    pub fn then(mut self, event: &PositionEvent) -> Ledger {
        for t in 0..2 {
            let amount = event.amounts[t];
            match event.kind {
                EventKind::Deposit => self.deposited[t] += amount,
                EventKind::Withdraw if event.paid.is_some() => {
                    self.withdrawn[t] += amount;
                    self.principal_collected[t] += amount;
                }
                EventKind::Withdraw => {
                    self.withdrawn[t] += amount;
                    self.uncollected_principal[t] += amount;
                }
                EventKind::Collect => {
                    let principal = amount.min(self.uncollected_principal[t]);
                    self.uncollected_principal[t] -= principal;
                    self.principal_collected[t] += principal;
                    self.fees_collected[t] += amount - principal;
                }
                EventKind::Mint
                | EventKind::Transfer
                | EventKind::Burn
                | EventKind::Stake
                | EventKind::Unstake
                | EventKind::Harvest => {}
            }
            if let Some(paid) = event.paid {
                self.fees_collected[t] += paid[t];
            }
        }
        self
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
