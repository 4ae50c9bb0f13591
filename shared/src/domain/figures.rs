//! A position's USD figures as exact decimals and the formulas between them: principal, fees,
//! value, impermanent loss against HODL, PnL and fee APR (decision 28).

use bigdecimal::{BigDecimal, Zero};

/// Seconds in the year the APR annualizes to.
const YEAR_SECONDS: i64 = 365 * 24 * 60 * 60;
/// Before this age an APR is noise: it is `null`.
const APR_MIN_AGE_SECONDS: i64 = 60 * 60;

/// `part` as a percentage of `whole`; 0 of nothing.
pub fn percent_of(part: &BigDecimal, whole: &BigDecimal) -> BigDecimal {
    if whole.is_zero() {
        BigDecimal::zero()
    } else {
        part * BigDecimal::from(100) / whole
    }
}

/// A position's USD figures, exact: the view rounds them once when written, the portfolio sums
/// them as they are.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// What the liquidity holds, per token.
    pub principal_a: BigDecimal,
    pub principal_b: BigDecimal,
    /// Fees earned, per token.
    pub fees_a: BigDecimal,
    pub fees_b: BigDecimal,
    /// The deposited amounts at today's prices, when they are known.
    pub hodl: Option<BigDecimal>,
    pub cost_basis: BigDecimal,
}

impl Figures {
    pub fn principal(&self) -> BigDecimal {
        &self.principal_a + &self.principal_b
    }

    pub fn fees(&self) -> BigDecimal {
        &self.fees_a + &self.fees_b
    }

    /// Principal plus fees.
    pub fn value(&self) -> BigDecimal {
        self.principal() + self.fees()
    }

    /// Principal minus HODL: what providing liquidity cost against holding, before fees.
    pub fn impermanent_loss(&self) -> Option<BigDecimal> {
        self.hodl.as_ref().map(|hodl| self.principal() - hodl)
    }

    /// Value minus cost basis.
    pub fn pnl(&self) -> BigDecimal {
        self.value() - &self.cost_basis
    }

    /// Fees over cost basis, annualized over the position's age in milliseconds; `None` before
    /// [`APR_MIN_AGE_SECONDS`] or without a cost basis.
    pub fn fee_apr(&self, age_millis: i64) -> Option<BigDecimal> {
        if age_millis < APR_MIN_AGE_SECONDS * 1000 || self.cost_basis.is_zero() {
            return None;
        }
        let year_millis = BigDecimal::from(YEAR_SECONDS * 1000);
        Some(
            self.fees() * year_millis * BigDecimal::from(100)
                / (&self.cost_basis * BigDecimal::from(age_millis)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(s: &str) -> BigDecimal {
        BigDecimal::from_str(s).unwrap()
    }

    fn figures() -> Figures {
        Figures {
            principal_a: d("1200"),
            principal_b: d("750.5"),
            fees_a: d("3.25"),
            fees_b: d("1.75"),
            hodl: Some(d("2000")),
            cost_basis: d("1900"),
        }
    }

    #[test]
    fn figures_follow_their_formulas() {
        let f = figures();
        assert_eq!(f.principal(), d("1950.5"));
        assert_eq!(f.fees(), d("5"));
        assert_eq!(f.value(), d("1955.5"));
        // Principal below HODL: a loss against holding, before fees.
        assert_eq!(f.impermanent_loss(), Some(d("-49.5")));
        assert_eq!(f.pnl(), d("55.5"));
        assert_eq!(percent_of(&f.pnl(), &f.cost_basis).round(6), d("2.921053"));
        let unknown = Figures { hodl: None, ..f };
        assert_eq!(unknown.impermanent_loss(), None);
        assert_eq!(percent_of(&d("5"), &d("0")), d("0"));
    }

    #[test]
    fn fee_apr_annualizes_and_waits_an_hour() {
        let f = figures();
        let hour = 3_600_000;
        assert_eq!(f.fee_apr(hour - 1), None);
        // 5 / 1900 in one hour: × 8760 hours × 100.
        assert_eq!(
            f.fee_apr(hour).unwrap().round(8),
            (d("5") * d("8760") * d("100") / d("1900")).round(8)
        );
        // 73 days are a fifth of a year: 5 USD on 1900 is 0.263…% so 1.315…% a year.
        let days_73 = 73 * 24 * hour;
        assert_eq!(f.fee_apr(days_73).unwrap().round(6), d("1.315789"));
        let free = Figures {
            cost_basis: d("0"),
            ..figures()
        };
        assert_eq!(free.fee_apr(days_73), None);
    }
}
