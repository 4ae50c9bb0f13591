//! Positions read from linked wallets: a position as a read found it, what it holds, and how
//! such a position is shown and summed, at its last read, with USD figures only where its
//! tokens have a USD price. Storing a read over the stored positions is the application's
//! `wallet_reads`.

use crate::domain::catalog::{curve_of, BaseToken, Catalog, Pool, PoolRecord, TokenRecord};
use crate::domain::json::{plain_exact, Usd};
use crate::domain::math::price::{base_units_to_decimal, Orientation};
use crate::domain::math::U256;
use crate::domain::model::{
    format_time, Chain, HeldAmountView, HeldToken, OrderKind, Position, PositionEntry, Protocol,
    Source, Status, WalletHolding, WalletPositionView,
};
use crate::domain::orders::view::{closing_view, with_open_order};
use crate::domain::valuation::{position_entry, ValuationError};
use bigdecimal::{BigDecimal, Zero};
use chrono::{DateTime, Utc};
use std::str::FromStr;

/// One position as a wallet read found it, at the read's block or slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPosition {
    pub protocol: Protocol,
    /// The pool (EVM address or Whirlpool account).
    pub pool: String,
    /// The position manager or the Whirlpool program.
    pub manager: String,
    /// The NFT's id (EVM) or the position mint (Solana).
    pub token: String,
    pub tokens: [HeldToken; 2],
    /// The pool's fee tier (hundredths of a basis point) and tick spacing.
    pub fee_tier: u32,
    pub tick_spacing: i32,
    pub tick_lower: i32,
    pub tick_upper: i32,
    pub liquidity: u128,
    /// Base units, protocol order: held (rounded down) and what collect would pay.
    pub amounts: [U256; 2],
    pub fees: [U256; 2],
    pub sqrt_price: U256,
    pub tick: i32,
}

/// The catalog record of a pool a wallet read found outside the catalog: its tokens as their
/// contracts or mints describe them (no USD price of their own: only the pools price them,
/// `crate::domain::pricing`), tokenA its token0, priced at the read. `None` when no valid pool comes of it.
pub fn discovered_record(chain: Chain, read: &ReadPosition) -> Option<PoolRecord> {
    let curve = curve_of(read.protocol);
    let orientation = Orientation {
        curve,
        decimals0: read.tokens[0].decimals,
        decimals1: read.tokens[1].decimals,
        base_is_token0: true,
    };
    let price = orientation.human_price_precise(read.sqrt_price, 20);
    let token = |t: &HeldToken| TokenRecord {
        symbol: t.symbol.clone(),
        address: t.address.clone(),
        decimals: t.decimals,
        price_usd: "0".into(),
    };
    let record = PoolRecord {
        chain,
        protocol: read.protocol,
        pool: read.pool.clone(),
        fee_tier: read.fee_tier,
        tick_spacing: read.tick_spacing,
        token0: token(&read.tokens[0]),
        token1: token(&read.tokens[1]),
        base: BaseToken::Token0,
        current_price: price.to_string(),
        discovered: true,
    };
    Pool::from_record(&record).ok().map(|_| record)
}

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
    }
}

/// A wallet position's figures in USD (each `None` where a token has no USD price).
#[derive(Debug, Clone)]
pub struct HeldFigures {
    /// Per token: held amount plus fees, in USD.
    pub token_values: [Option<BigDecimal>; 2],
    pub fees: Option<BigDecimal>,
    pub value: Option<BigDecimal>,
    pub cost_basis: Option<BigDecimal>,
}

