//! The catalog: the embedded one's pools and deployments, lookups, and how `Catalog::build`
//! prices tokens, by route from the catalog's pools and by depth from discovered ones.

use shared::catalog::{Catalog, Deployment, PoolMarket, PoolRecord};
use shared::market::{Balances, Cadence, MarketRules, PoolKey, PoolState};
use shared::math::U256;
use shared::model::WalletHolding;
use shared::model::{Chain, Protocol};
use shared::orders::build::{held_venue, venue};
use std::collections::HashMap;

#[test]
fn embedded_deployments_cover_every_chain_with_its_chain_id() {
    let catalog = Catalog::embedded();
    Deployment::check_all(&catalog.deployments).unwrap();
    let ids: Vec<Option<u64>> = Chain::ALL.iter().map(|c| catalog.chain_id(*c)).collect();
    // ethereum, solana, bsc, arbitrum, base in Chain::ALL's order.
    // Every v3 manager of the EVM chains (decision 60), PancakeSwap's with its farm; Orca on
    // Solana alone.
    for chain in Chain::ALL {
        let protocols: Vec<Protocol> = catalog.deployments_on(*chain).map(|d| d.protocol).collect();
        if *chain == Chain::Solana {
            assert_eq!(protocols, [Protocol::OrcaWhirlpools]);
            continue;
        }
        for v3 in [
            Protocol::UniswapV3,
            Protocol::PancakeswapV3,
            Protocol::SushiswapV3,
            Protocol::UniswapV4,
        ] {
            assert!(protocols.contains(&v3), "{chain} {v3}");
        }
        let pancake = catalog.deployment(*chain, Protocol::PancakeswapV3).unwrap();
        assert!(pancake.staking.is_some(), "{chain}");
        let ids: Vec<_> = catalog.deployments_on(*chain).map(|d| d.chain_id).collect();
        assert!(ids.iter().all(|id| *id == ids[0]), "{chain}: one chain id");
    }
    assert!(ids.contains(&Some(1)) && ids.contains(&Some(56)) && ids.contains(&None));
    assert!(ids.contains(&Some(42161)) && ids.contains(&Some(8453)));
    let twice = [
        catalog.deployments[0].clone(),
        catalog.deployments[0].clone(),
    ];
    assert!(Deployment::check_all(&twice).is_err());
    // A v4 deployment names its singleton, its lens and its wrapped native token.
    let v4 = catalog
        .deployment(Chain::Base, Protocol::UniswapV4)
        .unwrap();
    for missing in 0..3 {
        let mut incomplete = v4.clone();
        match missing {
            0 => incomplete.pool_manager = None,
            1 => incomplete.state_view = None,
            _ => incomplete.wrapped_native = None,
        }
        assert!(Deployment::check_all(&[incomplete]).is_err(), "{missing}");
    }
}

/// Uniswap v4 pools learn their `StateView` from their deployment, and the native currency
/// (`address(0)`) the price of the wrapped token where a pool prices it.
#[test]
fn v4_pools_are_read_through_their_lens_and_eth_is_priced_as_weth() {
    let usdc = "0x00000000000000000000000000000000000000c1";
    let weth = "0x00000000000000000000000000000000000000e1";
    let native = "0x0000000000000000000000000000000000000000";
    let token = |symbol: &str, address: &str, price: &str| shared::catalog::TokenRecord {
        symbol: symbol.into(),
        address: address.into(),
        decimals: 18,
        price_usd: price.into(),
    };
    let record = |protocol, pool: &str, token0, token1, base| PoolRecord {
        chain: Chain::Ethereum,
        protocol,
        pool: pool.into(),
        fee_tier: 3000,
        tick_spacing: 60,
        token0,
        token1,
        base,
        current_price: "2500".into(),
        discovered: false,
        hooks: None,
        position_manager: None,
    };
    let records = [
        record(
            Protocol::UniswapV3,
            "0x00000000000000000000000000000000000000aa",
            token("WETH", weth, "2500"),
            token("USDC", usdc, "1"),
            shared::catalog::BaseToken::Token0,
        ),
        record(
            Protocol::UniswapV4,
            &format!("0x{}", "ab".repeat(32)),
            token("ETH", native, "0"),
            token("USDC", usdc, "1"),
            shared::catalog::BaseToken::Token0,
        ),
    ];
    let v4 = Deployment {
        chain: Chain::Ethereum,
        protocol: Protocol::UniswapV4,
        chain_id: Some(1),
        factory: None,
        position_manager: Some("0x00000000000000000000000000000000000000b1".into()),
        program: None,
        first_block: None,
        staking: None,
        pool_manager: Some("0x00000000000000000000000000000000000000b2".into()),
        state_view: Some("0x00000000000000000000000000000000000000b3".into()),
        wrapped_native: Some(weth.into()),
        swap_router: None,
        quoter: None,
    };
    Deployment::check_all(std::slice::from_ref(&v4)).unwrap();
    // SwapRouter02 swaps on v3 pools: a v4 deployment names none.
    let routed = Deployment {
        swap_router: Some("0x00000000000000000000000000000000000000b4".into()),
        ..v4.clone()
    };
    assert!(Deployment::check_all(&[routed]).is_err());
    let catalog = Catalog::from_records(&records)
        .unwrap()
        .with_deployments(vec![v4.clone()]);
    let [v3_pool, v4_pool] = [&catalog.pools[0], &catalog.pools[1]];
    assert_eq!(v3_pool.state_view, None);
    assert_eq!(v4_pool.state_view, v4.state_view);
    assert_eq!(v4_pool.token_a.address, native);
    assert!(v4_pool.token_a.priced);
    assert_eq!(v4_pool.token_a.price_usd, v3_pool.token_a.price_usd);
}

