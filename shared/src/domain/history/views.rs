//! A position's history as the API shows it: the history's figures beside a wallet position's,
//! and its events for `GET /positions/{id}/history`.

use super::events::{EventKind, Ledger, PositionEvent, Priced};
use super::summary::{units, usd_of, HistorySummary};
use crate::domain::json::{plain_exact, Percent, Usd};
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::U256;
use serde::Serialize;

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
    /// A harvest: base units of the farm's reward token it paid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reward: Option<String>,
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
            // A Uniswap v4 modification paid its fees out beside its principal (`amount`).
            let principal = match event.paid {
                Some(_) => amounts[t],
                None => amounts[t] - fees[t],
            };
            let paid = collect || event.paid.is_some();
            EventTokenView {
                amount: whole(amounts[t]),
                value_usd: usd.map(Usd::new),
                principal: paid.then(|| whole(principal)),
                fees: paid.then(|| whole(fees[t])),
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
            reward: event.reward.map(|r| r.to_string()),
        });
    }
    views
}
