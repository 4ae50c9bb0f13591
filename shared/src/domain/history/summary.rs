//! A position's history summed for its holder: from the event that brought it to the holder's
//! wallet (its mint, or a transfer), principal first, each event at its own prices; kept on the
//! position so that a list or a portfolio reads no event.

use super::events::{EventKind, Ledger, PositionEvent, Priced};
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::U256;
use bigdecimal::{BigDecimal, Zero};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

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

/// `events` as their holder `wallet`'s count reads them when its owner holds the wallets `own`
/// (lower case; linked or watched: the position's record follows it between them): a transfer
/// between two of them is no arrival (its recipient dropped), a mint or a transfer from
/// elsewhere to any of them is an arrival at `wallet`. One rule for every answer: the
/// position's figures, its chart and its export (decision 69).
pub fn counted_for(events: &[PositionEvent], own: &[String], wallet: &str) -> Vec<PositionEvent> {
    let is_own = |address: &Option<String>| {
        address.as_deref().is_some_and(|a| {
            a.eq_ignore_ascii_case(wallet) || own.iter().any(|w| w.eq_ignore_ascii_case(a))
        })
    };
    let mut counted = events.to_vec();
    for event in &mut counted {
        match event.kind {
            EventKind::Transfer if is_own(&event.from) && is_own(&event.to) => event.to = None,
            EventKind::Transfer | EventKind::Mint if is_own(&event.to) => {
                event.to = Some(wallet.to_string());
            }
            _ => {}
        }
    }
    counted
}

/// What a position held at a transfer that handed it to or from its holder, read at that
/// block: the principal its liquidity held (rounded down, as a withdrawal pays) and what
/// `collect` would have paid (fees and uncollected principal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handed {
    pub principal: [U256; 2],
    pub owed: [U256; 2],
}

/// What the position held at the transfers that start and end its holder's count, where read:
/// the one that brought it (`arrival`) and the one that sent it to another than its owner's
/// wallets (`departure`: a disposal of all it held at that block's prices, decision 69).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Handovers {
    pub arrival: Option<Handed>,
    pub departure: Option<Handed>,
}

/// Where the holder's count ends, if it does: the first transfer after `start` to another
/// than `wallet` (`counted_for` has dropped the recipient of a move between the owner's
/// wallets). Events after it are another holder's.
pub fn count_end(events: &[PositionEvent], start: usize, wallet: &str) -> Option<usize> {
    events
        .iter()
        .enumerate()
        .skip(start + 1)
        .find_map(|(i, e)| {
            let away = e.kind == EventKind::Transfer
                && e.to
                    .as_deref()
                    .is_some_and(|to| !to.eq_ignore_ascii_case(wallet));
            away.then_some(i)
        })
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
    /// What a transfer that started the count brought, base units (its principal there), and
    /// what `collect` would have paid there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrived_with: Option<[String; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrived_owed: Option<[String; 2]>,
    /// The transfer that ended the count (to another than its owner's wallets), and what the
    /// position held there: all of it counted as taken out at that block's prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub departure: Option<Departure>,
    /// The unix times of the count's first and last events.
    pub first_time: Option<u64>,
    pub last_time: Option<u64>,
    /// Base units of its farm's reward token harvested since the count's start (decision 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewards_harvested: Option<String>,
    /// The block of its stake in its farm, while the history's last custody event is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staked_at: Option<u64>,
}

/// The transfer that sent a position away from its holder's count, and what it held there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Departure {
    pub block: u64,
    /// Its principal and what `collect` would have paid, base units.
    pub principal: [String; 2],
    pub owed: [String; 2],
}

