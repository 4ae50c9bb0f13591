//! Reading what a run of a transaction answered: ABI words, a `multicall`'s `bytes[]`, and
//! token amounts (protocol order) in the API's orientation and whole tokens.

use crate::domain::catalog::Pool;
use crate::domain::json::plain_exact;
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::{Amounts, U256};
use crate::domain::model::{AmountPair, TokenPair};

pub(super) fn word(data: &[u8], at: usize) -> Option<U256> {
    data.get(at..at.checked_add(32)?).map(U256::from_be_slice)
}

pub(super) fn small_word(data: &[u8], at: usize) -> Option<usize> {
    usize::try_from(word(data, at)?).ok()
}

/// The `bytes[]` a `multicall` answered, each element's bytes.
pub(super) fn multicall_answers(returned: &[u8]) -> Option<Vec<&[u8]>> {
    let array = small_word(returned, 0)?;
    let count = small_word(returned, array)?;
    let elements = array.checked_add(32)?;
    (0..count)
        .map(|i| {
            let offset = small_word(returned, elements.checked_add(32 * i)?)?;
            let start = elements.checked_add(offset)?;
            let len = small_word(returned, start)?;
            returned.get(start + 32..(start + 32).checked_add(len)?)
        })
        .collect()
}

/// Two words as token amounts (a collect's or a decrease's answer).
pub(super) fn two_words(bytes: &[u8]) -> Option<[U256; 2]> {
    (bytes.len() == 64).then(|| [0, 32].map(|at| U256::from_be_slice(&bytes[at..at + 32])))
}

/// Base units of token `t` (protocol order) as whole tokens.
pub(super) fn whole(pool: &Pool, t: usize, units: U256) -> String {
    let token0_is_a = pool.orientation.base_is_token0;
    let token = if (t == 0) == token0_is_a {
        &pool.token_a
    } else {
        &pool.token_b
    };
    plain_exact(&base_units_to_decimal(units, token.decimals))
}

/// Amounts (token0, token1) as the API's pair of whole tokens.
pub(super) fn amount_pair(pool: &Pool, [amount0, amount1]: [U256; 2]) -> AmountPair {
    let TokenPair { a, b } = pool.to_api_order(Amounts { amount0, amount1 });
    let whole = |units, decimals| plain_exact(&base_units_to_decimal(units, decimals));
    AmountPair {
        token_a: whole(a, pool.token_a.decimals),
        token_b: whole(b, pool.token_b.decimals),
    }
}
