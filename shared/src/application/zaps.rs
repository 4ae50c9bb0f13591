//! Zaps (issue 63, decision 70): an open, an increase or a range move from whatever the wallet
//! offers, part of it first swapped on the position's own pool to the ratio the range takes at
//! the price the swap leaves. The amount to swap is searched with the chain's quotes at the
//! pool state the order is built at (`domain::orders::zap`); the swap, the mint or increase and
//! the sweeps of what is left are one `multicall` to the deployment's SwapRouter02, after the
//! approvals to the router the wallet's allowances call for.

use crate::application::app::{Allowed, App, OrderChain};
use crate::application::error::{Outcome, UseCaseError};
use crate::application::inputs::OrderLimits;
use crate::application::orders::{
    fresh_state, held_terms, linked_wallet, order_chain, simulated, transactions_only, venue_of,
};
use crate::domain::calldata::{Zap, ZapInto};
use crate::domain::catalog::{Catalog, Pool};
use crate::domain::market::PoolState;
use crate::domain::math::Amounts;
use crate::domain::math::{Curve, MathError, U256};
use crate::domain::model::{Chain, OrderKind, Position, Protocol, TransactionRequest};
use crate::domain::orders::build::{protocol_tokens, zap_transactions};
use crate::domain::orders::simulation::{Credit, Known, SimulationError};
use crate::domain::orders::zap::{percent, plan_zap, QuotedPool, Search, ZapPlan, ZapTerms};
use crate::domain::orders::OrderTerms;
use crate::domain::valuation::TokenPair;

/// The deployment's SwapRouter02 and QuoterV2, which a zap goes through.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Router<'a> {
    pub router: &'a str,
    pub quoter: &'a str,
}

/// The router of the pool's deployment, or 409 saying why no zap is built on it.
pub(crate) fn router_of<'a>(catalog: &'a Catalog, pool: &Pool) -> Outcome<Router<'a>> {
    let refused = |why: String| Err(UseCaseError::Conflict(why));
    if pool.chain == Chain::Solana {
        return refused(
            "a swap to fit is not offered on Orca pools: Orca's program and SDKs are under a \
             licence that forbids commercial use; offer both tokens in the range's ratio"
                .into(),
        );
    }
    if pool.protocol == Protocol::UniswapV4 {
        return refused(
            "a swap to fit is not offered on Uniswap v4 pools yet: their swaps go through the \
             UniversalRouter; offer both tokens in the range's ratio"
                .into(),
        );
    }
    let deployment = catalog
        .deployments_on(pool.chain)
        .find(|d| d.protocol == pool.protocol);
    match deployment.and_then(|d| Some((d.swap_router.as_deref()?, d.quoter.as_deref()?))) {
        Some((router, quoter)) => Ok(Router { router, quoter }),
        None => refused(format!(
            "no swap router that reaches {} pools is known on {}: a swap to fit cannot be \
             built here; offer both tokens in the range's ratio",
            pool.protocol, pool.chain
        )),
    }
}

/// What a zap answers: its transactions (approvals, then the router's call), what it was
/// planned to do, and what its run's answer is read with.
pub(crate) struct Zapped {
    pub transactions: Vec<TransactionRequest>,
    pub plan: ZapPlan,
    pub known: Known<'static>,
}

/// 409 for a zap the exact math cannot size at this state (an offer or a swap past its types).
fn not_sized(error: MathError) -> UseCaseError {
    UseCaseError::Conflict(format!(
        "the swap to fit cannot be sized at the pool's state ({error})"
    ))
}

/// The offer in protocol order (token0, token1).
pub(crate) fn protocol_offer(pool: &Pool, offered: TokenPair) -> [U256; 2] {
    let amounts = pool.to_protocol_order(offered);
    [amounts.amount0, amounts.amount1]
}

/// The swap of `offer` to the ratio of `ticks` searched with the chain's quotes at `state`.
async fn search(
    chain: &dyn OrderChain,
    quoted: &QuotedPool<'_>,
    state: &PoolState,
    (offer, ticks): ([U256; 2], (i32, i32)),
) -> Outcome<Option<(usize, crate::domain::orders::zap::Candidate, usize)>> {
    let curve = Curve::UniswapV3;
    let range = (
        curve.sqrt_price_at_tick(ticks.0).map_err(not_sized)?,
        curve.sqrt_price_at_tick(ticks.1).map_err(not_sized)?,
    );
    let Some(mut search) = Search::new(offer, state.sqrt_price, range) else {
        return Ok(None);
    };
    while let Some(amount_in) = search.next() {
        let quote = chain
            .quote(quoted, state, (search.sell, amount_in))
            .await
            .map_err(|e| match e {
                SimulationError::Reverted { reason, .. } => UseCaseError::Conflict(format!(
                    "the router cannot swap on this pool ({reason}): nothing was stored"
                )),
                SimulationError::Unavailable(reason) => UseCaseError::MarketStale(format!(
                    "the swap could not be quoted on {} ({reason}): retry",
                    quoted.chain
                )),
            })?;
        search.record(amount_in, quote);
    }
    Ok(search
        .best()
        .map(|best| (search.sell, best, search.quotes())))
}

