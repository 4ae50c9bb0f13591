//! The pool catalog: the supported pools with their market state (current price and token USD
//! prices). It ships as data (`data/pools.json`, a snapshot) and is served by `GET /pools`; the
//! states read from the chains replace the snapshot's prices pool by pool.

mod records;
mod view;

pub use records::{
    embedded_deployments, embedded_records, BaseToken, CatalogError, CatalogFile, Deployment,
    PoolRecord, TokenRecord, EMBEDDED_CATALOG,
};
pub use view::{PoolView, TokenView};

use crate::domain::fee_ticks::FeeTick;
use crate::domain::json::Exact;
use crate::domain::market::{Cadence, Freshness, Height, MarketRules, PoolKey, PoolState};
use crate::domain::math::price::Orientation;
use crate::domain::math::{Curve, U256};
use crate::domain::model::{format_time, Chain, Protocol};
use crate::domain::pricing::{
    cadence, derive_usd_prices, price_by_depth, route_pools, token_key, DiscoveredPair, PricedPair,
    Side, TokenKey,
};
use bigdecimal::{BigDecimal, Zero};
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::str::FromStr;

/// What the market keeps of one pool besides its catalog entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolMarket {
    pub state: Option<PoolState>,
    /// The ticks positions opened on the pool use: the sync reads them.
    pub tracked_ticks: BTreeSet<i32>,
    /// The service's fee accounting of the tracked ticks ([`crate::domain::fee_ticks`]).
    pub fee_ticks: BTreeMap<i32, FeeTick>,
    /// Tracked ticks no position uses any more, by the unix time they were released at: still
    /// read until the chain's series has recorded through that time, so that a point recorded
    /// late holds the ticks of a position that closed after its boundary (decision 69).
    pub lingering: BTreeMap<i32, i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub symbol: String,
    pub address: String,
    pub decimals: u8,
    pub price_usd: BigDecimal,
    /// Whether `price_usd` is known (a discovered pool's token no pool prices has none).
    pub priced: bool,
}

/// A pool ready for the math: prices parsed, the sqrt price derived.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    pub chain: Chain,
    pub protocol: Protocol,
    pub id: String,
    pub fee_tier: u32,
    pub tick_spacing: i32,
    /// tokenA, the base asset.
    pub token_a: Token,
    /// tokenB, the quote asset.
    pub token_b: Token,
    pub orientation: Orientation,
    /// tokenB per tokenA: the snapshot's, or the nearest double of the synced sqrt price's exact
    /// ratio.
    pub current_price: BigDecimal,
    pub sqrt_price: U256,
    /// The current tick: the synced one, else the tick of the snapshot's sqrt price.
    pub tick: i32,
    /// The state last read from the chain, if any.
    pub state: Option<PoolState>,
    /// The ticks positions on this pool use, ascending.
    pub tracked_ticks: Vec<i32>,
    /// The service's fee accounting of those ticks, by tick.
    pub fee_ticks: BTreeMap<i32, FeeTick>,
    /// Those of them no position uses any more, by when they were released
    /// ([`PoolMarket::lingering`]).
    pub lingering: BTreeMap<i32, i64>,
    /// Read because a linked wallet holds a position on it ([`PoolRecord::discovered`]).
    pub discovered: bool,
    /// How often the sync reads it: every time for a catalog pool, a discovered one as far as
    /// it can price a token.
    pub cadence: Cadence,
    /// Uniswap v4: the `StateView` its state is read through (its deployment's); `None` for a
    /// pool contract that answers for itself.
    pub state_view: Option<String>,
    /// Uniswap v4: its hook contract, where it has one.
    pub hooks: Option<String>,
    /// Its deployment's position manager, where the chain has more than one deployment of its
    /// protocol ([`PoolRecord::position_manager`]).
    pub position_manager: Option<String>,
}

fn positive_decimal(text: &str) -> Option<BigDecimal> {
    BigDecimal::from_str(text)
        .ok()
        .filter(|d| *d > BigDecimal::zero())
}

impl Token {
    fn from_record(record: &TokenRecord) -> Option<Token> {
        Some(Token {
            symbol: record.symbol.clone(),
            address: record.address.clone(),
            decimals: record.decimals,
            price_usd: BigDecimal::from_str(&record.price_usd)
                .ok()
                .filter(|p| *p >= BigDecimal::zero())?,
            priced: BigDecimal::from_str(&record.price_usd).is_ok_and(|p| p > BigDecimal::zero()),
        })
    }
}

