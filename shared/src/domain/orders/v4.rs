//! Uniswap v4 actions on a wallet position (issue 52), through its PositionManager's
//! `modifyLiquidities` with v4-periphery's action sequences: a collect is `DECREASE_LIQUIDITY`
//! of no liquidity (v4 pays a position's fees at every modification), a decrease of a share the
//! same of that share, the close `BURN_POSITION` (all of it and every fee, the NFT burnt); each
//! then `TAKE_PAIR` of both currencies to the wallet (native ETH paid as ETH). An add is
//! `INCREASE_LIQUIDITY` with the v4 SDK's maximums, each currency closed (paid, or taken where
//! the fees it pays out exceed its cost), the native currency's rest swept back; the ERC-20s
//! through Permit2, approved by transactions where short (or by one signed batch: `permit`). An
//! open is `MINT_POSITION` of the liquidity the offer funds, then `SETTLE_PAIR`, paid as an add
//! is; a move of the range one unlock: `BURN_POSITION`, `MINT_POSITION_FROM_DELTAS` of the
//! burn's credit in the new range, each currency closed. `modifyLiquidities` answers nothing,
//! so what it moves is the exact math at the state it is built at: the principal (rounded down
//! as the pool pays it, up as it takes it) and every fee owed; a withdrawal's minimums are the
//! SDK's burn minimums of the principal, which is what v4 checks them against.

use super::build::{protocol_tokens, request, OrderTerms, WithdrawError};
use super::slippage::{burn_minimums, mint_maximums};
use crate::domain::calldata::{self, PoolKey, V4Action};
use crate::domain::catalog::{is_native, Pool, NATIVE};
use crate::domain::math::uniswap::liquidity_for_amounts;
use crate::domain::math::{Amounts, U256};
use crate::domain::model::{TokenPair, TransactionRequest};

/// A decrease of `liquidity` of the position (0: a collect), and what it pays the wallet
/// (protocol order) at the pool's state given `fees` owed (protocol order, all of them).
pub struct V4Decrease<'a> {
    pub kind: &'a str,
    pub token_id: &'a str,
    pub ticks: (i32, i32),
    pub liquidity: u128,
    pub fees: [U256; 2],
    /// All of it, the NFT burnt (the close).
    pub burn: bool,
}

/// What `liquidity` holds in the range at the pool's state (protocol order), rounded as the
/// pool pays it out (down) or takes it in (`up`).
fn held(
    pool: &Pool,
    (lower, upper): (i32, i32),
    liquidity: u128,
    up: bool,
) -> Result<[U256; 2], WithdrawError> {
    let curve = pool.curve();
    let (a, b) = (
        curve.sqrt_price_at_tick(lower)?,
        curve.sqrt_price_at_tick(upper)?,
    );
    let held = curve.amounts_for_liquidity(pool.sqrt_price, a, b, liquidity, up)?;
    Ok([held.amount0, held.amount1])
}

/// `modifyLiquidities([DECREASE_LIQUIDITY or BURN_POSITION, TAKE_PAIR])` for the wallet to
/// sign, and what it pays the wallet at the pool's state.
pub fn decrease_transaction(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    decrease: &V4Decrease<'_>,
) -> Result<(TransactionRequest, [U256; 2]), WithdrawError> {
    let liquidity = decrease.liquidity;
    let principal = held(pool, decrease.ticks, liquidity, false)?;
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
    // The close burns the NFT with all its liquidity (v4's `BURN_POSITION`).
    let out = if decrease.burn {
        V4Action::Burn { token_id, minimums }
    } else {
        V4Action::Decrease {
            token_id,
            liquidity,
            minimums,
        }
    };
    let actions = [
        out,
        V4Action::TakePair {
            currencies: [token0.address.clone(), token1.address.clone()],
            recipient: terms.wallet.into(),
        },
    ];
    let data = calldata::modify_liquidities(&actions, terms.deadline())?;
    let venue = terms.venue;
    let built = request(decrease.kind, venue, terms.wallet, &venue.manager, &data);
    let paid = [0, 1].map(|t| principal[t].saturating_add(decrease.fees[t]));
    Ok((built, paid))
}

/// What a wallet lets Uniswap v4's PositionManager take of one token through Permit2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permit2Allowance {
    /// The token's ERC-20 allowance to Permit2.
    pub to_permit2: U256,
    /// Permit2's allowance to the PositionManager, when it expires (unix seconds), and its
    /// nonce (what a signed permit of it must carry).
    pub amount: U256,
    pub expiration: u64,
    pub nonce: u64,
}

/// An add of `liquidity` to the position: its maximums within the slippage, and what it pays
/// (the liquidity's amounts at the pool's state, rounded up as an add charges) against the
/// `fees` owed it pays out in the same unlock.
pub struct V4Increase<'a> {
    pub token_id: &'a str,
    pub ticks: (i32, i32),
    pub liquidity: u128,
    pub fees: [U256; 2],
}

