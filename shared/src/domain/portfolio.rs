//! The portfolio overview: totals, profit and loss, and the breakdown by asset, computed in
//! exact decimals and rounded only when written.

use crate::domain::catalog::{Catalog, Pool};
use crate::domain::holdings::{holding_view, usd_price};
use crate::domain::json::{Percent, Usd};
use crate::domain::math::num::widen;
use crate::domain::math::{Curve, U256, U512};
use crate::domain::model::{Chain, HeldToken, Position, Protocol, Realized, Status};
use crate::domain::valuation::{
    nothing, percent_of, pool_of, value_position, ValuationError, Valued,
};
use bigdecimal::num_bigint::{BigInt, Sign};
use bigdecimal::num_traits::Signed;
use bigdecimal::{BigDecimal, Zero};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

/// One token's share of the portfolio: a token is its chain and address, so two tokens that
/// share a symbol (the same stablecoin on two chains, or a token calling itself "USDC") are
/// never one asset.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssetView {
    pub symbol: String,
    pub chain: Chain,
    pub address: String,
    pub value_usd: Usd,
    pub percentage: Percent,
}

/// A token as the assets breakdown groups it: its chain and address (lower case on EVM).
pub(crate) type TokenKey = (Chain, String);

pub(crate) fn token_key(chain: Chain, address: &str) -> TokenKey {
    if chain.addresses_ignore_case() {
        (chain, address.to_ascii_lowercase())
    } else {
        (chain, address.to_string())
    }
}

/// The assets' values by token, with the symbol and address each is shown with.
#[derive(Default)]
struct ByToken {
    values: BTreeMap<TokenKey, BigDecimal>,
    shown: HashMap<TokenKey, (String, String)>,
}

impl ByToken {
    fn add(&mut self, chain: Chain, address: &str, symbol: &str, value: BigDecimal) {
        let key = token_key(chain, address);
        self.shown
            .entry(key.clone())
            .or_insert_with(|| (symbol.to_string(), address.to_string()));
        *self.values.entry(key).or_default() += value;
    }

    fn views(mut self) -> Vec<AssetView> {
        breakdown(self.values)
            .into_iter()
            .map(|(key, value_usd, percentage)| {
                let (symbol, address) = self.shown.remove(&key).unwrap_or_default();
                AssetView {
                    symbol,
                    chain: key.0,
                    address,
                    value_usd,
                    percentage,
                }
            })
            .collect()
    }
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
    /// Staked positions' farm rewards, harvested and pending, apart from fees (decision 60).
    pub total_rewards_usd: Usd,
    pub total_impermanent_loss_usd: Usd,
    pub positions: u64,
    /// Open positions left out of the totals: the protocol's math cannot value them at their
    /// pools' current prices (each shows a `valuationError`).
    pub unvalued_positions: u64,
    /// Open wallet positions left out of the USD totals: a token of theirs has no route to a
    /// USD price, or their history is not complete yet.
    pub unpriced_positions: u64,
    /// Farm rewards without a USD price, per token: left out of `totalRewardsUsd` and the PnL
    /// figures, their positions counted all the same (decision 63).
    pub unpriced_rewards: Vec<UnpricedRewardView>,
    pub assets: Vec<AssetView>,
    /// The total value by chain, with the assets' rounding rule.
    pub chains: Vec<ChainView>,
    /// The changes over the last day, week and month by the series (decision 66), where asked
    /// for (`include=changes`: they read every wallet position's history); `null` for a period
    /// it does not reach back to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<crate::domain::chart::ChangesView>,
}

/// Whole tokens of one reward token that has no USD price, over the caller's positions.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnpricedRewardView {
    pub chain: Chain,
    pub symbol: String,
    pub address: String,
    pub amount: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainView {
    pub chain: Chain,
    pub value_usd: Usd,
    pub percentage: Percent,
}

/// A sum of base units: a `U256` and how many times it wrapped (amounts are below 2^256, and
/// no book holds 2^32 positions), exact without 512-bit additions.
#[derive(Default, Clone, Copy)]
struct Sum {
    low: U256,
    wraps: u32,
}

impl Sum {
    fn add(&mut self, units: U256) {
        let (low, wrapped) = self.low.overflowing_add(units);
        self.low = low;
        self.wraps += u32::from(wrapped);
    }

    fn total(self) -> U512 {
        (U512::from(self.wraps) << 256) + widen(self.low)
    }
}

/// Base units of one token summed over positions, valued once: a USD value is linear in base
/// units, so the value of the summed units is exactly the sum of the positions' values.
#[derive(Default)]
struct Units {
    /// What the liquidity holds plus the fees, of every position counted.
    held: Sum,
    fees: Sum,
    /// The principal of the positions with a recorded deposit, and those deposits: their
    /// impermanent loss.
    principal_with_deposit: Sum,
    deposited: Sum,
    /// Pending offers' amounts: their cost basis is their value today.
    offered: Sum,
}