impl Pool {
    /// A pool at its snapshot price.
    pub fn from_record(record: &PoolRecord) -> Result<Pool, CatalogError> {
        Pool::at_state(record, PoolMarket::default())
    }

    /// A pool at its synced state when there is one (its sqrt price and tick), else at the
    /// snapshot's price.
    pub fn at_state(record: &PoolRecord, market: PoolMarket) -> Result<Pool, CatalogError> {
        let PoolMarket {
            state,
            tracked_ticks,
            fee_ticks,
            lingering,
        } = market;
        let fail = |reason| CatalogError {
            pool: record.pool.clone(),
            reason,
        };
        let curve = curve_of(record.protocol);
        if record.tick_spacing < 1 {
            return Err(fail("tick spacing must be positive"));
        }
        let slipstream = record.protocol.is_slipstream();
        if slipstream && record.fee_tier != 0 {
            return Err(fail("a Slipstream pool's fee is its own: no feeTier"));
        }
        let token0 = Token::from_record(&record.token0).ok_or_else(|| fail("bad token0 price"))?;
        let token1 = Token::from_record(&record.token1).ok_or_else(|| fail("bad token1 price"))?;
        let current_price =
            positive_decimal(&record.current_price).ok_or_else(|| fail("bad current price"))?;
        let base_is_token0 = record.base == BaseToken::Token0;
        let orientation = Orientation {
            curve,
            decimals0: token0.decimals,
            decimals1: token1.decimals,
            base_is_token0,
        };
        let (sqrt_price, tick, current_price) = match &state {
            Some(state) => (
                state.sqrt_price,
                state.tick,
                orientation.human_price_decimal(state.sqrt_price),
            ),
            None => {
                let sqrt_price = orientation.sqrt_price_of(&current_price);
                (
                    sqrt_price,
                    curve.tick_at_or_below(sqrt_price),
                    current_price,
                )
            }
        };
        let in_range = curve.sqrt_price_at_tick(curve.min_tick()).unwrap() <= sqrt_price
            && sqrt_price < curve.sqrt_price_at_tick(curve.max_tick()).unwrap();
        if !in_range {
            return Err(fail("current price outside the protocol's range"));
        }
        let (token_a, token_b) = if base_is_token0 {
            (token0, token1)
        } else {
            (token1, token0)
        };
        Ok(Pool {
            chain: record.chain,
            protocol: record.protocol,
            id: record.pool.clone(),
            // A Slipstream pool's fee as its state last read it (0 until one is).
            fee_tier: match (&state, slipstream) {
                (Some(state), true) => state.slipstream.as_ref().map_or(0, |s| s.fee),
                _ => record.fee_tier,
            },
            tick_spacing: record.tick_spacing,
            token_a,
            token_b,
            orientation,
            current_price,
            sqrt_price,
            tick,
            state,
            tracked_ticks: tracked_ticks.into_iter().collect(),
            fee_ticks,
            lingering,
            discovered: record.discovered,
            cadence: Cadence::EverySync,
            state_view: None,
            hooks: record.hooks.clone(),
            position_manager: record.position_manager.clone(),
        })
    }

    pub fn view(&self, freshness: Freshness, now: DateTime<Utc>) -> PoolView {
        let (block, slot) = Height::pair(self.chain, self.state.as_ref().map(|s| s.height));
        let token = |t: &Token| TokenView {
            symbol: t.symbol.clone(),
            address: t.address.clone(),
            decimals: t.decimals,
            price_usd: t.priced.then(|| Exact(t.price_usd.clone())),
        };
        PoolView {
            chain: self.chain,
            protocol: self.protocol,
            pool: self.id.clone(),
            fee_tier: (!self.protocol.is_slipstream() || self.fee_tier > 0)
                .then_some(self.fee_tier),
            tick_spacing: self.tick_spacing,
            token_a: token(&self.token_a),
            token_b: token(&self.token_b),
            current_price: Exact(self.current_price.clone()),
            tick: self.tick,
            sqrt_price: self.sqrt_price.to_string(),
            observed_at: self.state.as_ref().map(|s| format_time(&s.observed_at)),
            block,
            slot,
            stale: freshness.is_stale(self.state.as_ref(), now),
            discovered: self.discovered,
            hooks: self.hooks.clone(),
        }
    }

    /// Whether a position's range `[lower, upper)` holds the current tick.
    pub fn in_range(&self, tick_lower: i32, tick_upper: i32) -> bool {
        tick_lower <= self.tick && self.tick < tick_upper
    }

