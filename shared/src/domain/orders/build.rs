//! Building an on-chain open or close at a fresh pool state: the mint sized as the Uniswap v3
//! SDK sizes one, the approvals the wallet's allowances call for, the withdraw of a whole
//! position, each as a transaction for the wallet to sign.

use super::slippage::{burn_minimums, mint_minimums};
use crate::domain::calldata::{self, hex, CalldataError, MintKey, MintParams, Withdraw};
use crate::domain::catalog::{Catalog, Pool, Token};
use crate::domain::math::uniswap::{liquidity_for_amounts, sqrt_ratio_at_tick};
use crate::domain::math::{MathError, U256};
use crate::domain::model::{ChainOrder, OrderKind, TokenPair, TransactionRequest, WalletHolding};
use crate::domain::valuation::ValuationError;
use chrono::{DateTime, Utc};

/// Where a pool's orders go: its deployment's chain id and position manager, and for a staked
/// position the farm holding it, which its transactions call instead (decision 60), or the
/// Slipstream gauge holding it, which has no calls of the manager's: it is withdrawn from first
/// (decision 71).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Venue {
    pub chain_id: u64,
    pub manager: String,
    pub farm: Option<String>,
    pub gauge: Option<String>,
}

impl Venue {
    /// The contract the transactions call and the approvals are for: the farm where the
    /// position is staked (its `collect`, `decreaseLiquidity`, `increaseLiquidity` and
    /// `multicall` take the manager's calldata), else the position manager.
    pub fn target(&self) -> &str {
        self.farm.as_deref().unwrap_or(&self.manager)
    }

    /// This venue for `holding`: through its farm while it is staked (a Slipstream gauge's
    /// after a withdrawal from it).
    pub fn for_holding(self, holding: &WalletHolding, gauged: bool) -> Venue {
        let staked = holding.staked.as_ref().filter(|s| !s.unstaked);
        let staked = staked.map(|s| s.contract.clone());
        let (farm, gauge) = match gauged {
            true => (None, staked),
            false => (staked, None),
        };
        Venue {
            farm,
            gauge,
            ..self
        }
    }
}

/// The deployment of the pool's protocol on its chain that opens positions on it, if the
/// catalog knows one (EVM only): the one whose position manager the pool names, else the
/// protocol's only one there (with two and none named, none).
pub fn venue(catalog: &Catalog, pool: &Pool) -> Option<Venue> {
    let mut of_protocol = catalog
        .deployments_on(pool.chain)
        .filter(|d| d.protocol == pool.protocol);
    let deployment = match &pool.position_manager {
        Some(named) => catalog
            .deployment_of_manager(pool.chain, named)
            .filter(|d| d.protocol == pool.protocol),
        None => {
            let only = of_protocol.next();
            if of_protocol.next().is_some() {
                None
            } else {
                only
            }
        }
    }?;
    Some(Venue {
        chain_id: deployment.chain_id?,
        manager: deployment.position_manager.clone()?,
        farm: None,
        gauge: None,
    })
}

/// The deployment a wallet position acts through: the one of its own position manager (a
/// chain may have two deployments of a protocol), through its farm while it is staked.
pub fn held_venue(catalog: &Catalog, pool: &Pool, holding: &WalletHolding) -> Option<Venue> {
    let deployment = catalog
        .deployment_of_manager(pool.chain, &holding.manager)
        .filter(|d| d.protocol == pool.protocol)?;
    let venue = Venue {
        chain_id: deployment.chain_id?,
        manager: deployment.position_manager.clone()?,
        farm: None,
        gauge: None,
    };
    Some(venue.for_holding(holding, pool.protocol.is_slipstream()))
}

/// What names `pool` to its position manager's `mint`: its fee tier, or a Slipstream pool's
/// tick spacing.
pub fn mint_key(pool: &Pool) -> MintKey {
    match pool.protocol.is_slipstream() {
        true => MintKey::TickSpacing(pool.tick_spacing),
        false => MintKey::Fee(pool.fee_tier),
    }
}

/// The pool's tokens in protocol order (token0, token1).
pub fn protocol_tokens(pool: &Pool) -> [&Token; 2] {
    if pool.orientation.base_is_token0 {
        [&pool.token_a, &pool.token_b]
    } else {
        [&pool.token_b, &pool.token_a]
    }
}