/// What an add moves (protocol order): the deposit its liquidity takes, and the fees the
/// position's modification pays out, netted with it by `CLOSE_CURRENCY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    pub deposit: [U256; 2],
    pub fees: [U256; 2],
}

/// Permit2's approvals an add of `maximums` needs from `wallet`, answered only where short: per
/// ERC-20 token, `approve(Permit2, max)` where its allowance to Permit2 is below it (after an
/// `approve` of 0 where it is above 0, for tokens such as USDT), then
/// `Permit2.approve(token, PositionManager, max, deadline)` where Permit2's allowance is below
/// it or expires before the transaction's deadline.
fn permit2_approvals(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    maximums: [U256; 2],
    allowances: &[Permit2Allowance; 2],
) -> Result<Vec<TransactionRequest>, WithdrawError> {
    let (venue, wallet) = (terms.venue, terms.wallet);
    let tokens = protocol_tokens(pool);
    let mut out = Vec::new();
    for i in 0..2 {
        let (need, have, token) = (maximums[i], &allowances[i], &tokens[i].address);
        if need.is_zero() || is_native(token) {
            continue;
        }
        if have.to_permit2 < need {
            if !have.to_permit2.is_zero() {
                let reset = calldata::approve(calldata::PERMIT2, U256::ZERO)?;
                out.push(request("approve", venue, wallet, token, &reset));
            }
            let approve = calldata::approve(calldata::PERMIT2, need)?;
            out.push(request("approve", venue, wallet, token, &approve));
        }
        if have.amount < need || have.expiration < terms.deadline() {
            let data = calldata::permit2_approve(token, &venue.manager, need, terms.deadline())?;
            out.push(request("approve", venue, wallet, calldata::PERMIT2, &data));
        }
    }
    Ok(out)
}

/// The approvals `maximums` call for, then `modifyLiquidities(actions)` with the native
/// currency's maximum as the transaction's `value` and its rest swept back (`SWEEP`).
fn paying(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    (kind, mut actions): (&str, Vec<V4Action>),
    maximums: [U256; 2],
    allowances: &[Permit2Allowance; 2],
) -> Result<Vec<TransactionRequest>, WithdrawError> {
    let mut transactions = permit2_approvals(pool, terms, maximums, allowances)?;
    let currencies = protocol_tokens(pool).map(|t| t.address.clone());
    let native = (0..2).find(|i| is_native(&currencies[*i]) && !maximums[*i].is_zero());
    if let Some(i) = native {
        actions.push(V4Action::Sweep {
            currency: currencies[i].clone(),
            recipient: terms.wallet.into(),
        });
    }
    let data = calldata::modify_liquidities(&actions, terms.deadline())?;
    let venue = terms.venue;
    let mut built = request(kind, venue, terms.wallet, &venue.manager, &data);
    if let Some(i) = native {
        built.value = maximums[i].to_string();
    }
    transactions.push(built);
    Ok(transactions)
}

/// Both currencies closed: each paid, or taken where the unlock owes it to the wallet.
fn close_both(pool: &Pool) -> [V4Action; 2] {
    protocol_tokens(pool).map(|t| V4Action::CloseCurrency {
        currency: t.address.clone(),
    })
}

/// The approvals an add needs (`permit2_approvals`), then `modifyLiquidities([
/// INCREASE_LIQUIDITY, CLOSE_CURRENCY ×2, SWEEP])` with the native currency's maximum as the
/// transaction's `value` (its rest swept back to the wallet); and what it moves.
pub fn increase_transactions(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    add: &V4Increase<'_>,
    allowances: &[Permit2Allowance; 2],
) -> Result<(Vec<TransactionRequest>, Added), WithdrawError> {
    let taken = held(pool, add.ticks, add.liquidity, true)?;
    let maximums = mint_maximums(
        pool.sqrt_price,
        add.ticks,
        add.liquidity,
        terms.slippage_bps,
    )?;
    let token_id = add.token_id.parse().map_err(|_| WithdrawError::TokenId)?;
    let mut actions = vec![V4Action::Increase {
        token_id,
        liquidity: add.liquidity,
        maximums,
    }];
    actions.extend(close_both(pool));
    let transactions = paying(pool, terms, ("increase", actions), maximums, allowances)?;
    let added = Added {
        deposit: taken,
        fees: add.fees,
    };
    Ok((transactions, added))
}

/// The pool's key as its PositionManager takes it; `None` where the catalog's currencies, fee,
/// tick spacing and hooks do not hash to the pool's id (a key is never guessed).
pub fn pool_key(pool: &Pool) -> Option<PoolKey> {
    let key = PoolKey {
        currencies: protocol_tokens(pool).map(|t| t.address.clone()),
        fee: pool.fee_tier,
        tick_spacing: pool.tick_spacing,
        hooks: pool.hooks.clone().unwrap_or_else(|| NATIVE.into()),
    };
    let id = key.id().ok()?;
    id.eq_ignore_ascii_case(&pool.id).then_some(key)
}

