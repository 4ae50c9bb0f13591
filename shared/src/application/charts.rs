//! The chart use cases (decision 66): a position's, the portfolio's and a pool's figures at the
//! series' boundaries, and the portfolio's changes. Nothing is written: a position's figures at
//! a boundary are computed from its stored events and its pool's shared point there.
//! Costs: the position(s), the caller's wallets (one `Query`: a transfer between two of them
//! starts no new count), one history `Query` per wallet position, one `Query` per pool and tier
//! read (see `docs/figures/charts.md`).

use crate::application::app::App;
use crate::application::error::{Outcome, UseCaseError};
use crate::application::READS_AT_ONCE;
use crate::domain::catalog::{curve_of, Catalog, Pool, Token};
use crate::domain::chart::{
    change_view, changes, group_points, pool_point_view, portfolio_point_view, position_point_view,
    simulated_point, sum_whole, wallet_point, ChangeView, ChartView, GroupBy, GroupView,
    GroupedChartView, HandedAt, Period, PointFigures, PoolPoint, PoolPointView, PortfolioPoint,
    PortfolioPointView, PositionPointView, SimulatedSubject, Tier, WalletSubject, DAY,
    FIVE_MINUTES, HOUR,
};
use crate::domain::history::PositionEvent;
use crate::domain::model::{Chain, HeldToken, Position, Status};
use crate::domain::portfolio::token_key;
use crate::domain::wallets::LinkedWallet;
use futures_util::{StreamExt, TryStreamExt};
use std::collections::HashMap;

/// A catalog pool's tokens in protocol order.
fn pool_tokens(pool: &Pool) -> [HeldToken; 2] {
    let held = |t: &Token| HeldToken {
        symbol: t.symbol.clone(),
        address: t.address.clone(),
        decimals: t.decimals,
    };
    let (a, b) = (held(&pool.token_a), held(&pool.token_b));
    if pool.orientation.base_is_token0 {
        [a, b]
    } else {
        [b, a]
    }
}

/// A position's tokens (protocol order) and whether tokenA is token0.
fn tokens_of(position: &Position, catalog: &Catalog) -> Option<([HeldToken; 2], bool)> {
    let pool = catalog.find(position.chain, position.protocol, &position.pool);
    let base_is_token0 = pool.is_none_or(|p| p.orientation.base_is_token0);
    match position.holding.as_deref() {
        Some(holding) => Some((holding.tokens.clone(), base_is_token0)),
        None => Some((pool_tokens(pool?), base_is_token0)),
    }
}

/// When the position's chart starts: its holder's count, else its creation.
fn start_of(position: &Position) -> i64 {
    let counted = position
        .holding
        .as_deref()
        .and_then(|h| h.history.as_ref()?.first_time)
        .and_then(|t| i64::try_from(t).ok());
    counted.unwrap_or(position.created_at.timestamp())
}

/// One position and what its figures are computed from.
struct Charted {
    position: Position,
    tokens: [HeldToken; 2],
    base_is_token0: bool,
    events: Vec<PositionEvent>,
    /// Its owner's wallets on its chain, lower case.
    own: Vec<String>,
    /// A simulated position's first point after it was sized: what its fees count from.
    first: Option<PoolPoint>,
    /// A wallet position's reads at the transfers that start and end its count.
    handed: HandedAt,
}

impl Charted {
    async fn read(
        app: &App,
        position: Position,
        catalog: &Catalog,
        wallets: &[LinkedWallet],
    ) -> Outcome<Option<Charted>> {
        let Some((tokens, base_is_token0)) = tokens_of(&position, catalog) else {
            return Ok(None);
        };
        let events = match position.holding {
            Some(_) => {
                app.history
                    .history_page(&position.owner, &position.id, 0, u64::MAX)
                    .await?
            }
            None => Vec::new(),
        };
        let own = wallets
            .iter()
            .filter(|w| w.chain == position.chain)
            .map(|w| w.address.to_ascii_lowercase())
            .collect();
        let first = first_point(app, &position).await?;
        let history = position.holding.as_deref().and_then(|h| h.history.as_ref());
        let handed = HandedAt::of(history);
        Ok(Some(Charted {
            position,
            tokens,
            base_is_token0,
            events,
            own,
            first,
            handed,
        }))
    }

