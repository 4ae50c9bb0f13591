//! A pool's market state as read from its chain (sqrt price, tick, liquidity, fee growth, the
//! ticks positions use, a discovered pool's balances), how old it may get, and how deep a
//! discovered pool must be to price a token.

use crate::domain::math::U256;
use crate::domain::model::{Chain, Protocol};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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
    /// The pool's own balances of its tokens at that block: how deep a discovered pool is
    /// (read for discovered pools only; `None` where a token would not answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balances: Option<Balances>,
    /// Aerodrome Slipstream: what its pool says of itself beside v3's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slipstream: Option<SlipstreamState>,
}

/// An Aerodrome Slipstream pool's own figures at a block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlipstreamState {
    /// Its swap fee (`fee()`, hundredths of a basis point): dynamic, so read with the state
    /// rather than kept in the catalog.
    pub fee: u32,
    /// Its gauge (`gauge()`, EIP-55; `None` where none was created): where its positions are
    /// staked for AERO, whose logs the scan follows.
    pub gauge: Option<String>,
}

/// What a pool's token contracts say it holds (`balanceOf(pool)`), in base units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Balances {
    #[serde(with = "integer_string")]
    pub token0: U256,
    #[serde(with = "integer_string")]
    pub token1: U256,
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
    /// What each EVM chain's scan of its position managers' events did (where chains are
    /// followed in process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scans: Option<Vec<ChainScan>>,
}

/// What one sync's scan of a chain's position-manager events did (decision 45).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainScan {
    pub chain: Chain,
    /// The blocks scanned: `from` through `through` (none when `through < from`).
    pub from: u64,
    pub through: u64,
    /// The confirmed block it scans towards: a gap longer than one scan takes is caught up
    /// over the next syncs, in order.
    pub head: u64,
    /// The logs found of linked wallets and of their positions.
    pub events: usize,
    /// The wallets they touched, read whole.
    pub touched: usize,
    /// Why the scan went back over blocks it had scanned (a reorg replaced its last block),
    /// or why every wallet of the chain is read whole (its first scan).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rescanned: Option<String>,
    /// Why it stopped before `head` otherwise (it goes on from `through` at the next sync).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// The on-chain orders one sync settled: opens confirmed, withdraws confirmed, orders ended
/// (reverted or expired).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrdersSettled {
    pub opened: u32,
    pub withdrawn: u32,
    pub ended: u32,
    /// Collects, increases and decreases confirmed.
    pub applied: u32,
}

/// What a refresh of every linked wallet did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletsRefreshed {
    pub refreshed: usize,
    pub failed: Vec<WalletFailure>,
    /// Positions a reconciliation found the events had not kept as the chain holds them, and
    /// corrected.
    pub corrected: usize,
    /// Wallets read again because their last read or a position's history stopped part way
    /// (decision 58), beside those an event touched.
    pub retried: usize,
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
            scans: None,
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

/// How often the sync reads a pool: a catalog pool every time; a discovered one only as far as
/// it can price a token ([`crate::domain::pricing::cadence`]), so that pools anyone can put in
/// a wallet cost the service nothing while they can price nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cadence {
    EverySync,
    /// A discovered pool too shallow to price a token: read again once its state is an hour old
    /// (it may have grown deeper).
    Hourly,
    /// A discovered pool that can price nothing: both its tokens priced by the catalog's pools,
    /// or neither priced at all.
    Never,
}

impl Cadence {
    /// How old a shallow discovered pool's state gets before the sync reads it again.
    pub const RECHECK: Duration = Duration::from_secs(3600);

    /// Whether a sync at `now` reads a pool last read as `state`.
    pub fn due(self, state: Option<&PoolState>, now: DateTime<Utc>) -> bool {
        match self {
            Cadence::EverySync => true,
            Cadence::Never => false,
            Cadence::Hourly => state.is_none_or(|s| {
                let age = now.signed_duration_since(s.observed_at);
                age.to_std().is_ok_and(|age| age >= Cadence::RECHECK)
            }),
        }
    }
}

