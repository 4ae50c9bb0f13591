//! Token USD prices from the pools themselves, by two rules. The route rule: the catalog's
//! pools carry prices out from the stablecoins, nearest first. The depth rule: a token only
//! discovered pools reach (pools a wallet holds a position on, which anyone can create at any
//! price) takes its price from the one holding the most USD of a token priced without it, and
//! only when that is at least the configured minimum; otherwise it has none. Neither depends
//! on who linked a wallet first or on the order pools are stored in.

use crate::domain::market::Cadence;
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::U256;
use crate::domain::model::Chain;
use bigdecimal::{BigDecimal, One};
use std::collections::{HashMap, HashSet};

/// Tokens taken to be worth exactly 1 USD (an assumption: decision 21).
pub const USD_STABLECOINS: &[&str] = &["USDC", "USDT"];

/// Significant digits kept of a derived USD price.
const USD_PRICE_DIGITS: u64 = 20;

/// A pool as the USD price rule sees it: its two tokens (chain-local identities) and the price of
/// tokenB per tokenA.
pub struct PricedPair<'a> {
    pub chain: Chain,
    pub token_a: (&'a str, &'a str),
    pub token_b: (&'a str, &'a str),
    pub price: &'a BigDecimal,
}

/// A token on a chain, by address (lower case on EVM).
pub type TokenKey = (Chain, String);

pub fn token_key(chain: Chain, address: &str) -> TokenKey {
    if chain.addresses_ignore_case() {
        (chain, address.to_ascii_lowercase())
    } else {
        (chain, address.to_string())
    }
}

/// USD prices of the tokens of `pairs`, by the documented rule: USDC and USDT are 1 USD; then, in
/// rounds, a token not yet priced takes its price from the first pool (catalog order) pairing
/// it with a token priced in an earlier round on the same chain. So a pool against a stablecoin
/// wins over a longer path (WBTC through WBTC/WETH × WETH/USDC only when no WBTC/USDC pool
/// exists). Tokens no path reaches are absent: the caller keeps the catalog's price for them.
pub fn derive_usd_prices(pairs: &[PricedPair<'_>]) -> HashMap<TokenKey, BigDecimal> {
    priced_through(pairs)
        .into_iter()
        .map(|(token, (usd, _))| (token, usd))
        .collect()
}

/// [`derive_usd_prices`], with the pool (index into `pairs`) each token took its price from
/// (`None` for a stablecoin).
fn priced_through(pairs: &[PricedPair<'_>]) -> HashMap<TokenKey, (BigDecimal, Option<usize>)> {
    let mut known: HashMap<TokenKey, (BigDecimal, Option<usize>)> = HashMap::new();
    for pair in pairs {
        for (symbol, address) in [pair.token_a, pair.token_b] {
            if USD_STABLECOINS.contains(&symbol) {
                known.insert(token_key(pair.chain, address), (BigDecimal::one(), None));
            }
        }
    }
    loop {
        let mut found: HashMap<TokenKey, (BigDecimal, Option<usize>)> = HashMap::new();
        for (i, pair) in pairs.iter().enumerate() {
            let a = token_key(pair.chain, pair.token_a.1);
            let b = token_key(pair.chain, pair.token_b.1);
            let derived = match (known.get(&a), known.get(&b)) {
                (None, Some((usd_b, _))) => Some((a, pair.price * usd_b)),
                (Some((usd_a, _)), None)
                    if pair.price.sign() == bigdecimal::num_bigint::Sign::Plus =>
                {
                    Some((b, usd_a / pair.price))
                }
                _ => None,
            };
            if let Some((token, usd)) = derived {
                found
                    .entry(token)
                    .or_insert_with(|| (usd.with_prec(USD_PRICE_DIGITS).normalized(), Some(i)));
            }
        }
        if found.is_empty() {
            return known;
        }
        known.extend(found);
    }
}

/// The pools (indexes into `pairs`) the route rule prices `targets` through: each token's pool,
/// then that pool's other token's, back to a stablecoin. A target no route reaches adds none.
pub fn route_pools(pairs: &[PricedPair<'_>], targets: &[TokenKey]) -> HashSet<usize> {
    let priced = priced_through(pairs);
    let mut pools = HashSet::new();
    let mut pending: Vec<TokenKey> = targets.to_vec();
    while let Some(token) = pending.pop() {
        let Some((_, Some(i))) = priced.get(&token) else {
            continue;
        };
        if pools.insert(*i) {
            let pair = &pairs[*i];
            for (_, address) in [pair.token_a, pair.token_b] {
                pending.push(token_key(pair.chain, address));
            }
        }
    }
    pools
}

/// One token of a discovered pool as the depth rule sees it.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub address: &'a str,
    pub decimals: u8,
    /// The pool's own balance of the token (base units); `None` when it was not read.
    pub balance: Option<U256>,
}

impl Side<'_> {
    /// The USD value of the pool's balance of this token at `usd` per whole token.
    fn depth(&self, usd: &BigDecimal) -> Option<BigDecimal> {
        Some(base_units_to_decimal(self.balance?, self.decimals) * usd)
    }
}

/// A discovered pool as the depth rule sees it: its tokens and the price of tokenB per tokenA.
pub struct DiscoveredPair<'a> {
    pub chain: Chain,
    pub pool: &'a str,
    pub token_a: Side<'a>,
    pub token_b: Side<'a>,
    pub price: &'a BigDecimal,
}