/// A zap of `offer` (protocol order) into `into` (the range `ticks`) from the order's wallet:
/// the search, the refusal of a swap moving the price more than the slippage allowed, the
/// approvals to the router and its call. Unsimulated: the caller runs it with what comes
/// before it.
pub(crate) async fn build_zap(
    chain: &dyn OrderChain,
    (pool, state): (&Pool, &PoolState),
    (router, terms): (Router<'_>, &OrderTerms<'_>),
    (offer, ticks, into): ([U256; 2], (i32, i32), ZapInto),
) -> Outcome<Zapped> {
    let tokens = protocol_tokens(pool).map(|t| t.address.as_str());
    let quoted = QuotedPool {
        chain: pool.chain,
        quoter: router.quoter,
        tokens,
        fee: pool.fee_tier,
    };
    let found = search(chain, &quoted, state, (offer, ticks)).await?;
    let bps = terms.slippage_bps;
    let plan = plan_zap(
        (offer, ticks),
        (state.sqrt_price, pool.fee_tier),
        found,
        bps,
    )
    .map_err(not_sized)?;
    let impact = plan.impact;
    if impact.worst_ppm() > u64::from(bps) * 100 {
        return Err(UseCaseError::Conflict(format!(
            "the swap to fit has a price impact of {} % (the pool's price moving {} %): more \
             than slippageBps ({} %) allows; offer less, or allow more slippage",
            percent(impact.execution_ppm),
            percent(impact.move_ppm),
            percent(u64::from(bps) * 100)
        )));
    }
    if plan.liquidity == 0 {
        return Err(UseCaseError::Conflict(
            "what the offer holds makes no liquidity in the range".into(),
        ));
    }
    let read = |owner, spender| Allowed {
        chain: pool.chain,
        state,
        owner,
        spender,
        tokens,
    };
    let unread = |e: String| {
        UseCaseError::MarketStale(format!(
            "the allowances a zap needs cannot be read from {} ({e}): retry",
            pool.chain
        ))
    };
    // The wallet's allowances to the router, and the router's to the position manager (it
    // lets the manager take its balances once for all: `approveMax`), read together.
    let (wallet_asked, router_asked) = (
        read(terms.wallet, router.router),
        read(router.router, &terms.venue.manager),
    );
    let (wallet_allows, router_allows) = tokio::try_join!(
        chain.allowances(&wallet_asked),
        chain.allowances(&router_asked)
    )
    .map_err(unread)?;
    let mut held = offer;
    held[1 - plan.sell] = held[1 - plan.sell].saturating_add(plan.amount_out);
    let zap = Zap {
        tokens: tokens.map(str::to_string),
        fee: pool.fee_tier,
        into,
        offer,
        sell: plan.sell,
        amount_in: plan.amount_in,
        amount_out_minimum: plan.amount_out_minimum,
        minimums: plan.minimums,
        approve: [0, 1].map(|t| router_allows[t] < held[t]),
        deadline: terms.deadline(),
    };
    let transactions = zap_transactions(
        pool,
        (terms.venue, router.router),
        terms.wallet,
        &zap,
        wallet_allows,
    )
    .map_err(UseCaseError::internal)?;
    let known = Known {
        zap: Some(ZapTerms {
            offer,
            sell: plan.sell,
            amount_in: plan.amount_in,
            amount_out_minimum: plan.amount_out_minimum,
            impact,
        }),
        ..Known::default()
    };
    Ok(Zapped {
        transactions,
        plan,
        known,
    })
}

/// A move's transactions: the zap's approvals to the router, the withdrawal, then the zap of
/// what the withdrawal pays (`paid`, protocol order), which the zap's run sees credited to the
/// wallet's balances.
pub(crate) fn after_withdrawal(
    pool: &Pool,
    (withdraw, zap): (TransactionRequest, Vec<TransactionRequest>),
    paid: [U256; 2],
) -> (Vec<TransactionRequest>, Vec<Credit>) {
    let mut built = zap;
    let call = built.pop();
    built.push(withdraw.clone());
    built.extend(call);
    let tokens = protocol_tokens(pool);
    let credits = (0..2)
        .filter(|&t| !paid[t].is_zero())
        .map(|t| Credit {
            from: built.len() - 1,
            token: tokens[t].address.clone(),
            owner: withdraw.from.clone(),
            amount: paid[t],
        })
        .collect();
    (built, credits)
}

/// The create of `offer` (pending, its range snapped) from `wallet` with `"swap": true`: the
/// zap's approvals and router call, run on the chain, the order the sync then follows.
pub(crate) async fn open_zapped(
    app: &App,
    (catalog, pool): (&Catalog, &Pool),
    offer: Position,
    offered: TokenPair,
    (wallet, limits): (&str, &OrderLimits),
) -> Outcome<Position> {
    let router = router_of(catalog, pool)?;
    transactions_only(limits)?;
    let wallet = linked_wallet(app, &offer.owner, pool.chain, wallet).await?;
    let state = fresh_state(catalog, pool, offer.created_at)?;
    let venue = venue_of(catalog, pool)?;
    let chain = order_chain(app, pool.chain)?;
    let ticks = (offer.tick_lower, offer.tick_upper);
    let terms = held_terms(&venue, &wallet, state, *limits, offer.created_at);
    let into = ZapInto::Mint {
        ticks,
        recipient: wallet.clone(),
    };
    let offer_units = protocol_offer(pool, offered);
    let zapped = build_zap(
        chain,
        (pool, state),
        (router, &terms),
        (offer_units, ticks, into),
    )
    .await?;
    let transactions = simulated(chain, pool, zapped.transactions, zapped.known).await?;
    let deposit = deposit_of(pool, &zapped.plan);
    Ok(Position {
        liquidity: zapped.plan.liquidity,
        cost_basis_usd: pool.value_of(&deposit),
        deposit: Some(deposit),
        order: Some(Box::new(terms.order(OrderKind::Open, transactions))),
        ..offer
    })
}

/// What the plan's mint takes, in the API's orientation.
pub(crate) fn deposit_of(pool: &Pool, plan: &ZapPlan) -> TokenPair {
    let [amount0, amount1] = plan.deposit;
    pool.to_api_order(Amounts { amount0, amount1 })
}
