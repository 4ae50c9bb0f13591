//! Positions read from linked wallets: a position as a read found it, what it holds, and how
//! such a position is shown and summed, at its last read, with USD figures only where its
//! tokens have a USD price. Storing a read over the stored positions is the application's
//! `wallet_reads`.

use crate::domain::catalog::{curve_of, Catalog};
use crate::domain::history::{
    decimals as decimals_of, event_views, units, EventView, HistorySummary, HistoryView,
    PositionEvent, TokenHistoryView,
};
use crate::domain::json::{plain_exact, Percent, Usd};
use crate::domain::math::price::{base_units_to_decimal, Orientation};
use crate::domain::math::U256;
use crate::domain::model::{
    calls_of, format_time, Chain, HeldAmountView, HeldToken, OrderKind, Position, PositionEntry,
    Realized, Source, Status, WalletHolding, WalletPositionView,
};
use crate::domain::orders::view::{action_view, closing_view, with_open_order};
use crate::domain::valuation::{position_entry, ValuationError};
use bigdecimal::{BigDecimal, Zero};
use chrono::{DateTime, Utc};
use std::str::FromStr;

mod at_pool;
mod discovered;
mod life;
mod staking;
pub use crate::domain::model::{Staked, StakedView};
pub use at_pool::{held_at, valued_at_pool};
pub use discovered::{discovered_record, ReadPosition};
use life::life_views;
pub use staking::{leaves_out, staked_view, Rewards};

/// Why a wallet position closed without its owner closing it through the API.
pub const WITHDRAWN: &str = "withdrawn";
pub const TRANSFERRED: &str = "transferred";

/// The USD price of a token on a chain, where the catalog's pools reach it.
pub fn usd_price(catalog: &Catalog, chain: Chain, address: &str) -> Option<BigDecimal> {
    let same = |a: &str| {
        if chain.addresses_ignore_case() {
            a.eq_ignore_ascii_case(address)
        } else {
            a == address
        }
    };
    catalog
        .pools
        .iter()
        .filter(|p| p.chain == chain)
        .flat_map(|p| [&p.token_a, &p.token_b])
        .find(|t| same(&t.address) && t.priced)
        .map(|t| t.price_usd.clone())
}

pub(crate) fn amount(text: &str) -> U256 {
    U256::from_str(text).unwrap_or_default()
}

/// The USD value of base-unit amounts of both tokens, if both have a price.
pub(crate) fn value_of(
    prices: &[Option<BigDecimal>; 2],
    tokens: &[HeldToken; 2],
    amounts: [U256; 2],
) -> Option<BigDecimal> {
    let mut total = BigDecimal::zero();
    for i in 0..2 {
        total += base_units_to_decimal(amounts[i], tokens[i].decimals) * prices[i].as_ref()?;
    }
    Some(total)
}

/// The holding of a position as one read of `wallet` at `height` found it.
pub fn holding_of(
    wallet: &str,
    found: &ReadPosition,
    height: u64,
    now: DateTime<Utc>,
) -> WalletHolding {
    WalletHolding {
        wallet: wallet.to_string(),
        manager: found.manager.clone(),
        token: found.token.clone(),
        height,
        read_at: now,
        tokens: found.tokens.clone(),
        amounts: found.amounts.map(|a| a.to_string()),
        fees: found.fees.map(|f| f.to_string()),
        sqrt_price: found.sqrt_price.to_string(),
        tick: found.tick,
        first_value_usd: None,
        close_reason: (found.liquidity == 0).then(|| WITHDRAWN.to_string()),
        read_error: None,
        history: None,
        moved_from: None,
        moved_to: None,
        fee_state: found.fee_state.clone(),
        tracked: false,
        watched: false,
        staked: found.staked.clone(),
    }
}

