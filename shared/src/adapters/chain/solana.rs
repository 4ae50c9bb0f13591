//! Orca Whirlpools read over Solana JSON-RPC: one `getMultipleAccounts` for every Whirlpool of
//! the catalog and the tick arrays holding tracked ticks, at `confirmed` commitment (or
//! `finalized`), then `getSlot` at the same commitment: a slot answered beyond that head is
//! refused. Accounts are decoded at the fixed offsets of the program's layouts with their
//! discriminators, sizes and flags checked exactly. Orca's own
//! crates are not used (their licence forbids commercial use): the layouts are few and fixed.

use super::rpc::{RpcClient, RpcError};
use crate::domain::catalog::Pool;
use crate::domain::market::{PoolState, TickState};
use crate::domain::math::U256;
use base64::Engine;
use chrono::{DateTime, Utc};
use curve25519_dalek::edwards::CompressedEdwardsY;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The Whirlpools program.
pub const PROGRAM_ID: &str = "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc";

const WHIRLPOOL: [u8; 8] = [0x3f, 0x95, 0xd1, 0x0c, 0xe1, 0x80, 0x63, 0x09];
const FIXED_TICK_ARRAY: [u8; 8] = [0x45, 0x61, 0xbd, 0xbe, 0x6e, 0x07, 0x42, 0xbb];
const DYNAMIC_TICK_ARRAY: [u8; 8] = [0x11, 0xd8, 0xf6, 0x8e, 0xe1, 0xc7, 0xda, 0x38];

/// Ticks per tick array.
pub const TICKS_PER_ARRAY: i32 = 88;
const FIXED_TICK_BYTES: usize = 113;
const DYNAMIC_TICK_BYTES: usize = 112;

/// The most accounts `getMultipleAccounts` takes in one call.
const MAX_ACCOUNTS: usize = 100;

/// How far past the head `getSlot` reports a read's slot may lie (nodes behind a load balancer
/// differ by a few slots; a minute of slots is far beyond that).
const SLOTS_PAST_HEAD: u64 = 150;

/// The fields of a Whirlpool account the service uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Whirlpool {
    pub tick_spacing: u16,
    pub fee_rate: u16,
    pub liquidity: u128,
    pub sqrt_price: u128,
    pub tick_current_index: i32,
    pub token_mint_a: String,
    pub token_mint_b: String,
    pub fee_growth_global_a: u128,
    pub fee_growth_global_b: u128,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("account is {0} bytes, too short for its layout")]
    Short(usize),
    #[error("account is not a {0} (discriminator differs)")]
    Discriminator(&'static str),
    #[error("account is malformed: {0}")]
    Malformed(&'static str),
}

fn bytes<const N: usize>(data: &[u8], at: usize) -> Result<[u8; N], DecodeError> {
    data.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .ok_or(DecodeError::Short(data.len()))
}

fn u128_at(data: &[u8], at: usize) -> Result<u128, DecodeError> {
    bytes::<16>(data, at).map(u128::from_le_bytes)
}

fn check(
    data: &[u8],
    discriminator: [u8; 8],
    what: &'static str,
    len: usize,
) -> Result<(), DecodeError> {
    if data.len() < len {
        return Err(DecodeError::Short(data.len()));
    }
    if data.len() > len {
        return Err(DecodeError::Malformed(
            "the account is longer than its layout",
        ));
    }
    if data[..8] != discriminator {
        return Err(DecodeError::Discriminator(what));
    }
    Ok(())
}

/// Decodes a Whirlpool account (653 bytes).
pub fn decode_whirlpool(data: &[u8]) -> Result<Whirlpool, DecodeError> {
    check(data, WHIRLPOOL, "Whirlpool", 653)?;
    let key = |at| bytes::<32>(data, at).map(|k| bs58::encode(k).into_string());
    Ok(Whirlpool {
        tick_spacing: u16::from_le_bytes(bytes(data, 41)?),
        fee_rate: u16::from_le_bytes(bytes(data, 45)?),
        liquidity: u128_at(data, 49)?,
        sqrt_price: u128_at(data, 65)?,
        tick_current_index: i32::from_le_bytes(bytes(data, 81)?),
        token_mint_a: key(101)?,
        fee_growth_global_a: u128_at(data, 165)?,
        token_mint_b: key(181)?,
        fee_growth_global_b: u128_at(data, 245)?,
    })
}

const POSITION: [u8; 8] = [0xaa, 0xbc, 0x8f, 0xe4, 0x7a, 0x40, 0xf7, 0xd0];

/// The fields of a Position account (216 bytes) the service uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrcaPosition {
    pub whirlpool: String,
    pub position_mint: String,
    pub liquidity: u128,
    pub tick_lower_index: i32,
    pub tick_upper_index: i32,
    pub fee_growth_checkpoint_a: u128,
    pub fee_owed_a: u64,
    pub fee_growth_checkpoint_b: u128,
    pub fee_owed_b: u64,
}