/// The view of a wallet position at its last read and its USD figures, at today's prices.
pub fn holding_view(
    position: &Position,
    holding: &WalletHolding,
    catalog: &Catalog,
) -> (WalletPositionView, HeldFigures) {
    let chain = position.chain;
    let prices = holding
        .tokens
        .clone()
        .map(|t| usd_price(catalog, chain, &t.address));
    let amounts = holding.amounts.clone().map(|a| amount(&a));
    let fees = holding.fees.clone().map(|f| amount(&f));
    let usd = |i: usize, units: U256| {
        prices[i]
            .as_ref()
            .map(|p| base_units_to_decimal(units, holding.tokens[i].decimals) * p)
    };
    let mut principal = [usd(0, amounts[0]), usd(1, amounts[1])];
    let mut fee_values = [usd(0, fees[0]), usd(1, fees[1])];
    let mut cost_basis = holding
        .first_value_usd
        .as_deref()
        .and_then(|v| BigDecimal::from_str(v).ok());
    // tokenA is the base asset where the catalog has the pool (as a simulated position on it
    // shows), else token0.
    let base_is_token0 = catalog
        .find(chain, position.protocol, &position.pool)
        .is_none_or(|p| p.orientation.base_is_token0);
    let [a, b] = if base_is_token0 { [0, 1] } else { [1, 0] };
    // Closed through the API: what the withdraw paid, frozen at its close.
    let frozen = position.closing.as_ref();
    let (mut amounts, mut fees) = (amounts, fees);
    if let Some(c) = frozen {
        let order = |pair: &crate::domain::model::TokenPair| {
            if base_is_token0 {
                [pair.a, pair.b]
            } else {
                [pair.b, pair.a]
            }
        };
        (amounts, fees) = (order(&c.withdrawn), order(&c.fees));
        principal[a] = Some(c.value_a.clone());
        principal[b] = Some(c.value_b.clone());
        fee_values[a] = Some(c.fees_usd_a.clone());
        fee_values[b] = Some(c.fees_usd_b.clone());
        cost_basis = Some(c.cost_basis_usd.clone());
    }
    let sum = |pair: &[Option<BigDecimal>; 2]| Some(pair[0].clone()? + pair[1].clone()?);
    let fee_total = sum(&fee_values);
    let value = sum(&principal).zip(fee_total.clone()).map(|(p, f)| p + f);
    let pnl = match frozen {
        Some(c) => Some(c.pnl_usd.clone()),
        None => value.clone().zip(cost_basis.clone()).map(|(v, c)| v - c),
    };
    let token_view = |i: usize| HeldAmountView {
        symbol: holding.tokens[i].symbol.clone(),
        address: holding.tokens[i].address.clone(),
        amount: plain_exact(&base_units_to_decimal(
            amounts[i],
            holding.tokens[i].decimals,
        )),
        value_usd: principal[i].clone().map(Usd::new),
        fees_earned: plain_exact(&base_units_to_decimal(fees[i], holding.tokens[i].decimals)),
        fees_earned_usd: fee_values[i].clone().map(Usd::new),
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
    let is_evm = chain != Chain::Solana;
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
        cost_basis_usd: cost_basis.clone().map(Usd::new),
        value_usd: value.clone().map(Usd::new),
        pnl_usd: pnl.map(Usd::new),
        read_height: holding.height,
        refreshed_at: format_time(&holding.read_at),
        created_at: format_time(&position.created_at),
        close_reason: frozen
            .and_then(|c| c.reason.clone())
            .or_else(|| holding.close_reason.clone()),
        read_error: holding.read_error.clone().filter(|_| open),
        stale: open && holding.read_error.is_some(),
        closed_at: frozen.map(|c| format_time(&c.closed_at)),
        closing: order.and_then(closing_view),
        transactions: order
            .filter(|o| o.kind == OrderKind::Close)
            .map(|o| o.transactions.clone()),
    };
    let token_values = [
        principal[0]
            .clone()
            .zip(fee_values[0].clone())
            .map(|(p, f)| p + f),
        principal[1]
            .clone()
            .zip(fee_values[1].clone())
            .map(|(p, f)| p + f),
    ];
    let figures = HeldFigures {
        token_values,
        fees: fee_total,
        value,
        cost_basis,
    };
    (view, figures)
}

/// Any position as the API shows it: a wallet position at its last read, a simulated one
/// valued ([`position_entry`]).
pub fn entry(
    position: &Position,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<PositionEntry, ValuationError> {
    match (&position.holding, &position.order) {
        (Some(holding), _) => Ok(PositionEntry::Wallet(Box::new(
            holding_view(position, holding, catalog).0,
        ))),
        (None, Some(order)) => Ok(with_open_order(
            position_entry(position, catalog, now)?,
            order,
            position.liquidity,
        )),
        (None, None) => position_entry(position, catalog, now),
    }
}