    /// Its figures at each of `points` (its pool's, aligned with the chart's times).
    fn figures(&self, points: &[Option<&PoolPoint>]) -> Vec<Option<PointFigures>> {
        let p = &self.position;
        let range = (p.tick_lower, p.tick_upper);
        let curve = curve_of(p.protocol);
        let at = |point: &PoolPoint| match p.holding.as_deref() {
            Some(holding) => wallet_point(
                &WalletSubject {
                    events: &self.events,
                    wallet: &holding.wallet,
                    own: &self.own,
                    tokens: &self.tokens,
                    range,
                    curve,
                    whole: holding.history.as_ref().is_some_and(|h| h.complete),
                    handed: self.handed,
                    token: &holding.token,
                    reward_decimals: holding.staked.as_ref().map(|s| s.reward_token.decimals),
                    gauged: p.protocol.is_slipstream(),
                },
                point,
            ),
            None => {
                let from = p.activated_at?.timestamp();
                simulated_point(
                    &SimulatedSubject {
                        tokens: &self.tokens,
                        range,
                        curve,
                        liquidity: p.liquidity,
                        cost_basis: p.cost_basis_usd.clone(),
                        from,
                        until: p.closing.as_ref().map(|c| c.closed_at.timestamp()),
                    },
                    point,
                    self.first.as_ref(),
                )
            }
        };
        points.iter().map(|point| point.and_then(at)).collect()
    }
}

/// The points of each pool the positions are on, at `times` (`tiers` holding them).
async fn pool_points(
    app: &App,
    positions: &[Charted],
    times: &[i64],
    tiers: &[Tier],
) -> Outcome<HashMap<(Chain, String), Vec<PoolPoint>>> {
    let mut points = HashMap::new();
    let (Some(first), Some(last)) = (times.first(), times.last()) else {
        return Ok(points);
    };
    let mut reads = Vec::new();
    for c in positions {
        let key = (c.position.chain, c.position.pool.to_ascii_lowercase());
        if points.contains_key(&key) || c.position.chain == Chain::Solana {
            continue;
        }
        points.insert(key.clone(), Vec::new());
        let read = app
            .series
            .points(c.position.chain, &c.position.pool, (*first, *last), tiers);
        reads.push(async move { read.await.map(|read| (key, read)) });
    }
    // A few pools at a time.
    let read: Vec<_> = futures_util::stream::iter(reads)
        .buffer_unordered(READS_AT_ONCE)
        .try_collect()
        .await?;
    points.extend(read);
    Ok(points)
}

/// Each of `times`' point of the position's pool, where there is one.
fn aligned<'a>(
    points: &'a HashMap<(Chain, String), Vec<PoolPoint>>,
    position: &Position,
    times: &[i64],
) -> Vec<Option<&'a PoolPoint>> {
    let key = (position.chain, position.pool.to_ascii_lowercase());
    let pool = points.get(&key);
    times
        .iter()
        .map(|t| pool.and_then(|p| p.iter().find(|p| p.time == *t)))
        .collect()
}

/// A simulated position's first point after it was sized: what its fees count from (one
/// `Query`; none for a wallet position).
async fn first_point(app: &App, p: &Position) -> Outcome<Option<PoolPoint>> {
    let Some(from) = p.activated_at.filter(|_| p.holding.is_none()) else {
        return Ok(None);
    };
    let from = from.timestamp();
    let points = app
        .series
        .points(p.chain, &p.pool, (from, from + DAY), &Tier::ALL)
        .await?;
    Ok(points.into_iter().next())
}

