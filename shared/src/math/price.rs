//! Conversions between the API's human prices (tokenB per one tokenA, in whole tokens) and a
//! pool's raw sqrt price (token1 per token0, in base units), exact where it decides a tick.

use super::curve::Curve;
use super::num::U256;
use bigdecimal::num_bigint::{BigInt, BigUint, Sign};
use bigdecimal::BigDecimal;

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

    /// The human price of a sqrt price, as f64 (for display of range bounds).
    pub fn human_price_of(&self, sqrt_price: U256) -> f64 {
        let sqrt = u256_to_f64(sqrt_price) / 2f64.powi(self.curve.resolution() as i32);
        let raw = sqrt * sqrt;
        let scale = 10f64.powi(i32::from(self.decimals0) - i32::from(self.decimals1));
        if self.base_is_token0 {
            raw * scale
        } else {
            1.0 / (raw * scale)
        }
    }
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

fn u256_to_f64(v: U256) -> f64 {
    v.as_limbs()
        .iter()
        .rev()
        .fold(0f64, |acc, &limb| acc * 2f64.powi(64) + limb as f64)
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
}
