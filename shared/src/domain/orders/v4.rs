//! Uniswap v4 actions on a wallet position (issue 52), through its PositionManager's
//! `modifyLiquidities` with v4-periphery's action sequences: a collect is `DECREASE_LIQUIDITY`
//! of no liquidity (v4 pays a position's fees at every modification), a decrease of a share or
//! of all its liquidity (the close) the same of that liquidity, each then `TAKE_PAIR` of both
//! currencies to the wallet (native ETH paid as ETH). The wallet pays nothing: no approval.
//! `modifyLiquidities` answers nothing, so what it pays is the exact math at the state it is
//! built at: the share's principal (rounded down, as the pool pays it) and every fee owed; its
//! minimums are the SDK's burn minimums of the principal, which is what v4 checks them against.

use super::build::{protocol_tokens, request, OrderTerms, WithdrawError};
use super::slippage::burn_minimums;
use crate::domain::calldata::{self, V4Action};
use crate::domain::catalog::Pool;
use crate::domain::math::U256;
use crate::domain::model::TransactionRequest;

/// A decrease of `liquidity` of the position (0: a collect), and what it pays the wallet
/// (protocol order) at the pool's state given `fees` owed (protocol order, all of them).
pub struct V4Decrease<'a> {
    pub kind: &'a str,
    pub token_id: &'a str,
    pub ticks: (i32, i32),
    pub liquidity: u128,
    pub fees: [U256; 2],
}

/// `modifyLiquidities([DECREASE_LIQUIDITY, TAKE_PAIR])` for the wallet to sign, and what it
/// pays the wallet at the pool's state.
pub fn decrease_transaction(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    decrease: &V4Decrease<'_>,
) -> Result<(TransactionRequest, [U256; 2]), WithdrawError> {
    let (liquidity, (lower, upper)) = (decrease.liquidity, decrease.ticks);
    let curve = pool.curve();
    let principal = curve.amounts_for_liquidity(
        pool.sqrt_price,
        curve.sqrt_price_at_tick(lower)?,
        curve.sqrt_price_at_tick(upper)?,
        liquidity,
        false,
    )?;
    let minimums = if liquidity == 0 {
        [U256::ZERO; 2]
    } else {
        burn_minimums(
            pool.sqrt_price,
            decrease.ticks,
            liquidity,
            terms.slippage_bps,
        )?
    };
    let token_id = decrease
        .token_id
        .parse()
        .map_err(|_| WithdrawError::TokenId)?;
    let [token0, token1] = protocol_tokens(pool);
    let actions = [
        V4Action::Decrease {
            token_id,
            liquidity,
            minimums,
        },
        V4Action::TakePair {
            currencies: [token0.address.clone(), token1.address.clone()],
            recipient: terms.wallet.into(),
        },
    ];
    let data = calldata::modify_liquidities(&actions, terms.deadline())?;
    let venue = terms.venue;
    let built = request(decrease.kind, venue, terms.wallet, &venue.manager, &data);
    let paid = [
        principal.amount0.saturating_add(decrease.fees[0]),
        principal.amount1.saturating_add(decrease.fees[1]),
    ];
    Ok((built, paid))
}
