//! From the catalog and the math to API figures: sizing a new position from the offered amounts
//! and valuing a stored one at the pool's current state.

use crate::domain::catalog::{Catalog, Pool, Token};
use crate::domain::fee_ticks;
pub use crate::domain::figures::{percent_of, Figures};
use crate::domain::json::{plain_exact, Exact, Percent, Usd};
use crate::domain::math::fees::FeeAccounting;
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::{uniswap, Amounts, Curve, MathError, U256};
pub use crate::domain::model::TokenPair;
use crate::domain::model::{
    format_time, Position, PositionEntry, PositionView, Source, Status, TokenAmountView,
    UnvaluedView,
};
use bigdecimal::{BigDecimal, Zero};
use chrono::{DateTime, Utc};

/// Why a position could not be sized or valued.
#[derive(Debug, thiserror::Error)]
pub enum ValuationError {
    /// The request asks for something the pool cannot do: the message says what, for the client.
    #[error("{0}")]
    Rejected(String),
    /// A stored position names a pool the catalog no longer has.
    #[error("position {position}: pool {pool} is missing from the catalog")]
    PoolMissing { position: String, pool: String },
    /// The math failed on values the API itself produced: a bug, never the client's doing.
    #[error("math")]
    Math(#[from] MathError),
}

fn rejected(message: &str) -> ValuationError {
    ValuationError::Rejected(message.to_string())
}

/// What a create request resolves to: the snapped range, the liquidity, and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Deposit {
    pub tick_lower: i32,
    pub tick_upper: i32,
    pub liquidity: u128,
    pub amounts: TokenPair,
    pub value_usd: BigDecimal,
}

impl Pool {
    /// `(x, y)` when tokenA is token0, else `(y, x)`: the one swap between the API's order
    /// (tokenA, tokenB) and the protocol's (token0, token1), its own inverse.
    fn ordered(&self, x: U256, y: U256) -> (U256, U256) {
        if self.orientation.base_is_token0 {
            (x, y)
        } else {
            (y, x)
        }
    }

    pub(crate) fn to_protocol_order(&self, pair: TokenPair) -> Amounts {
        let (amount0, amount1) = self.ordered(pair.a, pair.b);
        Amounts { amount0, amount1 }
    }

    pub(crate) fn to_api_order(&self, amounts: Amounts) -> TokenPair {
        let (a, b) = self.ordered(amounts.amount0, amounts.amount1);
        TokenPair { a, b }
    }

    /// The lowest and highest ticks a position may use: the protocol's bounds on the spacing grid.
    pub(crate) fn usable_ticks(&self) -> (i32, i32) {
        let spacing = self.tick_spacing;
        let min = self.curve().min_tick().div_euclid(spacing) * spacing;
        let min = if min < self.curve().min_tick() {
            min + spacing
        } else {
            min
        };
        let max = self.curve().max_tick().div_euclid(spacing) * spacing;
        (min, max)
    }

    /// Snaps a human price range outward to the tick grid, within the protocol's bounds.
    pub fn snap_range(
        &self,
        lower: &BigDecimal,
        upper: &BigDecimal,
    ) -> Result<(i32, i32), ValuationError> {
        let o = &self.orientation;
        let curve = self.curve();
        // Raw prices rise with the human price only when tokenA is token0.
        let (raw_low, raw_high) = if o.base_is_token0 {
            (o.sqrt_price_of(lower), o.sqrt_price_of(upper))
        } else {
            (o.sqrt_price_of(upper), o.sqrt_price_of(lower))
        };
        let at = |t| curve.sqrt_price_at_tick(t);
        if raw_high < at(curve.min_tick())? || raw_low > at(curve.max_tick())? {
            return Err(rejected(
                "price range lies outside the prices this pool supports",
            ));
        }
        let spacing = self.tick_spacing;
        let tick_low = curve.tick_at_or_below(raw_low);
        let mut tick_high = curve.tick_at_or_below(raw_high);
        if curve.sqrt_price_at_tick(tick_high).ok() != Some(raw_high) {
            tick_high += 1;
        }
        let (min, max) = self.usable_ticks();
        let mut snapped_low = (tick_low.div_euclid(spacing) * spacing).clamp(min, max);
        let mut snapped_high = (-((-tick_high).div_euclid(spacing)) * spacing).clamp(min, max);
        // A single price exactly on a grid tick takes the one spacing above it (below it at the
        // top of the grid).
        if snapped_low == snapped_high && raw_low == raw_high && min < max {
            if snapped_high + spacing <= max {
                snapped_high += spacing;
            } else {
                snapped_low -= spacing;
            }
        }
        // Outward snapping keeps a range non-empty unless both ends lie past the same bound of
        // the usable ticks (the protocol's bounds on the spacing grid).
        if snapped_low >= snapped_high {
            return Err(rejected(
                "price range lies outside the pool's usable ticks: no position can be opened \
                 there",
            ));
        }
        Ok((snapped_low, snapped_high))
    }