/// A new position of `liquidity` in `ticks` for the wallet: the approvals its maximums call
/// for, then `modifyLiquidities([MINT_POSITION, SETTLE_PAIR, SWEEP])`; and what it takes
/// (protocol order, rounded up as the pool charges).
pub fn mint_transactions(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    key: &PoolKey,
    (ticks, liquidity): ((i32, i32), u128),
    allowances: &[Permit2Allowance; 2],
) -> Result<(Vec<TransactionRequest>, [U256; 2]), WithdrawError> {
    let taken = held(pool, ticks, liquidity, true)?;
    let maximums = mint_maximums(pool.sqrt_price, ticks, liquidity, terms.slippage_bps)?;
    let actions = vec![
        V4Action::Mint {
            key: key.clone(),
            ticks,
            liquidity,
            maximums,
            owner: terms.wallet.into(),
        },
        V4Action::SettlePair {
            currencies: key.currencies.clone(),
        },
    ];
    let transactions = paying(pool, terms, ("mint", actions), maximums, allowances)?;
    Ok((transactions, taken))
}

/// A move of a position's range: all of `liquidity` and the `fees` owed out of `from`, into a
/// new position in `to`.
pub struct V4Move<'a> {
    pub token_id: &'a str,
    pub from: (i32, i32),
    pub liquidity: u128,
    pub fees: [U256; 2],
    pub to: (i32, i32),
}

/// What a move does at the pool's state (protocol order): what the burn credits (principal and
/// fees), the liquidity that credit mints in the new range and what it takes (rounded up), and
/// what the wallet pays beyond the credit (a unit of rounding, at most).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub withdrawn: [U256; 2],
    pub liquidity: u128,
    pub deposited: [U256; 2],
    pub owed: [U256; 2],
    /// `deposited` in the API's orientation (tokenA, tokenB): the new position's deposit.
    pub deposit: TokenPair,
}

impl Moved {
    /// What the wallet is paid back: the credit the new position does not take.
    pub fn leftover(&self) -> [U256; 2] {
        [0, 1].map(|t| self.withdrawn[t].saturating_sub(self.deposited[t]))
    }
}

/// What `moving` does at the pool's state, as `MINT_POSITION_FROM_DELTAS` sizes it: the
/// largest liquidity the burn's credit funds at the pool's price.
pub fn move_plan(pool: &Pool, moving: &V4Move<'_>) -> Result<Moved, WithdrawError> {
    let principal = held(pool, moving.from, moving.liquidity, false)?;
    let withdrawn = [0, 1].map(|t| principal[t].saturating_add(moving.fees[t]));
    let curve = pool.curve();
    let range = (
        curve.sqrt_price_at_tick(moving.to.0)?,
        curve.sqrt_price_at_tick(moving.to.1)?,
    );
    let liquidity = liquidity_for_amounts(pool.sqrt_price, range, (withdrawn[0], withdrawn[1]))?;
    let deposited = held(pool, moving.to, liquidity, true)?;
    let [amount0, amount1] = deposited;
    Ok(Moved {
        withdrawn,
        liquidity,
        deposited,
        deposit: pool.to_api_order(Amounts { amount0, amount1 }),
        owed: [0, 1].map(|t| deposited[t].saturating_sub(withdrawn[t])),
    })
}

/// One `modifyLiquidities([BURN_POSITION, MINT_POSITION_FROM_DELTAS, CLOSE_CURRENCY ×2])`: the
/// old position burnt (the SDK's burn minimums of its principal), the new one minted to the
/// wallet of all it paid (within the slippage's maximums of `plan`'s liquidity), the rest
/// taken by the wallet; where the new one takes a unit more than the credit, the approvals or
/// the native `value` for it.
pub fn move_transactions(
    pool: &Pool,
    terms: &OrderTerms<'_>,
    (key, moving): (&PoolKey, &V4Move<'_>),
    plan: &Moved,
    allowances: &[Permit2Allowance; 2],
) -> Result<Vec<TransactionRequest>, WithdrawError> {
    let token_id = moving
        .token_id
        .parse()
        .map_err(|_| WithdrawError::TokenId)?;
    let bps = terms.slippage_bps;
    let minimums = burn_minimums(pool.sqrt_price, moving.from, moving.liquidity, bps)?;
    let maximums = mint_maximums(pool.sqrt_price, moving.to, plan.liquidity, bps)?;
    let mut actions = vec![
        V4Action::Burn { token_id, minimums },
        V4Action::MintFromDeltas {
            key: key.clone(),
            ticks: moving.to,
            maximums,
            owner: terms.wallet.into(),
        },
    ];
    actions.extend(close_both(pool));
    paying(pool, terms, ("rebalance", actions), plan.owed, allowances)
}