/// Decodes a Position account: exactly its size, its discriminator checked.
pub fn decode_position(data: &[u8]) -> Result<OrcaPosition, DecodeError> {
    check(data, POSITION, "Position", 216)?;
    let key = |at| bytes::<32>(data, at).map(|k| bs58::encode(k).into_string());
    Ok(OrcaPosition {
        whirlpool: key(8)?,
        position_mint: key(40)?,
        liquidity: u128_at(data, 72)?,
        tick_lower_index: i32::from_le_bytes(bytes(data, 88)?),
        tick_upper_index: i32::from_le_bytes(bytes(data, 92)?),
        fee_growth_checkpoint_a: u128_at(data, 96)?,
        fee_owed_a: u64::from_le_bytes(bytes(data, 112)?),
        fee_growth_checkpoint_b: u128_at(data, 120)?,
        fee_owed_b: u64::from_le_bytes(bytes(data, 136)?),
    })
}

/// One tick of a tick array: `None` where the array has no initialized tick there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    pub initialized: bool,
    pub liquidity_gross: u128,
    pub fee_growth_outside_a: u128,
    pub fee_growth_outside_b: u128,
}

/// A decoded tick array: its start index and its 88 ticks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickArray {
    pub start_tick_index: i32,
    pub ticks: Vec<Tick>,
}

fn tick_at(data: &[u8], at: usize, initialized: bool) -> Result<Tick, DecodeError> {
    Ok(Tick {
        initialized,
        liquidity_gross: u128_at(data, at + 16)?,
        fee_growth_outside_a: u128_at(data, at + 32)?,
        fee_growth_outside_b: u128_at(data, at + 48)?,
    })
}

/// Decodes a fixed (9,988 bytes) or dynamic (entries tagged, walked in order) tick array.
pub fn decode_tick_array(data: &[u8]) -> Result<TickArray, DecodeError> {
    let start_tick_index =
        i32::from_le_bytes(bytes(data, 8).map_err(|_| DecodeError::Short(data.len()))?);
    let discriminator = data.get(..8).ok_or(DecodeError::Short(data.len()))?;
    let mut ticks = Vec::with_capacity(TICKS_PER_ARRAY as usize);
    if discriminator == FIXED_TICK_ARRAY {
        check(data, FIXED_TICK_ARRAY, "TickArray", 9_988)?;
        for i in 0..TICKS_PER_ARRAY as usize {
            let at = 12 + i * FIXED_TICK_BYTES;
            let initialized = match data[at] {
                0 => false,
                1 => true,
                _ => {
                    return Err(DecodeError::Malformed(
                        "a tick's initialized flag is not 0 or 1",
                    ))
                }
            };
            ticks.push(tick_at(data, at + 1, initialized)?);
        }
    } else if discriminator == DYNAMIC_TICK_ARRAY {
        if data.len() < 148 {
            return Err(DecodeError::Short(data.len()));
        }
        let mut at = 60;
        for _ in 0..TICKS_PER_ARRAY {
            match data.get(at) {
                Some(0) => {
                    ticks.push(Tick {
                        initialized: false,
                        liquidity_gross: 0,
                        fee_growth_outside_a: 0,
                        fee_growth_outside_b: 0,
                    });
                    at += 1;
                }
                Some(1) => {
                    // The tick's fields follow the tag at the fixed layout's offsets, less its
                    // `initialized` byte.
                    ticks.push(tick_at(data, at + 1, true)?);
                    at += 1 + DYNAMIC_TICK_BYTES;
                }
                Some(_) => return Err(DecodeError::Malformed("unknown tick entry tag")),
                None => return Err(DecodeError::Short(data.len())),
            }
        }
    } else {
        return Err(DecodeError::Discriminator("TickArray"));
    }
    Ok(TickArray {
        start_tick_index,
        ticks,
    })
}