    fn sqrt_bounds(
        &self,
        tick_lower: i32,
        tick_upper: i32,
    ) -> Result<(U256, U256), ValuationError> {
        let curve = self.curve();
        let at = |t| curve.sqrt_price_at_tick(t);
        Ok((at(tick_lower)?, at(tick_upper)?))
    }

    /// The largest liquidity `offered` funds in the range at the current price, and what it
    /// holds rounded up as a mint charges: never more than offered.
    pub fn size_deposit(
        &self,
        tick_lower: i32,
        tick_upper: i32,
        offered: TokenPair,
    ) -> Result<Deposit, ValuationError> {
        let curve = self.curve();
        let (sqrt_a, sqrt_b) = self.sqrt_bounds(tick_lower, tick_upper)?;
        let offered_raw = self.to_protocol_order(offered);
        let mut liquidity = curve
            .liquidity_for_amounts(self.sqrt_price, sqrt_a, sqrt_b, offered_raw)
            .map_err(|_| rejected("amounts are too large for this price range"))?;
        if curve == Curve::UniswapV3
            && liquidity > uniswap::max_liquidity_per_tick(self.tick_spacing)
        {
            return Err(rejected(
                "amounts exceed the pool's liquidity limit for one position",
            ));
        }
        // Rounding up may ask one unit more than offered; shrink until the mint fits.
        loop {
            if liquidity == 0 {
                return Err(rejected(
                    "amounts fund no liquidity in this range at the current price: a range above \
                     the current price takes tokenA, one below it takes tokenB",
                ));
            }
            let needed =
                curve.amounts_for_liquidity(self.sqrt_price, sqrt_a, sqrt_b, liquidity, true)?;
            if needed.amount0 <= offered_raw.amount0 && needed.amount1 <= offered_raw.amount1 {
                // At either end of the range the position holds one token only, the most of it
                // it can ever hold: that amount must fit the protocol's amount type, or the
                // position could not be valued nor withdrawn once the price gets there.
                for end in [sqrt_a, sqrt_b] {
                    curve
                        .amounts_for_liquidity(end, sqrt_a, sqrt_b, liquidity, true)
                        .map_err(|_| {
                            rejected(
                                "amounts are too large for this price range: at one end of the \
                                 range the position would hold more of one token than the \
                                 protocol's amount type can",
                            )
                        })?;
                }
                let amounts = self.to_api_order(needed);
                let value_usd = self.value_of(&amounts);
                return Ok(Deposit {
                    tick_lower,
                    tick_upper,
                    liquidity,
                    amounts,
                    value_usd,
                });
            }
            liquidity -= 1;
        }
    }

    /// What burning `liquidity` in the range pays at the pool's current price: rounded down.
    pub fn withdrawal(
        &self,
        tick_lower: i32,
        tick_upper: i32,
        liquidity: u128,
    ) -> Result<TokenPair, ValuationError> {
        self.amounts_within(self.sqrt_bounds(tick_lower, tick_upper)?, liquidity, false)
    }

    /// What `liquidity` holds at the current price between the square-root prices `bounds`.
    fn amounts_within(
        &self,
        (sqrt_a, sqrt_b): (U256, U256),
        liquidity: u128,
        round_up: bool,
    ) -> Result<TokenPair, ValuationError> {
        let curve = self.curve();
        let amounts =
            curve.amounts_for_liquidity(self.sqrt_price, sqrt_a, sqrt_b, liquidity, round_up)?;
        Ok(self.to_api_order(amounts))
    }

    /// [`Self::holdings`] of a range given by its bounds' square-root prices.
    pub fn holdings_within(
        &self,
        bounds: (U256, U256),
        liquidity: u128,
    ) -> Result<TokenPair, ValuationError> {
        self.amounts_within(bounds, liquidity, true)
    }

    /// What `liquidity` in the range holds at the pool's current price: rounded up, as a mint
    /// charges.
    pub fn holdings(
        &self,
        tick_lower: i32,
        tick_upper: i32,
        liquidity: u128,
    ) -> Result<TokenPair, ValuationError> {
        self.amounts_within(self.sqrt_bounds(tick_lower, tick_upper)?, liquidity, true)
    }