/// `GET /positions/{id}/chart`.
pub async fn position_chart(
    app: &App,
    owner: &str,
    id: &str,
    period: Period,
) -> Outcome<ChartView<PositionPointView>> {
    let (position, catalog) = app.own_position(owner, id).await?;
    let now = app.clock.now().timestamp();
    let (interval, times) = period.boundaries(now, Some(start_of(&position)));
    // A simulated position whose pool left the catalog has nothing to chart.
    // The owner's wallets tell a transfer between two of them (a wallet position's only).
    let wallets = match position.holding {
        Some(_) => app.wallets.wallets(owner).await?,
        None => Vec::new(),
    };
    let Some(charted) = Charted::read(app, position, &catalog, &wallets).await? else {
        return Ok(ChartView {
            period,
            interval_seconds: interval,
            points: Vec::new(),
        });
    };
    let charted = [charted];
    let points = pool_points(app, &charted, &times, Tier::holding(interval)).await?;
    let c = &charted[0];
    let figures = c.figures(&aligned(&points, &c.position, &times));
    Ok(ChartView {
        period,
        interval_seconds: interval,
        points: figures
            .iter()
            .flatten()
            .map(|f| position_point_view(f, &c.tokens, c.base_is_token0))
            .collect(),
    })
}

/// The positions that have figures over time (not pending), each with its events.
async fn book(
    app: &App,
    positions: Vec<Position>,
    catalog: &Catalog,
    wallets: &[LinkedWallet],
) -> Outcome<Vec<Charted>> {
    // Each position's reads (its history or first point), a few at a time.
    let mut reads = Vec::with_capacity(positions.len());
    for position in positions {
        if position.status != Status::Pending {
            reads.push(Charted::read(app, position, catalog, wallets));
        }
    }
    let read: Vec<Option<Charted>> = futures_util::stream::iter(reads)
        .buffered(READS_AT_ONCE)
        .try_collect()
        .await?;
    Ok(read.into_iter().flatten().collect())
}

/// Each position's figures at `times`, from `points` (its pool's, as read).
fn figures_at(
    book: &[Charted],
    points: &HashMap<(Chain, String), Vec<PoolPoint>>,
    times: &[i64],
) -> Vec<Vec<Option<PointFigures>>> {
    book.iter()
        .map(|c| c.figures(&aligned(points, &c.position, times)))
        .collect()
}

/// What `GET /portfolio/chart` answers: one series, or one per group.
pub enum PortfolioChart {
    Whole(ChartView<PortfolioPointView>),
    Grouped(GroupedChartView),
}

/// `GET /portfolio/chart`.
pub async fn portfolio_chart(
    app: &App,
    owner: &str,
    period: Period,
    group_by: Option<GroupBy>,
) -> Outcome<PortfolioChart> {
    let (inputs, catalog, wallets) = tokio::try_join!(
        app.store.portfolio_inputs(owner),
        app.market.catalog(),
        app.wallets.wallets(owner)
    )?;
    let positions = inputs.open.into_iter().chain(inputs.closed_on_chain);
    let book = book(app, positions.collect(), &catalog, &wallets).await?;
    let now = app.clock.now().timestamp();
    let since = book.iter().map(|c| start_of(&c.position)).min();
    let (interval, times) = period.boundaries(now, since);
    let points = pool_points(app, &book, &times, Tier::holding(interval)).await?;
    let figures = figures_at(&book, &points, &times);
    let Some(by) = group_by else {
        let points = sum_whole(&times, &figures);
        return Ok(PortfolioChart::Whole(ChartView {
            period,
            interval_seconds: interval,
            points: shown(&points).map(portfolio_point_view).collect(),
        }));
    };
    // An asset is its chain and address, as the portfolio's assets are: a look-alike symbol
    // is another asset.
    let mut assets: HashMap<String, (Chain, &HeldToken)> = HashMap::new();
    let keyed: Vec<_> = book
        .iter()
        .zip(figures)
        .map(|(c, f)| {
            let key = match by {
                GroupBy::Chain => c.position.chain.as_str().to_string(),
                _ => c.position.protocol.as_str().to_string(),
            };
            let chain = c.position.chain;
            let asset = |t: &HeldToken| {
                let (chain, address) = token_key(chain, &t.address);
                format!("{chain}:{address}")
            };
            for t in &c.tokens {
                assets.entry(asset(t)).or_insert((chain, t));
            }
            (f, [asset(&c.tokens[0]), asset(&c.tokens[1])], key)
        })
        .collect();
    let groups = group_points(&times, &keyed, by)
        .into_iter()
        .map(|g| {
            let token = assets.get(&g.key).filter(|_| by == GroupBy::Asset);
            GroupView {
                points: shown(&g.points).map(portfolio_point_view).collect(),
                symbol: token.map(|(_, t)| t.symbol.clone()),
                chain: token.map(|(chain, _)| *chain),
                address: token.map(|(_, t)| t.address.clone()),
                key: g.key,
            }
        })
        .collect();
    Ok(PortfolioChart::Grouped(GroupedChartView {
        period,
        interval_seconds: interval,
        group_by: by,
        groups,
    }))
}

