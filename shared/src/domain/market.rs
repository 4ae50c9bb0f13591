//! A pool's market state as read from its chain (sqrt price, tick, liquidity, fee growth, the
//! ticks positions use), how old it may get, and the rule that prices tokens in USD from the
//! pools themselves.

use crate::domain::math::U256;
use crate::domain::model::{Chain, Protocol};
use bigdecimal::{BigDecimal, One};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// One tick's fee accounting, as the pool keeps it (Q128.128 on EVM, Q64.64 on Orca).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TickState {
    pub tick: i32,
    pub initialized: bool,
    #[serde(with = "integer_string")]
    pub fee_growth_outside0: U256,
    #[serde(with = "integer_string")]
    pub fee_growth_outside1: U256,
}

/// A pool's state, read whole at one block (EVM) or slot (Solana). Stored as JSON with every
/// big integer a decimal string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolState {
    #[serde(with = "integer_string")]
    pub sqrt_price: U256,
    pub tick: i32,
    #[serde(with = "integer_string")]
    pub liquidity: u128,
    #[serde(with = "integer_string")]
    pub fee_growth_global0: U256,
    #[serde(with = "integer_string")]
    pub fee_growth_global1: U256,
    /// The block number (EVM) or slot (Solana) the state was read at.
    pub height: u64,
    /// The hash of that block (EVM), so a later sync sees when a reorg replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_hash: Option<String>,
    pub observed_at: DateTime<Utc>,
    /// The ticks open positions use, in ascending order.
    pub ticks: Vec<TickState>,
}

/// How a state read from the chain may be stored over the stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Succession {
    /// The first state, or one after the stored state: stored only over a lower height.
    Next,
    /// Replaces a stored state the chain no longer has (a reorg replaced its block, or its
    /// height lies far beyond the chain's head), read at `height`: stored only over that very
    /// state, whatever the new height.
    Replaces { height: u64 },
}

/// Big integers as decimal strings: JSON numbers lose precision past 2^53 in most readers.
pub(crate) mod integer_string {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use std::fmt::Display;
    use std::str::FromStr;

    pub fn serialize<T: Display, S: Serializer>(
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(value)
    }

    pub fn deserialize<'de, T: FromStr, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<T, D::Error> {
        let text = <&str>::deserialize(deserializer)?;
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(D::Error::custom("expected a decimal integer string"));
        }
        text.parse()
            .map_err(|_| D::Error::custom("integer out of range"))
    }
}

/// Which pool a state belongs to: chain, protocol and the address as the catalog spells it
/// (EVM addresses compared in lower case).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolKey {
    pub chain: Chain,
    pub protocol: Protocol,
    pub address: String,
}

impl PoolKey {
    pub fn new(chain: Chain, protocol: Protocol, address: &str) -> PoolKey {
        let address = if chain.addresses_ignore_case() {
            address.to_ascii_lowercase()
        } else {
            address.to_string()
        };
        PoolKey {
            chain,
            protocol,
            address,
        }
    }
}

/// A block or slot field: absent for the other kind of chain, `null` until known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Height {
    Hidden,
    Shown(Option<u64>),
}

impl Height {
    /// `block` (EVM) and `slot` (Solana) of a chain, one shown and one hidden.
    pub fn pair(chain: Chain, height: Option<u64>) -> (Height, Height) {
        if chain == Chain::Solana {
            (Height::Hidden, Height::Shown(height))
        } else {
            (Height::Shown(height), Height::Hidden)
        }
    }

    pub fn is_hidden(&self) -> bool {
        *self == Height::Hidden
    }
}

impl Serialize for Height {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Height::Shown(Some(height)) => serializer.serialize_u64(*height),
            _ => serializer.serialize_none(),
        }
    }
}

/// What a sync did with one pool.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolSync {
    pub chain: Chain,
    pub pool: String,
    #[serde(skip_serializing_if = "Height::is_hidden")]
    pub block: Height,
    #[serde(skip_serializing_if = "Height::is_hidden")]
    pub slot: Height,
    /// The sqrt price read (integer string), when the pool was read.
    pub sqrt_price: Option<String>,
    pub tick: Option<i32>,
    /// tokenB per tokenA at the state read: the nearest double of the exact ratio.
    pub price: Option<f64>,
    pub updated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Pending positions this sync activated on the pool at the state read.
    pub activated: u32,
    /// Pending positions this sync closed: their offers fund no liquidity at the state read.
    pub unfunded: u32,
}

/// The answer of `POST /markets/sync` and of a scheduled sync.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncReport {
    pub pools: Vec<PoolSync>,
    pub updated: usize,
    pub not_updated: usize,
    /// The linked wallets' refresh that followed (where wallets are refreshed in process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wallets: Option<WalletsRefreshed>,
    /// What the chains did with the orders waiting on the pools updated (where any waited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orders: Option<OrdersSettled>,
}

/// The on-chain orders one sync settled: opens confirmed, withdraws confirmed, orders ended
/// (reverted or expired).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrdersSettled {
    pub opened: u32,
    pub withdrawn: u32,
    pub ended: u32,
}

/// What a refresh of every linked wallet did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletsRefreshed {
    pub refreshed: usize,
    pub failed: Vec<WalletFailure>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletFailure {
    pub chain: Chain,
    pub address: String,
    pub reason: String,
}

impl PoolSync {
    /// A pool's entry before anything is known of its state: not updated, no reason yet.
    pub fn unread(chain: Chain, pool: String, height: Option<u64>) -> PoolSync {
        let (block, slot) = Height::pair(chain, height);
        PoolSync {
            chain,
            pool,
            block,
            slot,
            sqrt_price: None,
            tick: None,
            price: None,
            updated: false,
            reason: None,
            activated: 0,
            unfunded: 0,
        }
    }
}