impl HistorySummary {
    /// What the position held at the transfers that start and end its count, as summed.
    pub fn handovers(&self) -> Handovers {
        Handovers {
            arrival: self
                .arrived_with
                .as_ref()
                .zip(self.arrived_owed.as_ref())
                .map(|(principal, owed)| Handed {
                    principal: units(principal),
                    owed: units(owed),
                }),
            departure: self.departure.as_ref().map(|d| Handed {
                principal: units(&d.principal),
                owed: units(&d.owed),
            }),
        }
    }
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
/// basis what it held (`handed.arrival`, read at that block) at that block's prices. A
/// transfer away ends the count: all it held there (`handed.departure`) withdrawn and collected
/// at that block's prices, as a close would; what follows is another holder's.
pub fn summarize(
    events: &[PositionEvent],
    wallet: &str,
    decimals: [u8; 2],
    (through, whole): (u64, bool),
    handed: Handovers,
) -> HistorySummary {
    let arrival = handed.arrival;
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
                // The previous holder's withdrawn, uncollected principal came with it, owed:
                // in its cost basis and, for the holder, withdrawn at arrival (at that block's
                // prices), as its own withdrawal would be. Its PnL then counts it once, owed
                // or collected (a collect pays it first).
                let owed_principal = before.uncollected_principal;
                ledger.deposited = [0, 1].map(|t| arrival.principal[t] + owed_principal[t]);
                ledger.withdrawn = owed_principal;
                withdrawn_usd.add(first, owed_principal, decimals);
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
    let end = count_end(events, start, wallet);
    let counted = &events[start..=end.unwrap_or(events.len() - 1)];
    let departure = end.map(|end| (&events[end], handed.departure));
    if let Some((_, None)) = departure {
        reason = Some("what it held when it was transferred away could not be read".into());
    }
    for event in counted.iter().chain(departed(departure).iter()) {
        nearest |= event.priced == Some(Priced::Nearest);
        if let (Some(then), Some(now)) = (last_time, event.timestamp) {
            let held = capital.clone().zip(capital_seconds.take());
            capital_seconds = held.map(|(c, s)| s + c * BigDecimal::from(now.saturating_sub(then)));
        }
        last_time = event.timestamp.or(last_time);
        if let Some(paid) = event.paid {
            fees_usd.add(event, paid, decimals);
        }
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
        arrived_owed: (first.kind == EventKind::Transfer)
            .then(|| arrival.map(|a| texts(a.owed)))
            .flatten(),
        departure: match departure {
            Some((event, Some(held))) => Some(Departure {
                block: event.block,
                principal: texts(held.principal),
                owed: texts(held.owed),
            }),
            _ => None,
        },
        first_time: first.timestamp,
        last_time,
        rewards_harvested: harvested(counted),
        staked_at: events
            .iter()
            .rfind(|e| matches!(e.kind, EventKind::Stake | EventKind::Unstake))
            .filter(|e| e.kind == EventKind::Stake)
            .map(|e| e.block),
    }
}

/// A departure as the ledger counts it: all its principal withdrawn, then all that `collect`
/// would pay collected (principal first), at the transfer's block and prices.
fn departed(departure: Option<(&PositionEvent, Option<Handed>)>) -> Vec<PositionEvent> {
    let Some((transfer, Some(held))) = departure else {
        return Vec::new();
    };
    let as_kind = |kind: EventKind, amounts: [U256; 2]| PositionEvent {
        kind,
        amounts,
        gas: None,
        paid: None,
        ..transfer.clone()
    };
    vec![
        as_kind(EventKind::Withdraw, held.principal),
        as_kind(
            EventKind::Collect,
            [0, 1].map(|t| held.principal[t] + held.owed[t]),
        ),
    ]
}

/// The rewards the farm paid out of `events` (its harvests), if any.
fn harvested(events: &[PositionEvent]) -> Option<String> {
    let rewards = events.iter().filter(|e| e.kind == EventKind::Harvest);
    let paid: Vec<U256> = rewards.filter_map(|e| e.reward).collect();
    (!paid.is_empty()).then(|| {
        paid.into_iter()
            .fold(U256::ZERO, |a, r| a.saturating_add(r))
            .to_string()
    })
}

/// An EVM position's `feeGrowthInside{0,1}LastX128` and `tokensOwed{0,1}` (protocol order,
/// decimal strings): changed only by an event naming the position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FeeState {
    pub fee_growth_inside_last: [String; 2],
    pub tokens_owed: [String; 2],
}
