//! The caller's position events as a CSV a tax tool imports (`GET /history/export`): one row
//! per token movement. A deposit is a send; the principal a withdrawal paid back a receive;
//! the fee part of a collect (apart from its principal, principal first as the ledger counts)
//! and a farm's harvest are income. The rows start where the holder's count starts (its mint
//! to the wallet, or the transfer that brought it: `history::count_start`, as the position's
//! figures do): what a previous holder did is not the caller's. A position that arrived
//! without the holder's own transaction (a transfer in, a stranger's mint or deposit) is an
//! arrival: what it brought received as an airdrop (Koinly `Airdrop`, CoinTracker
//! `airdrop`), and sent into the position as the holder's own deposit is (decision 69).
//! Transfers of the position NFT move no token: no row; one to another than the owner's
//! wallets ends the rows (what the tokens sent into it were worth then is the position's
//! realized figure, not a movement of the wallet's). The gas a transaction cost the
//! caller's wallet (kept on its first event) is in the fee columns of its first row, in the
//! chain's native currency; a transaction that moved no token (a stake, a transfer) has a row
//! of its fee alone. Where the receipt was not read, the fee columns stay empty. Every cell is
//! written by the `csv` crate, and one a spreadsheet would run as a formula is made inert.

mod cells;

use crate::domain::history::{
    count_end, count_start, counted_for, EventKind, Ledger, PositionEvent,
};
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::U256;
use crate::domain::model::{Chain, HeldToken};
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

named_enum!(
    /// The CSV's layout.
    ExportFormat {
        Koinly => "koinly",
        CoinTracker => "cointracker",
        Ledger => "ledger",
    }
);

/// Koinly's universal template, exactly.
pub const KOINLY_HEADER: &str = "Date,Sent Amount,Sent Currency,Received Amount,Received Currency,Fee Amount,Fee Currency,Net Worth Amount,Net Worth Currency,Label,Description,TxHash";
/// CoinTracker's CSV import, exactly.
pub const COINTRACKER_HEADER: &str =
    "Date,Received Quantity,Received Currency,Sent Quantity,Sent Currency,Fee Amount,Fee Currency,Tag";
/// Ours, lossless: every figure as stored, and the wallet that held the position.
pub const LEDGER_HEADER: &str = "chain,block,transaction,logIndex,time,position,kind,direction,token,symbol,rawAmount,decimals,amount,usdPrice,usdPriceSource,usdValue,wallet,watched";

/// The most bytes an export answers (413 past it: a narrower range).
pub const MAX_EXPORT_BYTES: usize = 5 * 1024 * 1024;

/// One position's events and what its rows need.
pub struct Exported<'a> {
    pub position: &'a str,
    pub chain: Chain,
    /// Protocol order.
    pub tokens: &'a [HeldToken; 2],
    /// Its farm's reward token, where known.
    pub reward: Option<&'a HeldToken>,
    /// In chain order, from the first stored.
    pub events: &'a [PositionEvent],
    /// The wallet holding it, and whether its owner only watches that address (no signature).
    pub wallet: &'a str,
    pub watched: bool,
    /// Its owner's wallets on its chain: a move between two of them starts no new count.
    pub own: &'a [String],
    /// The principal the transfer that started its count brought (its history summary's).
    pub arrived_with: Option<[U256; 2]>,
}

/// What a movement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    /// Into the position: sent from the wallet.
    Deposit,
    /// What a position brought that arrived without the holder's transaction: received.
    Arrival,
    /// Principal paid back: received.
    Principal,
    /// Fees paid: income.
    Fees,
    /// A farm's reward: income.
    Reward,
    /// A transaction's gas alone: no token moved.
    Gas,
}

/// One token moving to or from the wallet in one event.
struct Movement<'a> {
    event: &'a PositionEvent,
    exported: &'a Exported<'a>,
    time: DateTime<Utc>,
    what: What,
    token: &'a HeldToken,
    raw: U256,
    price: Option<&'a BigDecimal>,
    /// Wei its transaction cost the wallet, on the transaction's first row.
    gas: Option<U256>,
}

impl Movement<'_> {
    fn amount(&self) -> BigDecimal {
        base_units_to_decimal(self.raw, self.token.decimals)
    }

    fn usd(&self) -> Option<BigDecimal> {
        self.price.map(|p| self.amount() * p)
    }
}

