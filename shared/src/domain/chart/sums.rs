//! The portfolio over time: its positions' points summed per boundary (a position with no
//! price at a point is counted apart, never as zero), in groups by asset, chain or protocol,
//! and the changes over the last day, week and month.

use super::position::PointFigures;
use bigdecimal::{BigDecimal, Zero};
use serde::{Deserialize, Serialize};

named_enum!(
    /// How a portfolio chart splits its series.
    GroupBy {
        Asset => "asset",
        Chain => "chain",
        Protocol => "protocol",
    }
);

/// The portfolio's figures at one boundary.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PortfolioPoint {
    pub time: i64,
    pub value: BigDecimal,
    pub pnl: BigDecimal,
    pub fees_earned: BigDecimal,
    pub rewards: BigDecimal,
    pub net_deposits: BigDecimal,
    /// Positions counted at this boundary, and those of them left out for want of a figure.
    pub positions: u64,
    pub unpriced: u64,
    pub exact: bool,
    pub reasons: Vec<String>,
}

/// One position's part of a sum: all its figures, or those of one of its tokens.
pub struct Part {
    pub value: Option<BigDecimal>,
    pub pnl: Option<BigDecimal>,
    pub fees_earned: Option<BigDecimal>,
    pub rewards: Option<BigDecimal>,
    pub net_deposits: Option<BigDecimal>,
}

impl Part {
    pub fn whole(f: &PointFigures) -> Part {
        Part {
            value: f.value(),
            pnl: f.pnl(),
            fees_earned: f.fees_earned(),
            rewards: f.rewards.clone(),
            net_deposits: f.net_deposits(),
        }
    }

    /// One token's share (rewards are the position's, not a token's: none).
    pub fn token(f: &PointFigures, t: usize) -> Part {
        let token = &f.tokens[t];
        let net = token
            .deposited
            .clone()
            .zip(token.taken_out.clone())
            .map(|(d, o)| d - o);
        Part {
            value: token.value.clone(),
            pnl: token.value.clone().zip(net.clone()).map(|(v, n)| v - n),
            fees_earned: token.fees_earned.clone(),
            rewards: Some(BigDecimal::zero()),
            net_deposits: net,
        }
    }
}

/// Sums `parts` at each of `times` (each series aligned with `times`: a part where the
/// position has a point then).
pub fn sum_points(
    times: &[i64],
    parts: &[Vec<Option<(Part, &PointFigures)>>],
) -> Vec<PortfolioPoint> {
    times
        .iter()
        .enumerate()
        .map(|(i, time)| {
            let mut point = PortfolioPoint {
                time: *time,
                exact: true,
                ..PortfolioPoint::default()
            };
            for series in parts {
                let Some(Some((part, figures))) = series.get(i) else {
                    continue;
                };
                point.positions += 1;
                let all = (|| {
                    Some((
                        part.value.clone()?,
                        part.pnl.clone()?,
                        part.fees_earned.clone()?,
                        part.rewards.clone()?,
                        part.net_deposits.clone()?,
                    ))
                })();
                match all {
                    Some((v, p, f, r, n)) => {
                        point.value += v;
                        point.pnl += p;
                        point.fees_earned += f;
                        point.rewards += r;
                        point.net_deposits += n;
                    }
                    None => point.unpriced += 1,
                }
                if !figures.exact {
                    point.exact = false;
                    if let Some(why) = &figures.reason {
                        if !point.reasons.contains(why) {
                            point.reasons.push(why.clone());
                        }
                    }
                }
            }
            point
        })
        .collect()
}

/// Each position's whole figures (aligned with `times`) summed at each time.
pub fn sum_whole(times: &[i64], figures: &[Vec<Option<PointFigures>>]) -> Vec<PortfolioPoint> {
    let parts: Vec<Vec<_>> = figures.iter().map(|f| aligned(f, Part::whole)).collect();
    sum_points(times, &parts)
}

/// A group's series.
pub struct Group {
    pub key: String,
    pub points: Vec<PortfolioPoint>,
}

/// A position's figures at a chart's times (`None` where it has no point), its tokens' assets
/// (each its chain and address: one symbol can name many tokens) and its chain's or protocol's
/// key.
pub type Keyed = (Vec<Option<PointFigures>>, [String; 2], String);