    pub fn key(&self) -> PoolKey {
        PoolKey::new(self.chain, self.protocol, &self.id)
    }

    pub fn curve(&self) -> Curve {
        self.orientation.curve
    }

    /// Whether `id` names this pool (EVM addresses in any letter case).
    pub fn is_named(&self, id: &str) -> bool {
        if self.chain.addresses_ignore_case() {
            self.id.eq_ignore_ascii_case(id)
        } else {
            self.id == id
        }
    }
}

/// The native currency as Uniswap v4 names it: `address(0)`.
pub const NATIVE: &str = "0x0000000000000000000000000000000000000000";

pub fn is_native(address: &str) -> bool {
    address.eq_ignore_ascii_case(NATIVE)
}

/// A Uniswap v4 hook may return deltas (its address's permission bits 0–3: after remove and
/// add liquidity, after and before swap): what a modification pays is then the hook's to say,
/// and the pure math's figures are not the position's.
pub fn hook_returns_deltas(hooks: &str) -> bool {
    let bits = u16::from_str_radix(&hooks[hooks.len().saturating_sub(4)..], 16).unwrap_or(0xffff);
    !is_native(hooks) && bits & 0b1111 != 0
}

pub fn curve_of(protocol: Protocol) -> Curve {
    match protocol {
        // Every v3 fork shares Uniswap v3's math and position manager (deployments are data);
        // Slipstream too (its pool and manager differ in layout, not in math).
        // Uniswap v4 keeps v3's tick math and fee growth accounting in its singleton.
        Protocol::UniswapV3
        | Protocol::PancakeswapV3
        | Protocol::SushiswapV3
        | Protocol::AerodromeSlipstream
        | Protocol::UniswapV4 => Curve::UniswapV3,
        Protocol::OrcaWhirlpools => Curve::OrcaWhirlpools,
    }
}

/// The supported pools, in catalog order, and when their states stop being current.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub pools: Vec<Pool>,
    pub freshness: Freshness,
    pub deployments: Vec<Deployment>,
    /// The least depth at which a discovered pool prices a token (`MarketRules`).
    pub min_discovered_depth_usd: u64,
}

impl Catalog {
    /// The snapshot: every pool at its catalog price, never stale.
    pub fn from_records(records: &[PoolRecord]) -> Result<Catalog, CatalogError> {
        Catalog::build(records, HashMap::new(), Freshness::Snapshot)
    }

    /// The pools at their synced states where there is one, at the snapshot's price
    /// elsewhere; token USD prices derived from the catalog's pools by the route rule
    /// ([`derive_usd_prices`]), the catalog's own where no route reaches a token, then from the
    /// discovered pools by the depth rule ([`price_by_depth`]).
    pub fn build(
        records: &[PoolRecord],
        mut markets: HashMap<PoolKey, PoolMarket>,
        rules: impl Into<MarketRules>,
    ) -> Result<Catalog, CatalogError> {
        let MarketRules {
            freshness,
            min_discovered_depth_usd,
        } = rules.into();
        let mut pools = Vec::with_capacity(records.len());
        for r in records {
            let key = PoolKey::new(r.chain, r.protocol, &r.pool);
            match Pool::at_state(r, markets.remove(&key).unwrap_or_default()) {
                Ok(pool) => pools.push(pool),
                // One wallet's odd pool never takes the catalog down: it is left out.
                Err(e) if r.discovered => tracing::warn!(cause = %e, "discovered pool left out"),
                Err(e) => return Err(e),
            }
        }
        price_tokens(&mut pools, min_discovered_depth_usd);
        Ok(Catalog {
            pools,
            freshness,
            deployments: Vec::new(),
            min_discovered_depth_usd,
        })
    }

