//! What the chain's answer makes of a position waiting on it: a confirmed mint turns the
//! pending order into the wallet position it opened (the same id); a confirmed withdraw closes
//! the position with what it paid, frozen; a revert, an expiry or a cancel closes a pending
//! order with nothing invested.

use super::build::protocol_tokens;
use crate::domain::catalog::Pool;
use crate::domain::history::{decimals, units};
use crate::domain::lifecycle::{frozen_close, realized};
use crate::domain::math::{Amounts, U256};
use crate::domain::model::{
    ChainOrder, Closing, HeldToken, OrderKind, Position, Status, WalletHolding,
};
use crate::domain::valuation::ValuationError;
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};

pub const REVERTED: &str = "the transaction reverted on chain";
pub const EXPIRED: &str = "expired: not mined before its deadline";
pub const CANCELLED: &str = "cancelled by its owner before it was confirmed";
/// A close requested through the API, confirmed (the same word as a wallet's own withdraw).
pub const WITHDRAWN: &str = "withdrawn";
/// A position whose range move (decision 56) was confirmed: its liquidity went to a new one.
pub const MOVED: &str = "moved";

/// Whether `events` (the position's, as its history read them) show `order` done: an event of
/// its kind after the block it was built at. An action a contract wallet executed itself (a
/// Safe's `execTransaction`, whose hash the page may never know) is done by its events as an
/// EOA's is by its receipt (issue 61). A close or a move waits for its receipt or deadline (its
/// withdrawal's figures are read from it).
pub fn done_by(order: &ChainOrder, events: &[crate::domain::history::PositionEvent]) -> bool {
    use crate::domain::history::EventKind;
    let kind = match order.kind {
        OrderKind::Collect => EventKind::Collect,
        OrderKind::Increase => EventKind::Deposit,
        OrderKind::Decrease => EventKind::Withdraw,
        OrderKind::Harvest => EventKind::Harvest,
        OrderKind::Stake => EventKind::Stake,
        _ => return false,
    };
    events
        .iter()
        .any(|e| e.kind == kind && e.block > order.height)
}

/// A mint as the position manager's events tell it: `Transfer(0 → wallet, tokenId)` and
/// `IncreaseLiquidity(tokenId, liquidity, amount0, amount1)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minted {
    pub token_id: U256,
    pub liquidity: u128,
    /// Protocol order: what the mint took.
    pub amounts: [U256; 2],
    pub block: u64,
}

/// A withdraw as its events tell it: `DecreaseLiquidity`'s amounts (the principal) and
/// `Collect`'s (principal and fees), in protocol order, its block and that block's time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withdrawal {
    pub principal: [U256; 2],
    pub collected: [U256; 2],
    pub block: u64,
    pub time: DateTime<Utc>,
}

/// The holding of a position just minted, at the pool's synced state: what its liquidity holds
/// there (rounded down, as a withdrawal pays), no fees yet. The wallet's next read replaces it.
pub fn holding_at_pool(
    pool: &Pool,
    order: &ChainOrder,
    (tick_lower, tick_upper): (i32, i32),
    minted: &Minted,
    now: DateTime<Utc>,
) -> Result<WalletHolding, ValuationError> {
    let held = pool.to_protocol_order(pool.withdrawal(tick_lower, tick_upper, minted.liquidity)?);
    let token = |t: &crate::domain::catalog::Token| HeldToken {
        symbol: t.symbol.clone(),
        address: t.address.clone(),
        decimals: t.decimals,
    };
    let [token0, token1] = protocol_tokens(pool);
    Ok(WalletHolding {
        wallet: order.wallet.clone(),
        manager: order.manager.clone(),
        token: minted.token_id.to_string(),
        height: minted.block,
        read_at: now,
        tokens: [token(token0), token(token1)],
        amounts: [held.amount0.to_string(), held.amount1.to_string()],
        fees: ["0".into(), "0".into()],
        sqrt_price: pool.sqrt_price.to_string(),
        tick: pool.tick,
        first_value_usd: None,
        close_reason: None,
        read_error: None,
        history: None,
        moved_from: None,
        moved_to: None,
        // The wallet's next read, which the mint's Transfer sets off, brings it.
        fee_state: None,
        tracked: false,
        watched: false,
        staked: None,
    })
}

/// The pending order `pending` as the wallet position its confirmed mint opened: active, its
/// token and liquidity, its deposit what the mint took, its cost basis that deposit at the
/// pool's USD prices.
pub fn opened(
    pending: &Position,
    minted: &Minted,
    pool: &Pool,
    holding: WalletHolding,
) -> Position {
    let deposit = pool.to_api_order(Amounts {
        amount0: minted.amounts[0],
        amount1: minted.amounts[1],
    });
    let cost_basis = pool.value_of(&deposit);
    let priced = pool.token_a.priced && pool.token_b.priced;
    Position {
        status: Status::Active,
        liquidity: minted.liquidity,
        deposit: Some(deposit),
        fee_checkpoint: None,
        holding: Some(Box::new(WalletHolding {
            first_value_usd: priced.then(|| cost_basis.to_plain_string()),
            moved_from: pending.order.as_ref().and_then(|o| o.moved.clone()),
            ..holding
        })),
        cost_basis_usd: cost_basis,
        order: None,
        ..pending.clone()
    }
}

/// What a confirmed withdraw of `position` paid, frozen at the pool's USD prices: principal
/// from `DecreaseLiquidity`, fees what `Collect` paid beyond it; `moved` where the withdraw
/// was the position's range move. A wallet position whose history was read whole up to the
/// withdraw counts what that history says left it before (decision 44): principal withdrawn
/// earlier and left uncollected, which this collect pays too, is not a fee; its cost basis is
/// its deposits, and its PnL adds what was withdrawn and collected earlier.
pub fn withdrawn(position: &Position, pool: &Pool, withdrawal: &Withdrawal) -> Closing {
    let earlier = position
        .holding
        .as_deref()
        .and_then(|h| h.history.as_ref())
        .filter(|h| h.complete && h.through < withdrawal.block);
    let owed = earlier.map_or([U256::ZERO; 2], |h| units(&h.uncollected_principal));
    let [p0, p1] = withdrawal.principal;
    let [c0, c1] = withdrawal.collected;
    let principal = pool.to_api_order(Amounts {
        amount0: p0,
        amount1: p1,
    });
    let fees = pool.to_api_order(Amounts {
        amount0: c0.saturating_sub(p0).saturating_sub(owed[0]),
        amount1: c1.saturating_sub(p1).saturating_sub(owed[1]),
    });
    let mut closing = frozen_close(
        pool,
        position,
        (principal, fees),
        withdrawal.time,
        Some(
            match position.order.as_deref().map(|o| o.kind) {
                Some(OrderKind::Rebalance) => MOVED,
                _ => WITHDRAWN,
            }
            .to_string(),
        ),
    );
    let total = |usd: &[Option<String>; 2]| -> Option<BigDecimal> {
        let [a, b] = decimals(usd);
        Some(a? + b?)
    };
    if let Some(h) = earlier {
        let before =
            total(&h.deposited_usd).zip(total(&h.withdrawn_usd).zip(total(&h.fees_collected_usd)));
        if let Some((cost, (out, collected))) = before {
            let paid =
                &closing.value_a + &closing.value_b + &closing.fees_usd_a + &closing.fees_usd_b;
            closing.pnl_usd = realized(paid + out + collected - &cost);
            closing.cost_basis_usd = realized(cost);
        }
    }
    closing
}