impl SyncReport {
    /// Every pool not updated, for one reason (nothing can be read).
    pub fn unsynced(pools: impl IntoIterator<Item = (Chain, String)>, reason: &str) -> SyncReport {
        SyncReport::new(
            pools
                .into_iter()
                .map(|(chain, pool)| PoolSync {
                    reason: Some(reason.to_string()),
                    ..PoolSync::unread(chain, pool, None)
                })
                .collect(),
        )
    }

    pub fn new(pools: Vec<PoolSync>) -> SyncReport {
        let updated = pools.iter().filter(|p| p.updated).count();
        SyncReport {
            not_updated: pools.len() - updated,
            updated,
            pools,
            wallets: None,
            orders: None,
        }
    }
}

/// When a pool's state stops being current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// A fixed snapshot (no chain is read): never stale.
    Snapshot,
    /// States read from the chains: stale once older than this, or when never read.
    Live { stale_after: Duration },
}

impl Freshness {
    pub fn live(stale_after: Duration) -> Freshness {
        Freshness::Live { stale_after }
    }

    pub fn is_stale(self, state: Option<&PoolState>, now: DateTime<Utc>) -> bool {
        match (self, state) {
            (Freshness::Snapshot, _) => false,
            (Freshness::Live { .. }, None) => true,
            (Freshness::Live { stale_after }, Some(state)) => {
                let age = now.signed_duration_since(state.observed_at);
                age.to_std().is_ok_and(|age| age > stale_after)
            }
        }
    }
}

/// Tokens taken to be worth exactly 1 USD (an assumption, documented in the README).
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

fn token_key(chain: Chain, address: &str) -> TokenKey {
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
    let mut known: HashMap<TokenKey, BigDecimal> = HashMap::new();
    for pair in pairs {
        for (symbol, address) in [pair.token_a, pair.token_b] {
            if USD_STABLECOINS.contains(&symbol) {
                known.insert(token_key(pair.chain, address), BigDecimal::one());
            }
        }
    }
    loop {
        let mut found: HashMap<TokenKey, BigDecimal> = HashMap::new();
        for pair in pairs {
            let a = token_key(pair.chain, pair.token_a.1);
            let b = token_key(pair.chain, pair.token_b.1);
            let derived = match (known.get(&a), known.get(&b)) {
                (None, Some(usd_b)) => Some((a, pair.price * usd_b)),
                (Some(usd_a), None) if pair.price.sign() == bigdecimal::num_bigint::Sign::Plus => {
                    Some((b, usd_a / pair.price))
                }
                _ => None,
            };
            if let Some((token, usd)) = derived {
                found
                    .entry(token)
                    .or_insert_with(|| usd.with_prec(USD_PRICE_DIGITS).normalized());
            }
        }
        if found.is_empty() {
            return known;
        }
        known.extend(found);
    }
}

/// Blocks built on top of a block before the service takes what it holds (the sync's states,
/// the wallets' reads, an order's receipt), per chain, unless `CONFIRMATION_BLOCKS` says
/// otherwise: 2 on Ethereum (a reorg deeper than that is rare), 1 on the others (their
/// sequencers or fast finality reorganize less). Above 0, Solana is read `finalized`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmations {
    per_chain: BTreeMap<Chain, u64>,
    otherwise: u64,
}

impl Default for Confirmations {
    fn default() -> Self {
        Confirmations {
            per_chain: BTreeMap::from([(Chain::Ethereum, 2)]),
            otherwise: 1,
        }
    }
}

impl From<u64> for Confirmations {
    /// The same on every chain (`--confirmations N`; 0 on a devnet).
    fn from(blocks: u64) -> Self {
        Confirmations {
            per_chain: BTreeMap::new(),
            otherwise: blocks,
        }
    }
}

impl Confirmations {
    pub fn of(&self, chain: Chain) -> u64 {
        self.per_chain
            .get(&chain)
            .copied()
            .unwrap_or(self.otherwise)
    }

    /// `N` (every chain), or `chain=N` pairs separated by commas over the defaults
    /// (`ethereum=3,base=2`).
    pub fn parse(text: &str) -> Result<Confirmations, String> {
        let blocks = |n: &str| {
            n.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n <= 64)
                .ok_or_else(|| format!("{n:?} is not a whole number of blocks from 0 to 64"))
        };
        if !text.contains('=') {
            return blocks(text).map(Confirmations::from);
        }
        let mut parsed = Confirmations::default();
        for pair in text.split(',') {
            let (chain, n) = pair
                .split_once('=')
                .ok_or_else(|| format!("{pair:?} is not chain=blocks"))?;
            let chain = chain
                .trim()
                .parse::<Chain>()
                .map_err(|()| format!("{chain:?} is not one of: {}", Chain::names()))?;
            parsed.per_chain.insert(chain, blocks(n)?);
        }
        Ok(parsed)
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

    #[test]
    fn staleness_follows_the_policy() {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap();
        let state = |age: i64| PoolState {
            sqrt_price: U256::from(1u8),
            tick: 0,
            liquidity: 0,
            fee_growth_global0: U256::ZERO,
            fee_growth_global1: U256::ZERO,
            height: 1,
            block_hash: None,
            observed_at: now - chrono::Duration::seconds(age),
            ticks: vec![],
        };
        let live = Freshness::Live {
            stale_after: Duration::from_secs(300),
        };
        assert!(!Freshness::Snapshot.is_stale(None, now));
        assert!(live.is_stale(None, now));
        assert!(!live.is_stale(Some(&state(300)), now));
        assert!(live.is_stale(Some(&state(301)), now));
        // A state stamped slightly in the future (clock skew) is current.
        assert!(!live.is_stale(Some(&state(-5)), now));
    }
}