    /// The chain's pools whose states price `tokens` by the catalog's rules: the route's pools
    /// back to a stablecoin; for a token no catalog pool holds, the discovered pools holding it
    /// and the route of their other token.
    pub fn pricing_pools(&self, chain: Chain, tokens: &[&str]) -> Vec<&Pool> {
        let on_chain = || self.pools.iter().filter(|p| p.chain == chain);
        let listed: Vec<&Pool> = on_chain().filter(|p| !p.discovered).collect();
        let holds = |p: &Pool, t: &str| {
            [&p.token_a, &p.token_b]
                .iter()
                .any(|x| token_key(chain, &x.address) == token_key(chain, t))
        };
        let mut chosen: Vec<&Pool> = Vec::new();
        let mut targets: Vec<TokenKey> = Vec::new();
        for token in tokens {
            targets.push(token_key(chain, token));
            if listed.iter().any(|p| holds(p, token)) {
                continue;
            }
            for pool in on_chain().filter(|p| p.discovered && holds(p, token)) {
                chosen.push(pool);
                targets
                    .extend([&pool.token_a, &pool.token_b].map(|t| token_key(chain, &t.address)));
            }
        }
        let pairs: Vec<PricedPair<'_>> = listed
            .iter()
            .map(|p| PricedPair {
                chain,
                token_a: (&p.token_a.symbol, &p.token_a.address),
                token_b: (&p.token_b.symbol, &p.token_b.address),
                price: &p.current_price,
            })
            .collect();
        let mut route: Vec<usize> = route_pools(&pairs, &targets).into_iter().collect();
        route.sort_unstable();
        chosen.extend(route.into_iter().map(|i| listed[i]));
        chosen
    }

    /// The chain's pools at other states (read at an older block), their tokens priced by the
    /// same rules: a pool without a state there keeps its own.
    pub fn at_states(&self, chain: Chain, states: &HashMap<PoolKey, PoolState>) -> Catalog {
        let mut pools: Vec<Pool> = self
            .pools
            .iter()
            .filter(|p| p.chain == chain)
            .cloned()
            .collect();
        for pool in &mut pools {
            if let Some(state) = states.get(&pool.key()) {
                pool.sqrt_price = state.sqrt_price;
                pool.tick = state.tick;
                pool.current_price = pool.orientation.human_price_decimal(state.sqrt_price);
                pool.fee_tier = state.slipstream.as_ref().map_or(pool.fee_tier, |s| s.fee);
                pool.state = Some(state.clone());
            }
        }
        price_tokens(&mut pools, self.min_discovered_depth_usd);
        Catalog {
            pools,
            freshness: self.freshness,
            deployments: Vec::new(),
            min_discovered_depth_usd: self.min_discovered_depth_usd,
        }
    }

    /// The catalog shipped in the repository.
    pub fn embedded() -> Catalog {
        Catalog::from_records(&embedded_records())
            .expect("the embedded catalog is valid")
            .with_deployments(embedded_deployments())
    }

    /// The catalog with the protocols' deployments: a Uniswap v4 pool learns the `StateView`
    /// it is read through, and its native currency (`address(0)`) the price of the wrapped
    /// token (ETH as WETH) where a pool prices that.
    pub fn with_deployments(mut self, deployments: Vec<Deployment>) -> Catalog {
        for d in deployments
            .iter()
            .filter(|d| d.protocol == Protocol::UniswapV4)
        {
            let wrapped = d
                .wrapped_native
                .as_deref()
                .and_then(|w| self.priced_token(d.chain, w));
            for pool in self.pools.iter_mut().filter(|p| p.chain == d.chain) {
                if pool.protocol == Protocol::UniswapV4 {
                    pool.state_view = d.state_view.clone();
                }
                for token in [&mut pool.token_a, &mut pool.token_b] {
                    if let (true, Some(price)) = (is_native(&token.address), &wrapped) {
                        token.price_usd = price.clone();
                        token.priced = true;
                    }
                }
            }
        }
        Catalog {
            deployments,
            ..self
        }
    }

    /// A token's USD price on the chain where a pool prices it.
    fn priced_token(&self, chain: Chain, address: &str) -> Option<BigDecimal> {
        self.pools
            .iter()
            .filter(|p| p.chain == chain)
            .flat_map(|p| [&p.token_a, &p.token_b])
            .find(|t| t.priced && t.address.eq_ignore_ascii_case(address))
            .map(|t| t.price_usd.clone())
    }

    /// The protocol's contracts on the chain, if the catalog has them.
    pub fn deployment(&self, chain: Chain, protocol: Protocol) -> Option<&Deployment> {
        self.deployments
            .iter()
            .find(|d| d.chain == chain && d.protocol == protocol)
    }

    /// The deployment on `chain` whose position manager is `manager` (any letter case).
    pub fn deployment_of_manager(&self, chain: Chain, manager: &str) -> Option<&Deployment> {
        self.deployments_on(chain).find(|d| {
            d.position_manager
                .as_deref()
                .is_some_and(|m| m.eq_ignore_ascii_case(manager))
        })
    }