/// One token's units with what values them: its symbol, chain, decimals and USD price.
struct TokenUnits<'a> {
    symbol: &'a str,
    address: &'a str,
    chain: Chain,
    decimals: u8,
    price: Cow<'a, BigDecimal>,
    units: Units,
}

/// The tokens the portfolio counts: a catalog pool's two (simulated positions, priced as their
/// pool prices them), or a wallet position's (priced as [`usd_price`] finds them).
#[derive(Default)]
struct Tokens<'a> {
    slots: Vec<TokenUnits<'a>>,
    of_pool: Vec<(&'a Pool, [usize; 2])>,
    of_wallet: HashMap<(Chain, &'a str, &'a str, u8), Option<usize>>,
}

impl<'a> Tokens<'a> {
    fn slot(
        &mut self,
        (symbol, address): (&'a str, &'a str),
        chain: Chain,
        decimals: u8,
        price: Cow<'a, BigDecimal>,
    ) -> usize {
        self.slots.push(TokenUnits {
            symbol,
            address,
            chain,
            decimals,
            price,
            units: Units::default(),
        });
        self.slots.len() - 1
    }

    /// The slots of `pool`'s token A and token B.
    fn of_pool(&mut self, pool: &'a Pool) -> [usize; 2] {
        if let Some((_, slots)) = self.of_pool.iter().find(|(p, _)| std::ptr::eq(*p, pool)) {
            return *slots;
        }
        let slots = [&pool.token_a, &pool.token_b].map(|t| {
            self.slot(
                (&t.symbol, &t.address),
                pool.chain,
                t.decimals,
                Cow::Borrowed(&t.price_usd),
            )
        });
        self.of_pool.push((pool, slots));
        slots
    }

    /// The slot of a wallet's token, `None` when it has no USD price.
    fn of_wallet(
        &mut self,
        catalog: &Catalog,
        chain: Chain,
        token: &'a HeldToken,
    ) -> Option<usize> {
        let key = (
            chain,
            token.address.as_str(),
            token.symbol.as_str(),
            token.decimals,
        );
        if let Some(slot) = self.of_wallet.get(&key) {
            return *slot;
        }
        let slot = usd_price(catalog, chain, &token.address).map(|price| {
            let named = (token.symbol.as_str(), token.address.as_str());
            self.slot(named, chain, token.decimals, Cow::Owned(price))
        });
        self.of_wallet.insert(key, slot);
        slot
    }
}

/// The catalog's pools by the names positions give them, and square-root prices by curve and
/// tick: a whale's positions share a few pools and ranges.
#[derive(Default)]
struct Pools<'a, 'p> {
    named: HashMap<(Chain, Protocol, &'p str), &'a Pool>,
    sqrt_prices: HashMap<(Curve, i32), U256>,
}

impl<'a, 'p> Pools<'a, 'p> {
    fn of(
        &mut self,
        position: &'p Position,
        catalog: &'a Catalog,
    ) -> Result<&'a Pool, ValuationError> {
        let key = (position.chain, position.protocol, position.pool.as_str());
        if let Some(pool) = self.named.get(&key) {
            return Ok(pool);
        }
        let pool = pool_of(position, catalog)?;
        self.named.insert(key, pool);
        Ok(pool)
    }

    fn bounds(
        &mut self,
        pool: &Pool,
        lower: i32,
        upper: i32,
    ) -> Result<(U256, U256), ValuationError> {
        let curve = pool.curve();
        let mut at = |tick: i32| -> Result<U256, ValuationError> {
            if let Some(sqrt) = self.sqrt_prices.get(&(curve, tick)) {
                return Ok(*sqrt);
            }
            let sqrt = curve.sqrt_price_at_tick(tick)?;
            self.sqrt_prices.insert((curve, tick), sqrt);
            Ok(sqrt)
        };
        Ok((at(lower)?, at(upper)?))
    }
}

/// `units` base units of a token with `decimals`, at `price` USD a whole token.
fn usd(units: U512, decimals: u8, price: &BigDecimal) -> BigDecimal {
    let int = BigInt::from_bytes_le(Sign::Plus, &units.to_le_bytes::<64>());
    BigDecimal::new(int, i64::from(decimals)) * price
}