/// The start index of the tick array holding `tick`: `floor(tick / (spacing·88))·spacing·88`.
pub fn tick_array_start(tick: i32, tick_spacing: u16) -> i32 {
    let span = i32::from(tick_spacing) * TICKS_PER_ARRAY;
    tick.div_euclid(span) * span
}

/// A program-derived address: the first bump from 255 down whose SHA-256 of seeds, bump,
/// program id and "ProgramDerivedAddress" is not a point of ed25519 (`curve25519-dalek`'s
/// decompression decides, as Solana's runtime does).
pub fn find_program_address(seeds: &[&[u8]], program: &[u8; 32]) -> Option<[u8; 32]> {
    (0..=255u8).rev().find_map(|bump| {
        let mut hasher = Sha256::new();
        for seed in seeds {
            hasher.update(seed);
        }
        hasher.update([bump]);
        hasher.update(program);
        hasher.update(b"ProgramDerivedAddress");
        let hash: [u8; 32] = hasher.finalize().into();
        CompressedEdwardsY(hash)
            .decompress()
            .is_none()
            .then_some(hash)
    })
}

pub(super) fn decode_key(text: &str) -> Option<[u8; 32]> {
    bs58::decode(text).into_vec().ok()?.try_into().ok()
}

/// The address of the tick array starting at `start` in `whirlpool`.
pub fn tick_array_address(whirlpool: &str, start: i32) -> Option<String> {
    let pool = decode_key(whirlpool)?;
    let program = decode_key(PROGRAM_ID)?;
    let start = start.to_string();
    find_program_address(&[b"tick_array", &pool, start.as_bytes()], &program)
        .map(|a| bs58::encode(a).into_string())
}

/// The `getMultipleAccounts` answer for each address, in order: account data, or `None` for an
/// account that does not exist. Every account must be the Whirlpools program's.
async fn accounts(
    rpc: &RpcClient,
    addresses: &[String],
    commitment: &str,
) -> Result<(u64, Vec<Option<Vec<u8>>>), RpcError> {
    accounts_owned(rpc, addresses, commitment, &[PROGRAM_ID]).await
}

/// [`accounts`] owned by any of `owners` (the slot of the last chunk read).
pub(super) async fn accounts_owned(
    rpc: &RpcClient,
    addresses: &[String],
    commitment: &str,
    owners: &[&str],
) -> Result<(u64, Vec<Option<Vec<u8>>>), RpcError> {
    let mut slot = 0;
    let mut out = Vec::with_capacity(addresses.len());
    for chunk in addresses.chunks(MAX_ACCOUNTS) {
        let answer = rpc
            .call(
                "getMultipleAccounts",
                json!([chunk, {"encoding": "base64", "commitment": commitment}]),
            )
            .await?;
        slot = answer
            .pointer("/context/slot")
            .and_then(Value::as_u64)
            .ok_or(RpcError::Malformed("no context.slot"))?;
        let values = answer
            .get("value")
            .and_then(Value::as_array)
            .filter(|v| v.len() == chunk.len())
            .ok_or(RpcError::Malformed("value is not one entry per account"))?;
        for value in values {
            if value.is_null() {
                out.push(None);
                continue;
            }
            let owner = value.get("owner").and_then(Value::as_str);
            if !owner.is_some_and(|o| owners.contains(&o)) {
                return Err(RpcError::Malformed(
                    "an account is not owned by the program expected",
                ));
            }
            out.push(Some(account_data(value)?));
        }
    }
    Ok((slot, out))
}

/// An account's data as `getMultipleAccounts` and `getTokenAccountsByOwner` answer it
/// (`["…", "base64"]`).
pub(super) fn account_data(account: &Value) -> Result<Vec<u8>, RpcError> {
    account
        .pointer("/data/0")
        .and_then(Value::as_str)
        .filter(|_| account.pointer("/data/1").and_then(Value::as_str) == Some("base64"))
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .ok_or(RpcError::Malformed("account data is not base64"))
}