    /// The Uniswap v4 `PoolManager` of the deployment whose position manager is `manager`.
    pub fn pool_manager_of(&self, chain: Chain, manager: &str) -> Option<&str> {
        self.deployment_of_manager(chain, manager)
            .and_then(|d| d.pool_manager.as_deref())
    }

    /// Every deployment on the chain.
    pub fn deployments_on(&self, chain: Chain) -> impl Iterator<Item = &Deployment> {
        self.deployments.iter().filter(move |d| d.chain == chain)
    }

    /// The EVM chain id of `chain` (the deployments agree on it); `None` for Solana or a chain
    /// the catalog has no deployment on.
    pub fn chain_id(&self, chain: Chain) -> Option<u64> {
        self.deployments_on(chain).find_map(|d| d.chain_id)
    }

    /// A supported pool (one positions are opened on), not a discovered one.
    pub fn find_supported(&self, chain: Chain, protocol: Protocol, id: &str) -> Option<&Pool> {
        self.find(chain, protocol, id).filter(|p| !p.discovered)
    }

    pub fn find(&self, chain: Chain, protocol: Protocol, id: &str) -> Option<&Pool> {
        self.pools
            .iter()
            .find(|p| p.chain == chain && p.protocol == protocol && p.is_named(id))
    }
}

/// Prices the pools' tokens in USD from their states (or their catalog prices where they have
/// none): the catalog's pools route prices out from the stablecoins, and discovered pools price
/// what they alone reach by their depth (`crate::domain::pricing`).
fn price_tokens(pools: &mut [Pool], min_discovered_depth_usd: u64) {
    // Synced prices to 40 digits, not the double written as `currentPrice`: USD prices
    // multiply along a path.
    let rates: Vec<BigDecimal> = pools
        .iter()
        .map(|p| match &p.state {
            Some(state) => p.orientation.human_price_precise(state.sqrt_price, 40),
            None => p.current_price.clone(),
        })
        .collect();
    let (listed, discovered): (Vec<_>, Vec<_>) =
        pools.iter().zip(&rates).partition(|(p, _)| !p.discovered);
    let pairs: Vec<PricedPair<'_>> = listed
        .iter()
        .map(|(p, price)| PricedPair {
            chain: p.chain,
            token_a: (&p.token_a.symbol, &p.token_a.address),
            token_b: (&p.token_b.symbol, &p.token_b.address),
            price,
        })
        .collect();
    let mut usd = derive_usd_prices(&pairs);
    for (pool, _) in &listed {
        for token in [&pool.token_a, &pool.token_b]
            .into_iter()
            .filter(|t| t.priced)
        {
            usd.entry(token_key(pool.chain, &token.address))
                .or_insert_with(|| token.price_usd.clone());
        }
    }
    // Anyone can create a pool at any price and put a position on it in a wallet: a
    // discovered pool prices a token only by its depth, never by being read first.
    let discovered: Vec<DiscoveredPair<'_>> = discovered
        .iter()
        .map(|(p, price)| {
            let balances = p.state.as_ref().and_then(|s| s.balances);
            let [a, b] = match balances {
                Some(b) if p.orientation.base_is_token0 => [Some(b.token0), Some(b.token1)],
                Some(b) => [Some(b.token1), Some(b.token0)],
                None => [None, None],
            };
            fn side(t: &Token, balance: Option<U256>) -> Side<'_> {
                Side {
                    address: &t.address,
                    decimals: t.decimals,
                    balance,
                }
            }
            DiscoveredPair {
                chain: p.chain,
                pool: &p.id,
                token_a: side(&p.token_a, a),
                token_b: side(&p.token_b, b),
                price,
            }
        })
        .collect();
    let by_catalog: HashSet<_> = usd.keys().cloned().collect();
    price_by_depth(&mut usd, &discovered, min_discovered_depth_usd);
    let cadences: HashMap<(Chain, String), Cadence> = discovered
        .iter()
        .map(|pair| {
            let every = cadence(pair, &usd, &by_catalog, min_discovered_depth_usd);
            ((pair.chain, pair.pool.to_string()), every)
        })
        .collect();
    for pool in pools.iter_mut() {
        if let Some(every) = cadences.get(&(pool.chain, pool.id.clone())) {
            pool.cadence = *every;
        }
        for token in [&mut pool.token_a, &mut pool.token_b] {
            if let Some(price) = usd.get(&token_key(pool.chain, &token.address)) {
                token.price_usd = price.clone();
                token.priced = true;
            }
        }
    }
}