/// What arrived with `event` without the holder's own transaction, if it is such an arrival:
/// the transfer that started the count (the principal it brought and the withdrawn principal
/// still owed with it: what its summary counts as deposited), or a deposit the holder did not
/// act in (a stranger's mint to the wallet, or liquidity a stranger added).
fn arrived(
    exported: &Exported<'_>,
    event: &PositionEvent,
    (starts, before): (bool, &Ledger),
) -> Option<[U256; 2]> {
    match event.kind {
        EventKind::Transfer if starts => exported
            .arrived_with
            .map(|held| [0, 1].map(|t| held[t] + before.uncollected_principal[t])),
        EventKind::Deposit if event.acted == Some(false) => Some(event.amounts),
        _ => None,
    }
}

/// The movements of one position's events whose time is within `[from, to)`, from where its
/// holder's count starts.
fn movements<'a>(exported: &'a Exported<'a>, (from, to): (i64, i64)) -> Vec<Movement<'a>> {
    let mut ledger = Ledger::default();
    let mut out: Vec<Movement<'a>> = Vec::new();
    let counted = counted_for(exported.events, exported.own, exported.wallet);
    let Some(start) = count_start(&counted, exported.wallet) else {
        return out;
    };
    // Sent away, to another than the owner's wallets: what follows is another holder's.
    let end = count_end(&counted, start, exported.wallet).unwrap_or(usize::MAX);
    // A transaction's gas, until a row of it carries it: a row of its own otherwise.
    let mut gas: Option<Movement<'a>> = None;
    for (i, event) in exported.events.iter().enumerate() {
        if gas
            .as_ref()
            .is_some_and(|g| g.event.transaction != event.transaction)
        {
            out.extend(gas.take());
        }
        let before = ledger.clone();
        ledger = ledger.then(event);
        let Some(time) = event
            .timestamp
            .and_then(|t| i64::try_from(t).ok())
            .filter(|t| (from..to).contains(t) && (start..=end).contains(&i))
            .and_then(|t| DateTime::from_timestamp(t, 0))
        else {
            continue;
        };
        let movement = |what: What, t: usize, raw: U256, token: &'a HeldToken| Movement {
            event,
            exported,
            time,
            what,
            token,
            raw,
            price: match what {
                What::Reward | What::Gas => None,
                _ => event.prices[t].as_ref(),
            },
            gas: None,
        };
        if let Some(wei) = event.gas {
            let alone = movement(What::Gas, 0, U256::ZERO, &exported.tokens[0]);
            gas = Some(Movement {
                gas: Some(wei),
                ..alone
            });
        }
        let mut moved = |what: What, t: usize, raw: U256, token: &'a HeldToken| {
            if !raw.is_zero() {
                let mut row = movement(what, t, raw, token);
                if gas
                    .as_ref()
                    .is_some_and(|g| g.event.transaction == event.transaction)
                {
                    row.gas = gas.take().and_then(|g| g.gas);
                }
                out.push(row);
            }
        };
        let arrival = arrived(exported, event, (i == start, &before));
        for t in 0..2 {
            let token = &exported.tokens[t];
            let fees = ledger.fees_collected[t] - before.fees_collected[t];
            let principal = ledger.principal_collected[t] - before.principal_collected[t];
            if let Some(brought) = arrival {
                moved(What::Arrival, t, brought[t], token);
                moved(What::Deposit, t, brought[t], token);
            } else if event.kind == EventKind::Deposit {
                moved(What::Deposit, t, event.amounts[t], token);
            }
            // A collect's (a Uniswap v4 modification's: any kind's) payment.
            moved(What::Principal, t, principal, token);
            moved(What::Fees, t, fees, token);
        }
        if let (EventKind::Harvest, Some(reward), Some(token)) =
            (event.kind, event.reward, exported.reward)
        {
            moved(What::Reward, 0, reward, token);
        }
    }
    out.extend(gas);
    out
}

/// The CSV of `positions`' movements within `[from, to)` (unix seconds), oldest first; `None`
/// past [`MAX_EXPORT_BYTES`].
pub fn export_csv(
    format: ExportFormat,
    positions: &[Exported<'_>],
    range: (i64, i64),
) -> Option<String> {
    let mut all: Vec<Movement<'_>> = positions.iter().flat_map(|p| movements(p, range)).collect();
    all.sort_by_key(|m| (m.time, m.event.block, m.event.log_index));
    let header = match format {
        ExportFormat::Koinly => KOINLY_HEADER,
        ExportFormat::CoinTracker => COINTRACKER_HEADER,
        ExportFormat::Ledger => LEDGER_HEADER,
    };
    let mut csv = format!("{header}\n");
    for m in &all {
        csv.push_str(&cells::row(format, m));
        if csv.len() > MAX_EXPORT_BYTES {
            return None;
        }
    }
    Some(csv)
}

#[cfg(test)]
mod tests;