/// A wallet position's figures in USD (each `None` where a token has no USD price).
#[derive(Debug, Clone)]
pub struct HeldFigures {
    /// Per token (protocol order): what it holds now (principal, unclaimed fees, uncollected
    /// principal), in USD.
    pub token_values: [Option<BigDecimal>; 2],
    /// Fees earned: collected (at their blocks' prices) and unclaimed (at today's).
    pub fees: Option<BigDecimal>,
    pub value: Option<BigDecimal>,
    pub cost_basis: Option<BigDecimal>,
    /// What left the position: withdrawn principal and collected fees at their blocks' prices,
    /// less the withdrawn principal it still holds (counted in `value`).
    pub taken_out: Option<BigDecimal>,
    /// The fees among it.
    pub fees_collected: Option<BigDecimal>,
    /// Per token (protocol order): the base units of unclaimed fees.
    pub fees_unclaimed: Option<[U256; 2]>,
    /// Its farm's rewards in USD, harvested and pending (decision 60): 0 for a position never
    /// staked; the priced ones only.
    pub rewards: Option<BigDecimal>,
    /// Its farm's rewards without a USD price: their token and whole tokens (decision 63).
    pub unpriced_reward: Option<(HeldToken, BigDecimal)>,
    /// Per token (protocol order): the base units it holds as its view shows them (valued at
    /// its pool's synced state where that is newer than its read): principal and all that
    /// collect would pay. The portfolio sums these, so that it and the position agree.
    pub units: [U256; 2],
}

/// Why an Orca position's figures are its reads', not its events'.
pub const ORCA_FIGURES: &str = "Orca pays withdrawn principal out at once, so what its collect would pay is fees only: its figures are its reads', its cost basis its value when first seen";

/// Seconds in the year an APR annualizes to.
const YEAR_SECONDS: u64 = 365 * 24 * 60 * 60;

/// The per-token base units and USD of a position with or without its history.
struct Sums {
    /// Fees earned per token, base units; `None` where it cannot be told from principal.
    fees: Option<[U256; 2]>,
    fees_unclaimed: Option<[U256; 2]>,
    /// Withdrawn principal not yet collected, base units.
    uncollected: Option<[U256; 2]>,
    /// Fees earned per token in USD.
    fee_values: [Option<BigDecimal>; 2],
    cost_basis: Option<BigDecimal>,
    withdrawn_usd: Option<BigDecimal>,
    fees_collected_usd: Option<BigDecimal>,
    history: HistoryView,
    tokens: Option<[TokenHistoryView; 2]>,
}

fn sum2(pair: &[Option<BigDecimal>; 2]) -> Option<BigDecimal> {
    Some(pair[0].clone()? + pair[1].clone()?)
}

