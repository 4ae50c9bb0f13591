//! The zap's swap to the range's ratio (issue 63): how much of an offer to sell on the
//! position's own pool so that what is left after the swap fits the range at the price the
//! swap leaves. Each candidate is judged by a quote of the swap itself (what the pool pays for
//! it and where its price ends, across every tick it crosses: QuoterV2's answer at the state the
//! order is built at), never by the spot price. Selling more of the token in excess only
//! lessens its excess (fewer of it left, more of the other, the price moving against it), so
//! the search bisects on which token is still in excess after the swap, and keeps the candidate
//! whose leftover funds the most liquidity.

use crate::domain::math::uniswap::{liquidity_for_amount0, liquidity_for_amount1};
use crate::domain::math::U256;

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
            let numerator = liquidity * q96 * sqrt_price / q96;
            numerator * q96 / (liquidity * q96 + x * sqrt_price)
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
    fn an_offer_that_fits_sells_next_to_nothing() {
        // The exact ratio of the range at the price: the bracket closes on a tiny amount.
        let (search, offer, _, _) = search([10u128.pow(21), 10u128.pow(21)]);
        let best = search.best().unwrap();
        assert!(best.amount_in < offer[search.sell], "{best:?}");
    }
}
