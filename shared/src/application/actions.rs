//! The actions on an open wallet position (decision 56): collect, increase, decrease and a move
//! of the range (which also opens the new position, pending until its mint is confirmed). Each
//! is built at the pool's fresh state for the position's wallet, run on the chain before it is
//! answered (decision 55), stored as the position's order and followed as a close is: the hash
//! reported, then the sync. One transaction at a time per position: another one waiting is a
//! conflict.

use crate::application::app::{Allowed, App};
use crate::application::error::{Outcome, UseCaseError};
use crate::application::inputs::OrderLimits;
use crate::application::keys::{keep_shown, Answering};
use crate::application::orders::{
    acting_from, allowances_read, close_on_chain, fresh_state, held_terms, held_venue_of,
    order_chain, owed_fees, position_pool, refuse_hooked, simulated_with, transactions_only,
    v4_key, waiting_order, with_permit,
};
use crate::application::ports::StoreError;
use crate::application::positions::offered_amounts;
use crate::application::zaps::{
    after_withdrawal, build_zap, deposit_of, protocol_offer, router_of,
};
use crate::domain::calldata::GaugeCall;
use crate::domain::calldata::ZapInto;
use crate::domain::catalog::{Catalog, Pool};
use crate::domain::history::units;
use crate::domain::holdings::entry;
use crate::domain::model::{
    Chain, ChainOrder, OrderKind, Position, PositionEntry, Protocol, Source, Status,
};
use crate::domain::orders::actions::{
    collect_transaction, decrease_transaction, gauge_stake_transactions, gauge_transaction,
    harvest_transaction, increase_transactions, move_funds, rebalance_transactions, share_of,
    stake_transaction, Move,
};
use crate::domain::orders::build::protocol_tokens;
use crate::domain::orders::build::withdraw_transaction;
use crate::domain::orders::plan_mint;
use crate::domain::orders::simulation::Known;
use crate::domain::orders::v4::{
    decrease_transaction as v4_decrease_transaction,
    increase_transactions as v4_increase_transactions, move_plan as v4_move_plan,
    move_transactions as v4_move_transactions, V4Decrease, V4Increase, V4Move,
};
use crate::domain::valuation::{TokenPair, ValuationError};
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};

/// What the caller asked of the position, checked before any read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    Collect(OrderLimits),
    /// A staked position's rewards (decision 60).
    Harvest(OrderLimits),
    /// A held position into its deployment's farm (issue 62).
    Stake(OrderLimits),
    Increase {
        amounts: (String, String),
        limits: OrderLimits,
    },
    Decrease {
        percent: u8,
        limits: OrderLimits,
    },
    Rebalance {
        prices: (BigDecimal, BigDecimal),
        limits: OrderLimits,
    },
}

impl Asked {
    pub fn limits(&self) -> OrderLimits {
        match self {
            Asked::Collect(limits)
            | Asked::Harvest(limits)
            | Asked::Stake(limits)
            | Asked::Increase { limits, .. }
            | Asked::Decrease { limits, .. }
            | Asked::Rebalance { limits, .. } => *limits,
        }
    }
}

/// Builds the asked action on the caller's position `id` for its wallet; 100 % of a decrease is
/// the close.
pub async fn act(
    app: &App,
    owner: &str,
    id: &str,
    asked: &Asked,
    answering: Answering<'_>,
) -> Outcome<PositionEntry> {
    for _ in 0..3 {
        let (position, catalog) = app.own_position(owner, id).await?;
        let done = match asked {
            Asked::Decrease {
                percent: 100,
                limits,
            } => {
                refuse(&position, app.clock.now())?;
                close_on_chain(app, (position, &catalog), *limits, answering).await?
            }
            _ => act_once(app, (position, &catalog), asked, answering).await?,
        };
        if let Some(shown) = done {
            return Ok(shown);
        }
    }
    Err(UseCaseError::Contended(
        "the position changed while the transaction was being built: retry".into(),
    ))
}

/// Why the position takes no action now, if it takes none: 409 with the reason.
fn refuse(position: &Position, now: DateTime<Utc>) -> Outcome<()> {
    let conflict = |message: &str| Err(UseCaseError::Conflict(message.into()));
    if position.source() != Source::Wallet {
        return conflict(
            "a simulated position moves no token: collect, increase, decrease and a move of the \
             range act on wallet positions (opened on chain or read from a linked wallet)",
        );
    }
    if position.chain == Chain::Solana {
        return conflict(
            "actions on Orca positions are not offered: Orca's program and SDKs are under a \
             licence that forbids commercial use; act on it from your wallet, and the next \
             refresh reads it",
        );
    }
    if position.status != Status::Active {
        return conflict("the position is not active: only an open position takes an action");
    }
    if let Some(waiting) = waiting_order(position, now) {
        return Err(UseCaseError::Conflict(format!(
            "a {} of this position waits for the chain until {}: send it (and report its \
             hash) or let it expire first",
            waiting.kind,
            waiting.expires_at.to_rfc3339()
        )));
    }
    Ok(())
}

