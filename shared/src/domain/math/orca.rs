//! Orca Whirlpools math: Q64.64 sqrt prices, ticks ±443636, u64 token amounts, with the
//! rounding of the program's `get_amount_delta_a/b` and the SDK's liquidity-from-amount quotes.

use super::num::{MathError, U256, U512};

pub const MIN_TICK: i32 = -443_636;
pub const MAX_TICK: i32 = 443_636;

/// sqrt(1.0001)^(2^i) factors in Q32.96 for positive ticks (i = 1..).
#[rustfmt::skip]
const POSITIVE_FACTORS: [u128; 18] = [
    79236085330515764027303304731, 79244008939048815603706035061, 79259858533276714757314932305,
    79291567232598584799939703904, 79355022692464371645785046466, 79482085999252804386437311141,
    79736823300114093921829183326, 80248749790819932309965073892, 81282483887344747381513967011,
    83390072131320151908154831281, 87770609709833776024991924138, 97234110755111693312479820773,
    119332217159966728226237229890, 179736315981702064433883588727, 407748233172238350107850275304,
    2098478828474011932436660412517, 55581415166113811149459800483533, 38992368544603139932233054999993551,
];
const POSITIVE_ODD: u128 = 79232123823359799118286999567;
const Q96_ONE: u128 = 79228162514264337593543950336;

/// 1/sqrt(1.0001)^(2^i) factors in Q0.64 for negative ticks (i = 1..).
#[rustfmt::skip]
const NEGATIVE_FACTORS: [u128; 18] = [
    18444899583751176498, 18443055278223354162, 18439367220385604838, 18431993317065449817,
    18417254355718160513, 18387811781193591352, 18329067761203520168, 18212142134806087854,
    17980523815641551639, 17526086738831147013, 16651378430235024244, 15030750278693429944,
    12247334978882834399, 8131365268884726200, 3584323654723342297, 696457651847595233,
    26294789957452057, 37481735321082,
];
const NEGATIVE_ODD: u128 = 18445821805675392311;
const Q64_ONE: u128 = 1 << 64;

/// `tick_index_to_sqrt_price`: sqrt(1.0001^tick) as Q64.64.
pub fn sqrt_price_at_tick(tick: i32) -> Result<u128, MathError> {
    if !(MIN_TICK..=MAX_TICK).contains(&tick) {
        return Err(MathError("tick out of range"));
    }
    let abs_tick = tick.unsigned_abs();
    // Each set bit of |tick| multiplies its factor in: Q64.96 factors for positive ticks (the
    // result shifted to Q64.64 at the end), Q0.64 ones for negative ticks, as the program does.
    let (odd, one, factors, shift) = if tick >= 0 {
        (POSITIVE_ODD, Q96_ONE, &POSITIVE_FACTORS[..], 96)
    } else {
        (NEGATIVE_ODD, Q64_ONE, &NEGATIVE_FACTORS[..], 64)
    };
    let mut ratio = if abs_tick & 1 != 0 { odd } else { one };
    for (bit, factor) in factors.iter().enumerate() {
        if abs_tick & (2 << bit) != 0 {
            let product = U256::from(ratio) * U256::from(*factor);
            ratio = u128::try_from(product >> shift).map_err(|_| MathError("overflow"))?;
        }
    }
    Ok(if tick >= 0 { ratio >> 32 } else { ratio })
}

fn ordered(a: u128, b: u128) -> (u128, u128) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

fn to_u64(v: U256) -> Result<u64, MathError> {
    u64::try_from(v).map_err(|_| MathError("amount exceeds u64"))
}

/// `get_amount_delta_a`: token A held by `liquidity` between two sqrt prices.
pub fn amount_delta_a(a: u128, b: u128, liquidity: u128, round_up: bool) -> Result<u64, MathError> {
    let (lower, upper) = ordered(a, b);
    let numerator: U512 = (U512::from(liquidity) * U512::from(upper - lower)) << 64;
    let denominator = U512::from(lower) * U512::from(upper);
    if denominator.is_zero() {
        return Err(MathError("sqrt price is zero"));
    }
    let (q, r) = numerator.div_rem(denominator);
    let q = if round_up && !r.is_zero() {
        q + U512::from(1u8)
    } else {
        q
    };
    u64::try_from(q).map_err(|_| MathError("amount exceeds u64"))
}

/// `get_amount_delta_b`: token B held by `liquidity` between two sqrt prices.
pub fn amount_delta_b(a: u128, b: u128, liquidity: u128, round_up: bool) -> Result<u64, MathError> {
    let (lower, upper) = ordered(a, b);
    let product = U256::from(liquidity) * U256::from(upper - lower);
    let quotient = product >> 64;
    let remainder_nonzero = !(product & U256::from(u64::MAX)).is_zero();
    to_u64(quotient + U256::from(u8::from(round_up && remainder_nonzero)))
}

/// Liquidity funded by `amount` of token A over `[a, b]`: `amount * a * b / (b - a) >> 64`.
pub fn liquidity_from_a(a: u128, b: u128, amount: u64) -> Result<u128, MathError> {
    let (lower, upper) = ordered(a, b);
    let product = U512::from(amount) * U512::from(lower) * U512::from(upper);
    let liquidity = (product / U512::from(upper - lower)) >> 64;
    u128::try_from(liquidity).map_err(|_| MathError("liquidity exceeds 128 bits"))
}

