//! A wallet position's story as the position manager's events tell it (Uniswap v3 and
//! PancakeSwap v3 share them): its mint and transfers, its deposits and withdrawals, what each
//! `collect` paid, and the ledger that follows, which tells fees from principal. The manager's
//! `decreaseLiquidity` adds the withdrawn principal to the position's `tokensOwed` and only
//! `collect` pays it out, so what `collect` pays is fees *and* uncollected principal; the
//! ledger splits each payment **principal first**: a `Collect` pays, per token, the principal
//! withdrawn and not yet collected before it (up to its amount), and only the rest is fees.

use crate::domain::json::{plain_exact, Percent, Usd};
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::U256;
use bigdecimal::{BigDecimal, Zero};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

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
    /// USD per whole token (protocol order) at its block by the pricing rule, where a price
    /// was found; set when the event is valued.
    pub prices: [Option<BigDecimal>; 2],
    pub priced: Option<Priced>,
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
                EventKind::Mint | EventKind::Transfer | EventKind::Burn => {}
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

/// Where the holder's count starts: the last event that brought the position to `wallet` (its
/// mint to it, or a transfer to it). Events before it are listed, not counted.
pub fn count_start(events: &[PositionEvent], wallet: &str) -> Option<usize> {
    events.iter().rposition(|e| {
        matches!(e.kind, EventKind::Mint | EventKind::Transfer)
            && e.to
                .as_deref()
                .is_some_and(|to| to.eq_ignore_ascii_case(wallet))
    })
}

/// What a position held at the transfer that brought it to its holder, read at that block:
/// the principal its liquidity held (rounded down, as a withdrawal pays) and what `collect`
/// would have paid (fees and uncollected principal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub principal: [U256; 2],
    pub owed: [U256; 2],
}

/// A wallet position's history summed for its holder, kept with the position so that a list
/// or a portfolio reads no events: per token (protocol order) the base units deposited,
/// withdrawn, collected as fees and withdrawn but not collected, and their USD at their
/// events' prices. Integers and decimals as strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HistorySummary {
    /// Every event from the count's start to `through` was read and valued.
    pub complete: bool,
    /// Why the history is not complete, where it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The last block read.
    pub through: u64,
    /// The block the holder's count starts at (its mint, or the transfer that brought it).
    pub counted_from: Option<u64>,
    /// Some event's prices are the nearest state's, not its block's.
    pub nearest: bool,
    pub deposited: [String; 2],
    pub withdrawn: [String; 2],
    pub fees_collected: [String; 2],
    pub uncollected_principal: [String; 2],
    /// USD at each event's prices, per token; `None` where a token had no price.
    pub deposited_usd: [Option<String>; 2],
    pub withdrawn_usd: [Option<String>; 2],
    pub fees_collected_usd: [Option<String>; 2],
    /// The principal's USD (net deposits at each event's prices) times the seconds it was held,
    /// from the count's start to the last event: the fee APR's weight.
    pub capital_usd_seconds: Option<String>,
    /// What a transfer that started the count brought, base units (its principal there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrived_with: Option<[String; 2]>,
    /// The unix times of the count's first and last events.
    pub first_time: Option<u64>,
    pub last_time: Option<u64>,
}

/// Base units of both tokens, as their decimal strings.
fn texts(units: [U256; 2]) -> [String; 2] {
    units.map(|u| u.to_string())
}

pub fn units(texts: &[String; 2]) -> [U256; 2] {
    [0, 1].map(|t| U256::from_str(&texts[t]).unwrap_or_default())
}

pub fn decimals(texts: &[Option<String>; 2]) -> [Option<BigDecimal>; 2] {
    [0, 1].map(|t| {
        texts[t]
            .as_deref()
            .and_then(|v| BigDecimal::from_str(v).ok())
    })
}

/// A running USD sum per token: `None` once a term had no price.
#[derive(Clone)]
struct UsdSums([Option<BigDecimal>; 2]);

impl UsdSums {
    fn zero() -> UsdSums {
        UsdSums([Some(BigDecimal::zero()), Some(BigDecimal::zero())])
    }

    fn add(&mut self, event: &PositionEvent, amounts: [U256; 2], decimals: [u8; 2]) {
        for t in 0..2 {
            let term = event.prices[t]
                .as_ref()
                .map(|p| base_units_to_decimal(amounts[t], decimals[t]) * p);
            self.0[t] = self.0[t].take().zip(term).map(|(sum, term)| sum + term);
        }
    }

    fn texts(&self) -> [Option<String>; 2] {
        self.0
            .clone()
            .map(|v| v.map(|v| v.normalized().to_string()))
    }
}