/// The least USD value a discovered pool must hold of a token priced without it before it
/// prices its other token, unless `MIN_DISCOVERED_DEPTH_USD` says otherwise.
pub const DEFAULT_MIN_DISCOVERED_DEPTH_USD: u64 = 10_000;

/// How the market's catalog is built: when its states stop being current, and how deep a
/// discovered pool must be to price a token ([`crate::domain::pricing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarketRules {
    pub freshness: Freshness,
    /// Whole USD.
    pub min_discovered_depth_usd: u64,
}

impl From<Freshness> for MarketRules {
    /// `freshness` with the default depth.
    fn from(freshness: Freshness) -> Self {
        MarketRules {
            freshness,
            min_discovered_depth_usd: DEFAULT_MIN_DISCOVERED_DEPTH_USD,
        }
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
        parsed.per_chain.extend(chain_pairs(text, blocks)?);
        Ok(parsed)
    }
}

/// `chain=N` pairs separated by commas, each `N` checked by `blocks`.
fn chain_pairs(
    text: &str,
    blocks: impl Fn(&str) -> Result<u64, String>,
) -> Result<BTreeMap<Chain, u64>, String> {
    let mut pairs = BTreeMap::new();
    for pair in text.split(',') {
        let (chain, n) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not chain=blocks"))?;
        let chain = chain
            .trim()
            .parse::<Chain>()
            .map_err(|()| format!("{chain:?} is not one of: {}", Chain::names()))?;
        pairs.insert(chain, blocks(n)?);
    }
    Ok(pairs)
}

/// Blocks one `eth_getLogs` of a position's history asks for at most, per chain, unless
/// `LOG_RANGE_BLOCKS` says otherwise (`N`, or `chain=N` pairs): 10,000 on every chain, within
/// what common providers serve in one call (a provider that refuses a range for its size
/// gets it again in halves).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRanges {
    per_chain: BTreeMap<Chain, u64>,
    otherwise: u64,
}

/// The default [`LogRanges`] on every chain.
pub const DEFAULT_LOG_RANGE: u64 = 10_000;

impl Default for LogRanges {
    fn default() -> Self {
        LogRanges {
            per_chain: BTreeMap::new(),
            otherwise: DEFAULT_LOG_RANGE,
        }
    }
}

impl LogRanges {
    pub fn of(&self, chain: Chain) -> u64 {
        self.per_chain
            .get(&chain)
            .copied()
            .unwrap_or(self.otherwise)
    }

    /// `N` (every chain), or `chain=N` pairs separated by commas over the default.
    pub fn parse(text: &str) -> Result<LogRanges, String> {
        let blocks = |n: &str| {
            n.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=10_000_000).contains(n))
                .ok_or_else(|| format!("{n:?} is not a whole number of blocks from 1 to 10000000"))
        };
        if !text.contains('=') {
            return Ok(LogRanges {
                per_chain: BTreeMap::new(),
                otherwise: blocks(text)?,
            });
        }
        let mut parsed = LogRanges::default();
        parsed.per_chain.extend(chain_pairs(text, blocks)?);
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state read `age` seconds before `now`.
    fn read_before(now: DateTime<Utc>, age: i64) -> PoolState {
        PoolState {
            sqrt_price: U256::from(1u8),
            tick: 0,
            liquidity: 0,
            fee_growth_global0: U256::ZERO,
            fee_growth_global1: U256::ZERO,
            height: 1,
            block_hash: None,
            observed_at: now - chrono::Duration::seconds(age),
            ticks: vec![],
            balances: None,
            slipstream: None,
        }
    }

    #[test]
    fn staleness_follows_the_policy() {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap();
        let state = |age: i64| read_before(now, age);
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

    #[test]
    fn a_shallow_discovered_pool_is_read_again_once_an_hour() {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap();
        let read = |age: i64| read_before(now, age);
        assert!(Cadence::Hourly.due(None, now));
        assert!(!Cadence::Hourly.due(Some(&read(3599)), now));
        assert!(Cadence::Hourly.due(Some(&read(3600)), now));
        assert!(Cadence::EverySync.due(Some(&read(0)), now));
        assert!(!Cadence::Never.due(None, now));
    }
}
