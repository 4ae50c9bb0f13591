//! The zap's swap to the range's ratio (issue 63): how much of an offer to sell on the
//! position's own pool so that what is left after the swap fits the range at the price the
//! swap leaves. Each candidate is judged by a quote of the swap itself (what the pool pays for
//! it and where its price ends, across every tick it crosses: QuoterV2's answer at the state the
//! order is built at), never by the spot price. Selling more of the token in excess only
//! lessens its excess (fewer of it left, more of the other, the price moving against it), so
//! the search bisects on which token is still in excess after the swap, and keeps the candidate
//! whose leftover funds the most liquidity.

use super::answers::{amount_pair, multicall_answers, small_word, whole, word};
use super::slippage::mint_minimums;
use crate::domain::catalog::Pool;
use crate::domain::math::uniswap::{liquidity_for_amount0, liquidity_for_amount1};
use crate::domain::math::{Curve, MathError, U256, U512};
use crate::domain::model::{AmountPair, ExpectedAmounts, ExpectedSwap};

/// One Uniswap v3 pool as its chain's quoter names it: its tokens (protocol order) and fee.
#[derive(Debug, Clone, Copy)]
pub struct QuotedPool<'a> {
    pub chain: crate::domain::model::Chain,
    pub quoter: &'a str,
    pub tokens: [&'a str; 2],
    pub fee: u32,
}

/// What swapping an amount in pays out and where it leaves the pool's price.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quote {
    pub amount_out: U256,
    pub sqrt_price_after: U256,
}

/// The most quotes a search asks for (the bracket halves with each: about 21 close it to 2^-20
/// of the token sold).
pub const MAX_QUOTES: usize = 24;

/// The liquidity `amounts` (token0, token1) fund in the range `[sqrt_a, sqrt_b)` at
/// `sqrt_price`, each side's (the range takes only token0 below it, only token1 above).
fn sides(amounts: [U256; 2], sqrt_price: U256, (a, b): (U256, U256)) -> [U256; 2] {
    let from0 = |lower: U256| liquidity_for_amount0(lower, b, amounts[0]).unwrap_or(U256::MAX);
    let from1 = |upper: U256| liquidity_for_amount1(a, upper, amounts[1]).unwrap_or(U256::MAX);
    if sqrt_price <= a {
        [from0(a), U256::MAX]
    } else if sqrt_price < b {
        [from0(sqrt_price), from1(sqrt_price)]
    } else {
        [U256::MAX, from1(b)]
    }
}

/// Which token `amounts` hold more of than the range takes at `sqrt_price` (0 or 1): the side
/// funding the larger liquidity. Out of range, the token the range does not take.
pub fn in_excess(amounts: [U256; 2], sqrt_price: U256, range: (U256, U256)) -> usize {
    let (a, b) = range;
    if sqrt_price <= a {
        return 1;
    }
    if sqrt_price >= b {
        return 0;
    }
    let [l0, l1] = sides(amounts, sqrt_price, range);
    usize::from(l1 > l0)
}

/// The liquidity `amounts` fund at `sqrt_price`: the smaller side's.
pub fn funded(amounts: [U256; 2], sqrt_price: U256, range: (U256, U256)) -> U256 {
    let [l0, l1] = sides(amounts, sqrt_price, range);
    l0.min(l1)
}

/// The offer after selling `x` of token `sell` for `quote`'s output.
pub fn after_swap(offer: [U256; 2], sell: usize, x: U256, quote: &Quote) -> [U256; 2] {
    let mut left = offer;
    left[sell] = offer[sell].saturating_sub(x);
    left[1 - sell] = offer[1 - sell].saturating_add(quote.amount_out);
    left
}

/// A candidate: the amount sold, its quote and the liquidity its leftover funds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub amount_in: U256,
    pub quote: Quote,
    pub liquidity: U256,
}