/// The best pool found so far for a token: its depth, then its address (the lower wins a tie,
/// so the answer never depends on the pools' order), and the price it gives.
struct Candidate {
    depth: BigDecimal,
    pool: String,
    usd: BigDecimal,
}

/// Adds to `known` the tokens of `pairs` it lacks that a deep enough discovered pool prices: in
/// rounds, each such token from the pool pairing it with a token known before the round that
/// holds the most USD of that token, at least `min_depth_usd`. A pool whose balances were not
/// read prices nothing.
pub fn price_by_depth(
    known: &mut HashMap<TokenKey, BigDecimal>,
    pairs: &[DiscoveredPair<'_>],
    min_depth_usd: u64,
) {
    let min_depth = BigDecimal::from(min_depth_usd);
    loop {
        let mut best: HashMap<TokenKey, Candidate> = HashMap::new();
        for pair in pairs {
            let [a, b] = [pair.token_a, pair.token_b].map(|s| token_key(pair.chain, s.address));
            for (deep, other, deep_is_a) in [(&pair.token_a, &b, true), (&pair.token_b, &a, false)]
            {
                let key = token_key(pair.chain, deep.address);
                let Some(usd) = known.get(&key) else {
                    continue;
                };
                let Some(depth) = deep.depth(usd) else {
                    continue;
                };
                if known.contains_key(other) || depth < min_depth {
                    continue;
                }
                let price = if deep_is_a {
                    if pair.price.sign() != bigdecimal::num_bigint::Sign::Plus {
                        continue;
                    }
                    usd / pair.price
                } else {
                    pair.price * usd
                };
                let pool = token_key(pair.chain, pair.pool).1;
                let wins = best.get(other).is_none_or(|held| {
                    depth > held.depth || (depth == held.depth && pool < held.pool)
                });
                if wins {
                    let usd = price.with_prec(USD_PRICE_DIGITS).normalized();
                    best.insert(other.clone(), Candidate { depth, pool, usd });
                }
            }
        }
        if best.is_empty() {
            return;
        }
        known.extend(best.into_iter().map(|(token, c)| (token, c.usd)));
    }
}

/// How often the sync reads a discovered pool, given the prices `known` after both rules and
/// the tokens `listed` the catalog's pools price alone: never when the catalog prices both its
/// tokens or neither token is priced (it can price nothing); hourly when its balances were read
/// and it holds less than `min_depth_usd` of each priced token (it prices nothing until it is
/// deeper); every sync otherwise.
pub fn cadence(
    pair: &DiscoveredPair<'_>,
    known: &HashMap<TokenKey, BigDecimal>,
    listed: &HashSet<TokenKey>,
    min_depth_usd: u64,
) -> Cadence {
    let sides = [pair.token_a, pair.token_b].map(|s| (token_key(pair.chain, s.address), s));
    if sides.iter().all(|(key, _)| listed.contains(key)) {
        return Cadence::Never;
    }
    let priced: Vec<_> = sides
        .iter()
        .filter_map(|(key, side)| Some((side, known.get(key)?)))
        .collect();
    if priced.is_empty() {
        return Cadence::Never;
    }
    let min_depth = BigDecimal::from(min_depth_usd);
    let depths: Option<Vec<BigDecimal>> = priced.iter().map(|(s, usd)| s.depth(usd)).collect();
    match depths {
        Some(depths) if depths.iter().all(|d| *d < min_depth) => Cadence::Hourly,
        _ => Cadence::EverySync,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(s: &str) -> BigDecimal {
        BigDecimal::from_str(s).unwrap()
    }
    #[test]
    fn stablecoin_pairs_win_over_longer_paths_and_unknown_tokens_stay_absent() {
        let (p30, p3000, p91000, p2) = (d("30"), d("3000"), d("91000"), d("2"));
        let pairs = [
            // WBTC/WETH first in catalog order, but WBTC/USDC reaches WBTC in round one.
            PricedPair {
                chain: Chain::Ethereum,
                token_a: ("WBTC", "0xB"),
                token_b: ("WETH", "0xE"),
                price: &p30,
            },
            PricedPair {
                chain: Chain::Ethereum,
                token_a: ("WETH", "0xe"),
                token_b: ("USDC", "0xU"),
                price: &p3000,
            },
            PricedPair {
                chain: Chain::Ethereum,
                token_a: ("WBTC", "0xb"),
                token_b: ("USDC", "0xu"),
                price: &p91000,
            },
            // Same address on another chain is another token; no stablecoin there.
            PricedPair {
                chain: Chain::Base,
                token_a: ("WETH", "0xE"),
                token_b: ("X", "0xX"),
                price: &p2,
            },
        ];
        let usd = derive_usd_prices(&pairs);
        assert_eq!(usd[&(Chain::Ethereum, "0xe".into())], d("3000"));
        assert_eq!(usd[&(Chain::Ethereum, "0xb".into())], d("91000"));
        assert_eq!(usd[&(Chain::Ethereum, "0xu".into())], d("1"));
        assert!(!usd.contains_key(&(Chain::Base, "0xe".into())));
    }

    #[test]
    fn the_quote_side_is_priced_by_division() {
        let p = d("0.0001");
        let pairs = [
            PricedPair {
                chain: Chain::Arbitrum,
                token_a: ("ARB", "0xa"),
                token_b: ("WETH", "0xw"),
                price: &p,
            },
            PricedPair {
                chain: Chain::Arbitrum,
                token_a: ("USDT", "0xt"),
                token_b: ("ARB", "0xa"),
                price: &d("3"),
            },
        ];
        let usd = derive_usd_prices(&pairs);
        // ARB: 1 USDT buys 3 ARB, so ARB is 1/3 USD, to 20 significant digits.
        assert_eq!(
            usd[&(Chain::Arbitrum, "0xa".into())],
            d("0.33333333333333333333")
        );
        assert_eq!(
            usd[&(Chain::Arbitrum, "0xw".into())],
            d("3333.3333333333333333")
        );
    }

    const WETH: &str = "0xweth";

    /// A discovered pool of `token` against WETH (tokenA `token`), at `price` WETH per token,
    /// holding `weth` whole WETH and 1,000 of the token (18 decimals each).
    fn pool<'a>(
        address: &'a str,
        token: &'a str,
        price: &'a BigDecimal,
        weth: u64,
    ) -> DiscoveredPair<'a> {
        let whole = |n: u64| Some(U256::from(n) * U256::from(10u64).pow(U256::from(18)));
        DiscoveredPair {
            chain: Chain::Ethereum,
            pool: address,
            token_a: Side {
                address: token,
                decimals: 18,
                balance: whole(1_000),
            },
            token_b: Side {
                address: WETH,
                decimals: 18,
                balance: whole(weth),
            },
            price,
        }
    }

    fn priced(pairs: &[DiscoveredPair<'_>], min: u64) -> HashMap<TokenKey, BigDecimal> {
        let mut known = HashMap::from([(token_key(Chain::Ethereum, WETH), d("3000"))]);
        price_by_depth(&mut known, pairs, min);
        known
    }

    fn own(known: &HashMap<TokenKey, BigDecimal>) -> Option<BigDecimal> {
        known.get(&token_key(Chain::Ethereum, "0xOWN")).cloned()
    }

    #[test]
    fn the_deepest_pool_prices_a_token_whatever_the_order() {
        let (fair, inflated) = (d("0.001"), d("1000"));
        // The fair pool holds 10 WETH (30,000 USD), the attacker's 5 WETH at 1000 WETH per OWN.
        let pairs = [
            pool("0xattacker", "0xOWN", &inflated, 5),
            pool("0xfair", "0xOWN", &fair, 10),
        ];
        assert_eq!(own(&priced(&pairs, 10_000)), Some(d("3")));
        let [first, second] = pairs;
        assert_eq!(own(&priced(&[second, first], 10_000)), Some(d("3")));
        // Known tokens keep their price: WETH is not repriced through OWN.
        let weth = token_key(Chain::Ethereum, WETH);
        assert_eq!(
            priced(&[pool("0xfair", "0xOWN", &fair, 10)], 10_000)[&weth],
            d("3000")
        );
    }

    #[test]
    fn a_shallow_or_unread_pool_prices_nothing() {
        let price = d("1000");
        // 3 WETH is 9,000 USD: under the minimum.
        assert_eq!(
            own(&priced(&[pool("0xa", "0xOWN", &price, 3)], 10_000)),
            None
        );
        assert_eq!(
            own(&priced(&[pool("0xa", "0xOWN", &price, 3)], 9_000)),
            Some(d("3000000"))
        );
        let mut unread = pool("0xa", "0xOWN", &price, 100);
        unread.token_b.balance = None;
        assert_eq!(own(&priced(&[unread], 0)), None);
        // Depth counts the known side only: OWN in the pool is worth nothing until priced.
        let mut one_sided = pool("0xa", "0xOWN", &price, 0);
        one_sided.token_a.balance = Some(U256::MAX);
        assert_eq!(own(&priced(&[one_sided], 1)), None);
    }

    #[test]
    fn equal_depths_go_to_the_lower_address_and_prices_carry_on_in_rounds() {
        let (low, high) = (d("2"), d("4"));
        let pairs = [
            pool("0xB", "0xOWN", &high, 10),
            pool("0xa", "0xOWN", &low, 10),
        ];
        assert_eq!(own(&priced(&pairs, 10_000)), Some(d("6000")));
        // OWN, once priced, prices a token paired only with it, if that pool is deep enough:
        // 10 OWN at 6,000 USD is 60,000 USD; NEXT is half an OWN.
        let half = d("0.5");
        let mut next = pool("0xc", "0xNEXT", &half, 0);
        let ten = U256::from(10u64).pow(U256::from(19));
        next.token_b = Side {
            address: "0xOWN",
            decimals: 18,
            balance: Some(ten),
        };
        let known = priced(&[pool("0xa", "0xOWN", &low, 10), next], 10_000);
        assert_eq!(known[&token_key(Chain::Ethereum, "0xnext")], d("3000"));
    }

    #[test]
    fn a_discovered_pool_is_read_only_as_far_as_it_can_price_a_token() {
        let price = d("2");
        let known = priced(&[], 10_000);
        let none = HashSet::new();
        let weth_only = HashSet::from([token_key(Chain::Ethereum, WETH)]);
        // 10 WETH deep: every sync; 3 WETH: hourly; balances never read: every sync, to read them.
        let deep = pool("0xa", "0xOWN", &price, 10);
        assert_eq!(
            cadence(&deep, &known, &weth_only, 10_000),
            Cadence::EverySync
        );
        let shallow = pool("0xa", "0xOWN", &price, 3);
        assert_eq!(
            cadence(&shallow, &known, &weth_only, 10_000),
            Cadence::Hourly
        );
        let mut unread = pool("0xa", "0xOWN", &price, 3);
        unread.token_b.balance = None;
        assert_eq!(
            cadence(&unread, &known, &weth_only, 10_000),
            Cadence::EverySync
        );
        // Neither token priced, or both priced by the catalog's pools: never.
        assert_eq!(
            cadence(&deep, &HashMap::new(), &none, 10_000),
            Cadence::Never
        );
        let mut both = known;
        both.insert(token_key(Chain::Ethereum, "0xOWN"), d("1"));
        let listed: HashSet<_> = both.keys().cloned().collect();
        assert_eq!(cadence(&deep, &both, &listed, 10_000), Cadence::Never);
        // OWN priced by this very pool: it keeps being read.
        assert_eq!(
            cadence(&deep, &both, &weth_only, 10_000),
            Cadence::EverySync
        );
    }
}