#[test]
fn embedded_catalog_has_every_required_pool() {
    let catalog = Catalog::embedded();
    assert!(catalog.pools.len() >= 10);
    for chain in Chain::ALL {
        assert!(catalog.pools.iter().any(|p| p.chain == *chain), "{chain}");
    }
}

#[test]
fn evm_lookup_ignores_case_and_solana_does_not() {
    let catalog = Catalog::embedded();
    let eth = "0x88e6a0c2ddd26feeb64f039a2c41296fcb3f5640";
    let pool = catalog
        .find(Chain::Ethereum, Protocol::UniswapV3, eth)
        .unwrap();
    assert_eq!(pool.id, "0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640");
    let sol = "Czfq3xZZDmsdGdUyrNLtRhGc47cXcZtLG4crryfu44zE";
    assert!(catalog
        .find(Chain::Solana, Protocol::OrcaWhirlpools, sol)
        .is_some());
    let lower = sol.to_lowercase();
    assert!(catalog
        .find(Chain::Solana, Protocol::OrcaWhirlpools, &lower)
        .is_none());
    assert!(catalog
        .find(Chain::Base, Protocol::UniswapV3, eth)
        .is_none());
}

#[test]
fn quote_is_the_stablecoin_and_prices_agree_with_usd_prices() {
    for pool in Catalog::embedded().pools {
        let implied = &pool.current_price * &pool.token_b.price_usd;
        assert_eq!(implied, pool.token_a.price_usd, "{}", pool.id);
        let back = pool.orientation.human_price_of(pool.sqrt_price);
        assert_eq!(pool.tick, pool.curve().tick_at_or_below(pool.sqrt_price));
        let expected: f64 = pool.current_price.to_string().parse().unwrap();
        assert!(
            (back - expected).abs() / expected < 1e-9,
            "{} {back}",
            pool.id
        );
    }
}

/// A discovered OWN/WETH pool at `price` WETH per OWN holding `weth` whole WETH, as a record
/// and its synced state.
/// A state of `pool` at block 1 at its price: one unit of liquidity, no fee growth, no ticks.
fn state_of(pool: &shared::catalog::Pool) -> PoolState {
    PoolState {
        sqrt_price: pool.sqrt_price,
        tick: pool.tick,
        liquidity: 1,
        fee_growth_global0: U256::ZERO,
        fee_growth_global1: U256::ZERO,
        height: 1,
        block_hash: None,
        observed_at: chrono::Utc::now(),
        ticks: Vec::new(),
        balances: None,
        slipstream: None,
    }
}

