//! A mint confirmed as an open's: the token a receipt or a wallet read says was minted for an
//! open is the open's where its position manager, at the mint's block, has it on the open's
//! pool and range with the mint's liquidity. A Uniswap v3 mint's amounts are its
//! `IncreaseLiquidity`'s, bounded by that liquidity; v4's events carry none (issue 52): what a
//! v4 mint took is its liquidity's amounts at the pool's price at its block (StateView's
//! `getSlot0`), rounded up as the pool charges (as a history values a v4 deposit). One call or
//! one batch of three.

use super::evm::{next_answer, next_decoded};
use super::rpc::RpcClient;
use super::trust::plausible_mint;
use super::v4::{decode_slot0, pool_id, slot0_call, to_u256, unpack_ticks, view_call};
use super::v4::{IV4PositionManager, V4PoolKey};
use super::wallets::position_terms;
use crate::domain::catalog::Pool;
use crate::domain::math::{Curve, U256};
use crate::domain::model::{ChainOrder, Position, Protocol};
use crate::domain::orders::build::protocol_tokens;
use crate::domain::orders::settle::Minted;
use alloy_sol_types::SolCall;
use serde_json::json;

use IV4PositionManager::{getPoolAndPositionInfoCall, getPositionLiquidityCall};

/// The minted token as the open's mint, if it is the open's: the pool's tokens and fee, the
/// position's ticks, as the position manager's `positions` answers at the mint's block, and a
/// receipt the token's own liquidity bears out (`trust::plausible_mint`: a node cannot inflate
/// what was deposited); a Uniswap v4 mint as [`confirmed_mint`] confirms it, its amounts read
/// there.
pub(super) async fn confirmed(
    rpc: &RpcClient,
    pool: &Pool,
    position: &Position,
    order: &ChainOrder,
    minted: &Minted,
) -> Option<Minted> {
    let ticks = (position.tick_lower, position.tick_upper);
    if pool.protocol == Protocol::UniswapV4 {
        let read = confirmed_mint(rpc, (pool, &order.manager), ticks, minted).await;
        return read
            .inspect_err(|reason| {
                tracing::warn!(position = %position.id, token = %minted.token_id, %reason, "a v4 mint refused");
            })
            .ok();
    }
    mint_matches(rpc, pool, order, ticks, minted)
        .await
        .then(|| minted.clone())
}

/// Whether a Uniswap v3 mint is the open's (`confirmed`).
async fn mint_matches(
    rpc: &RpcClient,
    pool: &Pool,
    order: &ChainOrder,
    ticks: (i32, i32),
    minted: &Minted,
) -> bool {
    let at = json!(format!("0x{:x}", minted.block));
    let Ok(terms) = position_terms(rpc, &order.manager, minted.token_id, at).await else {
        return false;
    };
    let tokens = protocol_tokens(pool).map(|t| t.address.to_ascii_lowercase());
    // A Slipstream position's fifth word is its pool's tick spacing.
    let key = match pool.protocol.is_slipstream() {
        true => u32::try_from(pool.tick_spacing).unwrap_or_default(),
        false => pool.fee_tier,
    };
    if (&terms.tokens, terms.fee, terms.ticks) != (&tokens, key, ticks) {
        return false;
    }
    match plausible_mint(ticks, minted.liquidity, minted.amounts, terms.liquidity) {
        Ok(()) => true,
        Err(reason) => {
            tracing::warn!(token = %minted.token_id, %reason, "a mint's receipt refused");
            false
        }
    }
}

/// `minted` as the open of `ticks` on `pool` took it (its amounts read at its block), or why
/// it is not that open's.
async fn confirmed_mint(
    rpc: &RpcClient,
    (pool, manager): (&Pool, &str),
    ticks: (i32, i32),
    minted: &Minted,
) -> Result<Minted, String> {
    let state_view = pool
        .state_view
        .as_deref()
        .ok_or("the pool has no state view")?;
    let at = json!({"blockNumber": format!("0x{:x}", minted.block)});
    let token_id = minted.token_id;
    let calls = [
        view_call(
            manager,
            getPoolAndPositionInfoCall { tokenId: token_id }.abi_encode(),
            &at,
        ),
        view_call(
            manager,
            getPositionLiquidityCall { tokenId: token_id }.abi_encode(),
            &at,
        ),
        slot0_call(state_view, &pool.id, &at),
    ];
    let mut answers = rpc.batch(&calls).await.into_iter();
    let info =
        next_decoded::<getPoolAndPositionInfoCall>(&mut answers, 6, "getPoolAndPositionInfo")?;
    let liquidity =
        next_decoded::<getPositionLiquidityCall>(&mut answers, 1, "getPositionLiquidity")?;
    let (sqrt_price, _) = decode_slot0(next_answer(&mut answers))?;
    let key: &V4PoolKey = &info.poolKey;
    if !pool_id(key).eq_ignore_ascii_case(&pool.id) {
        return Err(format!("token {token_id} is on pool {}", pool_id(key)));
    }
    let held = unpack_ticks(to_u256(info.info));
    if held != ticks {
        return Err(format!("token {token_id} holds the range {held:?}"));
    }
    if liquidity != minted.liquidity {
        return Err(format!(
            "the mint's liquidity {} is not the token's {liquidity}",
            minted.liquidity
        ));
    }
    let curve = Curve::UniswapV3;
    let bad = |e: crate::domain::math::MathError| e.to_string();
    let (a, b) = (
        curve.sqrt_price_at_tick(ticks.0).map_err(bad)?,
        curve.sqrt_price_at_tick(ticks.1).map_err(bad)?,
    );
    let taken = curve
        .amounts_for_liquidity(sqrt_price, a, b, liquidity, true)
        .map_err(bad)?;
    let amounts: [U256; 2] = [taken.amount0, taken.amount1];
    Ok(Minted {
        amounts,
        ..minted.clone()
    })
}