/// The figures an EVM position's history gives, with `owed` (what `collect` would pay now),
/// `held` (its principal now) and today's prices.
fn from_history(
    summary: Option<&HistorySummary>,
    holding: &WalletHolding,
    owed: [U256; 2],
    held: [U256; 2],
    prices: &[Option<BigDecimal>; 2],
) -> Sums {
    let decimals = holding.tokens.clone().map(|t| t.decimals);
    let usd = |t: usize, units: U256| {
        prices[t]
            .as_ref()
            .map(|p| base_units_to_decimal(units, decimals[t]) * p)
    };
    let Some(h) = summary.filter(|h| h.complete) else {
        let reason = summary
            .and_then(|h| h.reason.clone())
            .unwrap_or_else(|| "its history has not been read yet".into());
        return Sums {
            fees: None,
            fees_unclaimed: None,
            uncollected: None,
            fee_values: [None, None],
            cost_basis: None,
            withdrawn_usd: None,
            fees_collected_usd: None,
            history: HistoryView {
                history_complete: Some(false),
                history_reason: Some(reason),
                ..HistoryView::default()
            },
            tokens: None,
        };
    };
    let (deposited, withdrawn) = (units(&h.deposited), units(&h.withdrawn));
    let (collected, uncollected) = (units(&h.fees_collected), units(&h.uncollected_principal));
    let unclaimed = [0, 1].map(|t| owed[t].saturating_sub(uncollected[t]));
    let collected_usd = decimals_of(&h.fees_collected_usd);
    let fee_values = [0, 1].map(|t| {
        collected_usd[t]
            .clone()
            .zip(usd(t, unclaimed[t]))
            .map(|(c, u)| c + u)
    });
    let fees_total = sum2(&fee_values);
    // HODL: the net deposited units at today's prices (a token withdrawn beyond its deposits
    // counts negative).
    let signed = |t: usize, units: U256, minus: U256| {
        let plus = usd(t, units)?;
        Some(plus - usd(t, minus)?)
    };
    let hodl = sum2(&[0, 1].map(|t| signed(t, deposited[t], withdrawn[t])));
    let principal = sum2(&[usd(0, held[0]), usd(1, held[1])]);
    // The capital's weight: through the last event, then what is still deposited until the read.
    let net = [0, 1].map(|t| deposited[t].saturating_sub(withdrawn[t]));
    let read_at = u64::try_from(holding.read_at.timestamp()).unwrap_or_default();
    let since = h.last_time.map(|t| read_at.saturating_sub(t));
    let weight = decimal_of(&h.capital_usd_seconds)
        .zip(sum2(&[usd(0, net[0]), usd(1, net[1])]))
        .zip(since)
        .map(|((w, c), s)| w + c * BigDecimal::from(s));
    let apr = fees_total
        .zip(weight)
        .filter(|(_, w)| !w.is_zero())
        .map(|(f, w)| f * BigDecimal::from(YEAR_SECONDS * 100) / w);
    let text =
        |t: usize, units: U256| Some(plain_exact(&base_units_to_decimal(units, decimals[t])));
    let tokens = [0, 1].map(|t| TokenHistoryView {
        deposited: text(t, deposited[t]),
        withdrawn: text(t, withdrawn[t]),
        fees_collected: text(t, collected[t]),
        uncollected_principal: text(t, uncollected[t]),
        fees_unclaimed: text(t, unclaimed[t]),
    });
    let withdrawn_usd = sum2(&decimals_of(&h.withdrawn_usd));
    let fees_collected_usd = sum2(&collected_usd);
    Sums {
        fees: Some([0, 1].map(|t| collected[t] + unclaimed[t])),
        fees_unclaimed: Some(unclaimed),
        uncollected: Some(uncollected),
        fee_values,
        cost_basis: sum2(&decimals_of(&h.deposited_usd)),
        withdrawn_usd: withdrawn_usd.clone(),
        fees_collected_usd: fees_collected_usd.clone(),
        history: HistoryView {
            withdrawn_usd: withdrawn_usd.map(Usd::new),
            fees_collected_usd: fees_collected_usd.map(Usd::new),
            impermanent_loss_usd: principal.zip(hodl.clone()).map(|(p, h)| Usd::new(p - h)),
            hodl_value_usd: hodl.map(Usd::new),
            fee_apr_percent: apr.map(Percent::new),
            history_complete: Some(true),
            history_reason: None,
            priced_nearest: h.nearest,
        },
        tokens: Some(tokens),
    }
}

fn decimal_of(text: &Option<String>) -> Option<BigDecimal> {
    text.as_deref().and_then(|v| BigDecimal::from_str(v).ok())
}