/// The overview of `positions` (the caller's positions that are not closed) and the
/// `realized` totals of the closed ones. The positions' base units are summed per token and
/// valued once per token (cost basis per position, as recorded): the same exact figures as
/// valuing each position, in a fraction of the work.
pub fn portfolio(
    positions: &[Position],
    realized: &Realized,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<PortfolioView, ValuationError> {
    let mut tokens = Tokens::default();
    let mut pools = Pools::default();
    let mut cost_basis = BigDecimal::zero();
    // Wallet positions' withdrawn principal and collected fees (at their blocks' prices), and
    // the fees among them.
    let (mut taken_out, mut collected_fees) = (BigDecimal::zero(), BigDecimal::zero());
    let mut rewards = BigDecimal::zero();
    // Positions with frozen figures, valued one by one (none is open in practice).
    let mut frozen = Vec::new();
    let (mut unvalued, mut unpriced) = (0, 0);
    let mut unpriced_rewards: BTreeMap<(Chain, String), (String, BigDecimal)> = BTreeMap::new();
    for position in positions {
        if position.closing.is_some() {
            frozen.push(position);
            continue;
        }
        if let Some(holding) = &position.holding {
            let slots =
                [0, 1].map(|i| tokens.of_wallet(catalog, position.chain, &holding.tokens[i]));
            let (_, held) = holding_view(position, holding, catalog);
            let figures = (held.cost_basis, held.taken_out, held.fees_collected);
            let (
                [Some(slot0), Some(slot1)],
                (Some(basis), Some(out), Some(collected)),
                (Some(unclaimed), Some(farmed)),
            ) = (slots, figures, (held.fees_unclaimed, held.rewards))
            else {
                unpriced += 1;
                continue;
            };
            cost_basis += basis;
            // What left it (principal withdrawn, fees collected) is its PnL too; the collected
            // fees are fees earned.
            taken_out += out;
            collected_fees += collected;
            rewards += farmed;
            if let Some((token, amount)) = held.unpriced_reward {
                let key = (position.chain, token.address);
                let entry = unpriced_rewards
                    .entry(key)
                    .or_insert((token.symbol, 0.into()));
                entry.1 += amount;
            }
            for (i, slot) in [slot0, slot1].into_iter().enumerate() {
                let units = &mut tokens.slots[slot].units;
                // What its view holds (at its pool's synced state, as `GET /positions` values
                // it: decision 57), all that collect would pay with it; only its fee part is
                // fees.
                units.held.add(held.units[i]);
                units.fees.add(unclaimed[i]);
            }
            continue;
        }
        let pool = pools.of(position, catalog)?;
        if position.status == Status::Pending {
            // An offer: its amounts at today's prices, its cost basis their value.
            let offered = position.deposit.unwrap_or_else(nothing);
            let slots = tokens.of_pool(pool);
            for (slot, units) in slots.into_iter().zip([offered.a, offered.b]) {
                let sums = &mut tokens.slots[slot].units;
                sums.held.add(units);
                sums.offered.add(units);
            }
            continue;
        }
        let bounds = pools.bounds(pool, position.tick_lower, position.tick_upper);
        let held = match bounds.and_then(|b| pool.holdings_within(b, position.liquidity)) {
            Ok(held) => held,
            Err(ValuationError::Math(e)) => {
                tracing::warn!(position = %position.id, cause = %e, "position left out of the portfolio");
                unvalued += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let fees = pool.fees_owed(position);
        cost_basis += &position.cost_basis_usd;
        let slots = tokens.of_pool(pool);
        let deposit = position.deposit.map(|d| [d.a, d.b]);
        for (i, slot) in slots.into_iter().enumerate() {
            let sums = &mut tokens.slots[slot].units;
            let (principal, fee) = ([held.a, held.b][i], [fees.a, fees.b][i]);
            sums.held.add(principal);
            sums.held.add(fee);
            sums.fees.add(fee);
            // Positions without a recorded deposit have no HODL comparison: they add nothing.
            if let Some(deposit) = deposit {
                sums.principal_with_deposit.add(principal);
                sums.deposited.add(deposit[i]);
            }
        }
    }

    let mut total_value = BigDecimal::zero();
    let mut fees = BigDecimal::zero();
    let mut impermanent_loss = BigDecimal::zero();
    let mut by_token = ByToken::default();
    let mut by_chain: BTreeMap<String, BigDecimal> = BTreeMap::new();
    for token in &tokens.slots {
        let u = &token.units;
        let value_of = |units: Sum| usd(units.total(), token.decimals, &token.price);
        let value = value_of(u.held);
        fees += value_of(u.fees);
        impermanent_loss += value_of(u.principal_with_deposit) - value_of(u.deposited);
        cost_basis += value_of(u.offered);
        // An asset's value holds its uncollected fees too: the assets sum to the total.
        by_token.add(token.chain, token.address, token.symbol, value.clone());
        *by_chain.entry(token.chain.to_string()).or_default() += &value;
        total_value += value;
    }
    for position in frozen {
        if let Some(holding) = &position.holding {
            let (_, held) = holding_view(position, holding, catalog);
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
            // Token values in protocol order, each under its own token.
            let [token0, token1] = &holding.tokens;
            let chain = position.chain;
            by_token.add(chain, &token0.address, &token0.symbol, a);
            by_token.add(chain, &token1.address, &token1.symbol, b);
            continue;
        }
        let figures = match value_position(position, catalog, now) {
            Ok(Valued { figures, .. }) => figures,
            Err(ValuationError::Math(e)) => {
                tracing::warn!(position = %position.id, cause = %e, "position left out of the portfolio");
                unvalued += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let pool = pool_of(position, catalog)?;
        *by_chain.entry(position.chain.to_string()).or_default() += figures.value();
        total_value += figures.value();
        cost_basis += &figures.cost_basis;
        fees += figures.fees();
        impermanent_loss += figures.impermanent_loss().unwrap_or_default();
        for (token, value) in [
            (&pool.token_a, figures.principal_a + figures.fees_a),
            (&pool.token_b, figures.principal_b + figures.fees_b),
        ] {
            by_token.add(pool.chain, &token.address, &token.symbol, value);
        }
    }
    fees += collected_fees;
    let unrealized = &total_value + taken_out - &cost_basis + &rewards;
    let pnl = &unrealized + &realized.pnl_usd;
    let all_cost_basis = cost_basis + &realized.cost_basis_usd;
    Ok(PortfolioView {
        total_value_usd: Usd::new(total_value),
        total_pnl_percent: Percent::new(percent_of(&pnl, &all_cost_basis)),
        total_pnl_usd: Usd::new(pnl),
        unrealized_pnl_usd: Usd::new(unrealized),
        realized_pnl_usd: Usd::new(realized.pnl_usd.clone()),
        total_fees_earned_usd: Usd::new(fees),
        total_rewards_usd: Usd::new(rewards),
        total_impermanent_loss_usd: Usd::new(impermanent_loss),
        positions: positions.len() as u64,
        unvalued_positions: unvalued,
        unpriced_positions: unpriced,
        unpriced_rewards: unpriced_rewards
            .into_iter()
            .map(|((chain, address), (symbol, amount))| UnpricedRewardView {
                chain,
                symbol,
                address,
                amount: crate::domain::json::plain_exact(&amount),
            })
            .collect(),
        assets: by_token.views(),
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
        changes: None,
    })
}

/// Values by name (a token, a chain), descending (ties by name), with percentages in
/// hundredths that sum to exactly 100: each share is floored, and the hundredths left over go
/// to the largest remainders.
fn breakdown<K: Ord>(by_name: BTreeMap<K, BigDecimal>) -> Vec<(K, Usd, Percent)> {
    let mut assets: Vec<(K, BigDecimal)> = by_name.into_iter().collect();
    assets.sort_by(|(sa, va), (sb, vb)| vb.cmp(va).then_with(|| sa.cmp(sb)));
    // The values as integers at one scale: the shares are then exact integer quotients.
    let scale = assets
        .iter()
        .map(|(_, v)| v.as_bigint_and_exponent().1)
        .max()
        .unwrap_or(0);
    let units: Vec<BigInt> = assets
        .iter()
        .map(|(_, v)| v.with_scale(scale).as_bigint_and_exponent().0)
        .collect();
    let total: BigInt = units.iter().sum();
    if total.is_zero() {
        return assets
            .into_iter()
            .map(|(name, value)| (name, Usd::new(value), Percent::new(BigDecimal::zero())))
            .collect();
    }
    // Shares in hundredths of a percent: 10_000 in all, each floored (toward zero), with what
    // the floor left over (in units of 1/total).
    let shares: Vec<(BigInt, BigInt)> = units
        .iter()
        .map(|u| {
            let scaled = u * 10_000;
            (&scaled / &total, (&scaled % &total) * total.signum())
        })
        .collect();
    let mut floors: Vec<BigInt> = shares.iter().map(|(floor, _)| floor.clone()).collect();
    let assigned: BigInt = floors.iter().sum();
    let left_over = usize::try_from(BigInt::from(10_000) - assigned).unwrap_or(0);
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&i, &j| shares[j].1.cmp(&shares[i].1).then(i.cmp(&j)));
    for &i in order.iter().take(left_over) {
        floors[i] += 1;
    }
    assets
        .into_iter()
        .zip(floors)
        .map(|((name, value), hundredths)| {
            (
                name,
                Usd::new(value),
                Percent::new(BigDecimal::new(hundredths, 2)),
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
            serde_json::json!({"totalValueUsd": 0, "totalPnlUsd": 0, "totalPnlPercent": 0, "unrealizedPnlUsd": 0, "realizedPnlUsd": 0, "totalFeesEarnedUsd": 0, "totalRewardsUsd": 0, "totalImpermanentLossUsd": 0, "positions": 0, "unvaluedPositions": 0, "unpricedPositions": 0, "unpricedRewards": [], "assets": [], "chains": []})
        );
    }
}
