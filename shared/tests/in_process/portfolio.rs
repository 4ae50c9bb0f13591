//! The portfolio sums base units per token and values each token once; this checks that it
//! answers exactly what valuing each position on its own and adding them up answers.

use bigdecimal::{BigDecimal, Zero};
use shared::holdings::holding_view;
use shared::model::Realized;
use shared::portfolio::portfolio;
use shared::valuation::value_position;
use std::collections::BTreeMap;
use test_support::sample;

#[test]
fn the_portfolio_equals_its_positions_valued_one_by_one() {
    let catalog = sample::catalog();
    let now = chrono::DateTime::from_timestamp(1_795_000_100, 0).unwrap();
    let realized = Realized {
        pnl_usd: "-12.345".parse().unwrap(),
        cost_basis_usd: "100".parse().unwrap(),
    };
    for count in [1, 7, 23, 400] {
        let positions = sample::book("whale", &catalog, count, false);
        let zero = BigDecimal::zero;
        let (mut value, mut fees, mut basis, mut loss) = (zero(), zero(), zero(), zero());
        // What left wallet positions (withdrawn principal, collected fees): their PnL too.
        let mut taken_out = zero();
        // By token: its chain and address.
        let mut by_token: BTreeMap<(String, String), BigDecimal> = BTreeMap::new();
        let key = |chain: &dyn std::fmt::Display, address: &str| {
            (chain.to_string(), address.to_ascii_lowercase())
        };
        for p in &positions {
            if let Some(holding) = &p.holding {
                let (_, held) = holding_view(p, holding, &catalog);
                value += held.value.unwrap();
                fees += held.fees.unwrap();
                basis += held.cost_basis.unwrap();
                taken_out += held.taken_out.unwrap();
                // Each token's value under that token.
                for (token, worth) in holding.tokens.iter().zip(held.token_values) {
                    *by_token.entry(key(&p.chain, &token.address)).or_default() += worth.unwrap();
                }
                continue;
            }
            let valued = value_position(p, &catalog, now).unwrap();
            let f = &valued.figures;
            value += f.value();
            fees += f.fees();
            basis += &f.cost_basis;
            loss += f.impermanent_loss().unwrap_or_default();
            for (token, worth) in [
                (&valued.view.token_a, &f.principal_a + &f.fees_a),
                (&valued.view.token_b, &f.principal_b + &f.fees_b),
            ] {
                *by_token.entry(key(&p.chain, &token.address)).or_default() += worth;
            }
        }
        let view = portfolio(&positions, &realized, &catalog, now).unwrap();
        // Exactly, before the answer rounds them to cents.
        assert_eq!(view.total_value_usd.0, value, "{count}");
        assert_eq!(view.total_fees_earned_usd.0, fees);
        assert_eq!(view.total_impermanent_loss_usd.0, loss);
        let unrealized = &value + &taken_out - &basis;
        assert_eq!(view.unrealized_pnl_usd.0, unrealized);
        assert_eq!(view.total_pnl_usd.0, &unrealized + &realized.pnl_usd);
        assert!(count < 2 || !taken_out.is_zero());
        assert!(count == 1 || !value.is_zero() && !fees.is_zero());
        let assets: BTreeMap<(String, String), BigDecimal> = view
            .assets
            .iter()
            .map(|a| (key(&a.chain, &a.address), a.value_usd.0.clone()))
            .collect();
        assert_eq!(assets.len(), view.assets.len(), "one entry per token");
        assert_eq!(assets, by_token, "{count}");
    }
}

/// A wallet position without liquidity (closed by its withdrawal, read before it) holds no
/// principal: its amounts and their value are 0, whatever the older read said; what `collect`
/// would still pay stays. It opened when its history's count starts, not when it was first seen.
#[test]
fn a_closed_wallet_position_holds_nothing_and_opened_at_its_mint() {
    let catalog = sample::catalog();
    let positions = sample::book("alice", &catalog, 10, false);
    let open = positions.iter().find(|p| p.holding.is_some()).unwrap();
    let holding = open.holding.as_deref().unwrap();
    assert_ne!(holding.amounts, ["0", "0"], "the older read held principal");
    let closed = shared::model::Position {
        liquidity: 0,
        status: shared::model::Status::Closed,
        ..open.clone()
    };
    let (view, held) = holding_view(&closed, holding, &catalog);
    for token in [&view.token_a, &view.token_b] {
        assert_eq!(token.amount, "0", "{view:?}");
        let value = serde_json::to_value(&token.value_usd).unwrap();
        assert_eq!(value.as_f64(), Some(0.0), "{view:?}");
    }
    let (_, before) = holding_view(open, holding, &catalog);
    // Its value is what collect would pay alone: the principal's value is gone.
    let principal: BigDecimal = before.value.unwrap() - held.value.unwrap();
    assert!(principal > 1000, "{principal}");
    let first = holding.history.as_ref().unwrap().first_time.unwrap();
    let opened = chrono::DateTime::from_timestamp(first as i64, 0).unwrap();
    assert_eq!(view.created_at, shared::json::format_time(&opened));
}

/// A simulated position's chart at its pool's state holds what the position holds, rounded as
/// the position is (up: decision 8), to the unit (issue 61).
#[test]
fn a_simulated_positions_point_holds_its_amounts_to_the_unit() {
    use shared::chart::{simulated_point, PoolPoint, SimulatedSubject};
    use shared::model::{HeldToken, Source};
    let catalog = sample::catalog();
    let now = chrono::DateTime::from_timestamp(1_795_000_100, 0).unwrap();
    let positions = sample::book("alice", &catalog, 40, false);
    let mut checked = 0;
    let sized = |p: &&shared::model::Position| {
        p.source() == Source::Simulated && p.status != shared::model::Status::Pending
    };
    for p in positions.iter().filter(sized) {
        let Ok(valued) = value_position(p, &catalog, now) else {
            continue;
        };
        let pool = catalog.find(p.chain, p.protocol, &p.pool).unwrap();
        let Some(state) = pool.state.clone() else {
            continue;
        };
        let held = |t: &shared::catalog::Token| HeldToken {
            symbol: t.symbol.clone(),
            address: t.address.clone(),
            decimals: t.decimals,
        };
        let base_is_token0 = pool.orientation.base_is_token0;
        let tokens = if base_is_token0 {
            [held(&pool.token_a), held(&pool.token_b)]
        } else {
            [held(&pool.token_b), held(&pool.token_a)]
        };
        let point = PoolPoint {
            time: 1_795_000_000,
            block_time: 1_795_000_000,
            state,
            prices: [None, None],
            unread: None,
            farm: None,
        };
        let subject = SimulatedSubject {
            tokens: &tokens,
            range: (p.tick_lower, p.tick_upper),
            curve: shared::catalog::curve_of(p.protocol),
            liquidity: p.liquidity,
            cost_basis: p.cost_basis_usd.clone(),
            from: 0,
            until: None,
        };
        let figures = simulated_point(&subject, &point, None).unwrap();
        let [a, b] = if base_is_token0 { [0, 1] } else { [1, 0] };
        let view = &valued.view;
        let whole = |t: usize| {
            let units = figures.tokens[t].amount.unwrap();
            shared::json::plain_exact(&shared::math::price::base_units_to_decimal(
                units,
                tokens[t].decimals,
            ))
        };
        assert_eq!(whole(a), view.token_a.amount, "{}", p.id);
        assert_eq!(whole(b), view.token_b.amount, "{}", p.id);
        checked += 1;
    }
    assert!(checked >= 5, "{checked}");
}
