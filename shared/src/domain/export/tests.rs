//! The export's rows, checked in each format.

use super::cells::{field, formula, line};
use super::*;
use crate::domain::history::Priced;

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

#[test]
fn a_position_sent_away_ends_the_holders_rows() {
    let tokens = [token("WETH", 18), token("USDC", 6)];
    // Minted and deposited by the wallet, sent to a stranger, who withdraws and collects.
    let mut away = event(EventKind::Transfer, 3, [0, 0]);
    (away.from, away.to) = (Some(WALLET.into()), Some(STRANGER.into()));
    let events = [
        minted(1, WALLET),
        event(EventKind::Deposit, 1, [10, 20]),
        away,
        event(EventKind::Withdraw, 4, [10, 20]),
        event(EventKind::Collect, 4, [11, 21]),
    ];
    let sent = [held(Chain::Base, &tokens, None, &events)];
    let ledger = export_csv(ExportFormat::Ledger, &sent, (0, i64::MAX)).unwrap();
    let kinds: Vec<&str> = ledger
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(6).unwrap())
        .collect();
    assert_eq!(kinds, ["deposit", "deposit"], "{ledger}");
}
