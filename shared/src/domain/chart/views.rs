//! The charts as the API shows them: amounts as decimal strings of whole tokens (the position's
//! rule), USD rounded once when written, times in the API's format, `tokenA` the base asset.

use super::position::{PointFigures, TokenFigures};
use super::series::{Period, PoolPoint};
use super::sums::{Change, PortfolioPoint};
use crate::domain::json::{format_time, plain_exact, Percent, Usd};
use crate::domain::math::price::{base_units_to_decimal, Orientation};
use crate::domain::model::HeldToken;
use bigdecimal::BigDecimal;
use chrono::DateTime;
use serde::Serialize;

fn time(unix: i64) -> String {
    format_time(&DateTime::from_timestamp(unix, 0).unwrap_or_default())
}

fn usd(value: Option<BigDecimal>) -> Option<Usd> {
    value.map(Usd::new)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartView<P> {
    pub period: Period,
    pub interval_seconds: i64,
    pub points: Vec<P>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PointTokenView {
    pub symbol: String,
    pub amount: Option<String>,
    pub fees_unclaimed: Option<String>,
    pub value_usd: Option<Usd>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PositionPointView {
    pub time: String,
    pub block: u64,
    pub block_time: String,
    pub token_a: PointTokenView,
    pub token_b: PointTokenView,
    pub liquidity: Option<String>,
    pub in_range: bool,
    pub value_usd: Option<Usd>,
    pub fees_earned_usd: Option<Usd>,
    pub rewards_usd: Option<Usd>,
    pub deposited_usd: Option<Usd>,
    pub withdrawn_usd: Option<Usd>,
    pub net_deposits_usd: Option<Usd>,
    pub held_instead_usd: Option<Usd>,
    pub pnl_usd: Option<Usd>,
    pub exact: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A position's point as the API shows it (`tokens` protocol order).
pub fn position_point_view(
    f: &PointFigures,
    tokens: &[HeldToken; 2],
    base_is_token0: bool,
) -> PositionPointView {
    let token = |t: usize| {
        let figures: &TokenFigures = &f.tokens[t];
        let whole = |units| plain_exact(&base_units_to_decimal(units, tokens[t].decimals));
        PointTokenView {
            symbol: tokens[t].symbol.clone(),
            amount: figures.amount.map(whole),
            fees_unclaimed: figures.fees_unclaimed.map(whole),
            value_usd: usd(figures.value.clone()),
        }
    };
    let [a, b] = if base_is_token0 { [0, 1] } else { [1, 0] };
    PositionPointView {
        time: time(f.time),
        block: f.block,
        block_time: time(f.block_time),
        token_a: token(a),
        token_b: token(b),
        liquidity: f.tokens[0].amount.map(|_| f.liquidity.to_string()),
        in_range: f.in_range,
        value_usd: usd(f.value()),
        fees_earned_usd: usd(f.fees_earned()),
        rewards_usd: usd(f.rewards.clone()),
        deposited_usd: usd(f.deposited()),
        withdrawn_usd: usd(f.withdrawn()),
        net_deposits_usd: usd(f.net_deposits()),
        held_instead_usd: usd(f.held_instead()),
        pnl_usd: usd(f.pnl()),
        exact: f.exact,
        reason: f.reason.clone(),
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PortfolioPointView {
    pub time: String,
    pub value_usd: Usd,
    pub pnl_usd: Usd,
    pub fees_earned_usd: Usd,
    pub rewards_usd: Usd,
    pub net_deposits_usd: Usd,
    pub positions: u64,
    pub unpriced_positions: u64,
    pub exact: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

pub fn portfolio_point_view(p: &PortfolioPoint) -> PortfolioPointView {
    PortfolioPointView {
        time: time(p.time),
        value_usd: Usd::new(p.value.clone()),
        pnl_usd: Usd::new(p.pnl.clone()),
        fees_earned_usd: Usd::new(p.fees_earned.clone()),
        rewards_usd: Usd::new(p.rewards.clone()),
        net_deposits_usd: Usd::new(p.net_deposits.clone()),
        positions: p.positions,
        unpriced_positions: p.unpriced,
        exact: p.exact,
        reason: (!p.reasons.is_empty()).then(|| p.reasons.join("; ")),
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupView {
    /// An asset's `{chain}:{address}` (lower case on EVM chains), as `GET /portfolio`'s assets
    /// are told apart: a look-alike symbol is never merged into the real token; a chain's or
    /// protocol's name.
    pub key: String,
    /// An asset group's token, as the portfolio's assets show it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<crate::domain::model::Chain>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    pub points: Vec<PortfolioPointView>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupedChartView {
    pub period: Period,
    pub interval_seconds: i64,
    pub group_by: super::sums::GroupBy,
    pub groups: Vec<GroupView>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenPriceView {
    pub symbol: String,
    pub address: String,
    pub price_usd: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolPointView {
    pub time: String,
    pub block: u64,
    pub block_time: String,
    pub sqrt_price: String,
    pub tick: i32,
    /// Token B per token A.
    pub price: String,
    pub liquidity: String,
    pub token_a: TokenPriceView,
    pub token_b: TokenPriceView,
}

/// A pool's point as the API shows it (`tokens` protocol order).
pub fn pool_point_view(
    p: &PoolPoint,
    tokens: &[HeldToken; 2],
    orientation: &Orientation,
) -> PoolPointView {
    let [a, b] = if orientation.base_is_token0 {
        [0, 1]
    } else {
        [1, 0]
    };
    let token = |t: usize| TokenPriceView {
        symbol: tokens[t].symbol.clone(),
        address: tokens[t].address.clone(),
        price_usd: p.prices[t].clone(),
    };
    PoolPointView {
        time: time(p.time),
        block: p.block(),
        block_time: time(p.block_time),
        sqrt_price: p.state.sqrt_price.to_string(),
        tick: p.state.tick,
        price: plain_exact(&orientation.human_price_decimal(p.state.sqrt_price)),
        liquidity: p.state.liquidity.to_string(),
        token_a: token(a),
        token_b: token(b),
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeView {
    pub from: String,
    pub to: String,
    pub value_usd: Usd,
    pub value_percent: Option<Percent>,
    pub pnl_usd: Usd,
}

pub fn change_view(change: &Change, (from, to): (i64, i64)) -> ChangeView {
    ChangeView {
        from: time(from),
        to: time(to),
        value_usd: Usd::new(change.value.clone()),
        value_percent: change.percent.clone().map(Percent::new),
        pnl_usd: Usd::new(change.pnl.clone()),
    }
}

/// `GET /portfolio`'s `changes`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ChangesView {
    #[serde(rename = "1d")]
    pub day: Option<ChangeView>,
    #[serde(rename = "7d")]
    pub week: Option<ChangeView>,
    #[serde(rename = "30d")]
    pub month: Option<ChangeView>,
}
