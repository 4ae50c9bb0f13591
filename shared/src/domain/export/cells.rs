//! One movement as a row of each format, every cell written by the `csv` crate and a formula
//! made inert.

use super::{ExportFormat, Movement, What};
use crate::domain::history::Priced;
use crate::domain::json::plain_exact;
use crate::domain::math::price::base_units_to_decimal;

/// Whether a spreadsheet would run `text` as a formula (OWASP's CSV injection rule): what
/// begins with `=`, `+`, `-`, `@`, a tab or a carriage return.
pub(super) fn formula(text: &str) -> bool {
    text.starts_with(['=', '+', '-', '@', '\t', '\r'])
}

/// One cell as the `csv` crate writes it: quoted where it must be, and a formula made inert
/// (a leading `'`, and quoted: OWASP's rule), whoever wrote it (a token's symbol is anyone's).
pub(super) fn field(text: &str) -> String {
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

pub(super) fn line(fields: &[String]) -> String {
    let fields: Vec<String> = fields.iter().map(|f| field(f)).collect();
    fields.join(",") + "\n"
}

pub(super) fn row(format: ExportFormat, m: &Movement<'_>) -> String {
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
