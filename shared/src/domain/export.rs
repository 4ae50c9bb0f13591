//! The caller's position events as a CSV a tax tool imports (`GET /history/export`): one row
//! per token movement. A deposit is a send; the principal a withdrawal paid back a receive;
//! the fee part of a collect (apart from its principal, principal first as the ledger counts)
//! and a farm's harvest are income. Transfers of the position NFT move no token: no row (a
//! transfer between the caller's own wallets is not taxable; one to a stranger is left to the
//! tool, as the NFT is no currency it knows). The gas a transaction cost the caller's wallet
//! (kept on its first event) is in the fee columns of its first row, in the chain's native
//! currency; a transaction that moved no token (a stake, a transfer) has a row of its fee
//! alone. Where the receipt was not read, the fee columns stay empty.

use crate::domain::history::{EventKind, Ledger, PositionEvent, Priced};
use crate::domain::json::plain_exact;
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
/// Ours, lossless: every figure as stored.
pub const LEDGER_HEADER: &str = "chain,block,transaction,logIndex,time,position,kind,direction,token,symbol,rawAmount,decimals,amount,usdPrice,usdPriceSource,usdValue";

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
}

/// What a movement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    /// Into the position: sent from the wallet.
    Deposit,
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
    position: &'a str,
    chain: Chain,
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

