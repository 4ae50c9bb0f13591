//! The ABI's words as the calldata here needs them: every argument a static type but
//! `bytes` and `bytes[]`, so the encoding is the words themselves and those tails.

use crate::domain::math::U256;
use alloy_primitives::{keccak256, Address};
use std::str::FromStr;

/// A value that cannot be encoded (an address that is not 20 bytes of hex): a catalog or store
/// fault, never a client's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("cannot encode calldata: {0}")]
pub struct CalldataError(String);

impl CalldataError {
    pub(super) fn new(why: &str) -> CalldataError {
        CalldataError(why.into())
    }
}

/// `type(uint128).max`: `collect` takes everything owed.
pub const MAX_UINT128: u128 = u128::MAX;

pub(super) fn selector(signature: &str) -> [u8; 4] {
    let hash = keccak256(signature.as_bytes());
    [hash[0], hash[1], hash[2], hash[3]]
}

pub(super) fn uint(value: U256) -> [u8; 32] {
    value.to_be_bytes::<32>()
}

pub(super) fn small(value: u64) -> [u8; 32] {
    uint(U256::from(value))
}

/// An `int24` word: two's complement, sign-extended to 256 bits.
pub(super) fn int(value: i32) -> [u8; 32] {
    let fill = if value < 0 { 0xff } else { 0 };
    let mut word = [fill; 32];
    word[28..].copy_from_slice(&value.to_be_bytes());
    word
}

pub(super) fn address(text: &str) -> Result<[u8; 32], CalldataError> {
    let parsed = Address::from_str(text)
        .map_err(|_| CalldataError(format!("{text:?} is not an EVM address")))?;
    let mut word = [0u8; 32];
    word[12..].copy_from_slice(parsed.as_slice());
    Ok(word)
}

pub(super) fn call(signature: &str, words: &[[u8; 32]]) -> Vec<u8> {
    let mut data = Vec::with_capacity(4 + 32 * words.len());
    data.extend_from_slice(&selector(signature));
    for word in words {
        data.extend_from_slice(word);
    }
    data
}

/// A `bytes` value's tail: its length, then its bytes padded to whole words.
pub(super) fn bytes_tail(bytes: &[u8]) -> Vec<u8> {
    let mut data = small(bytes.len() as u64).to_vec();
    data.extend_from_slice(bytes);
    data.resize(32 + bytes.len().div_ceil(32) * 32, 0);
    data
}

/// A `bytes[]` value's tail: its length, each element's offset (from the first offset's
/// word), then each element's tail.
pub(super) fn bytes_array(elements: &[Vec<u8>]) -> Vec<u8> {
    let tails: Vec<Vec<u8>> = elements.iter().map(|e| bytes_tail(e)).collect();
    let mut data = small(elements.len() as u64).to_vec();
    let mut offset = 32 * elements.len();
    for tail in &tails {
        data.extend_from_slice(&small(offset as u64));
        offset += tail.len();
    }
    data.extend(tails.concat());
    data
}

/// `multicall(bytes[])`: the offset of the array, then the array.
pub(super) fn multicall(calls: &[Vec<u8>]) -> Vec<u8> {
    let mut data = selector("multicall(bytes[])").to_vec();
    data.extend_from_slice(&small(32));
    data.extend_from_slice(&bytes_array(calls));
    data
}
