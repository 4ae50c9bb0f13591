//! Conversions between the API's human prices (tokenB per one tokenA, in whole tokens) and a
//! pool's raw sqrt price (token1 per token0, in base units), exact where it decides a tick.

use super::curve::Curve;
use super::num::U256;
use bigdecimal::num_bigint::{BigInt, BigUint, Sign};
use bigdecimal::BigDecimal;
use std::str::FromStr;

/// How a pool's tokens map onto the API's base/quote orientation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Orientation {
    pub curve: Curve,
    pub decimals0: u8,
    pub decimals1: u8,
    /// The API's tokenA (the base asset) is the protocol's token0.
    pub base_is_token0: bool,
}

impl Orientation {
    /// floor(sqrt(raw price) * 2^resolution) for a positive human price, clamped to what fits
    /// in 256 bits (callers clamp to the curve's tick range through the tick search).
    pub fn sqrt_price_of(&self, human: &BigDecimal) -> U256 {
        let (digits, scale) = human.as_bigint_and_exponent();
        let (sign, mantissa) = digits.into_parts();
        debug_assert!(sign == Sign::Plus, "prices are validated positive");
        // human = mantissa / 10^scale; raw = human^s * 10^decimals1 / 10^decimals0.
        let mut num = mantissa;
        let mut den = BigUint::from(1u8);
        if scale >= 0 {
            den *= pow10(scale as u64);
        } else {
            num *= pow10(scale.unsigned_abs());
        }
        if !self.base_is_token0 {
            std::mem::swap(&mut num, &mut den);
        }
        num *= pow10(u64::from(self.decimals1));
        den *= pow10(u64::from(self.decimals0));
        num <<= 2 * self.curve.resolution();
        let root = (num / den).sqrt();
        biguint_to_u256(&root).unwrap_or(U256::MAX)
    }

    /// The human price of a sqrt price as the nearest double of its exact value (for display
    /// of range bounds): the ratio sqrt^2 * 10^decimals0 / (2^(2*resolution) * 10^decimals1),
    /// inverted when tokenA is token1, rounded once, half to even.
    pub fn human_price_of(&self, sqrt_price: U256) -> f64 {
        let (num, den) = self.human_ratio(sqrt_price);
        nearest_f64(&num, &den)
    }

    /// [`Self::human_price_of`] as a decimal (the double's shortest exact-round-trip text), for
    /// prices written where the API writes decimals.
    pub fn human_price_decimal(&self, sqrt_price: U256) -> BigDecimal {
        let nearest = self.human_price_of(sqrt_price);
        BigDecimal::from_str(&nearest.to_string()).unwrap_or_default()
    }

    /// The human price of a sqrt price to `digits` significant digits (rounded half to even),
    /// where more precision than a double's matters: the USD price chain.
    pub fn human_price_precise(&self, sqrt_price: U256, digits: u64) -> BigDecimal {
        let (num, den) = self.human_ratio(sqrt_price);
        // Enough decimal places that the truncated quotient keeps `digits + 2` digits.
        let magnitude = (den.bits() as i64 - num.bits() as i64) * 30103 / 100_000;
        let scale = digits as i64 + 3 + magnitude.max(-(digits as i64));
        let quotient = if scale >= 0 {
            (num * pow10(scale as u64)) / den
        } else {
            num / (den * pow10(scale.unsigned_abs()))
        };
        BigDecimal::new(BigInt::from_biguint(Sign::Plus, quotient), scale)
            .with_prec(digits)
            .normalized()
    }

    /// The exact human price as `num / den`: sqrt^2 * 10^decimals0 / (2^(2*resolution) *
    /// 10^decimals1), inverted when tokenA is token1.
    fn human_ratio(&self, sqrt_price: U256) -> (BigUint, BigUint) {
        let sqrt = BigUint::from_bytes_le(&sqrt_price.to_le_bytes::<32>());
        let mut num = &sqrt * &sqrt * pow10(u64::from(self.decimals0));
        let mut den = (BigUint::from(1u8) << (2 * self.curve.resolution()))
            * pow10(u64::from(self.decimals1));
        if !self.base_is_token0 {
            std::mem::swap(&mut num, &mut den);
        }
        (num, den)
    }
}

/// The double nearest to `num / den` (ties to even), for positive ratios in the normal range
/// of doubles, by integer division: a quotient of 53 significant bits and the remainder decide
/// the rounding exactly.
pub fn nearest_f64(num: &BigUint, den: &BigUint) -> f64 {
    if num.bits() == 0 || den.bits() == 0 {
        return 0.0;
    }
    // Scale so the quotient has 53 or 54 bits, then keep 53 and fold the rest into the
    // remainder.
    let mut exponent = num.bits() as i64 - den.bits() as i64 - 53;
    let (n, mut d) = if exponent >= 0 {
        (num.clone(), den << exponent as u64)
    } else {
        (num << exponent.unsigned_abs(), den.clone())
    };
    let mut q = &n / &d;
    let mut r = &n % &d;
    if q.bits() > 53 {
        let low = &q & BigUint::from(1u8);
        q >>= 1u8;
        r += low * &d;
        d <<= 1u8;
        exponent += 1;
    }
    // Round half to even on the remainder.
    let twice = &r << 1u8;
    let odd = q.bit(0);
    if twice > d || (twice == d && odd) {
        q += 1u8;
        if q.bits() > 53 {
            q >>= 1u8;
            exponent += 1;
        }
    }
    let mantissa = q.to_u64_digits().first().copied().unwrap_or(0) as f64;
    scale_by_power_of_two(mantissa, exponent)
}