/// The points where some position was counted.
fn shown(points: &[PortfolioPoint]) -> impl Iterator<Item = &PortfolioPoint> {
    points.iter().filter(|p| p.positions > 0)
}

/// The changes over the last day, week and month (`GET /portfolio`'s `changes`) of `positions`
/// (the portfolio's, as it read them): from the latest 5-minute boundary of the last two hours
/// every counted pool has a point at, against the point a day before it and the hourly points a
/// week and a month before (the 5-minute ones are not kept that long). `None` for a period the
/// series does not reach back to. Reads the caller's wallets, each wallet position's history,
/// and per pool one `Query` per tier of the last two hours and one per period.
pub async fn portfolio_changes(
    app: &App,
    owner: &str,
    positions: Vec<Position>,
    catalog: &Catalog,
) -> Outcome<Vec<(&'static str, Option<ChangeView>)>> {
    let wallets = app.wallets.wallets(owner).await?;
    let book = book(app, positions, catalog, &wallets).await?;
    let now = app.clock.now().timestamp();
    let latest = now.div_euclid(FIVE_MINUTES) * FIVE_MINUTES;
    let recent: Vec<i64> = (0..24).rev().map(|i| latest - i * FIVE_MINUTES).collect();
    let points = pool_points(app, &book, &recent, &Tier::ALL).await?;
    let to =
        recent.iter().rev().copied().find(|t| {
            points.values().all(|p| p.iter().any(|p| p.time == *t)) && !points.is_empty()
        });
    let Some(to) = to else {
        return Ok(["1d", "7d", "30d"].into_iter().map(|l| (l, None)).collect());
    };
    let now_point = sum_whole(&[to], &figures_at(&book, &points, &[to])).remove(0);
    let hour = |t: i64| t.div_euclid(HOUR) * HOUR;
    let periods = [
        ("1d", to - DAY),
        ("7d", hour(to - 7 * DAY)),
        ("30d", hour(to - 30 * DAY)),
    ];
    let mut sums = Vec::new();
    for (_, t) in &periods {
        // One boundary: only its own tier holds it.
        let points = pool_points(app, &book, &[*t], &[Tier::of(*t)]).await?;
        sums.push(sum_whole(&[*t], &figures_at(&book, &points, &[*t])).remove(0));
    }
    let then: Vec<(&'static str, Option<&PortfolioPoint>)> = periods
        .iter()
        .zip(&sums)
        .map(|((label, _), p)| (*label, (p.positions > 0).then_some(p)))
        .collect();
    Ok(changes((&now_point.value, &now_point.pnl), &then)
        .into_iter()
        .zip(&periods)
        .map(|((label, change), (_, from))| (label, change.map(|c| change_view(&c, (*from, to)))))
        .collect())
}

/// `GET /pools/{chain}/{pool}/chart`: the shared series as stored.
pub async fn pool_chart(
    app: &App,
    chain: Chain,
    pool: &str,
    period: Period,
) -> Outcome<ChartView<PoolPointView>> {
    let catalog = app.market.catalog().await?;
    let found: Option<&Pool> = catalog
        .pools
        .iter()
        .find(|p| p.chain == chain && p.is_named(pool));
    let Some(found) = found else {
        return Err(UseCaseError::NotFound("pool not found".into()));
    };
    let now = app.clock.now().timestamp();
    let (interval, times) = period.boundaries(now, None);
    let (first, last) = (times[0], times[times.len() - 1]);
    let points = app
        .series
        .points(chain, &found.id, (first, last), Tier::holding(interval))
        .await?;
    let tokens = pool_tokens(found);
    Ok(ChartView {
        period,
        interval_seconds: interval,
        points: points
            .iter()
            .filter(|p| (p.time - first) % interval == 0 && p.unread.is_none())
            .map(|p| pool_point_view(p, &tokens, &found.orientation))
            .collect(),
    })
}
