//! A position's figures at one pool point, computed at read (no per-user writes): a wallet
//! position's from its events up to the point's block (liquidity, the ledger, and what its
//! manager kept at its last event's block) and the point's state and prices; a simulated one's
//! from its own liquidity. The formulas are the position's (decisions 28, 44, 58–60).

use super::series::PoolPoint;
use crate::domain::history::{
    count_end, count_start, counted_for, summarize, units, EventKind, Handovers, HistorySummary,
    Kept, PositionEvent,
};
use crate::domain::market::TickState;
use crate::domain::math::fees::{BoundTick, FeeAccounting};
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::{Curve, U256};
use crate::domain::model::HeldToken;
use bigdecimal::{BigDecimal, Zero};
use std::str::FromStr;

/// What a wallet position's points are computed from.
pub struct WalletSubject<'a> {
    /// Every stored event, chain order.
    pub events: &'a [PositionEvent],
    pub wallet: &'a str,
    /// Every wallet of its owner on its chain (lower case): a transfer between two of them
    /// moves no token and starts no new count.
    pub own: &'a [String],
    pub tokens: &'a [HeldToken; 2],
    pub range: (i32, i32),
    pub curve: Curve,
    /// Its history was read from its mint, nothing left unread.
    pub whole: bool,
    /// What it held at the transfers that start and end its count, as its summed history read
    /// them.
    pub handed: HandedAt,
    /// Its token id, and its farm's reward token's decimals where it was ever staked.
    pub token: &'a str,
    pub reward_decimals: Option<u8>,
    /// Aerodrome Slipstream: while staked in its gauge it earns no swap fees (decision 71).
    pub gauged: bool,
}

/// What a wallet position held at the transfers that start and end its holder's count, as its
/// summed history read them, and those transfers' blocks: parsed once per position, not per
/// point.
#[derive(Debug, Clone, Copy, Default)]
pub struct HandedAt {
    pub handed: Handovers,
    pub arrival_block: Option<u64>,
    pub departure_block: Option<u64>,
}

impl HandedAt {
    pub fn of(history: Option<&HistorySummary>) -> HandedAt {
        HandedAt {
            handed: history.map(HistorySummary::handovers).unwrap_or_default(),
            arrival_block: history.and_then(|h| h.counted_from),
            departure_block: history.and_then(|h| h.departure.as_ref().map(|d| d.block)),
        }
    }
}

/// What a simulated position's points are computed from.
pub struct SimulatedSubject<'a> {
    pub tokens: &'a [HeldToken; 2],
    pub range: (i32, i32),
    pub curve: Curve,
    pub liquidity: u128,
    pub cost_basis: BigDecimal,
    /// Sized at, closed at (unix seconds).
    pub from: i64,
    pub until: Option<i64>,
}

/// One token's figures at a point (USD `None` without a price).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TokenFigures {
    /// Principal held, base units (`None` at a point whose state was not read).
    pub amount: Option<U256>,
    /// Fees owed and not collected, base units (`None` where not known).
    pub fees_unclaimed: Option<U256>,
    /// Principal and all that `collect` would pay, in USD.
    pub value: Option<BigDecimal>,
    pub fees_earned: Option<BigDecimal>,
    pub deposited: Option<BigDecimal>,
    pub withdrawn: Option<BigDecimal>,
    /// What left it (withdrawn principal and collected fees at their prices), less the
    /// withdrawn principal still owed (in `value`): counted once.
    pub taken_out: Option<BigDecimal>,
    /// What was deposited and not withdrawn, at the point's prices ("held instead").
    pub held_instead: Option<BigDecimal>,
}

/// A position's figures at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct PointFigures {
    pub time: i64,
    pub block: u64,
    pub block_time: i64,
    /// Protocol order.
    pub tokens: [TokenFigures; 2],
    pub liquidity: u128,
    pub in_range: bool,
    pub rewards: Option<BigDecimal>,
    pub exact: bool,
    pub reason: Option<String>,
}

fn sum(values: [&Option<BigDecimal>; 2]) -> Option<BigDecimal> {
    Some(values[0].as_ref()? + values[1].as_ref()?)
}

