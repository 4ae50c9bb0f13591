//! The portfolio use case: an owner's reads (one call to the store, which reads them in as few
//! requests as it can) valued as `GET /positions` values each position.

use crate::application::app::App;
use crate::application::charts::portfolio_changes;
use crate::application::error::Outcome;
use crate::domain::holdings::with_closed_wallet_positions;
use crate::domain::portfolio::{portfolio, PortfolioView};

/// The overview of `owner`'s open positions and the realized totals of the closed ones (their
/// wallet positions closed on chain among them, valued at read): one read pass. `changes`
/// adds the changes over a day, a week and a month (their reads grow with the wallet
/// positions: `docs/figures/portfolio.md`).
pub async fn portfolio_of(app: &App, owner: &str, changes: bool) -> Outcome<PortfolioView> {
    let (inputs, catalog) = tokio::try_join!(app.store.portfolio_inputs(owner), async {
        app.market.catalog().await
    },)?;
    let realized = with_closed_wallet_positions(inputs.realized, &inputs.closed_on_chain, &catalog);
    let mut view = portfolio(&inputs.open, &realized, &catalog, app.clock.now())?;
    if !changes {
        return Ok(view);
    }
    let shown = view.changes.insert(Default::default());
    // The changes from the same reads: the positions, open and closed on chain, and the catalog.
    // Reads that fail leave them null and the rest of the portfolio answered.
    let positions = inputs.open.into_iter().chain(inputs.closed_on_chain);
    match portfolio_changes(app, owner, positions.collect(), &catalog).await {
        Ok(changes) => {
            for (label, change) in changes {
                match label {
                    "1d" => shown.day = change,
                    "7d" => shown.week = change,
                    _ => shown.month = change,
                }
            }
        }
        Err(e) => tracing::warn!(cause = %e, "the portfolio's changes were not read"),
    }
    Ok(view)
}
