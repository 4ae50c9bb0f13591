//! The inputs of the use cases that take more than an id: what the edge reads from a request
//! (with the checks that need no store) and hands on.

use crate::application::error::{Outcome, UseCaseError};
use crate::domain::math::U256;
use crate::domain::model::{Chain, Protocol};
use bigdecimal::BigDecimal;

/// What an on-chain open or close is built with: the wallet's tolerance of price moves and how
/// long its transactions stay valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderLimits {
    pub slippage_bps: u32,
    pub deadline_seconds: u32,
    /// `"permit": "signature"`: a Uniswap v4 open or add gives Permit2's allowances by one
    /// signed batch rather than a transaction per token (decision 67).
    pub permit_signature: bool,
    /// `"swap": true`: an open, an increase or a move swaps part of the offer on the pool to
    /// the range's ratio first, through the deployment's SwapRouter02 (issue 63).
    pub swap: bool,
}

/// A create request that passed every check that needs no catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateRequest {
    pub chain: Chain,
    pub protocol: Protocol,
    pub pool: String,
    pub amount_a: String,
    pub amount_b: String,
    pub price_lower: BigDecimal,
    pub price_upper: BigDecimal,
    /// The linked wallet to open from (as sent) and its limits; `None`: simulated.
    pub on_chain: Option<(String, OrderLimits)>,
}

/// Parses a plain decimal amount of whole tokens into base units: digits with an optional
/// fraction of at most `decimals` digits, no sign, no exponent, at most `max` base units.
pub fn parse_amount(text: &str, decimals: u8, max: U256, name: &str) -> Outcome<U256> {
    let (int, frac) = match text.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (text, None),
    };
    let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !plain(int) || !frac.is_none_or(plain) {
        return Err(UseCaseError::bad_request(format!(
            "{name} must be a plain decimal number such as \"1.5\""
        )));
    }
    let frac = frac.unwrap_or("");
    if frac.len() > usize::from(decimals) {
        return Err(UseCaseError::bad_request(format!(
            "{name} has more than {decimals} decimal places"
        )));
    }
    let too_large = || UseCaseError::bad_request(format!("{name} exceeds {max} base units"));
    let ten = U256::from(10u8);
    let mut value = U256::ZERO;
    let padded = frac.bytes().chain(std::iter::repeat_n(
        b'0',
        usize::from(decimals) - frac.len(),
    ));
    for digit in int.bytes().chain(padded) {
        value = value
            .checked_mul(ten)
            .and_then(|v| v.checked_add(U256::from(digit - b'0')))
            .filter(|v| *v <= max)
            .ok_or_else(too_large)?;
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_plain_decimals_within_decimals_and_bounds() {
        let max = U256::from(u128::MAX);
        assert_eq!(
            parse_amount("1.5", 6, max, "amountA").unwrap(),
            U256::from(1_500_000u32)
        );
        assert_eq!(parse_amount("0", 6, max, "amountA").unwrap(), U256::ZERO);
        assert_eq!(
            parse_amount("007", 0, max, "amountA").unwrap(),
            U256::from(7u8)
        );
        assert_eq!(
            parse_amount("0.000001", 6, max, "amountA").unwrap(),
            U256::from(1u8)
        );
        for bad in [
            "", "-1", "+1", "1e3", "1.", ".5", "1.2.3", "abc", " 1", "1,5", "١",
        ] {
            assert!(parse_amount(bad, 6, max, "amountA").is_err(), "{bad:?}");
        }
        assert!(parse_amount("0.0000001", 6, max, "amountA").is_err());
        let top = u128::MAX.to_string();
        assert_eq!(parse_amount(&top, 0, max, "amountA").unwrap(), max);
        let over = "340282366920938463463374607431768211456";
        assert!(parse_amount(over, 0, max, "amountA").is_err());
        assert!(parse_amount(&"9".repeat(70_000), 0, max, "amountA").is_err());
    }
}