impl PointFigures {
    pub fn value(&self) -> Option<BigDecimal> {
        sum([&self.tokens[0].value, &self.tokens[1].value])
    }
    pub fn fees_earned(&self) -> Option<BigDecimal> {
        sum([&self.tokens[0].fees_earned, &self.tokens[1].fees_earned])
    }
    pub fn deposited(&self) -> Option<BigDecimal> {
        sum([&self.tokens[0].deposited, &self.tokens[1].deposited])
    }
    pub fn withdrawn(&self) -> Option<BigDecimal> {
        sum([&self.tokens[0].withdrawn, &self.tokens[1].withdrawn])
    }
    pub fn held_instead(&self) -> Option<BigDecimal> {
        sum([&self.tokens[0].held_instead, &self.tokens[1].held_instead])
    }
    /// Deposits less what was taken out: a deposit moves it and the value alike.
    pub fn net_deposits(&self) -> Option<BigDecimal> {
        let out = sum([&self.tokens[0].taken_out, &self.tokens[1].taken_out])?;
        Some(self.deposited()? - out)
    }
    /// `value + taken out − deposited + rewards`: the position's PnL at the point.
    pub fn pnl(&self) -> Option<BigDecimal> {
        Some(self.value()? - self.net_deposits()? + self.rewards.as_ref()?)
    }
}

fn usd(amount: U256, decimals: u8, price: &Option<BigDecimal>) -> Option<BigDecimal> {
    price
        .as_ref()
        .map(|p| base_units_to_decimal(amount, decimals) * p)
}

fn parsed(texts: &[Option<String>; 2]) -> [Option<BigDecimal>; 2] {
    texts
        .clone()
        .map(|t| t.and_then(|t| BigDecimal::from_str(&t).ok()))
}

/// Fee growth inside the range at the point, as the pool computes it from the ticks' records
/// the point holds; `None` where it holds no record of one.
fn growth_inside(
    point: &PoolPoint,
    accounting: FeeAccounting,
    range: (i32, i32),
) -> Option<[U256; 2]> {
    let state = &point.state;
    let tick = |t: i32| state.ticks.iter().find(|r| r.tick == t);
    let (lower, upper) = (tick(range.0)?, tick(range.1)?);
    let bound = |r: &TickState, i: usize| BoundTick {
        tick: r.tick,
        initialized: r.initialized,
        outside: [r.fee_growth_outside0, r.fee_growth_outside1][i],
    };
    let global = [state.fee_growth_global0, state.fee_growth_global1];
    Some(
        [0, 1].map(|i| {
            accounting.growth_inside(state.tick, global[i], bound(lower, i), bound(upper, i))
        }),
    )
}

/// What `liquidity` holds in `range` at the point's price, rounded up or down.
fn principal(
    point: &PoolPoint,
    curve: Curve,
    range: (i32, i32),
    (liquidity, round_up): (u128, bool),
) -> Option<[U256; 2]> {
    let held = curve
        .amounts_for_liquidity(
            point.state.sqrt_price,
            curve.sqrt_price_at_tick(range.0).ok()?,
            curve.sqrt_price_at_tick(range.1).ok()?,
            liquidity,
            round_up,
        )
        .ok()?;
    Some([held.amount0, held.amount1])
}

/// A point whose pool state was not read: every figure `None`, with why.
fn unread(point: &PoolPoint, why: &str) -> PointFigures {
    PointFigures {
        time: point.time,
        block: point.block(),
        block_time: point.block_time,
        tokens: Default::default(),
        liquidity: 0,
        in_range: false,
        rewards: None,
        exact: false,
        reason: Some(why.to_string()),
    }
}