/// A mint sized at the pool's state: what it asks for, what it will mint, its minimums.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintPlan {
    /// `amount0Desired`, `amount1Desired`: what the largest liquidity the offer funds takes,
    /// rounded up (never more than offered).
    pub desired: [U256; 2],
    /// The liquidity the position manager mints of the desired amounts at this state
    /// (`getLiquidityForAmounts`): at most one unit below the sizing.
    pub liquidity: u128,
    pub minimums: [U256; 2],
    /// The desired amounts in the API's orientation (tokenA, tokenB).
    pub deposit: TokenPair,
}

/// Sizes a mint of `offered` in the range at the pool's state with `bps` of slippage.
pub fn plan_mint(
    pool: &Pool,
    (tick_lower, tick_upper): (i32, i32),
    offered: TokenPair,
    bps: u32,
) -> Result<MintPlan, ValuationError> {
    let sized = pool.size_deposit(tick_lower, tick_upper, offered)?;
    let amounts = pool.to_protocol_order(sized.amounts);
    let desired = [amounts.amount0, amounts.amount1];
    let range = (
        sqrt_ratio_at_tick(tick_lower)?,
        sqrt_ratio_at_tick(tick_upper)?,
    );
    let liquidity = liquidity_for_amounts(pool.sqrt_price, range, (desired[0], desired[1]))?;
    let minimums = mint_minimums(pool.sqrt_price, (tick_lower, tick_upper), desired, bps)?;
    Ok(MintPlan {
        desired,
        liquidity,
        minimums,
        deposit: sized.amounts,
    })
}

pub(super) fn request(
    kind: &str,
    venue: &Venue,
    wallet: &str,
    to: &str,
    data: &[u8],
) -> TransactionRequest {
    TransactionRequest {
        kind: kind.into(),
        chain_id: venue.chain_id,
        from: wallet.into(),
        to: to.into(),
        data: hex(data),
        value: "0".into(),
        gas: None,
        expected: None,
    }
}

/// Per token whose allowance is below what a deposit may take (`desired`, token0 and token1),
/// `approve` of exactly that, after an `approve` of 0 where the allowance is above 0: tokens
/// such as USDT refuse to change a nonzero allowance.
pub fn approvals(
    pool: &Pool,
    venue: &Venue,
    wallet: &str,
    desired: [U256; 2],
    allowances: [U256; 2],
) -> Result<Vec<TransactionRequest>, CalldataError> {
    approvals_to(pool, (venue, venue.target()), wallet, desired, allowances)
}

/// `approvals` to `spender` (the venue's contract, or a zap's router).
fn approvals_to(
    pool: &Pool,
    (venue, spender): (&Venue, &str),
    wallet: &str,
    desired: [U256; 2],
    allowances: [U256; 2],
) -> Result<Vec<TransactionRequest>, CalldataError> {
    let tokens = protocol_tokens(pool);
    let mut transactions = Vec::new();
    for i in 0..2 {
        let (need, have) = (desired[i], allowances[i]);
        if have >= need {
            continue;
        }
        if !have.is_zero() {
            let reset = calldata::approve(spender, U256::ZERO)?;
            transactions.push(request(
                "approve",
                venue,
                wallet,
                &tokens[i].address,
                &reset,
            ));
        }
        let approve = calldata::approve(spender, need)?;
        transactions.push(request(
            "approve",
            venue,
            wallet,
            &tokens[i].address,
            &approve,
        ));
    }
    Ok(transactions)
}

/// The transactions of an open, in order: the approvals its desired amounts call for, then the
/// mint.
pub fn open_transactions(
    pool: &Pool,
    venue: &Venue,
    wallet: &str,
    ticks: (i32, i32),
    plan: &MintPlan,
    allowances: [U256; 2],
    deadline: u64,
) -> Result<Vec<TransactionRequest>, CalldataError> {
    let tokens = protocol_tokens(pool);
    let mut transactions = approvals(pool, venue, wallet, plan.desired, allowances)?;
    let mint = calldata::mint(&MintParams {
        token0: tokens[0].address.clone(),
        token1: tokens[1].address.clone(),
        key: mint_key(pool),
        tick_lower: ticks.0,
        tick_upper: ticks.1,
        amount0_desired: plan.desired[0],
        amount1_desired: plan.desired[1],
        amount0_min: plan.minimums[0],
        amount1_min: plan.minimums[1],
        recipient: wallet.into(),
        deadline,
    })?;
    transactions.push(request("mint", venue, wallet, &venue.manager, &mint));
    Ok(transactions)
}

