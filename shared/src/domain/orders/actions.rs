//! The actions on an open wallet position (decision 56), each built at a fresh pool
//! state for the owner's wallet to sign: a `collect` of everything owed, an
//! `increaseLiquidity` sized as a create's mint is (with the approvals the wallet's allowances
//! call for and the SDK's minimums for an existing token id), and a `decreaseLiquidity` of a
//! share of the liquidity with everything owed collected in the same `multicall`.

use super::build::{
    approvals, mint_key, protocol_tokens, request, withdrawal, MintPlan, OrderTerms, WithdrawError,
};
use super::simulation::GAUGE_APPROVE;
use super::slippage::burn_minimums;
use crate::domain::calldata::{self, GaugeCall, Increase, MintParams, Withdraw};
use crate::domain::catalog::Pool;
use crate::domain::math::{Amounts, U256};
use crate::domain::model::{TokenPair, TransactionRequest};
use crate::domain::valuation::ValuationError;

fn token_id_of(token_id: &str) -> Result<U256, WithdrawError> {
    token_id.parse().map_err(|_| WithdrawError::TokenId)
}

/// `collect(tokenId, wallet, 2^128−1, 2^128−1)`: fees and uncollected principal to the wallet.
pub fn collect_transaction(
    terms: &OrderTerms<'_>,
    token_id: &str,
) -> Result<TransactionRequest, WithdrawError> {
    let data = calldata::collect(token_id_of(token_id)?, terms.wallet)?;
    Ok(request(
        "collect",
        terms.venue,
        terms.wallet,
        terms.venue.target(),
        &data,
    ))
}

/// `harvest(tokenId, wallet)` on the farm the position is staked in: its rewards to the wallet.
pub fn harvest_transaction(
    terms: &OrderTerms<'_>,
    token_id: &str,
) -> Result<TransactionRequest, WithdrawError> {
    let data = calldata::harvest(token_id_of(token_id)?, terms.wallet)?;
    Ok(request(
        "harvest",
        terms.venue,
        terms.wallet,
        terms.venue.target(),
        &data,
    ))
}

/// An Aerodrome Slipstream position's stake in its pool's `gauge`: the manager's
/// `approve(gauge, tokenId)`, then the gauge's `deposit(tokenId)` (decision 71).
pub fn gauge_stake_transactions(
    terms: &OrderTerms<'_>,
    token_id: &str,
    gauge: &str,
) -> Result<Vec<TransactionRequest>, WithdrawError> {
    let id = token_id_of(token_id)?;
    let approve = calldata::approve_position(gauge, id)?;
    let (venue, wallet) = (terms.venue, terms.wallet);
    Ok(vec![
        request(GAUGE_APPROVE, venue, wallet, &venue.manager, &approve),
        gauge_transaction(terms, token_id, (gauge, GaugeCall::Deposit))?,
    ])
}

/// A Slipstream gauge's call on the position, as the transaction of its kind: `stake`
/// (deposit), `unstake` (withdraw: before any of the manager's calls on a staked position, as
/// the gauge has none of them) or `harvest` (getReward).
pub fn gauge_transaction(
    terms: &OrderTerms<'_>,
    token_id: &str,
    (gauge, function): (&str, GaugeCall),
) -> Result<TransactionRequest, WithdrawError> {
    let data = calldata::gauge(function, token_id_of(token_id)?);
    let kind = match function {
        GaugeCall::Deposit => "stake",
        GaugeCall::Withdraw => "unstake",
        GaugeCall::GetReward => "harvest",
    };
    Ok(request(kind, terms.venue, terms.wallet, gauge, &data))
}

/// The position's NFT sent from the wallet to `farm` (`safeTransferFrom` on its manager): staked
/// there, its rewards accruing to the wallet.
pub fn stake_transaction(
    terms: &OrderTerms<'_>,
    token_id: &str,
    farm: &str,
) -> Result<TransactionRequest, WithdrawError> {
    let data = calldata::stake_transfer(terms.wallet, farm, token_id_of(token_id)?)?;
    Ok(request(
        "stake",
        terms.venue,
        terms.wallet,
        &terms.venue.manager,
        &data,
    ))
}