/// `value * 2^exponent`, exactly while the result is a normal double.
fn scale_by_power_of_two(mut value: f64, mut exponent: i64) -> f64 {
    // Powers of two up to 2^±1000 are exact doubles; larger exponents take several steps.
    while exponent > 1000 {
        value *= 2f64.powi(1000);
        exponent -= 1000;
    }
    while exponent < -1000 {
        value *= 2f64.powi(-1000);
        exponent += 1000;
    }
    value * 2f64.powi(exponent as i32)
}

fn pow10(exp: u64) -> BigUint {
    BigUint::from(10u8).pow(exp as u32)
}

fn biguint_to_u256(v: &BigUint) -> Option<U256> {
    let digits = v.to_u64_digits();
    if digits.len() > 4 {
        return None;
    }
    let mut limbs = [0u64; 4];
    limbs[..digits.len()].copy_from_slice(&digits);
    Some(U256::from_limbs(limbs))
}

/// A token amount in base units as a decimal number of whole tokens.
pub fn base_units_to_decimal(amount: U256, decimals: u8) -> BigDecimal {
    let int = BigInt::from_bytes_le(Sign::Plus, &amount.to_le_bytes::<32>());
    BigDecimal::new(int, i64::from(decimals))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn eth_usdc_mainnet() -> Orientation {
        // USDC(6) is token0, WETH(18) token1, the API's base is WETH.
        Orientation {
            curve: Curve::UniswapV3,
            decimals0: 6,
            decimals1: 18,
            base_is_token0: false,
        }
    }

    #[test]
    fn inverted_pool_prices_round_trip() {
        let o = eth_usdc_mainnet();
        let sqrt = o.sqrt_price_of(&BigDecimal::from_str("3000").unwrap());
        let back = o.human_price_of(sqrt);
        assert!((back - 3000.0).abs() < 1e-6, "{back}");
        // A higher ETH price means fewer WETH per USDC: a lower raw tick.
        let higher = o.sqrt_price_of(&BigDecimal::from_str("3500").unwrap());
        assert!(higher < sqrt);
    }

    #[test]
    fn one_over_1800_maps_to_tick_minus_74960() {
        let o = Orientation {
            curve: Curve::UniswapV3,
            decimals0: 18,
            decimals1: 18,
            base_is_token0: false,
        };
        // tokenA is token1 priced at 1800 token0 each: raw token1/token0 = 1/1800.
        let sqrt = o.sqrt_price_of(&BigDecimal::from(1800));
        assert_eq!(Curve::UniswapV3.tick_at_or_below(sqrt), -74960);
    }

    #[test]
    fn base_units_become_whole_tokens() {
        let v = base_units_to_decimal(U256::from(1_500_000u64), 6);
        assert_eq!(v, BigDecimal::from_str("1.5").unwrap());
    }

    /// The nearest double by an independent route: 60 significant decimal digits of the exact
    /// ratio, parsed by the standard library's correctly rounded parser.
    fn via_decimal(num: &BigUint, den: &BigUint) -> f64 {
        let digits = 60u64;
        let shift = digits + den.to_string().len() as u64;
        let scaled = num * pow10(shift) / den;
        format!("{scaled}e-{shift}").parse().unwrap()
    }

    #[test]
    fn range_bound_prices_are_the_nearest_double_of_the_exact_ratio() {
        for curve in [Curve::UniswapV3, Curve::OrcaWhirlpools] {
            for (d0, d1, base0) in [(6, 18, false), (18, 6, true), (9, 6, true), (8, 18, true)] {
                let o = Orientation {
                    curve,
                    decimals0: d0,
                    decimals1: d1,
                    base_is_token0: base0,
                };
                for tick in (-400_000..400_000).step_by(7919) {
                    let sqrt = curve.sqrt_price_at_tick(tick).unwrap();
                    let s = BigUint::from_bytes_le(&sqrt.to_le_bytes::<32>());
                    let mut num = &s * &s * pow10(u64::from(d0));
                    let mut den =
                        (BigUint::from(1u8) << (2 * curve.resolution())) * pow10(u64::from(d1));
                    if !base0 {
                        std::mem::swap(&mut num, &mut den);
                    }
                    assert_eq!(
                        o.human_price_of(sqrt),
                        via_decimal(&num, &den),
                        "{curve:?} {tick}"
                    );
                }
            }
        }
    }

    #[test]
    fn precise_prices_agree_with_the_nearest_double_and_keep_their_digits() {
        let o = eth_usdc_mainnet();
        for tick in (-300_000..300_000).step_by(10_007) {
            let sqrt = Curve::UniswapV3.sqrt_price_at_tick(tick).unwrap();
            let precise = o.human_price_precise(sqrt, 40);
            assert!(precise.digits() <= 40, "{tick}: {precise}");
            let back: f64 = precise.to_string().parse().unwrap();
            assert_eq!(back, o.human_price_of(sqrt), "{tick}");
            let written: f64 = o.human_price_decimal(sqrt).to_string().parse().unwrap();
            assert_eq!(written, o.human_price_of(sqrt), "{tick}");
        }
    }

    #[test]
    fn nearest_double_rounds_ties_to_even() {
        let one = BigUint::from(1u8);
        // 2^53 + 1 lies halfway between 2^53 and 2^53 + 2: the even one wins.
        let tie = (&one << 53u8) + &one;
        assert_eq!(nearest_f64(&tie, &one), 9007199254740992.0);
        let tie_up = (&one << 53u8) + BigUint::from(3u8);
        assert_eq!(nearest_f64(&tie_up, &one), 9007199254740996.0);
        assert_eq!(nearest_f64(&one, &BigUint::from(3u8)), 1.0 / 3.0);
        assert_eq!(nearest_f64(&BigUint::from(10u8), &BigUint::from(4u8)), 2.5);
    }
}
