//! A wallet's Orca Whirlpools positions read from Solana, from the documented account layouts:
//! the wallet's token accounts of the Token and Token-2022 programs (one batch), those holding
//! exactly 1 token, their Position PDAs (`["position", mint]` under the Whirlpool program) in
//! one `getMultipleAccounts`, then the Whirlpools, then the tick arrays of the positions'
//! bounds with the token mints (decimals). Position bundles are not read. Amounts are what the
//! liquidity holds at the Whirlpool's price rounded down; fees what the program owes:
//! `fee_owed + ((growthInside − checkpoint) × L) >> 64`.

use super::rpc::{RpcClient, RpcError};
use super::solana::{
    account_data, accounts_owned, decode_key, decode_position, decode_tick_array, decode_whirlpool,
    find_program_address, tick_array_address, tick_array_start, OrcaPosition, Whirlpool,
};
use super::trust::plausible_range;
use super::wallets::MAX_POSITIONS_PER_MANAGER;
use crate::domain::holdings::ReadPosition;
use crate::domain::math::fees::{BoundTick, FeeAccounting};
use crate::domain::math::{Curve, U256};
use crate::domain::model::{HeldToken, Protocol};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub const TOKEN_PROGRAM: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
pub const TOKEN_2022_PROGRAM: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";

/// An SPL token account: mint (32), owner (32), amount (u64) first, in both programs.
const TOKEN_ACCOUNT_MIN: usize = 165;
/// An SPL mint: authority option (36), supply (8), decimals (1).
const MINT_DECIMALS_AT: usize = 44;

/// The mints of the wallet's token accounts holding exactly one token (position NFTs among
/// them), of both token programs, in one batch.
async fn single_token_mints(
    rpc: &RpcClient,
    wallet: &str,
    commitment: &str,
) -> Result<(u64, Vec<String>), String> {
    let calls: Vec<_> = [TOKEN_PROGRAM, TOKEN_2022_PROGRAM]
        .iter()
        .map(|program| {
            (
                "getTokenAccountsByOwner",
                json!([wallet, {"programId": program}, {"encoding": "base64", "commitment": commitment}]),
            )
        })
        .collect();
    let mut mints = Vec::new();
    let mut slot = 0;
    for answer in rpc.batch(&calls).await {
        let answer = answer.map_err(|e| format!("getTokenAccountsByOwner: {e}"))?;
        let read_at = answer
            .pointer("/context/slot")
            .and_then(Value::as_u64)
            .ok_or("getTokenAccountsByOwner: no context.slot")?;
        slot = slot.max(read_at);
        let accounts = answer
            .get("value")
            .and_then(Value::as_array)
            .ok_or("getTokenAccountsByOwner: no value list")?;
        for entry in accounts {
            let data = entry
                .get("account")
                .ok_or(RpcError::Malformed("a token account without its account"))
                .and_then(account_data)
                .map_err(|e| format!("getTokenAccountsByOwner: {e}"))?;
            if data.len() < TOKEN_ACCOUNT_MIN {
                return Err("getTokenAccountsByOwner: a token account is too short".into());
            }
            let amount = u64::from_le_bytes(data[64..72].try_into().unwrap_or_default());
            if amount == 1 {
                mints.push(bs58::encode(&data[..32]).into_string());
            }
        }
    }
    mints.sort();
    mints.dedup();
    Ok((slot, mints))
}

/// The Position PDA of a position mint.
fn position_address(mint: &str, program: &str) -> Option<String> {
    let (mint, program) = (decode_key(mint)?, decode_key(program)?);
    find_program_address(&[b"position", &mint], &program).map(|a| bs58::encode(a).into_string())
}

/// A token's name: the catalog's symbol where it knows the mint, else a short form of it.
fn short(mint: &str) -> String {
    if mint.len() > 8 {
        format!("{}…{}", &mint[..4], &mint[mint.len() - 4..])
    } else {
        mint.to_string()
    }
}

/// What a read of a wallet's Orca positions found, at the slot of its last request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrcaRead {
    pub slot: u64,
    pub positions: Vec<ReadPosition>,
    /// Positions past the read's cap ([`MAX_POSITIONS_PER_MANAGER`], by mint), not read.
    pub not_read: u64,
}

