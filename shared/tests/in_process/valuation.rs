//! Sizing limits that keep every position valuable at any price of its range.

use shared::catalog::Catalog;
use shared::math::U256;
use shared::model::{Chain, Protocol, TokenPair};
use shared::valuation::ValuationError;
use std::str::FromStr;

fn units(whole: u64, decimals: u32) -> U256 {
    U256::from(whole) * U256::from(10u8).pow(U256::from(decimals))
}

#[test]
fn an_orca_offer_that_would_overflow_u64_at_a_range_end_is_refused() {
    let catalog = Catalog::embedded();
    let pool = catalog
        .find(
            Chain::Solana,
            Protocol::OrcaWhirlpools,
            "Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE",
        )
        .unwrap();
    let price = |p: &str| bigdecimal::BigDecimal::from_str(p).unwrap();
    let (low, high) = pool.snap_range(&price("100"), &price("200")).unwrap();
    // Within the form's digit limits, but below the range it would all be SOL: ~7e19
    // lamports, past u64.
    let offered = TokenPair {
        a: units(9_999_999_999, 9),
        b: units(9_999_999_999_999, 6),
    };
    match pool.size_deposit(low, high, offered) {
        Err(ValuationError::Rejected(message)) => assert!(message.contains("amount type")),
        other => panic!("{other:?}"),
    }
    // A tenth of the SOL and a thousandth of the USDC fit: both range ends are valued.
    let fits = TokenPair {
        a: units(999_999_999, 9),
        b: units(9_999_999_999, 6),
    };
    let deposit = pool.size_deposit(low, high, fits).unwrap();
    let curve = pool.curve();
    let (sqrt_a, sqrt_b) = (
        curve.sqrt_price_at_tick(low).unwrap(),
        curve.sqrt_price_at_tick(high).unwrap(),
    );
    for end in [sqrt_a, sqrt_b] {
        let held = curve.amounts_for_liquidity(end, sqrt_a, sqrt_b, deposit.liquidity, true);
        assert!(held.is_ok(), "{held:?}");
    }
}