/// The search over the amount of `sell` to swap: `next` names the amount to quote, `record`
/// takes its quote, until `next` is `None`; `best` is then the answer.
#[derive(Debug, Clone)]
pub struct Search {
    offer: [U256; 2],
    range: (U256, U256),
    /// The token sold: the one in excess at the pool's price.
    pub sell: usize,
    /// Sold up to `low`, `sell` is still in excess; from `high` on, it no longer is.
    low: U256,
    high: U256,
    quotes: usize,
    best: Option<Candidate>,
}

impl Search {
    /// The search for `offer` (token0, token1 base units) on a pool at `sqrt_price`, for the
    /// range `(sqrt_a, sqrt_b)`. With nothing to sell the offer is taken as it is: `None`.
    pub fn new(offer: [U256; 2], sqrt_price: U256, range: (U256, U256)) -> Option<Search> {
        let sell = in_excess(offer, sqrt_price, range);
        (!offer[sell].is_zero()).then_some(Search {
            offer,
            range,
            sell,
            low: U256::ZERO,
            high: offer[sell],
            quotes: 0,
            best: None,
        })
    }

    /// The next amount to quote; `None` once the bracket is within 2^-20 of the token sold (a
    /// unit at least) or the quotes spent. The whole of the token first (a range the swap's
    /// price leaves takes all of it).
    pub fn next(&self) -> Option<U256> {
        if self.quotes >= MAX_QUOTES {
            return None;
        }
        if self.quotes == 0 {
            return Some(self.offer[self.sell]);
        }
        let close = (self.offer[self.sell] >> 20usize).max(U256::from(1u8));
        (self.high - self.low > close).then(|| self.low + (self.high - self.low) / U256::from(2u8))
    }

    /// Takes the quote of selling `amount_in`.
    pub fn record(&mut self, amount_in: U256, quote: Quote) {
        self.quotes += 1;
        let left = after_swap(self.offer, self.sell, amount_in, &quote);
        let liquidity = funded(left, quote.sqrt_price_after, self.range);
        let candidate = Candidate {
            amount_in,
            quote,
            liquidity,
        };
        if self.best.is_none_or(|b| liquidity > b.liquidity) {
            self.best = Some(candidate);
        }
        let still = in_excess(left, quote.sqrt_price_after, self.range) == self.sell;
        if still {
            // Selling it all leaves it in excess: nothing better past it.
            self.low = amount_in;
            if amount_in == self.offer[self.sell] {
                self.high = amount_in;
            }
        } else {
            self.high = amount_in;
        }
    }

    /// The candidate funding the most liquidity among those quoted.
    pub fn best(&self) -> Option<Candidate> {
        self.best
    }

    /// How many quotes it took.
    pub fn quotes(&self) -> usize {
        self.quotes
    }
}

/// How far a swap moves from the pool's price, in parts per million: its execution price
/// against the pool's price before it (the pool's fee set aside: that is paid, not lost to
/// impact), and the pool's price after it against before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Impact {
    pub execution_ppm: u64,
    pub move_ppm: u64,
}

impl Impact {
    /// The larger of the two: what a slippage tolerance is held against.
    pub fn worst_ppm(&self) -> u64 {
        self.execution_ppm.max(self.move_ppm)
    }
}

/// Parts per million as a percent with four decimals ("1.2345").
pub fn percent(ppm: u64) -> String {
    format!("{}.{:04}", ppm / 10_000, ppm % 10_000)
}