fn own_pool(id: &str, price: &str, weth: u64, weth_address: &str) -> (PoolRecord, PoolMarket) {
    let token = |symbol: &str, address: &str| shared::catalog::TokenRecord {
        symbol: symbol.into(),
        address: address.into(),
        decimals: 18,
        price_usd: "0".into(),
    };
    let record = PoolRecord {
        chain: Chain::Ethereum,
        protocol: Protocol::UniswapV3,
        pool: id.into(),
        fee_tier: 3000,
        tick_spacing: 60,
        token0: token("OWN", "0x00000000000000000000000000000000000000aa"),
        token1: token("WETH", weth_address),
        base: shared::catalog::BaseToken::Token0,
        current_price: price.into(),
        discovered: true,
        hooks: None,
        position_manager: None,
    };
    let pool = shared::catalog::Pool::from_record(&record).unwrap();
    let whole = U256::from(10u64).pow(U256::from(18));
    let state = PoolState {
        balances: Some(Balances {
            token0: whole,
            token1: U256::from(weth) * whole,
        }),
        ..state_of(&pool)
    };
    let market = PoolMarket {
        state: Some(state),
        ..PoolMarket::default()
    };
    (record, market)
}

/// Through `Catalog::build`: a token only discovered pools reach takes the deepest one's price
/// whatever order the pools are stored in, none from pools under the minimum, and the sync
/// reads each discovered pool as far as it can price.
#[test]
fn discovered_pools_price_by_depth_in_any_order() {
    let listed: Vec<PoolRecord> = shared::catalog::embedded_records()
        .into_iter()
        .filter(|r| r.chain == Chain::Ethereum)
        .collect();
    let catalog = Catalog::from_records(&listed).unwrap();
    let weth = catalog
        .pools
        .iter()
        .flat_map(|p| [&p.token_a, &p.token_b])
        .find(|t| t.symbol == "WETH")
        .unwrap()
        .clone();
    let fair = own_pool(
        "0x0000000000000000000000000000000000000f01",
        "0.001",
        100,
        &weth.address,
    );
    let rigged = own_pool(
        "0x0000000000000000000000000000000000000f02",
        "1000",
        50,
        &weth.address,
    );
    let shallow = own_pool(
        "0x0000000000000000000000000000000000000f03",
        "5",
        1,
        &weth.address,
    );
    let own_price = |pools: Vec<(PoolRecord, PoolMarket)>, min: u64| {
        let mut records = listed.clone();
        let mut markets = HashMap::new();
        for (record, market) in pools {
            markets.insert(
                PoolKey::new(record.chain, record.protocol, &record.pool),
                market,
            );
            records.push(record);
        }
        let rules = MarketRules {
            freshness: shared::market::Freshness::Snapshot,
            min_discovered_depth_usd: min,
        };
        let catalog = Catalog::build(&records, markets, rules).unwrap();
        let own: Vec<_> = catalog.pools.iter().filter(|p| p.discovered).collect();
        let prices: Vec<_> = own
            .iter()
            .map(|p| p.token_a.priced.then(|| p.token_a.price_usd.clone()))
            .collect();
        assert!(prices.windows(2).all(|w| w[0] == w[1]), "{prices:?}");
        let cadences: Vec<(String, Cadence)> =
            own.iter().map(|p| (p.id.clone(), p.cadence)).collect();
        (prices[0].clone(), cadences)
    };
    let expected = Some(&weth.price_usd / bigdecimal::BigDecimal::from(1000));
    for order in [
        vec![fair.clone(), rigged.clone(), shallow.clone()],
        vec![shallow.clone(), rigged.clone(), fair.clone()],
        vec![rigged.clone(), fair],
    ] {
        let (price, cadences) = own_price(order, 10_000);
        assert_eq!(
            price.map(|p| p.normalized()),
            expected.clone().map(|p| p.with_prec(20).normalized())
        );
        for (id, cadence) in cadences {
            // One WETH (a few thousand USD) is under the minimum: read hourly.
            let shallow_pool = id.ends_with("f03");
            assert_eq!(cadence == Cadence::Hourly, shallow_pool, "{id}");
            assert_eq!(cadence == Cadence::EverySync, !shallow_pool, "{id}");
        }
    }
    // Alone, the rigged pool (50 WETH) prices OWN; under a minimum above its depth, nothing does.
    let (alone, _) = own_price(vec![rigged.clone()], 10_000);
    assert_eq!(
        alone.map(|p| p.normalized()),
        Some(
            (&weth.price_usd * bigdecimal::BigDecimal::from(1000))
                .with_prec(20)
                .normalized()
        )
    );
    let (none, cadences) = own_price(vec![rigged, shallow], 1_000_000_000);
    assert_eq!(none, None);
    assert!(
        cadences.iter().all(|(_, c)| *c == Cadence::Hourly),
        "{cadences:?}"
    );
}

