//! The integers the math is done in: 256-bit words with a 512-bit intermediate for products, as
//! Uniswap's FullMath, and the one error type of the math.

pub use ruint::aliases::{U256, U512};

/// A math failure: a value outside the protocol's domain (a tick out of range, an overflow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MathError(pub &'static str);

/// Token amounts in base units, in the protocol's token0/token1 order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Amounts {
    pub amount0: U256,
    pub amount1: U256,
}

pub(crate) fn to_u128(v: U256) -> Result<u128, MathError> {
    u128::try_from(v).map_err(|_| MathError("value exceeds 128 bits"))
}

pub(crate) fn to_u64(v: U256) -> Result<u64, MathError> {
    u64::try_from(v).map_err(|_| MathError("amount exceeds the protocol's u64 limit"))
}

/// `floor(a * b / d)` or `ceil(a * b / d)` with a 512-bit intermediate, as Uniswap's FullMath.
pub(crate) fn mul_div(a: U256, b: U256, d: U256, round_up: bool) -> Result<U256, MathError> {
    if d.is_zero() {
        return Err(MathError("division by zero"));
    }
    let product = widen(a) * widen(b);
    let d = widen(d);
    let (q, r) = product.div_rem(d);
    let q = if round_up && !r.is_zero() {
        q + U512::from(1u8)
    } else {
        q
    };
    narrow(q).ok_or(MathError("result exceeds 256 bits"))
}

pub(crate) fn widen(v: U256) -> U512 {
    let mut limbs = [0u64; 8];
    limbs[..4].copy_from_slice(v.as_limbs());
    U512::from_limbs(limbs)
}

pub(crate) fn narrow(v: U512) -> Option<U256> {
    let limbs = v.as_limbs();
    if limbs[4..].iter().any(|&l| l != 0) {
        return None;
    }
    Some(U256::from_limbs([limbs[0], limbs[1], limbs[2], limbs[3]]))
}

pub(crate) fn div_rounding_up(a: U256, b: U256) -> U256 {
    let (q, r) = a.div_rem(b);
    if r.is_zero() {
        q
    } else {
        q + U256::from(1u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mul_div_keeps_the_full_product() {
        let max = U256::MAX;
        assert_eq!(mul_div(max, max, max, false).unwrap(), max);
        assert_eq!(
            mul_div(U256::from(7u8), U256::from(3u8), U256::from(2u8), false).unwrap(),
            U256::from(10u8)
        );
        assert_eq!(
            mul_div(U256::from(7u8), U256::from(3u8), U256::from(2u8), true).unwrap(),
            U256::from(11u8)
        );
        assert!(mul_div(max, max, U256::from(1u8), false).is_err());
        assert!(mul_div(max, max, U256::ZERO, false).is_err());
    }
}