/// The impact of selling `amount_in` of token `sell` for `quote` on a pool at `sqrt_before`
/// whose fee is `fee` hundredths of a basis point.
pub fn impact(
    sqrt_before: U256,
    (sell, amount_in): (usize, U256),
    quote: &Quote,
    fee: u32,
) -> Impact {
    let million = U512::from(1_000_000u32);
    let price = U512::from(sqrt_before) * U512::from(sqrt_before);
    let q192 = U512::from(1u8) << 192;
    let after_fee = U512::from(amount_in) * U512::from(1_000_000u32.saturating_sub(fee));
    // What the input would buy at the price before, its fee taken.
    let ideal = if sell == 0 {
        after_fee * price / (million * q192)
    } else if price.is_zero() {
        U512::ZERO
    } else {
        after_fee * q192 / (million * price)
    };
    let out = U512::from(quote.amount_out);
    let execution = if ideal.is_zero() || out >= ideal {
        U512::ZERO
    } else {
        (ideal - out) * million / ideal
    };
    // (after / before)² from the square roots at 10^9, so no square overflows.
    let billion = U256::from(1_000_000_000u32);
    let ratio = quote.sqrt_price_after * billion / sqrt_before.max(U256::from(1u8));
    let squared = ratio * ratio;
    let whole = billion * billion;
    let moved = if squared > whole {
        squared - whole
    } else {
        whole - squared
    };
    let to_ppm = |v: U512| u64::try_from(v).unwrap_or(u64::MAX);
    Impact {
        execution_ppm: to_ppm(execution),
        move_ppm: u64::try_from(moved / U256::from(1_000_000_000_000u64)).unwrap_or(u64::MAX),
    }
}

/// A zap as built: the swap the search found and the mint of what it leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZapPlan {
    /// What the wallet offers (token0, token1), all of it paid into the router.
    pub offer: [U256; 2],
    pub sell: usize,
    /// 0 where the offer fits the range as it is: no swap.
    pub amount_in: U256,
    pub amount_out: U256,
    pub amount_out_minimum: U256,
    /// What the mint of the router's balances after the swap makes.
    pub liquidity: u128,
    /// What that mint takes (token0, token1), rounded up as the pool takes it.
    pub deposit: [U256; 2],
    /// The mint's minimums at the price the swap leaves, with the slippage allowed.
    pub minimums: [U256; 2],
    /// What the router sweeps back to the wallet.
    pub swept: [U256; 2],
    pub impact: Impact,
    /// How many quotes the search took.
    pub quotes: usize,
}

/// The zap of `offer` into `ticks` on a pool at `sqrt_price` (its fee `fee`), the swap being
/// the search's best (`None`: nothing to sell), with `bps` of slippage.
pub fn plan_zap(
    (offer, ticks): ([U256; 2], (i32, i32)),
    (sqrt_price, fee): (U256, u32),
    found: Option<(usize, Candidate, usize)>,
    bps: u32,
) -> Result<ZapPlan, MathError> {
    let curve = Curve::UniswapV3;
    let range = (
        curve.sqrt_price_at_tick(ticks.0)?,
        curve.sqrt_price_at_tick(ticks.1)?,
    );
    let (sell, amount_in, quote, quotes) = match found {
        Some((sell, best, quotes)) => (sell, best.amount_in, best.quote, quotes),
        None => {
            let unchanged = Quote {
                amount_out: U256::ZERO,
                sqrt_price_after: sqrt_price,
            };
            (0, U256::ZERO, unchanged, 0)
        }
    };
    let left = after_swap(offer, sell, amount_in, &quote);
    let after = quote.sqrt_price_after;
    let liquidity = u128::try_from(funded(left, after, range))
        .map_err(|_| MathError("the liquidity exceeds 128 bits"))?;
    let taken = curve.amounts_for_liquidity(after, range.0, range.1, liquidity, true)?;
    let deposit = [taken.amount0, taken.amount1];
    let keep = U256::from(10_000u32.saturating_sub(bps));
    Ok(ZapPlan {
        offer,
        sell,
        amount_in,
        amount_out: quote.amount_out,
        amount_out_minimum: quote.amount_out * keep / U256::from(10_000u32),
        liquidity,
        deposit,
        minimums: mint_minimums(after, ticks, left, bps)?,
        swept: [0, 1].map(|t| left[t].saturating_sub(deposit[t])),
        impact: if amount_in.is_zero() {
            Impact {
                execution_ppm: 0,
                move_ppm: 0,
            }
        } else {
            impact(sqrt_price, (sell, amount_in), &quote, fee)
        },
        quotes,
    })
}