/// The movements of one position's events whose time is within `[from, to)`.
fn movements<'a>(exported: &Exported<'a>, (from, to): (i64, i64)) -> Vec<Movement<'a>> {
    let mut ledger = Ledger::default();
    let mut out: Vec<Movement<'a>> = Vec::new();
    // A transaction's gas, until a row of it carries it: a row of its own otherwise.
    let mut gas: Option<Movement<'a>> = None;
    for event in exported.events {
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
            .filter(|t| (from..to).contains(t))
            .and_then(|t| DateTime::from_timestamp(t, 0))
        else {
            continue;
        };
        let movement = |what: What, t: usize, raw: U256, token: &'a HeldToken| Movement {
            event,
            position: exported.position,
            chain: exported.chain,
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
        for t in 0..2 {
            let token = &exported.tokens[t];
            let fees = ledger.fees_collected[t] - before.fees_collected[t];
            let principal = ledger.principal_collected[t] - before.principal_collected[t];
            if event.kind == EventKind::Deposit {
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

/// A CSV field, quoted where it must be.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn line(fields: &[String]) -> String {
    let fields: Vec<String> = fields.iter().map(|f| field(f)).collect();
    fields.join(",") + "\n"
}

fn row(format: ExportFormat, m: &Movement<'_>) -> String {
    let amount = plain_exact(&m.amount());
    let symbol = m.token.symbol.clone();
    let usd = m
        .usd()
        .map(|u| plain_exact(&u.round(2)))
        .unwrap_or_default();
    let sent = m.what == What::Deposit;
    let (out_amount, out_symbol, in_amount, in_symbol) = match m.what {
        What::Gas => Default::default(),
        What::Deposit => (amount.clone(), symbol.clone(), String::new(), String::new()),
        _ => (String::new(), String::new(), amount.clone(), symbol.clone()),
    };
    let (fee, fee_symbol) = match m.gas {
        // Wei: 18 decimals on every EVM chain served.
        Some(wei) => (
            plain_exact(&base_units_to_decimal(wei, 18)),
            m.chain.native_symbol().to_string(),
        ),
        None => Default::default(),
    };
    let kind = match m.what {
        What::Deposit => "deposit",
        What::Principal => "principal",
        What::Fees => "fees",
        What::Reward => "reward",
        What::Gas => "gas",
    };
    let description = format!(
        "{} {kind} of position {} on {}",
        m.event.kind.as_str(),
        m.position,
        m.chain
    );
    let hash = m.event.transaction.clone();
    match format {
        ExportFormat::Koinly => {
            let label = match m.what {
                What::Fees | What::Reward => "Reward",
                _ => "",
            };
            let date = m.time.format("%Y-%m-%d %H:%M UTC").to_string();
            let worth = if usd.is_empty() { "" } else { "USD" };
            line(&[
                date,
                out_amount,
                out_symbol,
                in_amount,
                in_symbol,
                fee,
                fee_symbol,
                usd,
                worth.into(),
                label.into(),
                description,
                hash,
            ])
        }
        ExportFormat::CoinTracker => {
            let tag = match m.what {
                What::Fees => "interest",
                What::Reward => "staking",
                _ => "",
            };
            let date = m.time.format("%m/%d/%Y %H:%M:%S").to_string();
            line(&[
                date,
                in_amount,
                in_symbol,
                out_amount,
                out_symbol,
                fee,
                fee_symbol,
                tag.into(),
            ])
        }
        ExportFormat::Ledger => {
            let source = match m.event.priced {
                Some(Priced::Nearest) => "nearest state",
                Some(_) if m.price.is_some() => "its block",
                _ => "",
            };
            let at = [
                m.chain.to_string(),
                m.event.block.to_string(),
                hash,
                m.event.log_index.to_string(),
                m.time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                m.position.to_string(),
            ];
            let mut lines = String::new();
            if m.what != What::Gas {
                let moved = [
                    kind.into(),
                    if sent { "sent" } else { "received" }.into(),
                    m.token.address.clone(),
                    symbol,
                    m.raw.to_string(),
                    m.token.decimals.to_string(),
                    amount,
                    m.price.map(plain_exact).unwrap_or_default(),
                    source.into(),
                    m.usd().map(|u| plain_exact(&u)).unwrap_or_default(),
                ];
                lines += &line(&[&at[..], &moved[..]].concat());
            }
            // Lossless: the gas a row of its own, in wei (the native currency has no address).
            if let Some(wei) = m.gas {
                let paid = [
                    "gas".into(),
                    "sent".into(),
                    String::new(),
                    fee_symbol,
                    wei.to_string(),
                    "18".into(),
                    fee,
                    String::new(),
                    String::new(),
                    String::new(),
                ];
                lines += &line(&[&at[..], &paid[..]].concat());
            }
            lines
        }
    }
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
        csv.push_str(&row(format, m));
        if csv.len() > MAX_EXPORT_BYTES {
            return None;
        }
    }
    Some(csv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(symbol: &str, decimals: u8) -> HeldToken {
        HeldToken {
            symbol: symbol.into(),
            address: format!("0x{symbol}"),
            decimals,
        }
    }

    fn event(kind: EventKind, at: u64, amounts: [u64; 2]) -> PositionEvent {
        PositionEvent {
            kind,
            block: at,
            block_hash: String::new(),
            transaction: format!("0x{at:064x}"),
            log_index: 0,
            liquidity: 0,
            amounts: amounts.map(U256::from),
            from: None,
            to: None,
            timestamp: Some(1_780_000_000 + at * 3600),
            reward: None,
            gas: None,
            paid: None,
            prices: [Some(BigDecimal::from(2)), None],
            priced: Some(Priced::AtBlock),
            kept: None,
        }
    }

    #[test]
    fn a_collect_pays_principal_first_then_income_in_each_format() {
        let tokens = [token("WETH", 18), token("USDC", 6)];
        let mut harvest = event(EventKind::Harvest, 4, [0, 0]);
        harvest.reward = Some(U256::from(5u8));
        let events = [
            event(
                EventKind::Deposit,
                1,
                [3_000_000_000_000_000_000, 5_000_000],
            ),
            event(
                EventKind::Withdraw,
                2,
                [1_000_000_000_000_000_000, 2_000_000],
            ),
            // 1 WETH and 2 USDC of principal, then 0.5 WETH and 0.25 USDC of fees.
            event(
                EventKind::Collect,
                3,
                [1_500_000_000_000_000_000, 2_250_000],
            ),
            harvest,
        ];
        let cake = token("CAKE", 18);
        let of = |reward| Exported {
            position: "P",
            chain: Chain::Bsc,
            tokens: &tokens,
            reward,
            events: &events,
        };
        let all = (0, i64::MAX);
        let koinly = export_csv(ExportFormat::Koinly, &[of(Some(&cake))], all).unwrap();
        let lines: Vec<&str> = koinly.lines().collect();
        assert_eq!(lines[0], KOINLY_HEADER);
        // Deposit (2 rows), the withdrawal pays nothing yet, the collect 4 rows, the harvest 1.
        assert_eq!(lines.len(), 1 + 2 + 4 + 1, "{koinly}");
        assert_eq!(lines[1], "2026-05-28 21:26 UTC,3,WETH,,,,,6,USD,,deposit deposit of position P on bsc,0x0000000000000000000000000000000000000000000000000000000000000001");
        assert!(
            lines[3].contains(",,,1,WETH,,,2,USD,,collect principal"),
            "{}",
            lines[3]
        );
        assert!(
            lines[4].contains(",,,0.5,WETH,,,1,USD,Reward,collect fees"),
            "{}",
            lines[4]
        );
        assert!(
            lines[6].contains(",,,0.25,USDC,,,,,Reward,"),
            "{}",
            lines[6]
        );
        assert!(
            lines[7].contains(",,,0.000000000000000005,CAKE,,,,,Reward,harvest reward"),
            "{}",
            lines[7]
        );
        let tracker = export_csv(ExportFormat::CoinTracker, &[of(Some(&cake))], all).unwrap();
        let lines: Vec<&str> = tracker.lines().collect();
        assert_eq!(lines[0], COINTRACKER_HEADER);
        assert_eq!(lines[1], "05/28/2026 21:26:40,,,3,WETH,,,");
        assert!(lines[4].ends_with(",0.5,WETH,,,,,interest"), "{}", lines[4]);
        assert!(lines[7].ends_with(",staking"), "{}", lines[7]);
        // Within a range: only the collect's hour.
        let at = |h: i64| 1_780_000_000 + h * 3600;
        let ledger = export_csv(ExportFormat::Ledger, &[of(None)], (at(3), at(4))).unwrap();
        let lines: Vec<&str> = ledger.lines().collect();
        assert_eq!(lines[0], LEDGER_HEADER);
        assert_eq!(lines.len(), 5, "{ledger}");
        assert!(
            lines[2].contains(",fees,received,0xWETH,WETH,500000000000000000,18,0.5,2,its block,1"),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn gas_is_in_the_fee_columns_of_its_transactions_first_row() {
        let tokens = [token("WETH", 18), token("USDC", 6)];
        // A mint (no token moves) and its deposit in one transaction; a stake alone.
        let mut mint = event(EventKind::Mint, 1, [0, 0]);
        mint.gas = Some(U256::from(1_500_000_000_000_000u64));
        let deposit = event(EventKind::Deposit, 1, [2_000_000_000_000_000_000, 0]);
        let mut stake = event(EventKind::Stake, 2, [0, 0]);
        stake.gas = Some(U256::from(7u8));
        let events = [mint, deposit, stake];
        let exported = || Exported {
            position: "P",
            chain: Chain::Bsc,
            tokens: &tokens,
            reward: None,
            events: &events,
        };
        let all = (0, i64::MAX);
        let koinly = export_csv(ExportFormat::Koinly, &[exported()], all).unwrap();
        let lines: Vec<&str> = koinly.lines().collect();
        assert_eq!(lines.len(), 3, "{koinly}");
        assert!(
            lines[1].contains(",2,WETH,,,0.0015,BNB,4,USD,,deposit"),
            "{koinly}"
        );
        assert!(
            lines[2].contains(",,,,,0.000000000000000007,BNB,,,,staked gas"),
            "{koinly}"
        );
        let tracker = export_csv(ExportFormat::CoinTracker, &[exported()], all).unwrap();
        assert!(
            tracker
                .lines()
                .nth(1)
                .unwrap()
                .ends_with(",2,WETH,0.0015,BNB,"),
            "{tracker}"
        );
        let ledger = export_csv(ExportFormat::Ledger, &[exported()], all).unwrap();
        let lines: Vec<&str> = ledger.lines().collect();
        assert_eq!(lines.len(), 4, "{ledger}");
        assert!(
            lines[2].ends_with(",gas,sent,,BNB,1500000000000000,18,0.0015,,,"),
            "{ledger}"
        );
        assert!(
            lines[3].ends_with(",gas,sent,,BNB,7,18,0.000000000000000007,,,"),
            "{ledger}"
        );
    }

    #[test]
    fn an_export_past_its_limit_is_refused_whole() {
        let tokens = [token("WETH", 18), token("USDC", 6)];
        let events: Vec<PositionEvent> = (0..20_000)
            .map(|i| event(EventKind::Deposit, i, [1, 1]))
            .collect();
        let exported = Exported {
            position: "P",
            chain: Chain::Base,
            tokens: &tokens,
            reward: None,
            events: &events,
        };
        assert_eq!(
            export_csv(ExportFormat::Koinly, &[exported], (0, i64::MAX)),
            None
        );
        let few = Exported {
            position: "P",
            chain: Chain::Base,
            tokens: &tokens,
            reward: None,
            events: &events[..10],
        };
        assert!(export_csv(ExportFormat::Koinly, &[few], (0, i64::MAX)).is_some());
    }

    #[test]
    fn fields_are_quoted_where_they_must_be() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(field("plain"), "plain");
    }
}