/// The USD of base-unit amounts at prices, if both tokens have one.
pub fn usd_of(
    amounts: [U256; 2],
    prices: &[Option<BigDecimal>; 2],
    decimals: [u8; 2],
) -> Option<BigDecimal> {
    let mut total = BigDecimal::zero();
    for t in 0..2 {
        total += base_units_to_decimal(amounts[t], decimals[t]) * prices[t].as_ref()?;
    }
    Some(total)
}

/// Sums `events` (all stored, in chain order, read through `through`; `whole`: read from the
/// mint with nothing left unread) for the position's holder `wallet`. A holder that received it
/// by a transfer counts from there: its `deposited` is the principal it held then, its cost
/// basis what it held (`arrival`, read at that block) at that block's prices.
pub fn summarize(
    events: &[PositionEvent],
    wallet: &str,
    decimals: [u8; 2],
    (through, whole): (u64, bool),
    arrival: Option<Arrival>,
) -> HistorySummary {
    let start = count_start(events, wallet);
    let mut reason = (!whole).then(|| "its events were not all read from its mint".to_string());
    let Some(start) = start else {
        return HistorySummary {
            reason: reason.or(Some("no event brought it to this wallet".into())),
            through,
            ..HistorySummary::default()
        };
    };
    let before = Ledger::of(&events[..start]);
    let first = &events[start];
    let mut ledger = Ledger {
        uncollected_principal: before.uncollected_principal,
        ..Ledger::default()
    };
    let mut deposited_usd = UsdSums::zero();
    let (mut withdrawn_usd, mut fees_usd) = (UsdSums::zero(), UsdSums::zero());
    if first.kind == EventKind::Transfer {
        match arrival {
            Some(arrival) => {
                ledger.deposited = arrival.principal;
                let held = [0, 1].map(|t| arrival.principal[t] + arrival.owed[t]);
                deposited_usd.add(first, held, decimals);
            }
            None => {
                reason = Some("what it held when it was transferred in could not be read".into());
            }
        }
    }
    // The principal's USD held between events, for the APR's weight.
    let mut capital = Some(BigDecimal::zero());
    let mut capital_seconds = Some(BigDecimal::zero());
    let mut last_time = first.timestamp;
    let mut nearest = false;
    for event in &events[start..] {
        nearest |= event.priced == Some(Priced::Nearest);
        if let (Some(then), Some(now)) = (last_time, event.timestamp) {
            let held = capital.clone().zip(capital_seconds.take());
            capital_seconds = held.map(|(c, s)| s + c * BigDecimal::from(now.saturating_sub(then)));
        }
        last_time = event.timestamp.or(last_time);
        match event.kind {
            EventKind::Deposit => deposited_usd.add(event, event.amounts, decimals),
            EventKind::Withdraw => withdrawn_usd.add(event, event.amounts, decimals),
            EventKind::Collect => {
                let paid = ledger.clone().then(event);
                let fees = [0, 1].map(|t| paid.fees_collected[t] - ledger.fees_collected[t]);
                fees_usd.add(event, fees, decimals);
            }
            _ => {}
        }
        ledger = ledger.then(event);
        let net = [0, 1].map(|t| ledger.deposited[t].saturating_sub(ledger.withdrawn[t]));
        capital = capital.and(usd_of(net, &event.prices, decimals));
    }
    HistorySummary {
        complete: reason.is_none(),
        reason,
        through,
        counted_from: Some(first.block),
        nearest,
        deposited: texts(ledger.deposited),
        withdrawn: texts(ledger.withdrawn),
        fees_collected: texts(ledger.fees_collected),
        uncollected_principal: texts(ledger.uncollected_principal),
        deposited_usd: deposited_usd.texts(),
        withdrawn_usd: withdrawn_usd.texts(),
        fees_collected_usd: fees_usd.texts(),
        capital_usd_seconds: capital_seconds.map(|v| v.normalized().to_string()),
        arrived_with: (first.kind == EventKind::Transfer)
            .then(|| arrival.map(|a| texts(a.principal)))
            .flatten(),
        first_time: first.timestamp,
        last_time,
    }
}

/// One token's history in a wallet position's view: whole tokens, exact (EVM; `null` until its
/// history is complete).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenHistoryView {
    pub deposited: Option<String>,
    pub withdrawn: Option<String>,
    pub fees_collected: Option<String>,
    pub uncollected_principal: Option<String>,
    pub fees_unclaimed: Option<String>,
}