/// The view of a wallet position at its last read and its USD figures, at today's prices. An
/// EVM position's fees, cost basis and PnL come from its history (what `collect` would pay is
/// its unclaimed fees *and* its uncollected principal: never principal as fees); an Orca
/// position's from its reads.
pub fn holding_view(
    position: &Position,
    holding: &WalletHolding,
    catalog: &Catalog,
) -> (WalletPositionView, HeldFigures) {
    let at_pool = valued_at_pool(position, holding, catalog);
    let holding = at_pool.as_ref().unwrap_or(holding);
    let chain = position.chain;
    let prices = holding
        .tokens
        .clone()
        .map(|t| usd_price(catalog, chain, &t.address));
    // A position without liquidity holds no principal, whatever an older read of it said (a
    // close its events told before the next read): what it paid out is in its history. One
    // sent away holds nothing for its holder: all it held then is in its history, taken out at
    // the transfer's prices (decision 69).
    let departed = holding
        .history
        .as_ref()
        .is_some_and(|h| h.complete && h.departure.is_some());
    let held = match position.liquidity {
        _ if departed => [U256::ZERO; 2],
        0 => [U256::ZERO; 2],
        _ => holding.amounts.clone().map(|a| amount(&a)),
    };
    let owed = match departed {
        true => [U256::ZERO; 2],
        false => holding.fees.clone().map(|f| amount(&f)),
    };
    let usd = |i: usize, units: U256| {
        prices[i]
            .as_ref()
            .map(|p| base_units_to_decimal(units, holding.tokens[i].decimals) * p)
    };
    let is_evm = chain != Chain::Solana;
    let mut sums = if is_evm {
        from_history(holding.history.as_ref(), holding, owed, held, &prices)
    } else {
        Sums {
            fees: Some(owed),
            fees_unclaimed: Some(owed),
            uncollected: None,
            fee_values: [usd(0, owed[0]), usd(1, owed[1])],
            cost_basis: decimal_of(&holding.first_value_usd),
            withdrawn_usd: Some(BigDecimal::zero()),
            fees_collected_usd: Some(BigDecimal::zero()),
            history: HistoryView {
                history_reason: Some(ORCA_FIGURES.into()),
                ..HistoryView::default()
            },
            tokens: None,
        }
    };
    let mut principal = [usd(0, held[0]), usd(1, held[1])];
    // What it holds now, per token: principal and all that collect would pay.
    let mut token_values = [0, 1].map(|t| usd(t, held[t] + owed[t]));
    // tokenA is the base asset where the catalog has the pool (as a simulated position on it
    // shows), else token0.
    let base_is_token0 = catalog
        .find(chain, position.protocol, &position.pool)
        .is_none_or(|p| p.orientation.base_is_token0);
    let [a, b] = if base_is_token0 { [0, 1] } else { [1, 0] };
    // Closed through the API: its figures frozen at its close. It holds nothing (decision 69):
    // what the close paid out is in its history's withdrawal and collect, and in its PnL.
    let frozen = position.closing.as_ref();
    let amounts = match frozen {
        Some(_) => [U256::ZERO; 2],
        None => held,
    };
    if let Some(c) = frozen {
        let order = |pair: &crate::domain::model::TokenPair| {
            if base_is_token0 {
                [pair.a, pair.b]
            } else {
                [pair.b, pair.a]
            }
        };
        sums.fees = Some(order(&c.fees));
        sums.uncollected = None;
        principal = [Some(BigDecimal::zero()), Some(BigDecimal::zero())];
        sums.fee_values[a] = Some(c.fees_usd_a.clone());
        sums.fee_values[b] = Some(c.fees_usd_b.clone());
        token_values = principal.clone();
        sums.cost_basis = Some(c.cost_basis_usd.clone());
        (sums.withdrawn_usd, sums.fees_collected_usd) =
            (Some(BigDecimal::zero()), Some(BigDecimal::zero()));
    }
    let fee_total = sum2(&sums.fee_values);
    let value = sum2(&token_values);
    // What left it (withdrawn principal at its withdrawals' prices, collected fees at theirs),
    // less the withdrawn principal still held as owed (in `value` at today's prices): a
    // withdrawal counts once, collected or not.
    let held_withdrawn = sums
        .uncollected
        .map(|u| sum2(&[usd(0, u[0]), usd(1, u[1])]))
        .unwrap_or(Some(BigDecimal::zero()));
    let taken_out = sums
        .withdrawn_usd
        .clone()
        .zip(sums.fees_collected_usd.clone())
        .zip(held_withdrawn)
        .map(|((w, f), u)| w + f - u);
    // Decision 60: a staked position's PnL counts its rewards.
    let (staked, rewards) = match holding.staked.as_ref().filter(|_| frozen.is_none()) {
        Some(s) => staked_view(
            s,
            position.status != Status::Closed,
            usd_price(catalog, chain, &s.reward_token.address),
            holding.history.as_ref(),
        ),
        None => (None, Rewards::none()),
    };
    let unpriced_reward = rewards.unpriced_of(holding.staked.as_ref());
    let rewards = Some(rewards.usd);
    let pnl = match frozen {
        Some(c) => Some(c.pnl_usd.clone()),
        None => value
            .clone()
            .zip(taken_out.clone())
            .zip(sums.cost_basis.clone())
            .zip(rewards.clone())
            .map(|(((v, out), c), r)| v + out - c + r),
    };
    let decimals = |i: usize| holding.tokens[i].decimals;
    let token_view = |i: usize| HeldAmountView {
        symbol: holding.tokens[i].symbol.clone(),
        address: holding.tokens[i].address.clone(),
        amount: plain_exact(&base_units_to_decimal(amounts[i], decimals(i))),
        value_usd: principal[i].clone().map(Usd::new),
        fees_earned: sums
            .fees
            .map(|f| plain_exact(&base_units_to_decimal(f[i], decimals(i)))),
        fees_earned_usd: sums.fee_values[i].clone().map(Usd::new),
        history: sums.tokens.as_ref().map(|t| t[i].clone()),
    };
    let curve = curve_of(position.protocol);
    let orientation = Orientation {
        curve,
        decimals0: holding.tokens[0].decimals,
        decimals1: holding.tokens[1].decimals,
        base_is_token0,
    };
    let at_tick =
        |tick: i32| orientation.human_price_of(curve.sqrt_price_at_tick(tick).unwrap_or_default());
    let open = position.status != Status::Closed;
    // A close requested through the API shows while the position is open.
    let order = position.order.as_deref().filter(|_| open);
    let view = WalletPositionView {
        id: position.id.clone(),
        source: Source::Wallet,
        wallet: holding.wallet.clone(),
        token_id: is_evm.then(|| holding.token.clone()),
        position_mint: (!is_evm).then(|| holding.token.clone()),
        chain,
        protocol: position.protocol,
        pool: position.pool.clone(),
        token_a: token_view(a),
        token_b: token_view(b),
        status: position.status,
        tick_lower: position.tick_lower,
        tick_upper: position.tick_upper,
        liquidity: position.liquidity.to_string(),
        in_range: open
            .then_some(position.tick_lower <= holding.tick && holding.tick < position.tick_upper),
        // The lower tick is the higher price when tokenA is token1.
        price_lower: at_tick(position.tick_lower).min(at_tick(position.tick_upper)),
        price_upper: at_tick(position.tick_lower).max(at_tick(position.tick_upper)),
        current_price: orientation.human_price_of(amount(&holding.sqrt_price)),
        fees_earned_usd: fee_total.clone().map(Usd::new),
        cost_basis_usd: sums.cost_basis.clone().map(Usd::new),
        value_usd: value.clone().map(Usd::new),
        pnl_usd: pnl.map(Usd::new),
        history: sums.history,
        read_height: holding.height,
        refreshed_at: format_time(&holding.read_at),
        // Opened when its holder's count starts (its mint's block, or the arrival's), where its
        // history has it; else when the service first saw it.
        created_at: holding
            .history
            .as_ref()
            .and_then(|h| h.first_time)
            .and_then(|t| i64::try_from(t).ok())
            .and_then(|t| DateTime::from_timestamp(t, 0))
            .map_or_else(|| format_time(&position.created_at), |t| format_time(&t)),
        close_reason: frozen
            .and_then(|c| c.reason.clone())
            .or_else(|| holding.close_reason.clone()),
        read_error: holding.read_error.clone().filter(|_| open),
        stale: open && holding.read_error.is_some(),
        closed_at: frozen.map(|c| format_time(&c.closed_at)),
        closing: order.and_then(closing_view),
        action: order.and_then(action_view),
        moved_from: holding.moved_from.clone(),
        moved_to: holding.moved_to.clone().or_else(|| {
            order
                .filter(|o| o.kind == OrderKind::Rebalance)
                .and_then(|o| o.moved.clone())
        }),
        transactions: order
            .filter(|o| o.kind != OrderKind::Open)
            .map(|o| o.sendable().to_vec()),
        calls: order
            .filter(|o| o.kind != OrderKind::Open)
            .map(|o| calls_of(o.sendable())),
        permit: order
            .filter(|o| o.kind != OrderKind::Open)
            .and_then(|o| o.permit_to_sign()),
        pnl_leaves_out: unpriced_reward.as_ref().map(leaves_out),
        staked,
    };
    let figures = HeldFigures {
        token_values,
        fees: fee_total,
        value,
        cost_basis: sums.cost_basis,
        taken_out,
        fees_collected: sums.fees_collected_usd,
        fees_unclaimed: sums.fees_unclaimed,
        units: [0, 1].map(|t| held[t] + owed[t]),
        rewards,
        unpriced_reward,
    };
    (view, figures)
}