/// A wallet position's figures at `point`, for its owner: `None` before one of the owner's
/// wallets had it. After a burn, or a transfer to another than the owner's wallets, its
/// figures stand: nothing held, what it paid out (and, sent away, all it held then at that
/// block's prices) counted.
pub fn wallet_point(subject: &WalletSubject<'_>, point: &PoolPoint) -> Option<PointFigures> {
    let block = point.block();
    // Transfers between the owner's own wallets are no arrival: the count starts where the
    // position came to one of them from elsewhere (its mint, or a stranger's transfer).
    let upto: Vec<PositionEvent> = subject
        .events
        .iter()
        .filter(|e| e.block <= block)
        .cloned()
        .collect();
    let upto = counted_for(&upto, subject.own, subject.wallet);
    let start = count_start(&upto, subject.wallet)?;
    // Sent away: what follows is another holder's, and the figures are those of its departure.
    let end = count_end(&upto, start, subject.wallet);
    let upto = &upto[..=end.unwrap_or(upto.len() - 1)];
    let departed = end.is_some();
    if let Some(why) = point.unread.as_ref().filter(|_| !departed) {
        return Some(unread(point, why));
    }
    // What the summary read at the transfers, where they are these.
    let at = subject.handed;
    let handed = Handovers {
        arrival: at
            .handed
            .arrival
            .filter(|_| at.arrival_block == Some(upto[start].block)),
        departure: at
            .handed
            .departure
            .filter(|_| end.is_some_and(|e| at.departure_block == Some(upto[e].block))),
    };
    let mut reasons: Vec<String> = Vec::new();
    let decimals = subject.tokens.clone().map(|t| t.decimals);
    let summary = summarize(
        upto,
        subject.wallet,
        decimals,
        (block, subject.whole),
        handed,
    );
    if let Some(why) = &summary.reason {
        reasons.push(why.clone());
    }
    if summary.nearest {
        reasons.push("some event's prices are the nearest state's, not its block's".into());
    }
    let liquidity = upto.iter().fold(0u128, |l, e| match e.kind {
        EventKind::Deposit => l.saturating_add(e.liquidity),
        EventKind::Withdraw => l.saturating_sub(e.liquidity),
        _ => l,
    });
    let last = upto.last()?;
    // Nothing held for its holder: burnt, or sent away (all it held counted taken out).
    let burnt = last.kind == EventKind::Burn || departed;
    let liquidity = if departed { 0 } else { liquidity };
    // What the manager kept at the last event's block, and the growth since: what `collect`
    // would pay at the point's block.
    let kept = if burnt {
        Some(Kept::default())
    } else {
        // The latest read, unless an event that changes what the manager keeps came after it.
        let mut found = None;
        for e in upto.iter().rev() {
            if let Some(kept) = &e.kept {
                found = Some(kept.clone());
                break;
            }
            if matches!(
                e.kind,
                EventKind::Deposit | EventKind::Withdraw | EventKind::Collect
            ) {
                break;
            }
        }
        found
    };
    let accounting = FeeAccounting::of(subject.curve);
    // In a Slipstream gauge: no growth since the deposit, whose collect left nothing owed.
    let staking = |e: &&PositionEvent| matches!(e.kind, EventKind::Stake | EventKind::Unstake);
    let last_stake = upto.iter().rev().find(staking);
    let in_gauge = subject.gauged && last_stake.is_some_and(|e| e.kind == EventKind::Stake);
    let owed = match (kept, growth_inside(point, accounting, subject.range)) {
        // Sent away without what it held read: the summary says why.
        _ if departed && handed.departure.is_none() => None,
        (Some(kept), _) if liquidity == 0 || in_gauge => Some(kept.owed),
        (Some(kept), Some(inside)) => Some([0, 1].map(|t| {
            kept.owed[t]
                + U256::from(accounting.collect_owed(liquidity, kept.inside_last[t], inside[t]))
        })),
        (None, _) => {
            reasons.push(format!(
                "what its position manager kept after block {} was not read",
                last.block
            ));
            None
        }
        (Some(_), None) => {
            reasons.push("the pool's point holds no record of its ticks".into());
            None
        }
    };
    // Rounded down, as a withdrawal pays and the position's read holds.
    let held = match departed {
        true => [U256::ZERO; 2],
        false => principal(point, subject.curve, subject.range, (liquidity, false))?,
    };
    let prices = point.prices();
    if !departed && prices.iter().any(Option::is_none) {
        reasons.push("a token had no USD price at the point".into());
    }
    let uncollected = units(&summary.uncollected_principal);
    let collected_usd = parsed(&summary.fees_collected_usd);
    let (deposited_usd, withdrawn_usd) = (
        parsed(&summary.deposited_usd),
        parsed(&summary.withdrawn_usd),
    );
    let deposited = units(&summary.deposited);
    let withdrawn = units(&summary.withdrawn);
    let tokens = [0, 1].map(|t| {
        let d = decimals[t];
        let unclaimed = owed.map(|o| o[t].saturating_sub(uncollected[t]));
        // Sent away, it holds nothing whatever the point's prices.
        let value = match owed {
            Some(_) if departed => Some(BigDecimal::zero()),
            _ => owed.and_then(|o| usd(held[t] + o[t], d, &prices[t])),
        };
        let held_withdrawn = usd(uncollected[t], d, &prices[t]);
        TokenFigures {
            amount: Some(held[t]),
            fees_unclaimed: unclaimed,
            value,
            fees_earned: match unclaimed {
                Some(_) if departed => collected_usd[t].clone(),
                _ => {
                    unclaimed.and_then(|u| Some(collected_usd[t].clone()? + usd(u, d, &prices[t])?))
                }
            },
            deposited: deposited_usd[t].clone(),
            withdrawn: withdrawn_usd[t].clone(),
            taken_out: (|| {
                Some(withdrawn_usd[t].clone()? + collected_usd[t].clone()? - held_withdrawn?)
            })(),
            held_instead: usd(deposited[t].saturating_sub(withdrawn[t]), d, &prices[t]),
        }
    });
    let harvested = summary.rewards_harvested.as_deref();
    let rewards = rewards_at(subject, (&upto[start..], harvested), point, &mut reasons);
    Some(PointFigures {
        time: point.time,
        block,
        block_time: point.block_time,
        tokens,
        liquidity,
        in_range: liquidity > 0
            && subject.range.0 <= point.state.tick
            && point.state.tick < subject.range.1,
        rewards,
        exact: reasons.is_empty(),
        reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
    })
}