/// What the router's answer to a zap says: what its swap paid (0 without one), the liquidity
/// its mint or increase made and what that took (token0, token1). The mint's answer is the
/// third from the end (two sweeps follow it), wrapped as `bytes`: a mint's `(tokenId,
/// liquidity, amount0, amount1)`, an increase's `(liquidity, amount0, amount1)`.
pub fn zap_parts(returned: &[u8], swapped: bool) -> Option<(U256, U256, [U256; 2])> {
    let answers = multicall_answers(returned)?;
    let out = if swapped {
        word(answers.first()?, 0)?
    } else {
        U256::ZERO
    };
    let wrapped = answers.get(answers.len().checked_sub(3)?)?;
    let len = small_word(wrapped, 32)?;
    let inner = wrapped.get(64..64usize.checked_add(len)?)?;
    let skip = match inner.len() {
        128 => 32,
        96 => 0,
        _ => return None,
    };
    let liquidity = word(inner, skip)?;
    Some((
        out,
        liquidity,
        [word(inner, skip + 32)?, word(inner, skip + 64)?],
    ))
}

/// A zap as built (`Known::zap`): what it takes from the wallet, what it sells and the least
/// its swap may pay, and the swap's impact at the state it was built at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZapTerms {
    pub offer: [U256; 2],
    pub sell: usize,
    pub amount_in: U256,
    pub amount_out_minimum: U256,
    pub impact: Impact,
}