/// Liquidity funded by `amount` of token B over `[a, b]`: `(amount << 64) / (b - a)`.
pub fn liquidity_from_b(a: u128, b: u128, amount: u64) -> Result<u128, MathError> {
    let (lower, upper) = ordered(a, b);
    let liquidity = (U256::from(amount) << 64) / U256::from(upper - lower);
    u128::try_from(liquidity).map_err(|_| MathError("liquidity exceeds 128 bits"))
}

/// The most liquidity both amounts can fund at `sqrt_price` in the range between the two sqrt
/// prices of `range` (the SDK's increase-liquidity quote).
pub fn liquidity_for_amounts(
    sqrt_price: u128,
    range: (u128, u128),
    amounts: [u64; 2],
) -> Result<u128, MathError> {
    let [amount_a, amount_b] = amounts;
    let (lower, upper) = ordered(range.0, range.1);
    if lower == upper {
        return Err(MathError("empty price range"));
    }
    if sqrt_price <= lower {
        return liquidity_from_a(lower, upper, amount_a);
    }
    if sqrt_price >= upper {
        return liquidity_from_b(lower, upper, amount_b);
    }
    let from_a = liquidity_from_a(sqrt_price, upper, amount_a)?;
    Ok(from_a.min(liquidity_from_b(lower, sqrt_price, amount_b)?))
}

/// The amounts `liquidity` holds at `sqrt_price`.
pub fn amounts_for_liquidity(
    sqrt_price: u128,
    a: u128,
    b: u128,
    liquidity: u128,
    round_up: bool,
) -> Result<(u64, u64), MathError> {
    let (lower, upper) = ordered(a, b);
    if sqrt_price <= lower {
        Ok((amount_delta_a(lower, upper, liquidity, round_up)?, 0))
    } else if sqrt_price < upper {
        Ok((
            amount_delta_a(sqrt_price, upper, liquidity, round_up)?,
            amount_delta_b(lower, sqrt_price, liquidity, round_up)?,
        ))
    } else {
        Ok((0, amount_delta_b(lower, upper, liquidity, round_up)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqrt_price_at_tick_matches_the_program() {
        assert_eq!(sqrt_price_at_tick(100).unwrap(), 18539204128674405812);
        assert_eq!(sqrt_price_at_tick(1).unwrap(), 18447666387855959850);
        assert_eq!(sqrt_price_at_tick(0).unwrap(), 18446744073709551616);
        assert_eq!(sqrt_price_at_tick(-1).unwrap(), 18445821805675392311);
        assert_eq!(sqrt_price_at_tick(-100).unwrap(), 18354745142194483561);
        // MIN_SQRT_PRICE and MAX_SQRT_PRICE of the program.
        assert_eq!(sqrt_price_at_tick(MIN_TICK).unwrap(), 4295048016);
        assert_eq!(
            sqrt_price_at_tick(MAX_TICK).unwrap(),
            79226673515401279992447579055
        );
        assert!(sqrt_price_at_tick(MAX_TICK + 1).is_err());
    }

    #[test]
    fn amount_deltas_match_the_program_tests() {
        assert_eq!(amount_delta_a(4 << 64, 2 << 64, 4, true).unwrap(), 1);
        assert_eq!(amount_delta_a(4 << 64, 2 << 64, 4, false).unwrap(), 1);
        assert_eq!(amount_delta_a(4 << 64, 4 << 64, 4, true).unwrap(), 0);
        assert_eq!(amount_delta_b(4 << 64, 2 << 64, 4, true).unwrap(), 8);
        assert_eq!(amount_delta_b(4 << 64, 2 << 64, 4, false).unwrap(), 8);
        assert_eq!(amount_delta_b(4 << 64, 4 << 64, 4, false).unwrap(), 0);
    }

    // SDK position-amount vectors: L = 1e6 over ticks [-10, 10].
    fn amounts_at(tick: i32) -> (u64, u64) {
        let lower = sqrt_price_at_tick(-10).unwrap();
        let upper = sqrt_price_at_tick(10).unwrap();
        let price = sqrt_price_at_tick(tick).unwrap();
        amounts_for_liquidity(price, lower, upper, 1_000_000, true).unwrap()
    }

    #[test]
    fn position_amounts_below_inside_and_above_the_range() {
        assert_eq!(amounts_at(-20), (1000, 0));
        assert_eq!(amounts_at(0), (500, 500));
        assert_eq!(amounts_at(20), (0, 1000));
    }

    #[test]
    fn liquidity_round_trips_within_one_unit() {
        let lower = sqrt_price_at_tick(-10).unwrap();
        let upper = sqrt_price_at_tick(10).unwrap();
        let price = sqrt_price_at_tick(0).unwrap();
        let l = liquidity_for_amounts(price, (lower, upper), [500, 500]).unwrap();
        let (a, b) = amounts_for_liquidity(price, lower, upper, l, true).unwrap();
        assert!(a <= 500 && b <= 500 && a >= 499 && b >= 499, "{l} {a} {b}");
    }
}