/// One build of the action on the position as it reads now; `None` when it changed meanwhile.
async fn act_once(
    app: &App,
    (position, catalog): (Position, &Catalog),
    asked: &Asked,
    answering: Answering<'_>,
) -> Outcome<Option<PositionEntry>> {
    let now = app.clock.now();
    refuse(&position, now)?;
    let Some(holding) = position.holding.as_deref() else {
        return Err(UseCaseError::Conflict(
            "the position has no token on chain to act on".into(),
        ));
    };
    acting_from(app, &position).await?;
    let pool = position_pool(catalog, &position)?;
    let state = fresh_state(catalog, pool, now)?;
    let venue = held_venue_of(catalog, pool, holding)?;
    let chain = order_chain(app, pool.chain)?;
    let limits = asked.limits();
    // `"swap": true` (an increase or a move): refused where no router reaches the pool.
    let router = match limits.swap {
        true => Some(router_of(catalog, pool)?),
        false => None,
    };
    if router.is_some() {
        transactions_only(&limits)?;
    }
    let terms = held_terms(&venue, &holding.wallet, state, limits, now);
    let ticks = (position.tick_lower, position.tick_upper);
    let token = holding.token.as_str();
    // A collect's payment is told apart where the history knows the uncollected principal.
    let principal_owed = holding
        .history
        .as_ref()
        .filter(|h| h.complete)
        .map(|h| units(&h.uncollected_principal));
    let plan_at = |ticks: (i32, i32), offered: TokenPair| {
        plan_mint(pool, ticks, offered, limits.slippage_bps).map_err(|e| match e {
            ValuationError::Rejected(message) => UseCaseError::Conflict(message),
            other => other.into(),
        })
    };
    let tokens = protocol_tokens(pool).map(|t| t.address.as_str());
    let allowed = |spender| Allowed {
        chain: pool.chain,
        state,
        owner: &holding.wallet,
        spender,
        tokens,
    };
    let allowances = || async {
        let read = chain.allowances(&allowed(venue.target())).await;
        allowances_read(read, pool.chain, "allowances")
    };
    let v4 = position.protocol == Protocol::UniswapV4;
    // Uniswap v4: what its `modifyLiquidities` pays, from the exact math (it answers nothing).
    let (mut paid, mut fees_paid, mut parts) = (None, None, None);
    // `"permit": "signature"`: an add's Permit2 approvals as one batch to sign.
    let mut permit = None;
    let v4_decrease = |kind: &str, liquidity: u128| {
        let fees = owed_fees(&position, holding, catalog);
        let decrease = V4Decrease {
            kind,
            token_id: token,
            ticks,
            liquidity,
            fees,
            burn: false,
        };
        v4_decrease_transaction(pool, &terms, &decrease).map_err(UseCaseError::internal)
    };
    if v4 {
        refuse_hooked(pool)?;
    }
    let permit2_allowances = || async {
        let read = chain.permit2_allowances(&allowed(&venue.manager)).await;
        allowances_read(read, pool.chain, "Permit2 allowances")
    };
    // A range move also opens a position: pending until its mint is confirmed.
    let mut opening: Option<Position> = None;
    // A zap's terms, and what a move's withdrawal pays the wallet before its zap spends it.
    let (mut zap, mut credits) = (None, Vec::new());
    let terms_ref = &terms;
    let zap_into = |offer, ticks, into| async move {
        let router = router.ok_or_else(|| UseCaseError::internal("a zap without its router"))?;
        build_zap(
            chain,
            (pool, state),
            (router, terms_ref),
            (offer, ticks, into),
        )
        .await
    };
    let (kind, transactions) = match asked {
        Asked::Collect(_) if v4 => {
            let (built, pays) = v4_decrease("collect", 0)?;
            paid = Some(pays);
            (OrderKind::Collect, vec![built])
        }
        Asked::Collect(_) => (
            OrderKind::Collect,
            vec![collect_transaction(&terms, token).map_err(UseCaseError::internal)?],
        ),
        Asked::Harvest(_) => {
            let built = match (&venue.gauge, &venue.farm) {
                (Some(gauge), _) => gauge_transaction(&terms, token, (gauge, GaugeCall::GetReward)),
                (None, Some(_)) => harvest_transaction(&terms, token),
                (None, None) => {
                    return Err(UseCaseError::Conflict(
                        "the position is not staked in a farm: it has no rewards to harvest".into(),
                    ))
                }
            };
            (
                OrderKind::Harvest,
                vec![built.map_err(UseCaseError::internal)?],
            )
        }
        Asked::Stake(_) => {
            if venue.farm.is_some() || venue.gauge.is_some() {
                return Err(UseCaseError::Conflict(
                    "the position is staked in its farm already".into(),
                ));
            }
            let built = match farm_of(catalog, pool, &venue.manager) {
                Some(Farm::Gauge(gauge)) => gauge_stake_transactions(&terms, token, &gauge),
                Some(Farm::Deployment(farm)) => {
                    stake_transaction(&terms, token, &farm).map(|t| vec![t])
                }
                None => {
                    return Err(UseCaseError::Conflict(format!(
                        "no farm is known for {} positions on {}: nothing to stake it in",
                        pool.protocol, pool.chain
                    )))
                }
            };
            (OrderKind::Stake, built.map_err(UseCaseError::internal)?)
        }
        Asked::Increase { amounts, .. } if router.is_some() => {
            let offered = offered_amounts(pool, (&amounts.0, &amounts.1))?;
            let token_id = token.parse().map_err(|_| {
                UseCaseError::Conflict("the position's token id is not a number".into())
            })?;
            let into = ZapInto::Increase { token_id };
            let zapped = zap_into(protocol_offer(pool, offered), ticks, into).await?;
            zap = zapped.known.zap;
            (OrderKind::Increase, zapped.transactions)
        }
        Asked::Increase { amounts, .. } => {
            let offered = offered_amounts(pool, (&amounts.0, &amounts.1))?;
            let plan = plan_at(ticks, offered)?;
            let built = if v4 {
                let allowances = permit2_allowances().await?;
                let add = V4Increase {
                    token_id: token,
                    ticks,
                    liquidity: plan.liquidity,
                    fees: owed_fees(&position, holding, catalog),
                };
                let (built, added) = v4_increase_transactions(pool, &terms, &add, &allowances)
                    .map_err(UseCaseError::internal)?;
                (paid, fees_paid) = (Some(added.deposit), Some(added.fees));
                permit = limits.permit_signature.then_some((tokens, allowances));
                built
            } else {
                transactions_only(&limits)?;
                increase_transactions(pool, &terms, token, &plan, allowances().await?)
                    .map_err(UseCaseError::internal)?
            };
            (OrderKind::Increase, built)
        }
        Asked::Decrease { percent, .. } => {
            let share = share_of(position.liquidity, *percent);
            if share == 0 {
                return Err(UseCaseError::Conflict(format!(
                    "{percent} % of the position's liquidity ({}) is no liquidity to withdraw",
                    position.liquidity
                )));
            }
            let built = if v4 {
                let (built, pays) = v4_decrease("decrease", share)?;
                paid = Some(pays);
                built
            } else {
                decrease_transaction(pool, &terms, token, ticks, share)
                    .map_err(UseCaseError::internal)?
            };
            (OrderKind::Decrease, vec![built])
        }
        Asked::Rebalance {
            prices: (lower, upper),
            ..
        } => {
            if venue.farm.is_some() {
                return Err(UseCaseError::Conflict(
                    "the position is staked in its farm: a move mints a new position, which the \
                     farm does not do; unstake it first (or close it: the close unstakes it)"
                        .into(),
                ));
            }
            if ![lower, upper].into_iter().all(|p| pool.price_in_bounds(p)) {
                let (low, high) = pool.price_bounds();
                return Err(UseCaseError::bad_request(format!(
                    "priceLower and priceUpper must lie between {low:e} and {high:e} on this pool"
                )));
            }
            let to = pool.snap_range(lower, upper)?;
            if to == ticks {
                return Err(UseCaseError::Conflict(
                    "the new range is the position's own: nothing to move".into(),
                ));
            }
            let (built, liquidity, deposit) = if v4 {
                // One unlock: the burn's credit minted in the new range (decision 67).
                let key = v4_key(pool)?;
                let moving = V4Move {
                    token_id: token,
                    from: ticks,
                    liquidity: position.liquidity,
                    fees: owed_fees(&position, holding, catalog),
                    to,
                };
                let plan = v4_move_plan(pool, &moving).map_err(UseCaseError::internal)?;
                if plan.liquidity == 0 {
                    return Err(UseCaseError::Conflict(
                        "what the position holds makes no liquidity in the new range".into(),
                    ));
                }
                let allowances = permit2_allowances().await?;
                let built = v4_move_transactions(pool, &terms, (&key, &moving), &plan, &allowances)
                    .map_err(UseCaseError::internal)?;
                (paid, parts) = (
                    Some(plan.leftover()),
                    Some((plan.withdrawn, plan.deposited)),
                );
                (built, plan.liquidity, plan.deposit)
            } else if router.is_some() {
                // Two transactions: the withdrawal to the wallet, then the zap of what it paid.
                let owed = holding.fees.clone().map(|f| f.parse().unwrap_or_default());
                let funds = move_funds(pool, ticks, position.liquidity, owed)?;
                let offer = protocol_offer(pool, funds);
                let withdraw = withdraw_transaction(pool, &terms, token, ticks, position.liquidity)
                    .map_err(UseCaseError::internal)?;
                let into = ZapInto::Mint {
                    ticks: to,
                    recipient: holding.wallet.clone(),
                };
                let zapped = zap_into(offer, to, into).await?;
                let built;
                (built, credits) = after_withdrawal(pool, (withdraw, zapped.transactions), offer);
                zap = zapped.known.zap;
                (built, zapped.plan.liquidity, deposit_of(pool, &zapped.plan))
            } else {
                let owed = holding.fees.clone().map(|f| f.parse().unwrap_or_default());
                let funds = move_funds(pool, ticks, position.liquidity, owed)?;
                let plan = plan_at(to, funds)?;
                let moving = Move {
                    token_id: token,
                    from: ticks,
                    liquidity: position.liquidity,
                    to,
                    plan: &plan,
                };
                let built = rebalance_transactions(pool, &terms, &moving, allowances().await?)
                    .map_err(UseCaseError::internal)?;
                (built, plan.liquidity, plan.deposit)
            };
            let id = ulid::Ulid::from_datetime(terms.now.into()).to_string();
            let new = Position {
                id,
                status: Status::Pending,
                tick_lower: to.0,
                tick_upper: to.1,
                liquidity,
                cost_basis_usd: pool.value_of(&deposit),
                deposit: Some(deposit),
                fee_checkpoint: None,
                closing: None,
                created_at: terms.now,
                holding: None,
                order: None,
                ..position.clone()
            };
            opening = Some(new);
            (OrderKind::Rebalance, built)
        }
    };
    // A position in a Slipstream gauge is withdrawn from it first: the gauge has none of the
    // manager's calls (decision 71).
    let transactions = match (&venue.gauge, kind) {
        (Some(gauge), kind) if ![OrderKind::Harvest, OrderKind::Stake].contains(&kind) => {
            let unstake = gauge_transaction(&terms, token, (gauge, GaugeCall::Withdraw))
                .map_err(UseCaseError::internal)?;
            [vec![unstake], transactions].concat()
        }
        _ => transactions,
    };
    let reward_token = holding.staked.as_ref().map(|s| &s.reward_token);
    let known = Known {
        reward_token,
        principal_owed,
        paid,
        fees_paid,
        parts,
        zap,
    };
    let transactions = simulated_with(chain, pool, (transactions, &credits), known).await?;
    let mut order = with_permit(&terms, kind, transactions.clone(), permit);
    // A move stores its new position (pending) with the old one's order in one write: a move
    // refused (another action stored first) stores nothing.
    let opening = opening.map(|new| {
        order.moved = Some(new.id.clone());
        let open = ChainOrder {
            moved: Some(position.id.clone()),
            ..terms.order(OrderKind::Open, transactions)
        };
        Position {
            order: Some(Box::new(open)),
            ..new
        }
    });
    let ordered = Position {
        order: Some(Box::new(order)),
        ..position.clone()
    };
    let previous = position.order.as_deref();
    let stored = match &opening {
        Some(new) => app.store.set_move_order(&ordered, previous, new).await,
        None => app.store.set_order(&ordered, previous).await,
    };
    match stored {
        Err(StoreError::Conflict) => return Ok(None),
        result => result?,
    }
    let shown = entry(&ordered, catalog, now)?;
    keep_shown(app, answering, &shown).await;
    tracing::info!(position = %position.id, %kind, "action built for the wallet");
    Ok(Some(shown))
}

/// Where a position is staked.
enum Farm {
    /// Its deployment's farm (its `staking`: MasterChefV3), which takes the NFT as it arrives.
    Deployment(String),
    /// A Slipstream pool's gauge (as the pool's state read it), which takes it by `deposit`.
    Gauge(String),
}

/// Where a position of `manager` on `pool` is staked, if anywhere.
fn farm_of(catalog: &Catalog, pool: &Pool, manager: &str) -> Option<Farm> {
    if pool.protocol.is_slipstream() {
        let own = pool.state.as_ref()?.slipstream.as_ref()?;
        return own.gauge.clone().map(Farm::Gauge);
    }
    catalog
        .deployment_of_manager(pool.chain, manager)
        .filter(|d| d.protocol == pool.protocol)
        .and_then(|d| d.staking.clone())
        .map(Farm::Deployment)
}