/// Decision 60's rewards at the point, in USD at the point's price of the farm's reward token:
/// what its harvests paid since the count's start (`counted`) and, while staked at the point's
/// block, what the farm owed it there (the point's `pendingCake`). Zero for a position its
/// owner never staked; `None`, with why, where a part is not known.
fn rewards_at(
    subject: &WalletSubject<'_>,
    (counted, harvested): (&[PositionEvent], Option<&str>),
    point: &PoolPoint,
    reasons: &mut Vec<String>,
) -> Option<BigDecimal> {
    let farming = [EventKind::Stake, EventKind::Harvest];
    if !counted.iter().any(|e| farming.contains(&e.kind)) {
        return Some(BigDecimal::zero());
    }
    let staking = [EventKind::Stake, EventKind::Unstake, EventKind::Burn];
    let staked = counted
        .iter()
        .rev()
        .find(|e| staking.contains(&e.kind))
        .is_some_and(|e| e.kind == EventKind::Stake);
    let farm = point.farm.as_ref();
    let pending = if staked {
        let owed = farm.and_then(|f| f.pending.get(subject.token));
        let Some(owed) = owed.and_then(|o| U256::from_str(o).ok()) else {
            reasons.push(
                "its farm's pending reward was not recorded at this point (followed from the sync after its stake was read)"
                    .into(),
            );
            return None;
        };
        owed
    } else {
        U256::ZERO
    };
    let total = harvested
        .and_then(|h| U256::from_str(h).ok())
        .unwrap_or_default()
        + pending;
    if total.is_zero() {
        return Some(BigDecimal::zero());
    }
    let price = farm.and_then(|f| f.reward_price.as_deref());
    let (Some(decimals), Some(price)) = (
        subject.reward_decimals,
        price.and_then(|p| BigDecimal::from_str(p).ok()),
    ) else {
        reasons.push("its farm's reward token had no USD price at the point".into());
        return None;
    };
    Some(base_units_to_decimal(total, decimals) * price)
}