/// A history values its events by reading only the pools that price its tokens at their block
/// (`Catalog::pricing_pools`): repriced from those pools' states alone, each token of every
/// embedded pool (and a discovered OWN/WETH one) has the price it has when every pool of its
/// chain is at that block's state.
#[test]
fn the_pricing_pools_alone_price_a_token_as_all_of_its_chains_pools_do() {
    let mut records = shared::catalog::embedded_records();
    let weth = records
        .iter()
        .flat_map(|r| [&r.token0, &r.token1])
        .find(|t| t.symbol == "WETH")
        .unwrap()
        .address
        .clone();
    let (own, market) = own_pool(
        "0x00000000000000000000000000000000000000e1",
        "0.5",
        50,
        &weth,
    );
    records.push(own.clone());
    let markets = HashMap::from([(PoolKey::new(own.chain, own.protocol, &own.pool), market)]);
    let catalog = Catalog::build(
        &records,
        markets,
        MarketRules::from(shared::market::Freshness::Snapshot),
    )
    .unwrap();
    // "At a block": every pool's price moved by its own factor.
    let moved: HashMap<PoolKey, PoolState> = catalog
        .pools
        .iter()
        .enumerate()
        .map(|(i, pool)| {
            let curve = pool.curve();
            let tick = pool.tick + 37 * (i as i32 % 7) - 90;
            let state = PoolState {
                sqrt_price: curve.sqrt_price_at_tick(tick).unwrap(),
                tick,
                liquidity: 1,
                fee_growth_global0: U256::ZERO,
                fee_growth_global1: U256::ZERO,
                height: 2,
                block_hash: None,
                observed_at: chrono::Utc::now(),
                ticks: Vec::new(),
                balances: pool.state.as_ref().and_then(|s| s.balances),
                slipstream: None,
            };
            (pool.key(), state)
        })
        .collect();
    let (mut checked, mut read, mut every) = (0, 0, 0);
    for pool in &catalog.pools {
        let chain = pool.chain;
        let everything = catalog.at_states(chain, &moved);
        let tokens = [pool.token_a.address.as_str(), pool.token_b.address.as_str()];
        let needed: HashMap<PoolKey, PoolState> = catalog
            .pricing_pools(chain, &tokens)
            .into_iter()
            .map(|p| (p.key(), moved[&p.key()].clone()))
            .collect();
        read += needed.len();
        every += catalog.pools.iter().filter(|p| p.chain == chain).count();
        let alone = catalog.at_states(chain, &needed);
        for token in tokens {
            let price = |c: &Catalog| shared::holdings::usd_price(c, chain, token);
            assert_eq!(price(&alone), price(&everything), "{token} on {chain}");
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked}");
    // Fewer pools than the chains hold are read.
    assert!(read < every, "{read} of {every}");
}

/// Two deployments of one protocol on one chain (Aerodrome Slipstream's generations on Base):
/// accepted, each its own position manager; a pool opens through the one it names (none where
/// two could and it names none); a wallet position acts through its own manager.
#[test]
fn a_chain_may_have_two_deployments_of_a_protocol_each_its_own_manager() {
    let deployment = |manager: &str| {
        let factory = format!("{manager}f");
        Deployment::v3(
            (Chain::Base, Protocol::UniswapV3),
            8453,
            (&factory, manager),
        )
    };
    let (first, second) = (
        "0x00000000000000000000000000000000000000d1",
        "0x00000000000000000000000000000000000000d2",
    );
    let both = vec![deployment(first), deployment(second)];
    Deployment::check_all(&both).unwrap();
    // The same one twice (its manager in another case) is still refused.
    let twice = [
        deployment(first),
        deployment(&first.to_uppercase().replace("0X", "0x")),
    ];
    assert!(Deployment::check_all(&twice).is_err());
    let token = |symbol: &str, address: &str, price: &str| shared::catalog::TokenRecord {
        symbol: symbol.into(),
        address: address.into(),
        decimals: 18,
        price_usd: price.into(),
    };
    let record = |pool: &str, manager: Option<&str>| PoolRecord {
        chain: Chain::Base,
        protocol: Protocol::UniswapV3,
        pool: pool.into(),
        fee_tier: 500,
        tick_spacing: 10,
        token0: token("WETH", "0x00000000000000000000000000000000000000e1", "2500"),
        token1: token("USDC", "0x00000000000000000000000000000000000000c1", "1"),
        base: shared::catalog::BaseToken::Token0,
        current_price: "2500".into(),
        discovered: false,
        hooks: None,
        position_manager: manager.map(str::to_string),
    };
    let records = [
        record("0x00000000000000000000000000000000000000a1", None),
        record("0x00000000000000000000000000000000000000a2", Some(second)),
    ];
    let catalog = Catalog::from_records(&records)
        .unwrap()
        .with_deployments(both);
    let [unnamed, named] = [&catalog.pools[0], &catalog.pools[1]];
    assert_eq!(venue(&catalog, unnamed), None, "two could open it");
    assert_eq!(venue(&catalog, named).unwrap().manager, second);
    // A wallet position on the unnamed pool, read from the first manager: acted on there.
    let holding: WalletHolding = serde_json::from_value(serde_json::json!({
        "wallet": "0x00000000000000000000000000000000000000aa",
        "manager": first,
        "token": "7",
        "height": 1,
        "readAt": "2026-12-07T12:00:00Z",
        "tokens": [
            {"symbol": "WETH", "address": "0x00000000000000000000000000000000000000e1", "decimals": 18},
            {"symbol": "USDC", "address": "0x00000000000000000000000000000000000000c1", "decimals": 18}
        ],
        "amounts": ["1", "2"],
        "fees": ["0", "0"],
        "sqrtPrice": "79228162514264337593543950336",
        "tick": 0
    }))
    .unwrap();
    let acted = held_venue(&catalog, unnamed, &holding).unwrap();
    assert_eq!((acted.manager.as_str(), acted.chain_id), (first, 8453));
    let unknown = WalletHolding {
        manager: "0x00000000000000000000000000000000000000d3".into(),
        ..holding
    };
    assert_eq!(held_venue(&catalog, unnamed, &unknown), None);
}

#[test]
fn slipstream_on_base_is_two_generations_its_pools_with_no_fee_tier() {
    let catalog = Catalog::embedded();
    let managers: Vec<&str> = catalog
        .deployments_on(Chain::Base)
        .filter(|d| d.protocol == Protocol::AerodromeSlipstream)
        .filter_map(|d| d.position_manager.as_deref())
        .collect();
    assert_eq!(
        managers,
        [
            "0x827922686190790b37229fd06084350E74485b72",
            "0xa990C6a764b73BF43cee5Bb40339c3322FB9D55F"
        ]
    );
    let pools: Vec<_> = catalog
        .pools
        .iter()
        .filter(|p| p.protocol == Protocol::AerodromeSlipstream)
        .collect();
    assert_eq!(pools.len(), 2);
    let now = chrono::Utc::now();
    for pool in &pools {
        // Opened through the generation it names; its fee unknown until a state is read.
        assert_eq!(pool.position_manager.as_deref(), Some(managers[0]));
        let view = serde_json::to_value(pool.view(catalog.freshness, now)).unwrap();
        assert!(view["feeTier"].is_null(), "{view}");
        assert!(venue(&catalog, pool).is_some());
    }
    // AERO is priced through WETH.
    let aero = pools
        .iter()
        .flat_map(|p| [&p.token_a, &p.token_b])
        .find(|t| t.symbol == "AERO")
        .unwrap();
    assert!(
        aero.priced && aero.price_usd.to_string() == "0.8",
        "{aero:?}"
    );
    // A record giving a Slipstream pool a fee tier is refused: its fee is the pool's own.
    let mut record = shared::catalog::embedded_records()
        .into_iter()
        .find(|r| r.protocol == Protocol::AerodromeSlipstream)
        .unwrap();
    record.fee_tier = 500;
    assert!(shared::catalog::Pool::from_record(&record).is_err());
    // At a state, its fee is the state's.
    record.fee_tier = 0;
    let pool = shared::catalog::Pool::from_record(&record).unwrap();
    let state = PoolState {
        slipstream: Some(shared::market::SlipstreamState {
            fee: 420,
            gauge: None,
        }),
        ..state_of(&pool)
    };
    let market = PoolMarket {
        state: Some(state),
        ..PoolMarket::default()
    };
    let synced = shared::catalog::Pool::at_state(&record, market).unwrap();
    assert_eq!(synced.fee_tier, 420);
    assert_eq!(synced.view(catalog.freshness, now).fee_tier, Some(420));
}