/// The transactions of a zap (issue 63), in order: the approvals of what it takes from the
/// wallet to `router` its allowances call for, then the router's one `multicall`.
pub fn zap_transactions(
    pool: &Pool,
    (venue, router): (&Venue, &str),
    wallet: &str,
    zap: &calldata::Zap,
    allowances: [U256; 2],
) -> Result<Vec<TransactionRequest>, CalldataError> {
    let mut transactions = approvals_to(pool, (venue, router), wallet, zap.offer, allowances)?;
    let data = calldata::zap(zap)?;
    transactions.push(request("zap", venue, wallet, router, &data));
    Ok(transactions)
}

/// The deadline `seconds` after `now`, in whole unix seconds, and as a time.
pub fn deadline(now: DateTime<Utc>, seconds: u32) -> (u64, DateTime<Utc>) {
    let at = now.timestamp().max(0) as u64 + u64::from(seconds);
    let time = DateTime::from_timestamp(at as i64, 0).unwrap_or(now);
    (at, time)
}

/// An order of `kind` built now at the pool state of `height`.
pub struct OrderTerms<'a> {
    pub venue: &'a Venue,
    pub wallet: &'a str,
    pub height: u64,
    pub slippage_bps: u32,
    pub deadline_seconds: u32,
    pub now: DateTime<Utc>,
}

impl OrderTerms<'_> {
    /// The order carrying `transactions`, expiring at the deadline.
    pub fn order(&self, kind: OrderKind, transactions: Vec<TransactionRequest>) -> ChainOrder {
        let (_, expires_at) = deadline(self.now, self.deadline_seconds);
        ChainOrder {
            kind,
            wallet: self.wallet.into(),
            manager: self.venue.manager.clone(),
            requested_at: self.now,
            expires_at,
            height: self.height,
            slippage_bps: self.slippage_bps,
            transactions,
            hash: None,
            moved: None,
            permit: None,
        }
    }

    pub fn deadline(&self) -> u64 {
        deadline(self.now, self.deadline_seconds).0
    }
}

/// Why a withdraw cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum WithdrawError {
    #[error("{0}")]
    Math(#[from] MathError),
    #[error("{0}")]
    Calldata(#[from] CalldataError),
    #[error("the position's token id is not a number")]
    TokenId,
}

/// The one transaction of a close: the whole liquidity withdrawn with the SDK's burn
/// minimums at the pool's state, everything owed collected to the wallet.
pub fn withdraw_transaction(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    token_id: &str,
    ticks: (i32, i32),
    liquidity: u128,
) -> Result<TransactionRequest, WithdrawError> {
    withdrawal(pool, terms, token_id, (ticks, liquidity), true)
}

/// `liquidity` of the position withdrawn and everything owed collected; `closing`: a staked
/// position leaves its farm too.
pub(super) fn withdrawal(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    token_id: &str,
    ((tick_lower, tick_upper), liquidity): ((i32, i32), u128),
    closing: bool,
) -> Result<TransactionRequest, WithdrawError> {
    let token_id = token_id
        .parse::<U256>()
        .map_err(|_| WithdrawError::TokenId)?;
    let minimums = burn_minimums(
        pool.sqrt_price,
        (tick_lower, tick_upper),
        liquidity,
        terms.slippage_bps,
    )?;
    let withdraw = Withdraw {
        token_id,
        liquidity,
        minimums,
        deadline: terms.deadline(),
        recipient: terms.wallet.into(),
    };
    // A staked position closes through its farm and comes back to the wallet, its rewards
    // harvested to it.
    let data = match &terms.venue.farm {
        Some(_) if closing => calldata::withdraw_and_unstake(&withdraw)?,
        _ => calldata::withdraw(&withdraw)?,
    };
    Ok(request(
        "withdraw",
        terms.venue,
        terms.wallet,
        terms.venue.target(),
        &data,
    ))
}