/// A simulated position's figures at `point`: its own liquidity's principal at the point's
/// price; its fees from the first point after it was sized (`first`: that point), said so.
/// `None` before it was sized and after its close.
pub fn simulated_point(
    subject: &SimulatedSubject<'_>,
    point: &PoolPoint,
    first: Option<&PoolPoint>,
) -> Option<PointFigures> {
    if point.time < subject.from || subject.until.is_some_and(|u| point.time > u) {
        return None;
    }
    if let Some(why) = &point.unread {
        return Some(unread(point, why));
    }
    // Rounded up, as the position itself is valued (decision 8): the chart's last point is
    // the position's figures to the unit.
    let held = principal(
        point,
        subject.curve,
        subject.range,
        (subject.liquidity, true),
    )?;
    let accounting = FeeAccounting::of(subject.curve);
    let fees = first
        .and_then(|f| growth_inside(f, accounting, subject.range))
        .zip(growth_inside(point, accounting, subject.range))
        .map(|(from, to)| {
            [0, 1].map(|t| U256::from(accounting.fees_owed(subject.liquidity, from[t], to[t])))
        });
    let prices = point.prices();
    let decimals = subject.tokens.clone().map(|t| t.decimals);
    let tokens = [0, 1].map(|t| {
        let d = decimals[t];
        let unclaimed = fees.map(|f| f[t]);
        TokenFigures {
            amount: Some(held[t]),
            fees_unclaimed: unclaimed,
            value: unclaimed.and_then(|u| usd(held[t] + u, d, &prices[t])),
            fees_earned: unclaimed.and_then(|u| usd(u, d, &prices[t])),
            deposited: None,
            withdrawn: Some(BigDecimal::zero()),
            taken_out: Some(BigDecimal::zero()),
            held_instead: None,
        }
    });
    // What each token's deposit was worth is not kept apart: the cost basis counts on token0.
    let mut tokens = tokens;
    tokens[0].deposited = Some(subject.cost_basis.clone());
    tokens[1].deposited = Some(BigDecimal::zero());
    let reason = format!(
        "a simulated position's fees are counted from the first point after it was sized ({})",
        first.map_or(point.time, |f| f.time)
    );
    Some(PointFigures {
        time: point.time,
        block: point.block(),
        block_time: point.block_time,
        tokens,
        liquidity: subject.liquidity,
        in_range: subject.range.0 <= point.state.tick && point.state.tick < subject.range.1,
        rewards: Some(BigDecimal::zero()),
        exact: false,
        reason: Some(reason),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::history::{sample_event, summarize, Handed, Priced};
    use crate::domain::market::{PoolState, TickState};

    const WALLET: &str = "0x00000000000000000000000000000000000000aa";
    const STRANGER: &str = "0x00000000000000000000000000000000000000bb";

    fn event(kind: EventKind, block: u64, (from, to): (&str, &str)) -> PositionEvent {
        PositionEvent {
            from: Some(from.into()),
            to: Some(to.into()),
            timestamp: Some(block * 100),
            prices: [Some(2.into()), Some(1.into())],
            priced: Some(Priced::AtBlock),
            ..sample_event(kind, block, [0, 0])
        }
    }

    fn point(block: u64) -> PoolPoint {
        let tick = |t: i32| TickState {
            tick: t,
            initialized: true,
            fee_growth_outside0: U256::ZERO,
            fee_growth_outside1: U256::ZERO,
        };
        PoolPoint {
            time: block as i64 * 100,
            block_time: block as i64 * 100,
            state: PoolState {
                sqrt_price: Curve::UniswapV3.sqrt_price_at_tick(0).unwrap(),
                tick: 0,
                liquidity: 0,
                fee_growth_global0: U256::ZERO,
                fee_growth_global1: U256::ZERO,
                height: block,
                block_hash: None,
                observed_at: chrono::DateTime::from_timestamp(0, 0).unwrap(),
                ticks: vec![tick(-600), tick(600)],
                balances: None,
                slipstream: None,
            },
            prices: [Some("2".into()), Some("1".into())],
            unread: None,
            farm: None,
        }
    }

    #[test]
    fn a_position_sent_in_then_away_counts_what_it_held_at_both_transfers() {
        use EventKind::*;
        let zero = "0x0000000000000000000000000000000000000000";
        let mut deposit = event(Deposit, 1, (zero, zero));
        (deposit.liquidity, deposit.amounts) = (1_000, [U256::from(100), U256::from(100)]);
        deposit.kept = Some(Kept::default());
        let mut away = event(Transfer, 5, (WALLET, STRANGER));
        away.prices = [Some(3.into()), Some(1.into())];
        let events = [
            event(Mint, 1, (zero, STRANGER)),
            deposit,
            event(Transfer, 3, (STRANGER, WALLET)),
            away,
        ];
        let handed = Handovers {
            arrival: Some(Handed {
                principal: [U256::from(90), U256::from(90)],
                owed: [U256::from(2), U256::ZERO],
            }),
            departure: Some(Handed {
                principal: [U256::from(80), U256::from(100)],
                owed: [U256::from(5), U256::from(5)],
            }),
        };
        let history = summarize(&events, WALLET, [0, 0], (6, true), handed);
        assert!(history.complete, "{history:?}");
        let tokens = ["A", "B"].map(|symbol| HeldToken {
            symbol: symbol.into(),
            address: format!("0x{symbol}"),
            decimals: 0,
        });
        let subject = WalletSubject {
            events: &events,
            wallet: WALLET,
            own: &[],
            tokens: &tokens,
            range: (-600, 600),
            curve: Curve::UniswapV3,
            whole: true,
            handed: HandedAt::of(Some(&history)),
            token: "1",
            reward_decimals: None,
            gauged: false,
        };
        // Held: counted from what it held when it came (92 × 2 + 90 at that block's prices).
        let held = wallet_point(&subject, &point(4)).unwrap();
        assert!(held.exact, "{held:?}");
        assert_eq!(held.deposited(), Some(274.into()));
        // Sent away: nothing held, all it held then taken out at the transfer's prices:
        // 80 × 3 + 100 and fees 5 × 3 + 5, less the 274 it came with.
        let gone = wallet_point(&subject, &point(6)).unwrap();
        assert!(gone.exact, "{gone:?}");
        assert_eq!(gone.value(), Some(BigDecimal::zero()));
        assert_eq!(gone.liquidity, 0);
        assert_eq!(gone.pnl(), Some(86.into()));
        // Before it came: not the holder's.
        assert!(wallet_point(&subject, &point(2)).is_none());
    }
}
