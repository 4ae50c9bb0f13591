//! The caller's position events as a CSV a tax tool imports (`GET /history/export`): one row
//! per token movement. A deposit is a send; the principal a withdrawal paid back a receive;
//! the fee part of a collect (apart from its principal, principal first as the ledger counts)
//! and a farm's harvest are income. The rows start where the holder's count starts (its mint
//! to the wallet, or the transfer that brought it: `history::count_start`, as the position's
//! figures do): what a previous holder did is not the caller's. A position that arrived
//! without the holder's own transaction (a transfer in, a stranger's mint or deposit) is an
//! arrival: what it brought received as an airdrop (Koinly `Airdrop`, CoinTracker
//! `airdrop`), and sent into the position as the holder's own deposit is (decision 69).
//! Transfers of the position NFT move no token: no row. The gas a transaction cost the
//! caller's wallet (kept on its first event) is in the fee columns of its first row, in the
//! chain's native currency; a transaction that moved no token (a stake, a transfer) has a row
//! of its fee alone. Where the receipt was not read, the fee columns stay empty. Every cell is
//! written by the `csv` crate, and one a spreadsheet would run as a formula is made inert.

use crate::domain::history::{count_start, counted_for, EventKind, Ledger, PositionEvent, Priced};
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
            .filter(|t| (from..to).contains(t) && i >= start)
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

/// Whether a spreadsheet would run `text` as a formula (OWASP's CSV injection rule): what
/// begins with `=`, `+`, `-`, `@`, a tab or a carriage return.
fn formula(text: &str) -> bool {
    text.starts_with(['=', '+', '-', '@', '\t', '\r'])
}