/// Reads the Orca positions `wallet` holds, up to [`MAX_POSITIONS_PER_MANAGER`] of them (by
/// mint: anyone can send position NFTs to a wallet); `symbol` names a mint the catalog knows.
pub async fn read_orca_wallet(
    rpc: &RpcClient,
    program: &str,
    wallet: &str,
    finalized: bool,
    symbol: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<OrcaRead, String> {
    let commitment = if finalized { "finalized" } else { "confirmed" };
    let (listed_at, mints) = single_token_mints(rpc, wallet, commitment).await?;
    let addresses: Vec<String> = mints
        .iter()
        .map(|m| position_address(m, program).ok_or("no Position address for a mint"))
        .collect::<Result<_, _>>()?;
    let (_, found) = accounts_owned(rpc, &addresses, commitment, &[program])
        .await
        .map_err(|e| format!("getMultipleAccounts (positions): {e}"))?;
    let mut positions: Vec<OrcaPosition> = Vec::new();
    for (mint, data) in mints.iter().zip(found) {
        // A mint with no Position account is another NFT.
        let Some(data) = data else { continue };
        let position = decode_position(&data).map_err(|e| format!("position of {mint}: {e}"))?;
        if position.position_mint != *mint {
            return Err(format!(
                "position of {mint}: its account names another mint"
            ));
        }
        positions.push(position);
    }
    let cap = usize::try_from(MAX_POSITIONS_PER_MANAGER).unwrap_or(usize::MAX);
    let not_read = positions.len().saturating_sub(cap) as u64;
    positions.truncate(cap);
    if positions.is_empty() {
        return Ok(OrcaRead {
            slot: listed_at,
            positions: Vec::new(),
            not_read,
        });
    }
    let mut pool_addresses: Vec<String> = positions.iter().map(|p| p.whirlpool.clone()).collect();
    pool_addresses.sort();
    pool_addresses.dedup();
    let (_, pools) = accounts_owned(rpc, &pool_addresses, commitment, &[program])
        .await
        .map_err(|e| format!("getMultipleAccounts (whirlpools): {e}"))?;
    let mut whirlpools: BTreeMap<String, Whirlpool> = BTreeMap::new();
    for (address, data) in pool_addresses.iter().zip(pools) {
        let data = data.ok_or_else(|| format!("whirlpool {address} does not exist"))?;
        let pool = decode_whirlpool(&data).map_err(|e| format!("whirlpool {address}: {e}"))?;
        whirlpools.insert(address.clone(), pool);
    }

    // The bounds' tick arrays and the mints, in one read.
    let mut wanted: Vec<String> = Vec::new();
    let index =
        |address: String, wanted: &mut Vec<String>| match wanted.iter().position(|a| *a == address)
        {
            Some(i) => i,
            None => {
                wanted.push(address);
                wanted.len() - 1
            }
        };
    let mut bounds = Vec::new();
    for p in &positions {
        let pool = &whirlpools[&p.whirlpool];
        // As on EVM: no Whirlpool holds a position whose range is not ordered, within the
        // protocol's ticks and on its pool's spacing; an answer with one fails the read whole.
        let spacing = i32::from(pool.tick_spacing);
        plausible_range(
            Curve::OrcaWhirlpools,
            p.tick_lower_index,
            p.tick_upper_index,
            spacing,
        )
        .map_err(|e| format!("position of {}: {e}", p.position_mint))?;
        let mut of = |tick: i32| -> Result<(i32, usize), String> {
            let start = tick_array_start(tick, pool.tick_spacing);
            let address = tick_array_address(&p.whirlpool, start).ok_or("no tick array address")?;
            Ok((start, index(address, &mut wanted)))
        };
        bounds.push([of(p.tick_lower_index)?, of(p.tick_upper_index)?]);
    }
    let mut mint_at = BTreeMap::new();
    for pool in whirlpools.values() {
        for mint in [&pool.token_mint_a, &pool.token_mint_b] {
            let i = index(mint.clone(), &mut wanted);
            mint_at.insert(mint.clone(), i);
        }
    }
    let (slot, data) = accounts_owned(
        rpc,
        &wanted,
        commitment,
        &[program, TOKEN_PROGRAM, TOKEN_2022_PROGRAM],
    )
    .await
    .map_err(|e| format!("getMultipleAccounts (ticks, mints): {e}"))?;
    let decimals = |mint: &str| -> Result<u8, String> {
        data[mint_at[mint]]
            .as_deref()
            .and_then(|d| d.get(MINT_DECIMALS_AT).copied())
            .ok_or_else(|| format!("mint {mint}: no decimals"))
    };
    let token = |mint: &str| -> Result<HeldToken, String> {
        Ok(HeldToken {
            symbol: symbol(mint).unwrap_or_else(|| short(mint)),
            address: mint.to_string(),
            decimals: decimals(mint)?,
        })
    };
    let mut read = Vec::with_capacity(positions.len());
    for (p, [lower, upper]) in positions.iter().zip(bounds) {
        let pool = &whirlpools[&p.whirlpool];
        let bound_ticks = |(start, i): (i32, usize), tick: i32| -> Result<BoundTicks, String> {
            let array = match data[i].as_deref() {
                None => None,
                Some(account) => {
                    Some(decode_tick_array(account).map_err(|e| format!("tick array: {e}"))?)
                }
            };
            let offset = (tick - start) / i32::from(pool.tick_spacing);
            let found = array
                .filter(|a| a.start_tick_index == start)
                .and_then(|a| a.ticks.get(offset as usize).copied());
            let bound = |outside: u128| BoundTick {
                tick,
                initialized: found.is_some_and(|t| t.initialized),
                outside: U256::from(outside),
            };
            Ok([
                bound(found.map_or(0, |t| t.fee_growth_outside_a)),
                bound(found.map_or(0, |t| t.fee_growth_outside_b)),
            ])
        };
        let (lower, upper) = (
            bound_ticks(lower, p.tick_lower_index)?,
            bound_ticks(upper, p.tick_upper_index)?,
        );
        read.push(position_at(
            p,
            pool,
            program,
            lower,
            upper,
            [token(&pool.token_mint_a)?, token(&pool.token_mint_b)?],
        )?);
    }
    // The read's height: the latest slot any of its answers was read at.
    Ok(OrcaRead {
        slot: slot.max(listed_at),
        positions: read,
        not_read,
    })
}

/// Per token (a, b), the fee growth outside a bound tick.
type BoundTicks = [BoundTick; 2];

fn position_at(
    p: &OrcaPosition,
    pool: &Whirlpool,
    program: &str,
    lower: BoundTicks,
    upper: BoundTicks,
    tokens: [HeldToken; 2],
) -> Result<ReadPosition, String> {
    let curve = Curve::OrcaWhirlpools;
    let bad = |e: crate::domain::math::MathError| format!("position {}: {e}", p.position_mint);
    let amounts = curve
        .amounts_for_liquidity(
            U256::from(pool.sqrt_price),
            curve.sqrt_price_at_tick(p.tick_lower_index).map_err(bad)?,
            curve.sqrt_price_at_tick(p.tick_upper_index).map_err(bad)?,
            p.liquidity,
            false,
        )
        .map_err(bad)?;
    let globals = [pool.fee_growth_global_a, pool.fee_growth_global_b];
    let checkpoints = [p.fee_growth_checkpoint_a, p.fee_growth_checkpoint_b];
    let owed = [p.fee_owed_a, p.fee_owed_b];
    let fees = [0, 1].map(|t| {
        let inside = FeeAccounting::Orca.growth_inside(
            pool.tick_current_index,
            U256::from(globals[t]),
            lower[t],
            upper[t],
        );
        let earned =
            FeeAccounting::Orca.collect_owed(p.liquidity, U256::from(checkpoints[t]), inside);
        U256::from(owed[t]) + U256::from(earned)
    });
    Ok(ReadPosition {
        protocol: Protocol::OrcaWhirlpools,
        pool: p.whirlpool.clone(),
        manager: program.to_string(),
        token: p.position_mint.clone(),
        tokens,
        fee_tier: u32::from(pool.fee_rate),
        tick_spacing: i32::from(pool.tick_spacing),
        tick_lower: p.tick_lower_index,
        tick_upper: p.tick_upper_index,
        liquidity: p.liquidity,
        amounts: [amounts.amount0, amounts.amount1],
        fees,
        sqrt_price: U256::from(pool.sqrt_price),
        tick: pool.tick_current_index,
        // Orca is polled: its figures are its reads'.
        fee_state: None,
        staked: None,
        hooks: None,
    })
}