/// The approvals `plan`'s desired amounts call for, then `increaseLiquidity` of them with the
/// plan's minimums (the SDK's `addCallParameters` for a token id: the same amounts and
/// minimums as a mint of the range).
pub fn increase_transactions(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    token_id: &str,
    plan: &MintPlan,
    allowances: [U256; 2],
) -> Result<Vec<TransactionRequest>, WithdrawError> {
    let (venue, wallet) = (terms.venue, terms.wallet);
    let mut transactions = approvals(pool, venue, wallet, plan.desired, allowances)?;
    let data = calldata::increase(&Increase {
        token_id: token_id_of(token_id)?,
        desired: plan.desired,
        minimums: plan.minimums,
        deadline: terms.deadline(),
    })?;
    transactions.push(request("increase", venue, wallet, venue.target(), &data));
    Ok(transactions)
}

/// `percent` of `liquidity`, rounded down, as the SDK takes a `liquidityPercentage`.
pub fn share_of(liquidity: u128, percent: u8) -> u128 {
    let share = U256::from(liquidity) * U256::from(percent) / U256::from(100u8);
    u128::try_from(share).unwrap_or(liquidity)
}

/// `multicall([decreaseLiquidity(the share, its burn minimums), collect(wallet, max, max)])`:
/// the SDK's `removeCallParameters` with that `liquidityPercentage`.
pub fn decrease_transaction(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    token_id: &str,
    ticks: (i32, i32),
    share: u128,
) -> Result<TransactionRequest, WithdrawError> {
    let withdraw = withdrawal(pool, terms, token_id, (ticks, share), false)?;
    Ok(TransactionRequest {
        kind: "decrease".into(),
        ..withdraw
    })
}

/// What a range move's withdrawal pays at the pool's state, at least: the liquidity's
/// principal (rounded down, as a burn pays) and what the last read found owed (`owed`,
/// protocol order: fees and uncollected principal, which only grow until the move). The new
/// range is sized from it.
pub fn move_funds(
    pool: &Pool,
    (tick_lower, tick_upper): (i32, i32),
    liquidity: u128,
    owed: [U256; 2],
) -> Result<TokenPair, ValuationError> {
    let principal = pool.withdrawal(tick_lower, tick_upper, liquidity)?;
    let owed = pool.to_api_order(Amounts {
        amount0: owed[0],
        amount1: owed[1],
    });
    Ok(TokenPair {
        a: principal.a.saturating_add(owed.a),
        b: principal.b.saturating_add(owed.b),
    })
}

/// The old and the new range of a move, and the liquidity it takes out.
pub struct Move<'a> {
    pub token_id: &'a str,
    pub from: (i32, i32),
    pub liquidity: u128,
    pub to: (i32, i32),
    pub plan: &'a MintPlan,
}

/// The approvals the new range's mint calls for (it pulls its tokens from the wallet), then
/// one `multicall([decreaseLiquidity(all, the SDK's burn minimums), collect(wallet, max, max),
/// mint(the new range, the plan's amounts and minimums, to the wallet)])`.
pub fn rebalance_transactions(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    moving: &Move<'_>,
    allowances: [U256; 2],
) -> Result<Vec<TransactionRequest>, WithdrawError> {
    let (venue, wallet) = (terms.venue, terms.wallet);
    let plan = moving.plan;
    let mut transactions = approvals(pool, venue, wallet, plan.desired, allowances)?;
    let withdraw = Withdraw {
        token_id: token_id_of(moving.token_id)?,
        liquidity: moving.liquidity,
        minimums: burn_minimums(
            pool.sqrt_price,
            moving.from,
            moving.liquidity,
            terms.slippage_bps,
        )?,
        deadline: terms.deadline(),
        recipient: wallet.into(),
    };
    let [token0, token1] = protocol_tokens(pool);
    let mint = MintParams {
        token0: token0.address.clone(),
        token1: token1.address.clone(),
        key: mint_key(pool),
        tick_lower: moving.to.0,
        tick_upper: moving.to.1,
        amount0_desired: plan.desired[0],
        amount1_desired: plan.desired[1],
        amount0_min: plan.minimums[0],
        amount1_min: plan.minimums[1],
        recipient: wallet.into(),
        deadline: terms.deadline(),
    };
    let data = calldata::rebalance(&withdraw, &mint)?;
    transactions.push(request("rebalance", venue, wallet, &venue.manager, &data));
    Ok(transactions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_rounded_down_and_whole_at_100() {
        assert_eq!(share_of(1_000, 33), 330);
        assert_eq!(share_of(999, 50), 499);
        assert_eq!(share_of(u128::MAX, 100), u128::MAX);
        assert_eq!(share_of(u128::MAX, 1), u128::MAX / 100);
        assert_eq!(share_of(1, 99), 0);
    }
}