/// One cell as the `csv` crate writes it: quoted where it must be, and a formula made inert
/// (a leading `'`, and quoted: OWASP's rule), whoever wrote it (a token's symbol is anyone's).
fn field(text: &str) -> String {
    if text.is_empty() {
        // The crate writes a record of one empty cell as `""`: a cell among others is empty.
        return String::new();
    }
    let inert = formula(text);
    let style = if inert {
        csv::QuoteStyle::Always
    } else {
        csv::QuoteStyle::Necessary
    };
    let mut writer = csv::WriterBuilder::new()
        .quote_style(style)
        .terminator(csv::Terminator::Any(b'\n'))
        .buffer_capacity(2 * text.len() + 8)
        .from_writer(Vec::new());
    let cell = if inert {
        format!("'{text}")
    } else {
        text.to_string()
    };
    // The cell as a record of its own (the crate closes a quote at the record's end); a `Vec`
    // takes every write: neither step can fail.
    let bytes = writer
        .write_record([cell])
        .ok()
        .and_then(|()| writer.into_inner().ok())
        .unwrap_or_default();
    let record = String::from_utf8(bytes).unwrap_or_default();
    record.strip_suffix('\n').unwrap_or(&record).to_string()
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
            m.exported.chain.native_symbol().to_string(),
        ),
        None => Default::default(),
    };
    let kind = match m.what {
        What::Deposit => "deposit",
        What::Arrival => "arrival",
        What::Principal => "principal",
        What::Fees => "fees",
        What::Reward => "reward",
        What::Gas => "gas",
    };
    let exported = m.exported;
    let watched = if exported.watched {
        format!(" (held by {}, an address only watched)", exported.wallet)
    } else {
        String::new()
    };
    let description = format!(
        "{} {kind} of position {} on {}{watched}",
        m.event.kind.as_str(),
        exported.position,
        exported.chain
    );
    let hash = m.event.transaction.clone();
    match format {
        ExportFormat::Koinly => {
            let label = match m.what {
                What::Fees | What::Reward => "Reward",
                What::Arrival => "Airdrop",
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
                What::Arrival => "airdrop",
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
                exported.chain.to_string(),
                m.event.block.to_string(),
                hash,
                m.event.log_index.to_string(),
                m.time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                exported.position.to_string(),
            ];
            let holder = [exported.wallet.to_string(), exported.watched.to_string()];
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
                lines += &line(&[&at[..], &moved[..], &holder[..]].concat());
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
                lines += &line(&[&at[..], &paid[..], &holder[..]].concat());
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
            acted: None,
            paid: None,
            prices: [Some(BigDecimal::from(2)), None],
            priced: Some(Priced::AtBlock),
            kept: None,
        }
    }

    const WALLET: &str = "0x00000000000000000000000000000000000000a1";
    const STRANGER: &str = "0x00000000000000000000000000000000000000b2";

    /// The mint of the position to `to`, in the transaction of block `at`.
    fn minted(at: u64, to: &str) -> PositionEvent {
        let mut mint = event(EventKind::Mint, at, [0, 0]);
        mint.to = Some(to.into());
        mint
    }

    /// `events` of position "P" held by [`WALLET`], linked.
    fn held<'a>(
        chain: Chain,
        tokens: &'a [HeldToken; 2],
        reward: Option<&'a HeldToken>,
        events: &'a [PositionEvent],
    ) -> Exported<'a> {
        Exported {
            position: "P",
            chain,
            tokens,
            reward,
            events,
            wallet: WALLET,
            watched: false,
            own: &[],
            arrived_with: None,
        }
    }

    #[test]
    fn a_collect_pays_principal_first_then_income_in_each_format() {
        let tokens = [token("WETH", 18), token("USDC", 6)];
        let mut harvest = event(EventKind::Harvest, 4, [0, 0]);
        harvest.reward = Some(U256::from(5u8));
        let events = [
            minted(1, WALLET),
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
        let of = |reward| held(Chain::Bsc, &tokens, reward, &events);
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
        let mut mint = minted(1, WALLET);
        mint.gas = Some(U256::from(1_500_000_000_000_000u64));
        let deposit = event(EventKind::Deposit, 1, [2_000_000_000_000_000_000, 0]);
        let mut stake = event(EventKind::Stake, 2, [0, 0]);
        stake.gas = Some(U256::from(7u8));
        let events = [mint, deposit, stake];
        let exported = || held(Chain::Bsc, &tokens, None, &events);
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
            lines[2].ends_with(&format!(
                ",gas,sent,,BNB,1500000000000000,18,0.0015,,,,{WALLET},false"
            )),
            "{ledger}"
        );
        assert!(
            lines[3].ends_with(&format!(
                ",gas,sent,,BNB,7,18,0.000000000000000007,,,,{WALLET},false"
            )),
            "{ledger}"
        );
    }

    #[test]
    fn an_export_past_its_limit_is_refused_whole() {
        let tokens = [token("WETH", 18), token("USDC", 6)];
        let events: Vec<PositionEvent> = std::iter::once(minted(0, WALLET))
            .chain((0..20_000).map(|i| event(EventKind::Deposit, i, [1, 1])))
            .collect();
        let exported = held(Chain::Base, &tokens, None, &events);
        assert_eq!(
            export_csv(ExportFormat::Koinly, &[exported], (0, i64::MAX)),
            None
        );
        let few = held(Chain::Base, &tokens, None, &events[..10]);
        assert!(export_csv(ExportFormat::Koinly, &[few], (0, i64::MAX)).is_some());
    }

    #[test]
    fn fields_are_quoted_where_they_must_be() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(field("line\nend"), "\"line\nend\"");
        assert_eq!(field("plain"), "plain");
        assert_eq!(field(""), "");
        assert_eq!(line(&["".into(), "".into()]), ",\n");
    }

    #[test]
    fn a_formula_from_a_chain_is_inert_in_every_format() {
        assert_eq!(
            field("=HYPERLINK(\"http://x.co\",\"a\")"),
            "\"'=HYPERLINK(\"\"http://x.co\"\",\"\"a\"\")\""
        );
        assert_eq!(field("+cmd|' /C calc'!A0"), "\"'+cmd|' /C calc'!A0\"");
        for text in ["@SUM(1+1)", "-2+3", "\t=1", "\r=1"] {
            assert_eq!(field(text), format!("\"'{text}\""));
        }
        let hostile = ["=HYPERLINK(\"http://x.co\",\"a\")", "@SUM(1+1)"];
        let tokens = hostile.map(|symbol| HeldToken {
            symbol: symbol.into(),
            address: "0x01".into(),
            decimals: 0,
        });
        let events = [minted(1, WALLET), event(EventKind::Deposit, 1, [5, 7])];
        for format in [
            ExportFormat::Koinly,
            ExportFormat::CoinTracker,
            ExportFormat::Ledger,
        ] {
            let csv = export_csv(
                format,
                &[held(Chain::Base, &tokens, None, &events)],
                (0, i64::MAX),
            )
            .unwrap();
            let mut reader = csv::ReaderBuilder::new().from_reader(csv.as_bytes());
            let mut cells = 0;
            for record in reader.records() {
                for cell in record.unwrap().iter() {
                    assert!(!formula(cell), "{format}: {cell} in {csv}");
                    cells += usize::from(hostile.iter().any(|h| cell == format!("'{h}")));
                }
            }
            assert_eq!(cells, 2, "{format}: {csv}");
        }
    }

    #[test]
    fn the_rows_are_the_holders_own_from_where_its_count_starts() {
        let tokens = [token("WETH", 18), token("USDC", 6)];
        // A stranger's mint and deposit, its fees collected, then a transfer to the wallet
        // (bringing 4 and 9), then the wallet's own collect.
        let mut transfer = event(EventKind::Transfer, 4, [0, 0]);
        (transfer.from, transfer.to) = (Some(STRANGER.into()), Some(WALLET.into()));
        let events = [
            minted(1, STRANGER),
            event(EventKind::Deposit, 1, [10, 20]),
            event(EventKind::Collect, 2, [1, 1]),
            transfer,
            event(EventKind::Withdraw, 5, [4, 9]),
            event(EventKind::Collect, 5, [4, 9]),
        ];
        let mut came = held(Chain::Base, &tokens, None, &events);
        came.arrived_with = Some([U256::from(4u8), U256::from(9u8)]);
        let came = [came];
        let ledger = export_csv(ExportFormat::Ledger, &came, (0, i64::MAX)).unwrap();
        let rows: Vec<Vec<String>> = ledger
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(String::from).collect())
            .collect();
        let kinds: Vec<(&str, &str, &str)> = rows
            .iter()
            .map(|r| (r[1].as_str(), r[6].as_str(), r[10].as_str()))
            .collect();
        // Nothing of the stranger's: the arrival received and put in, then the principal back.
        assert_eq!(
            kinds,
            [
                ("4", "arrival", "4"),
                ("4", "deposit", "4"),
                ("4", "arrival", "9"),
                ("4", "deposit", "9"),
                ("5", "principal", "4"),
                ("5", "principal", "9"),
            ],
            "{ledger}"
        );
        let koinly = export_csv(ExportFormat::Koinly, &came, (0, i64::MAX)).unwrap();
        let first = koinly.lines().nth(1).unwrap();
        assert!(first.contains(",,,0.000000000000000004,WETH,"), "{koinly}");
        assert!(
            first.contains(",Airdrop,transfer arrival of position P"),
            "{koinly}"
        );

        // A stranger's mint straight to the wallet: an arrival, not the wallet's deposit.
        let mut stranger = events[1].clone();
        stranger.acted = Some(false);
        let mut own = event(EventKind::Deposit, 3, [2, 3]);
        own.acted = Some(true);
        let events = [minted(1, WALLET), stranger, own];
        let gift = held(Chain::Base, &tokens, None, &events);
        let tracker = export_csv(ExportFormat::CoinTracker, &[gift], (0, i64::MAX)).unwrap();
        let tags: Vec<&str> = tracker
            .lines()
            .skip(1)
            .map(|l| l.rsplit(',').next().unwrap())
            .collect();
        assert_eq!(tags, ["airdrop", "", "airdrop", "", "", ""], "{tracker}");

        // A position its holder only watches says so in every row.
        let mut watched = held(Chain::Base, &tokens, None, &events);
        watched.watched = true;
        let ledger = export_csv(ExportFormat::Ledger, &[watched], (0, i64::MAX)).unwrap();
        assert!(
            ledger
                .lines()
                .skip(1)
                .all(|l| l.ends_with(&format!(",{WALLET},true"))),
            "{ledger}"
        );
    }
}