/// A wallet position's figures from its history, beside today's (`null` where a price is
/// missing or the history is not complete; Orca: `historyComplete` is `null` and
/// `historyReason` says why its figures are its reads').
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryView {
    pub withdrawn_usd: Option<Usd>,
    pub fees_collected_usd: Option<Usd>,
    pub hodl_value_usd: Option<Usd>,
    pub impermanent_loss_usd: Option<Usd>,
    pub fee_apr_percent: Option<Percent>,
    pub history_complete: Option<bool>,
    pub history_reason: Option<String>,
    /// Some event is valued at the nearest state the service had, not at its block's.
    pub priced_nearest: bool,
}

/// One token of an event in `GET /positions/{id}/history`: whole tokens, exact, and USD at
/// the event's prices; a collect's split into principal and fees.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventTokenView {
    pub amount: String,
    pub value_usd: Option<Usd>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fees: Option<String>,
}

/// One event of a position's history, as the API shows it. A simulated position's life
/// (`created`, `activated`, `closed`) has no chain fields.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventView {
    pub kind: &'static str,
    pub block: Option<u64>,
    pub time: Option<String>,
    pub transaction_hash: Option<String>,
    pub log_index: Option<u64>,
    /// The liquidity it added (negative: took); `null` for the other kinds.
    pub liquidity: Option<String>,
    pub token_a: Option<EventTokenView>,
    pub token_b: Option<EventTokenView>,
    pub value_usd: Option<Usd>,
    pub priced: Option<&'static str>,
}

/// The API's name of an event's kind, for the position's holder `wallet`.
fn kind_name(event: &PositionEvent, wallet: &str) -> &'static str {
    match event.kind {
        EventKind::Transfer
            if event
                .to
                .as_deref()
                .is_some_and(|to| to.eq_ignore_ascii_case(wallet)) =>
        {
            "transfer-in"
        }
        EventKind::Transfer => "transfer-out",
        other => other.as_str(),
    }
}

/// `events` (the position's, in chain order from the first stored) as the API shows them, for
/// its holder `wallet`, from `offset`, at most `limit`. `[a, b]` names tokenA and tokenB's
/// protocol indexes; `time` writes a unix time.
pub fn event_views(
    events: &[PositionEvent],
    summary: Option<&HistorySummary>,
    (wallet, decimals, [a, b]): (&str, [u8; 2], [usize; 2]),
    (offset, limit): (usize, usize),
    time: impl Fn(u64) -> Option<String>,
) -> Vec<EventView> {
    let mut ledger = Ledger::default();
    let mut views = Vec::with_capacity(limit.min(events.len()));
    for (i, event) in events.iter().enumerate() {
        let before = ledger.clone();
        ledger = ledger.then(event);
        if i < offset {
            continue;
        }
        if views.len() == limit {
            break;
        }
        let kind = kind_name(event, wallet);
        let starts_count =
            summary.is_some_and(|h| h.counted_from == Some(event.block)) && kind == "transfer-in";
        let amounts = match event.kind {
            EventKind::Deposit | EventKind::Withdraw | EventKind::Collect => Some(event.amounts),
            _ if starts_count => summary.and_then(|h| h.arrived_with.as_ref()).map(units),
            _ => None,
        };
        let fees = [0, 1].map(|t| ledger.fees_collected[t] - before.fees_collected[t]);
        let token = |t: usize, amounts: [U256; 2]| {
            let whole = |units: U256| plain_exact(&base_units_to_decimal(units, decimals[t]));
            let usd = event.prices[t]
                .as_ref()
                .map(|p| base_units_to_decimal(amounts[t], decimals[t]) * p);
            let collect = event.kind == EventKind::Collect;
            EventTokenView {
                amount: whole(amounts[t]),
                value_usd: usd.map(Usd::new),
                principal: collect.then(|| whole(amounts[t] - fees[t])),
                fees: collect.then(|| whole(fees[t])),
            }
        };
        let liquidity = match event.kind {
            EventKind::Deposit => Some(event.liquidity.to_string()),
            EventKind::Withdraw if event.liquidity > 0 => Some(format!("-{}", event.liquidity)),
            EventKind::Withdraw => Some("0".into()),
            _ => None,
        };
        views.push(EventView {
            kind,
            block: Some(event.block),
            time: event.timestamp.and_then(&time),
            transaction_hash: Some(event.transaction.clone()),
            log_index: Some(event.log_index),
            liquidity,
            token_a: amounts.map(|m| token(a, m)),
            token_b: amounts.map(|m| token(b, m)),
            value_usd: amounts
                .and_then(|m| usd_of(m, &event.prices, decimals))
                .map(Usd::new),
            priced: event.priced.map(Priced::as_str),
        });
    }
    views
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
            prices: [None, None],
            priced: None,
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