    pub fn fee_accounting(&self) -> FeeAccounting {
        FeeAccounting::of(self.curve())
    }

    /// Fee growth inside `[lower, upper)` per token (token0, token1) at the pool's synced state;
    /// `None` before the pool has one or while the ticks have no records.
    pub fn fee_growth_inside(&self, tick_lower: i32, tick_upper: i32) -> Option<[U256; 2]> {
        let state = self.state.as_ref()?;
        fee_ticks::growth_inside(
            self.fee_accounting(),
            state,
            &self.fee_ticks,
            tick_lower,
            tick_upper,
        )
    }

    /// The fees `position` is owed at the pool's state, as the protocol computes them; zero
    /// without a checkpoint, a current fee growth, or with a state older than the checkpoint.
    pub fn fees_owed(&self, position: &Position) -> TokenPair {
        let current = self.state.as_ref().map(|s| s.height);
        let checkpoint = position
            .fee_checkpoint
            .filter(|c| current.is_some_and(|height| height >= c.height));
        let growth = self.fee_growth_inside(position.tick_lower, position.tick_upper);
        let (Some(checkpoint), Some(growth)) = (checkpoint, growth) else {
            return TokenPair {
                a: U256::ZERO,
                b: U256::ZERO,
            };
        };
        let accounting = self.fee_accounting();
        let [amount0, amount1] = [0, 1].map(|i| {
            U256::from(accounting.fees_owed(position.liquidity, checkpoint.growth[i], growth[i]))
        });
        self.to_api_order(Amounts { amount0, amount1 })
    }

    pub fn value_of(&self, amounts: &TokenPair) -> BigDecimal {
        token_value(&self.token_a, amounts.a) + token_value(&self.token_b, amounts.b)
    }

    /// The human price of a tick (tokenB per tokenA).
    pub fn price_at_tick(&self, tick: i32) -> f64 {
        let sqrt = self.curve().sqrt_price_at_tick(tick).unwrap_or_default();
        self.orientation.human_price_of(sqrt)
    }
}

pub(crate) fn token_value(token: &Token, amount: U256) -> BigDecimal {
    base_units_to_decimal(amount, token.decimals) * &token.price_usd
}

/// A position valued at its pool's current state, with the exact figures the portfolio sums.
#[derive(Debug, Clone)]
pub struct Valued {
    pub view: PositionView,
    pub figures: Figures,
}

pub(crate) fn pool_of<'a>(
    position: &Position,
    catalog: &'a Catalog,
) -> Result<&'a Pool, ValuationError> {
    catalog
        .find(position.chain, position.protocol, &position.pool)
        .ok_or_else(|| ValuationError::PoolMissing {
            position: position.id.clone(),
            pool: position.pool.clone(),
        })
}

pub(crate) fn nothing() -> TokenPair {
    TokenPair {
        a: U256::ZERO,
        b: U256::ZERO,
    }
}