/// The realized totals with the owner's wallet positions closed on chain (withdrawn or
/// transferred away, not through the API: those are in `realized` already): each one's PnL
/// from its history and its cost basis. One without a complete history or a price adds nothing.
pub fn with_closed_wallet_positions(
    mut realized: Realized,
    closed: &[Position],
    catalog: &Catalog,
) -> Realized {
    for position in closed.iter().filter(|p| p.closing.is_none()) {
        let Some(holding) = position.holding.as_deref() else {
            continue;
        };
        let (_, held) = holding_view(position, holding, catalog);
        let figures = (held.value, held.taken_out, held.cost_basis, held.rewards);
        if let (Some(value), Some(out), Some(basis), Some(rewards)) = figures {
            // As its view's PnL (decision 60: rewards counted).
            realized.pnl_usd += value + out - &basis + rewards;
            realized.cost_basis_usd += basis;
        }
    }
    realized
}

impl PositionEntry {
    /// The position's id, whichever way it is shown.
    pub fn id(&self) -> &str {
        match self {
            PositionEntry::Valued(view) => &view.id,
            PositionEntry::Unvalued(view) => &view.id,
            PositionEntry::Wallet(view) => &view.id,
        }
    }
}

/// Any position as the API shows it: a wallet position at its last read, a simulated one
/// valued ([`position_entry`]).
pub fn entry(
    position: &Position,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<PositionEntry, ValuationError> {
    match (&position.holding, &position.order) {
        (Some(holding), _) => {
            let mut view = holding_view(position, holding, catalog).0;
            // Its pool not read again for longer than the market's freshness allows (a read
            // that failed): its figures are as old as its `refreshedAt` says (decision 63).
            let pool = catalog.find(position.chain, position.protocol, &position.pool);
            let pool_stale = pool.is_some_and(|p| {
                p.state.is_some() && catalog.freshness.is_stale(p.state.as_ref(), now)
            });
            view.stale |= view.status == Status::Active && pool_stale;
            Ok(PositionEntry::Wallet(Box::new(view)))
        }
        (None, Some(order)) => Ok(with_open_order(
            position_entry(position, catalog, now)?,
            order,
            position.liquidity,
        )),
        (None, None) => position_entry(position, catalog, now),
    }
}

/// A position's history as `GET /positions/{id}/history` shows it, from `offset`, at most
/// `limit`: a wallet position's stored `events` (all from the first, in chain order), or a
/// simulated position's life (created, activated, closed).
pub fn history_views(
    position: &Position,
    events: &[PositionEvent],
    catalog: &Catalog,
    (offset, limit): (usize, usize),
) -> Vec<EventView> {
    let time =
        |unix: u64| DateTime::from_timestamp(i64::try_from(unix).ok()?, 0).map(|t| format_time(&t));
    if let Some(holding) = position.holding.as_deref() {
        let base_is_token0 = catalog
            .find(position.chain, position.protocol, &position.pool)
            .is_none_or(|p| p.orientation.base_is_token0);
        let order = if base_is_token0 { [0, 1] } else { [1, 0] };
        let decimals = holding.tokens.clone().map(|t| t.decimals);
        return event_views(
            events,
            holding.history.as_ref(),
            (&holding.wallet, decimals, order),
            (offset, limit),
            time,
        );
    }
    life_views(position, catalog, (offset, limit))
}
