//! The portfolio overview: totals, profit and loss, and the breakdown by asset, computed in
//! exact decimals and rounded only when written.

use crate::catalog::Catalog;
use crate::holdings::holding_view;
use crate::json::{Percent, Usd};
use crate::model::{Chain, Position, Realized};
use crate::valuation::{percent_of, value_position, ValuationError, Valued};
use bigdecimal::{BigDecimal, RoundingMode, Zero};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssetView {
    pub symbol: String,
    pub value_usd: Usd,
    pub percentage: Percent,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PortfolioView {
    pub total_value_usd: Usd,
    pub total_pnl_usd: Usd,
    pub total_pnl_percent: Percent,
    /// PnL of the open positions, at today's prices.
    pub unrealized_pnl_usd: Usd,
    /// PnL of the closed positions, frozen at their closes.
    pub realized_pnl_usd: Usd,
    pub total_fees_earned_usd: Usd,
    pub total_impermanent_loss_usd: Usd,
    pub positions: u64,
    /// Open positions left out of the totals: the protocol's math cannot value them at their
    /// pools' current prices (each shows a `valuationError`).
    pub unvalued_positions: u64,
    /// Open wallet positions left out of the USD totals: a token of theirs has no route to a
    /// USD price.
    pub unpriced_positions: u64,
    pub assets: Vec<AssetView>,
    /// The total value by chain, with the assets' rounding rule.
    pub chains: Vec<ChainView>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainView {
    pub chain: Chain,
    pub value_usd: Usd,
    pub percentage: Percent,
}

/// The overview of `positions` (the caller's positions that are not closed) and the
/// `realized` totals of the closed ones.
pub fn portfolio(
    positions: &[Position],
    realized: &Realized,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<PortfolioView, ValuationError> {
    let mut total_value = BigDecimal::zero();
    let mut cost_basis = BigDecimal::zero();
    let mut fees = BigDecimal::zero();
    let mut impermanent_loss = BigDecimal::zero();
    let mut by_symbol: BTreeMap<String, BigDecimal> = BTreeMap::new();
    let mut by_chain: BTreeMap<String, BigDecimal> = BTreeMap::new();
    let (mut unvalued, mut unpriced) = (0, 0);
    for position in positions {
        if let Some(holding) = &position.holding {
            let (view, held) = holding_view(position, holding, catalog);
            let (Some(value), Some(basis), [Some(a), Some(b)]) =
                (held.value, held.cost_basis, held.token_values)
            else {
                unpriced += 1;
                continue;
            };
            *by_chain.entry(position.chain.to_string()).or_default() += &value;
            total_value += value;
            cost_basis += basis;
            fees += held.fees.unwrap_or_default();
            *by_symbol.entry(view.token_a.symbol).or_default() += a;
            *by_symbol.entry(view.token_b.symbol).or_default() += b;
            continue;
        }
        let Valued { view, figures } = match value_position(position, catalog, now) {
            Ok(valued) => valued,
            Err(ValuationError::Math(e)) => {
                tracing::warn!(position = %position.id, cause = %e, "position left out of the portfolio");
                unvalued += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        *by_chain.entry(position.chain.to_string()).or_default() += figures.value();
        total_value += figures.value();
        cost_basis += &figures.cost_basis;
        fees += figures.fees();
        // Positions without a recorded deposit have no HODL comparison: they add nothing.
        impermanent_loss += figures.impermanent_loss().unwrap_or_default();
        // An asset's value holds its uncollected fees too: the assets sum to the total.
        for (symbol, value) in [
            (view.token_a.symbol, figures.principal_a + figures.fees_a),
            (view.token_b.symbol, figures.principal_b + figures.fees_b),
        ] {
            *by_symbol.entry(symbol).or_default() += value;
        }
    }
    let unrealized = &total_value - &cost_basis;
    let pnl = &unrealized + &realized.pnl_usd;
    let all_cost_basis = cost_basis + &realized.cost_basis_usd;
    Ok(PortfolioView {
        total_value_usd: Usd::new(total_value),
        total_pnl_percent: Percent::new(percent_of(&pnl, &all_cost_basis)),
        total_pnl_usd: Usd::new(pnl),
        unrealized_pnl_usd: Usd::new(unrealized),
        realized_pnl_usd: Usd::new(realized.pnl_usd.clone()),
        total_fees_earned_usd: Usd::new(fees),
        total_impermanent_loss_usd: Usd::new(impermanent_loss),
        positions: positions.len() as u64,
        unvalued_positions: unvalued,
        unpriced_positions: unpriced,
        assets: breakdown(by_symbol)
            .into_iter()
            .map(|(symbol, value_usd, percentage)| AssetView {
                symbol,
                value_usd,
                percentage,
            })
            .collect(),
        chains: breakdown(by_chain)
            .into_iter()
            .filter_map(|(chain, value_usd, percentage)| {
                Some(ChainView {
                    chain: chain.parse().ok()?,
                    value_usd,
                    percentage,
                })
            })
            .collect(),
    })
}

/// Values by name (an asset's symbol, a chain), descending (ties by name), with percentages in
/// hundredths that sum to exactly 100: each share is floored, and the hundredths left over go
/// to the largest remainders.
fn breakdown(by_name: BTreeMap<String, BigDecimal>) -> Vec<(String, Usd, Percent)> {
    let mut assets: Vec<(String, BigDecimal)> = by_name.into_iter().collect();
    assets.sort_by(|(sa, va), (sb, vb)| vb.cmp(va).then_with(|| sa.cmp(sb)));
    let total: BigDecimal = assets.iter().map(|(_, v)| v).sum();
    if total.is_zero() {
        return assets
            .into_iter()
            .map(|(name, value)| (name, Usd::new(value), Percent::new(BigDecimal::zero())))
            .collect();
    }
    // Shares in hundredths of a percent: 10_000 in all.
    let shares: Vec<BigDecimal> = assets
        .iter()
        .map(|(_, v)| v * BigDecimal::from(10_000) / &total)
        .collect();
    let mut floors: Vec<BigDecimal> = shares
        .iter()
        .map(|s| s.with_scale_round(0, RoundingMode::Down))
        .collect();
    let assigned: BigDecimal = floors.iter().sum();
    let left_over = (BigDecimal::from(10_000) - assigned).with_scale(0);
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&i, &j| {
        (&shares[j] - &floors[j])
            .cmp(&(&shares[i] - &floors[i]))
            .then(i.cmp(&j))
    });
    let left_over: usize = left_over.to_string().parse().unwrap_or(0);
    for &i in order.iter().take(left_over) {
        floors[i] += BigDecimal::from(1);
    }
    assets
        .into_iter()
        .zip(floors)
        .map(|((name, value), hundredths)| {
            (
                name,
                Usd::new(value),
                Percent::new(hundredths / BigDecimal::from(100)),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(s: &str) -> BigDecimal {
        BigDecimal::from_str(s).unwrap()
    }

    /// The breakdown of `(symbol, value)` pairs.
    fn breakdown_of(values: &[(&str, &str)]) -> Vec<(String, Usd, Percent)> {
        breakdown(values.iter().map(|(s, v)| (s.to_string(), d(v))).collect())
    }

    fn pct(assets: &[(String, Usd, Percent)]) -> Vec<String> {
        assets
            .iter()
            .map(|a| serde_json::to_string(&a.2).unwrap())
            .collect()
    }

    #[test]
    fn thirds_sum_to_exactly_one_hundred() {
        let assets = breakdown_of(&[("A", "1"), ("B", "1"), ("C", "1")]);
        assert_eq!(pct(&assets), ["33.34", "33.33", "33.33"]);
    }

    #[test]
    fn sorted_by_value_descending() {
        let assets = breakdown_of(&[("USDC", "2500.5"), ("WETH", "7500.25"), ("ZERO", "0")]);
        let symbols: Vec<&str> = assets.iter().map(|a| a.0.as_str()).collect();
        assert_eq!(symbols, ["WETH", "USDC", "ZERO"]);
        let sum: BigDecimal = assets.iter().map(|a| a.2 .0.clone()).sum();
        assert_eq!(sum, d("100"));
        assert_eq!(pct(&assets), ["75", "25", "0"]);
    }

    #[test]
    fn empty_portfolio_is_zeros() {
        let view = portfolio(&[], &Realized::default(), &Catalog::embedded(), Utc::now()).unwrap();
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"totalValueUsd": 0, "totalPnlUsd": 0, "totalPnlPercent": 0, "unrealizedPnlUsd": 0, "realizedPnlUsd": 0, "totalFeesEarnedUsd": 0, "totalImpermanentLossUsd": 0, "positions": 0, "unvaluedPositions": 0, "unpricedPositions": 0, "assets": [], "chains": []})
        );
    }
}