/// [`value_position`]'s view, or, where the protocol's math cannot value the position at the
/// pool's current state, its stored state with the reason: one position never breaks a list.
pub fn position_entry(
    position: &Position,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<PositionEntry, ValuationError> {
    match value_position(position, catalog, now) {
        Ok(valued) => Ok(PositionEntry::Valued(Box::new(valued.view))),
        Err(ValuationError::Math(e)) => {
            tracing::warn!(position = %position.id, cause = %e, "position not valued");
            Ok(PositionEntry::Unvalued(UnvaluedView {
                id: position.id.clone(),
                source: Source::Simulated,
                chain: position.chain,
                protocol: position.protocol,
                pool: position.pool.clone(),
                status: position.status,
                tick_lower: position.tick_lower,
                tick_upper: position.tick_upper,
                liquidity: (position.status != Status::Pending)
                    .then(|| position.liquidity.to_string()),
                created_at: format_time(&position.created_at),
                valuation_error: format!(
                    "the position cannot be valued at the pool's current price ({e}): its \
                     other figures return when the price does"
                ),
            }))
        }
        Err(e) => Err(e),
    }
}

/// Values a stored position: an open one at its pool's current state, a closed one at its
/// frozen close. A pool missing from the catalog is a server fault: positions are only opened
/// on catalog pools.
pub fn value_position(
    position: &Position,
    catalog: &Catalog,
    now: DateTime<Utc>,
) -> Result<Valued, ValuationError> {
    let pool = pool_of(position, catalog)?;
    let stale = Some(catalog.freshness.is_stale(pool.state.as_ref(), now));
    let (held, fees, figures, pnl, price, live, until) = match &position.closing {
        // An offer: its amounts at today's prices, nothing invested yet (PnL 0).
        None if position.status == Status::Pending => {
            let offered = position.deposit.unwrap_or_else(nothing);
            let figures = Figures {
                principal_a: token_value(&pool.token_a, offered.a),
                principal_b: token_value(&pool.token_b, offered.b),
                fees_a: BigDecimal::zero(),
                fees_b: BigDecimal::zero(),
                hodl: None,
                cost_basis: pool.value_of(&offered),
            };
            (
                offered,
                nothing(),
                figures,
                BigDecimal::zero(),
                &pool.current_price,
                (None, stale),
                now,
            )
        }
        None => {
            let held =
                pool.holdings(position.tick_lower, position.tick_upper, position.liquidity)?;
            let fees = pool.fees_owed(position);
            let figures = Figures {
                principal_a: token_value(&pool.token_a, held.a),
                principal_b: token_value(&pool.token_b, held.b),
                fees_a: token_value(&pool.token_a, fees.a),
                fees_b: token_value(&pool.token_b, fees.b),
                hodl: position.deposit.as_ref().map(|d| pool.value_of(d)),
                cost_basis: position.cost_basis_usd.clone(),
            };
            let live = (
                Some(pool.in_range(position.tick_lower, position.tick_upper)),
                stale,
            );
            let pnl = figures.pnl();
            (held, fees, figures, pnl, &pool.current_price, live, now)
        }
        Some(closing) => {
            let figures = Figures {
                principal_a: closing.value_a.clone(),
                principal_b: closing.value_b.clone(),
                fees_a: closing.fees_usd_a.clone(),
                fees_b: closing.fees_usd_b.clone(),
                hodl: closing.hodl_usd.clone(),
                // The cost basis the close realized: 0 for an offer that never held liquidity.
                cost_basis: closing.cost_basis_usd.clone(),
            };
            (
                closing.withdrawn,
                closing.fees,
                figures,
                closing.pnl_usd.clone(),
                &closing.price,
                (None, None),
                closing.closed_at,
            )
        }
    };
    let token_view =
        |token: &Token, amount: U256, value: &BigDecimal, fee: U256, fee_usd: &BigDecimal| {
            TokenAmountView {
                symbol: token.symbol.clone(),
                address: token.address.clone(),
                amount: plain_exact(&base_units_to_decimal(amount, token.decimals)),
                value_usd: Usd::new(value.clone()),
                fees_earned: plain_exact(&base_units_to_decimal(fee, token.decimals)),
                fees_earned_usd: Usd::new(fee_usd.clone()),
            }
        };
    let (at_lower, at_upper) = (
        pool.price_at_tick(position.tick_lower),
        pool.price_at_tick(position.tick_upper),
    );
    let age_millis = until.timestamp_millis() - position.created_at.timestamp_millis();
    let view = PositionView {
        id: position.id.clone(),
        source: Source::Simulated,
        chain: position.chain,
        protocol: position.protocol,
        pool: pool.id.clone(),
        token_a: token_view(
            &pool.token_a,
            held.a,
            &figures.principal_a,
            fees.a,
            &figures.fees_a,
        ),
        token_b: token_view(
            &pool.token_b,
            held.b,
            &figures.principal_b,
            fees.b,
            &figures.fees_b,
        ),
        status: position.status,
        tick_lower: position.tick_lower,
        tick_upper: position.tick_upper,
        liquidity: (position.status != Status::Pending).then(|| position.liquidity.to_string()),
        in_range: live.0,
        stale: live.1,
        // The lower tick is the higher human price when tokenA is token1.
        price_lower: at_lower.min(at_upper),
        price_upper: at_lower.max(at_upper),
        current_price: Exact(price.clone()),
        fees_earned_usd: Usd::new(figures.fees()),
        cost_basis_usd: Usd::new(figures.cost_basis.clone()),
        value_usd: Usd::new(figures.value()),
        hodl_value_usd: figures.hodl.clone().map(Usd::new),
        impermanent_loss_usd: figures.impermanent_loss().map(Usd::new),
        pnl_percent: Percent::new(percent_of(&pnl, &figures.cost_basis)),
        pnl_usd: Usd::new(pnl),
        fee_apr_percent: figures.fee_apr(age_millis).map(Percent::new),
        created_at: format_time(&position.created_at),
        closed_at: position.closing.as_ref().map(|c| format_time(&c.closed_at)),
        close_reason: position.closing.as_ref().and_then(|c| c.reason.clone()),
        order: None,
    };
    Ok(Valued { view, figures })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::{Chain, Protocol};
    use std::str::FromStr;

    fn d(s: &str) -> BigDecimal {
        BigDecimal::from_str(s).unwrap()
    }

    fn pool(chain: Chain, protocol: Protocol, id: &str) -> Pool {
        Catalog::embedded()
            .find(chain, protocol, id)
            .unwrap()
            .clone()
    }

    fn eth_usdc() -> Pool {
        pool(
            Chain::Ethereum,
            Protocol::UniswapV3,
            "0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640",
        )
    }

    fn units(whole: u64, decimals: u32) -> U256 {
        U256::from(whole) * U256::from(10u8).pow(U256::from(decimals))
    }

    #[test]
    fn range_snaps_outward_to_the_spacing_grid() {
        let pool = eth_usdc();
        let (low, high) = pool.snap_range(&d("2500"), &d("3500")).unwrap();
        assert_eq!(low % 10, 0);
        assert_eq!(high % 10, 0);
        assert!(pool.price_at_tick(high) <= 2500.0 && pool.price_at_tick(low) >= 3500.0);
        // One tick spacing narrower on either side would no longer contain the request.
        assert!(pool.price_at_tick(high - 10) > 2500.0);
        assert!(pool.price_at_tick(low + 10) < 3500.0);
    }

    #[test]
    fn extreme_ranges_clamp_to_the_protocol_bounds() {
        let pool = eth_usdc();
        // WETH priced in USDC: 1e-60 is above the highest raw price, 1e60 below the lowest.
        let (low, high) = pool.snap_range(&d("1e-60"), &d("1e60")).unwrap();
        assert_eq!((low, high), (-887270, 887270));
        assert!(pool.snap_range(&d("1e60"), &d("1e61")).is_err());
        assert!(pool.snap_range(&d("1e-61"), &d("1e-60")).is_err());
    }

    #[test]
    fn in_range_deposit_never_exceeds_the_offer() {
        let pool = eth_usdc();
        let (low, high) = pool.snap_range(&d("2500"), &d("3500")).unwrap();
        let offered = TokenPair {
            a: units(1, 18),
            b: units(3000, 6),
        };
        let deposit = pool.size_deposit(low, high, offered).unwrap();
        assert!(deposit.amounts.a <= offered.a && deposit.amounts.b <= offered.b);
        // The binding side is used (almost) entirely.
        let used_a = deposit.amounts.a * U256::from(1000u32) / offered.a;
        let used_b = deposit.amounts.b * U256::from(1000u32) / offered.b;
        assert!(used_a >= U256::from(999u32) || used_b >= U256::from(999u32));
        assert!(deposit.value_usd > d("0") && deposit.value_usd <= d("6000"));
    }

    #[test]
    fn ranges_off_the_current_price_hold_one_token() {
        let pool = eth_usdc();
        let offered = TokenPair {
            a: units(1, 18),
            b: units(3000, 6),
        };
        let (low, high) = pool.snap_range(&d("3500"), &d("4000")).unwrap();
        let above = pool.size_deposit(low, high, offered).unwrap();
        assert!(above.amounts.a > U256::ZERO && above.amounts.b.is_zero());
        let (low, high) = pool.snap_range(&d("2000"), &d("2500")).unwrap();
        let below = pool.size_deposit(low, high, offered).unwrap();
        assert!(below.amounts.a.is_zero() && below.amounts.b > U256::ZERO);
        let only_b = TokenPair {
            a: U256::ZERO,
            b: units(3000, 6),
        };
        let (low, high) = pool.snap_range(&d("3500"), &d("4000")).unwrap();
        assert!(matches!(
            pool.size_deposit(low, high, only_b),
            Err(ValuationError::Rejected(_))
        ));
    }

    #[test]
    fn orca_pool_sizes_within_u64() {
        let pool = pool(
            Chain::Solana,
            Protocol::OrcaWhirlpools,
            "Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE",
        );
        let (low, high) = pool.snap_range(&d("100"), &d("200")).unwrap();
        assert_eq!((low % 4, high % 4), (0, 0));
        let offered = TokenPair {
            a: units(10, 9),
            b: units(1400, 6),
        };
        let deposit = pool.size_deposit(low, high, offered).unwrap();
        assert!(deposit.amounts.a <= offered.a && deposit.amounts.b <= offered.b);
        let held = pool.holdings(low, high, deposit.liquidity).unwrap();
        assert_eq!(held, deposit.amounts);
    }
}