/// Each position's figures at `times` (aligned: `None` where it has no point), with the keys of
/// the groups it belongs to, summed per group: a position's tokens split across assets (each
/// token's own value, fees and PnL), its whole to its chain or protocol.
pub fn group_points(times: &[i64], positions: &[Keyed], by: GroupBy) -> Vec<Group> {
    let mut keys: Vec<String> = Vec::new();
    for (_, assets, key) in positions {
        let own: Vec<&String> = match by {
            GroupBy::Asset => assets.iter().collect(),
            GroupBy::Chain | GroupBy::Protocol => vec![key],
        };
        for k in own {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys.sort();
    keys.into_iter()
        .map(|group| {
            let mut parts: Vec<Vec<Option<(Part, &PointFigures)>>> = Vec::new();
            for (figures, assets, key) in positions {
                let shares: Vec<Option<usize>> = match by {
                    GroupBy::Asset => (0..2).filter(|t| assets[*t] == group).map(Some).collect(),
                    _ if *key == group => vec![None],
                    _ => Vec::new(),
                };
                for share in shares {
                    parts.push(aligned(figures, |f| match share {
                        Some(t) => Part::token(f, t),
                        None => Part::whole(f),
                    }));
                }
            }
            Group {
                points: sum_points(times, &parts),
                key: group,
            }
        })
        .collect()
}

/// Each time's part, where the position has a point then.
fn aligned(
    figures: &[Option<PointFigures>],
    part: impl Fn(&PointFigures) -> Part,
) -> Vec<Option<(Part, &PointFigures)>> {
    figures
        .iter()
        .map(|f| f.as_ref().map(|f| (part(f), f)))
        .collect()
}

/// A change over a period: the value's, in USD and percent, and the PnL's (what is not
/// deposits or withdrawals).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub value: BigDecimal,
    pub percent: Option<BigDecimal>,
    pub pnl: BigDecimal,
}

/// The change from `then` (the point that period ago) to `now` (value, PnL).
pub fn changes(
    now: (&BigDecimal, &BigDecimal),
    then: &[(&'static str, Option<&PortfolioPoint>)],
) -> Vec<(&'static str, Option<Change>)> {
    then.iter()
        .map(|(label, point)| {
            let change = point.map(|p| {
                let value = now.0 - &p.value;
                Change {
                    percent: (!p.value.is_zero())
                        .then(|| &value * BigDecimal::from(100) / &p.value),
                    value,
                    pnl: now.1 - &p.pnl,
                }
            });
            (*label, change)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::chart::position::TokenFigures;
    use std::str::FromStr;

    fn d(text: &str) -> BigDecimal {
        BigDecimal::from_str(text).unwrap()
    }

    /// A position at `time` worth `values` per token, with `deposited` per token and nothing
    /// taken out.
    fn at(time: i64, values: [&str; 2], deposited: [&str; 2]) -> PointFigures {
        let token = |t: usize| TokenFigures {
            value: Some(d(values[t])),
            fees_earned: Some(d("1")),
            deposited: Some(d(deposited[t])),
            withdrawn: Some(d("0")),
            taken_out: Some(d("0")),
            ..TokenFigures::default()
        };
        PointFigures {
            time,
            block: 1,
            block_time: time,
            tokens: [token(0), token(1)],
            liquidity: 1,
            in_range: true,
            rewards: Some(d("0")),
            exact: true,
            reason: None,
        }
    }

    #[test]
    fn a_position_without_a_figure_is_counted_apart_never_as_zero() {
        let mut unpriced = at(0, ["1", "1"], ["1", "1"]);
        unpriced.tokens[1].value = None;
        unpriced.exact = false;
        unpriced.reason = Some("a token had no USD price at the point".into());
        let priced = at(0, ["10", "20"], ["15", "10"]);
        let parts = vec![
            vec![Some((Part::whole(&priced), &priced))],
            vec![Some((Part::whole(&unpriced), &unpriced))],
        ];
        let sum = sum_points(&[0], &parts).remove(0);
        assert_eq!((sum.positions, sum.unpriced), (2, 1));
        assert_eq!(sum.value, d("30"));
        assert_eq!(sum.pnl, d("5"));
        assert_eq!(sum.net_deposits, d("25"));
        assert!(!sum.exact && sum.reasons.len() == 1);
    }

    #[test]
    fn by_asset_each_token_keeps_its_own_share_and_the_shares_add_up() {
        let weth_usdc = at(0, ["10", "20"], ["15", "10"]);
        let weth_dai = at(0, ["5", "7"], ["5", "8"]);
        let positions: Vec<Keyed> = vec![
            (
                vec![Some(weth_usdc)],
                ["base:weth".into(), "base:usdc".into()],
                "ethereum".into(),
            ),
            (
                vec![Some(weth_dai)],
                ["base:weth".into(), "base:dai".into()],
                "base".into(),
            ),
        ];
        let groups = group_points(&[0], &positions, GroupBy::Asset);
        let keys: Vec<&str> = groups.iter().map(|g| g.key.as_str()).collect();
        assert_eq!(keys, ["base:dai", "base:usdc", "base:weth"]);
        let weth = &groups[2].points[0];
        assert_eq!((weth.value.clone(), weth.pnl.clone()), (d("15"), d("-5")));
        assert_eq!(weth.positions, 2);
        let total: BigDecimal = groups.iter().map(|g| g.points[0].pnl.clone()).sum();
        assert_eq!(total, d("4"), "the assets' PnL adds up to the positions'");
        let chains = group_points(&[0], &positions, GroupBy::Chain);
        assert_eq!(chains.len(), 2);
        assert_eq!(chains[0].key, "base");
        assert_eq!(chains[0].points[0].value, d("12"));
    }

    #[test]
    fn a_change_counts_deposits_out_of_the_pnl() {
        let then = PortfolioPoint {
            value: d("100"),
            pnl: d("10"),
            positions: 1,
            ..PortfolioPoint::default()
        };
        // A deposit of 50 and a gain of 5 since: the value moved 55, the PnL 5.
        let moved = changes((&d("155"), &d("15")), &[("1d", Some(&then)), ("7d", None)]);
        let day = moved[0].1.clone().unwrap();
        assert_eq!((day.value, day.pnl), (d("55"), d("5")));
        assert_eq!(day.percent, Some(d("55")));
        assert!(moved[1].1.is_none());
        let from_nothing = PortfolioPoint::default();
        let fresh = changes((&d("1"), &d("0")), &[("1d", Some(&from_nothing))]);
        assert_eq!(fresh[0].1.clone().unwrap().percent, None, "no percent of 0");
    }
}