/// What a zap's run says it does: the offer taken from the wallet, the swap, the mint's
/// deposit and liquidity, and what the router sweeps back (what the swap left beyond the
/// deposit).
pub fn zap_expected(
    pool: &Pool,
    zap: &ZapTerms,
    returned: &[u8],
) -> Result<ExpectedAmounts, String> {
    let swapped = !zap.amount_in.is_zero();
    let bad = || "the zap's simulation answered data that is not the router's".to_string();
    let (out, liquidity, deposit) = zap_parts(returned, swapped).ok_or_else(bad)?;
    let (sell, buy) = (zap.sell, 1 - zap.sell);
    let mut left = zap.offer;
    left[sell] = left[sell].saturating_sub(zap.amount_in);
    left[buy] = left[buy].saturating_add(out);
    let swept = [0, 1].map(|t| left[t].saturating_sub(deposit[t]));
    let side = if (sell == 0) == pool.orientation.base_is_token0 {
        "tokenA"
    } else {
        "tokenB"
    };
    let swap = swapped.then(|| ExpectedSwap {
        sell: side.into(),
        amount_in: whole(pool, sell, zap.amount_in),
        amount_out: whole(pool, buy, out),
        amount_out_minimum: whole(pool, buy, zap.amount_out_minimum),
        price_impact_percent: percent(zap.impact.execution_ppm),
        price_move_percent: percent(zap.impact.move_ppm),
    });
    let AmountPair { token_a, token_b } = amount_pair(pool, zap.offer);
    Ok(ExpectedAmounts {
        token_a,
        token_b,
        deposited: Some(amount_pair(pool, deposit)),
        leftover: Some(amount_pair(pool, swept)),
        swap,
        liquidity: Some(liquidity.to_string()),
        ..ExpectedAmounts::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::math::uniswap::{amount0_delta, amount1_delta};
    use crate::domain::math::Curve;

    /// A pool of one liquidity `l` at `sqrt_price` with no fee: selling token0 moves the price
    /// down to `l·p / (l + x·p)`, token1 up by `x / l` (Q96).
    fn quote(l: u128, sqrt_price: U256, sell: usize, x: U256) -> Quote {
        let q96 = U256::from(1u8) << 96;
        let liquidity = U256::from(l);
        let after = if sell == 0 {
            // L·√P / (L + x·√P), in Q96 and wide enough not to overflow.
            let wide = |v: U256| U512::from(v);
            let (l, p) = (wide(liquidity), wide(sqrt_price));
            let q = wide(q96);
            U256::from(l * p * q / (l * q + wide(x) * p))
        } else {
            sqrt_price + x * q96 / liquidity
        };
        let out = if sell == 0 {
            amount1_delta(after, sqrt_price, l, false).unwrap()
        } else {
            amount0_delta(sqrt_price, after, l, false).unwrap()
        };
        Quote {
            amount_out: out,
            sqrt_price_after: after,
        }
    }

    fn search(offer: [u128; 2]) -> (Search, [U256; 2], (U256, U256), u128) {
        let curve = Curve::UniswapV3;
        let price = curve.sqrt_price_at_tick(0).unwrap();
        let range = (
            curve.sqrt_price_at_tick(-600).unwrap(),
            curve.sqrt_price_at_tick(1200).unwrap(),
        );
        let offer = offer.map(U256::from);
        let l = 10u128.pow(24);
        let mut search = Search::new(offer, price, range).unwrap();
        while let Some(x) = search.next() {
            search.record(x, quote(l, price, search.sell, x));
        }
        (search, offer, range, l)
    }

    #[test]
    fn one_token_alone_is_swapped_to_the_ratio_the_swap_leaves() {
        for offer in [
            [10u128.pow(21), 0],
            [0, 10u128.pow(21)],
            [10u128.pow(21), 10u128.pow(18)],
        ] {
            let (search, offer, range, _) = search(offer);
            let best = search.best().unwrap();
            assert!(search.quotes() <= MAX_QUOTES);
            let left = after_swap(offer, search.sell, best.amount_in, &best.quote);
            // What the leftover funds uses nearly all of it: each side funds within 10^-5 of
            // the other at the price the swap leaves.
            let [l0, l1] = sides(left, best.quote.sqrt_price_after, range);
            let (low, high) = (l0.min(l1), l0.max(l1));
            assert!(
                (high - low) * U256::from(100_000u32) <= high,
                "{offer:?}: {l0} against {l1}"
            );
        }
    }

    #[test]
    fn a_plan_deposits_what_its_liquidity_takes_and_measures_the_impact() {
        let curve = Curve::UniswapV3;
        let price = curve.sqrt_price_at_tick(0).unwrap();
        let offer = [10u128.pow(21), 0].map(U256::from);
        let mut search = Search::new(
            offer,
            price,
            (
                curve.sqrt_price_at_tick(-600).unwrap(),
                curve.sqrt_price_at_tick(1200).unwrap(),
            ),
        )
        .unwrap();
        while let Some(x) = search.next() {
            search.record(x, quote(10u128.pow(24), price, search.sell, x));
        }
        let found = (search.sell, search.best().unwrap(), search.quotes());
        let plan = plan_zap((offer, (-600, 1200)), (price, 0), Some(found), 50).unwrap();
        assert_eq!(plan.amount_in, found.1.amount_in);
        // Left after the swap = deposit + swept, to the unit.
        let left = after_swap(offer, plan.sell, plan.amount_in, &found.1.quote);
        for (t, held) in left.into_iter().enumerate() {
            assert_eq!(plan.deposit[t] + plan.swept[t], held);
            assert!(plan.minimums[t] <= plan.deposit[t]);
        }
        assert_eq!(
            plan.amount_out_minimum,
            plan.amount_out * U256::from(9_950u32) / U256::from(10_000u32)
        );
        // Selling about 0.4 % of the pool's depth at no fee: a price move of about 0.08 %, an
        // execution about half of it.
        assert!(
            (500..1_200).contains(&plan.impact.move_ppm),
            "{:?}",
            plan.impact
        );
        assert!(
            plan.impact.execution_ppm < plan.impact.move_ppm,
            "{:?}",
            plan.impact
        );
        assert_eq!(percent(12_345), "1.2345");
        // Nothing to sell: no swap, no impact.
        let fits = plan_zap((offer, (-600, 1200)), (price, 3000), None, 50).unwrap();
        assert_eq!((fits.amount_in, fits.impact.worst_ppm()), (U256::ZERO, 0));
    }

    #[test]
    fn an_offer_that_fits_sells_next_to_nothing() {
        // The exact ratio of the range at the price: the bracket closes on a tiny amount.
        let (search, offer, _, _) = search([10u128.pow(21), 10u128.pow(21)]);
        let best = search.best().unwrap();
        assert!(best.amount_in < offer[search.sell], "{best:?}");
    }
}
