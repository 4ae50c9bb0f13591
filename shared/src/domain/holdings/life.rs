//! A simulated position's life as its history shows it, read like a wallet position's: what
//! its creation deposited (or offers, while pending), when it was sized, and what its close
//! paid out (principal and fees, per token, at the close's prices).

use crate::domain::catalog::Catalog;
use crate::domain::history::{EventTokenView, EventView};
use crate::domain::json::{plain_exact, Usd};
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::U256;
use crate::domain::model::{format_time, Position, Status};
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};

/// The life events of a simulated `position`: `created` (with its deposit and its cost basis),
/// `activated` (when it was sized; its time `null` only for positions stored before it was
/// recorded) and `closed` (what it paid out), from `offset`, at most `limit`.
pub fn life_views(
    position: &Position,
    catalog: &Catalog,
    (offset, limit): (usize, usize),
) -> Vec<EventView> {
    let decimals = catalog
        .find(position.chain, position.protocol, &position.pool)
        .map(|p| [p.token_a.decimals, p.token_b.decimals]);
    let whole =
        |units: U256, t: usize| decimals.map(|d| plain_exact(&base_units_to_decimal(units, d[t])));
    let life = |kind, at: Option<&DateTime<Utc>>| EventView {
        kind,
        block: None,
        time: at.map(format_time),
        transaction_hash: None,
        log_index: None,
        liquidity: None,
        token_a: None,
        token_b: None,
        value_usd: None,
        priced: None,
        reward: None,
    };
    // The deposit's tokens (the offer's while pending); their value is the cost basis, split
    // per token nowhere: per-token USD stays `null`.
    let deposited = position.deposit.and_then(|d| {
        let token = |units: U256, t: usize| {
            whole(units, t).map(|amount| EventTokenView {
                amount,
                value_usd: None,
                principal: None,
                fees: None,
            })
        };
        Some((token(d.a, 0)?, token(d.b, 1)?))
    });
    let mut created = life("created", Some(&position.created_at));
    if let Some((a, b)) = deposited {
        created.token_a = Some(a);
        created.token_b = Some(b);
        created.value_usd = Some(Usd::new(position.cost_basis_usd.clone()));
        created.liquidity = (position.liquidity > 0).then(|| position.liquidity.to_string());
    }
    let mut views = vec![created];
    if position.status != Status::Pending && position.deposit.is_some() {
        views.push(life("activated", position.activated_at.as_ref()));
    }
    if let Some(closing) = &position.closing {
        let mut closed = life("closed", Some(&closing.closed_at));
        let paid = |t: usize, principal: U256, fees: U256, usd: BigDecimal| {
            Some(EventTokenView {
                amount: whole(principal + fees, t)?,
                value_usd: Some(Usd::new(usd)),
                principal: whole(principal, t),
                fees: whole(fees, t),
            })
        };
        let (w, f) = (&closing.withdrawn, &closing.fees);
        closed.token_a = paid(0, w.a, f.a, &closing.value_a + &closing.fees_usd_a);
        closed.token_b = paid(1, w.b, f.b, &closing.value_b + &closing.fees_usd_b);
        closed.value_usd = Some(Usd::new(
            &closing.value_a + &closing.fees_usd_a + &closing.value_b + &closing.fees_usd_b,
        ));
        closed.liquidity = (position.liquidity > 0).then(|| format!("-{}", position.liquidity));
        views.push(closed);
    }
    views.into_iter().skip(offset).take(limit).collect()
}