/// Every pool's state at the slot of one `getMultipleAccounts`, with the tick arrays of their
/// tracked ticks (an array that does not exist holds no initialized tick); with the slot read
/// and the head `getSlot` reports after it.
pub async fn read_pools(
    rpc: &RpcClient,
    pools: &[&Pool],
    finalized: bool,
    observed_at: DateTime<Utc>,
) -> Result<(u64, u64, Vec<Result<PoolState, String>>), RpcError> {
    let commitment = if finalized { "finalized" } else { "confirmed" };
    let mut addresses: Vec<String> = pools.iter().map(|p| p.id.clone()).collect();
    // Per pool, per tracked tick, the index of its array in `addresses`.
    let mut arrays: BTreeMap<String, usize> = BTreeMap::new();
    let mut wanted: Vec<Vec<(i32, i32, Option<usize>)>> = Vec::new();
    for pool in pools {
        let spacing = u16::try_from(pool.tick_spacing).unwrap_or(u16::MAX);
        let own = pool
            .tracked_ticks
            .iter()
            .map(|&tick| {
                let start = tick_array_start(tick, spacing);
                let index = tick_array_address(&pool.id, start).map(|address| {
                    *arrays.entry(address.clone()).or_insert_with(|| {
                        addresses.push(address);
                        addresses.len() - 1
                    })
                });
                (tick, start, index)
            })
            .collect();
        wanted.push(own);
    }
    let (slot, data) = accounts(rpc, &addresses, commitment).await?;
    let head = rpc
        .call("getSlot", json!([{"commitment": commitment}]))
        .await?
        .as_u64()
        .ok_or(RpcError::Malformed("getSlot answered no slot"))?;
    if slot > head.saturating_add(SLOTS_PAST_HEAD) {
        return Err(RpcError::Malformed(
            "the slot answered lies beyond the head the node reports",
        ));
    }
    let states = pools
        .iter()
        .zip(wanted)
        .enumerate()
        .map(|(i, (pool, ticks))| {
            let account = data[i]
                .as_deref()
                .ok_or("the Whirlpool account does not exist")?;
            let whirlpool = decode_whirlpool(account).map_err(|e| e.to_string())?;
            if i32::from(whirlpool.tick_spacing) != pool.tick_spacing {
                return Err("the tick spacing on chain differs from the catalog's".to_string());
            }
            let (token0, token1) = if pool.orientation.base_is_token0 {
                (&pool.token_a, &pool.token_b)
            } else {
                (&pool.token_b, &pool.token_a)
            };
            if whirlpool.token_mint_a != token0.address || whirlpool.token_mint_b != token1.address
            {
                return Err("the token mints on chain differ from the catalog's".to_string());
            }
            let ticks = ticks
                .into_iter()
                .map(|(tick, start, index)| {
                    let array = match index.and_then(|i| data[i].as_deref()) {
                        None => None,
                        Some(account) => {
                            Some(decode_tick_array(account).map_err(|e| e.to_string())?)
                        }
                    };
                    let offset = (tick - start) / pool.tick_spacing;
                    let found = array
                        .filter(|a| a.start_tick_index == start)
                        .and_then(|a| a.ticks.get(offset as usize).copied());
                    Ok(TickState {
                        tick,
                        initialized: found.is_some_and(|t| t.initialized),
                        fee_growth_outside0: U256::from(
                            found.map_or(0, |t| t.fee_growth_outside_a),
                        ),
                        fee_growth_outside1: U256::from(
                            found.map_or(0, |t| t.fee_growth_outside_b),
                        ),
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(PoolState {
                sqrt_price: U256::from(whirlpool.sqrt_price),
                tick: whirlpool.tick_current_index,
                liquidity: whirlpool.liquidity,
                fee_growth_global0: U256::from(whirlpool.fee_growth_global_a),
                fee_growth_global1: U256::from(whirlpool.fee_growth_global_b),
                height: slot,
                block_hash: None,
                observed_at,
                ticks,
                balances: None,
                slipstream: None,
            })
        })
        .collect();
    Ok((slot, head, states))
}
