//! The portfolio use case: an owner's reads (one call to the store, which reads them in as few
//! requests as it can) valued as `GET /positions` values each position.

use crate::application::app::App;
use crate::application::charts::portfolio_changes;
use crate::application::error::Outcome;
use crate::domain::holdings::with_closed_wallet_positions;
use crate::domain::portfolio::{portfolio, PortfolioView};

/// The overview of `owner`'s open positions and the realized totals of the closed ones (their
/// wallet positions closed on chain among them, valued at read).
pub async fn portfolio_of(app: &App, owner: &str) -> Outcome<PortfolioView> {
    let (inputs, catalog) = tokio::try_join!(app.store.portfolio_inputs(owner), async {
        app.market.catalog().await
    },)?;
    let realized = with_closed_wallet_positions(inputs.realized, &inputs.closed_on_chain, &catalog);
    let mut view = portfolio(&inputs.open, &realized, &catalog, app.clock.now())?;
    // The changes from the same reads: the positions, open and closed on chain, and the catalog.
    // Reads that fail leave them null and the rest of the portfolio answered.
    let positions = inputs.open.into_iter().chain(inputs.closed_on_chain);
    match portfolio_changes(app, owner, positions.collect(), &catalog).await {
        Ok(changes) => {
            for (label, change) in changes {
                match label {
                    "1d" => view.changes.day = change,
                    "7d" => view.changes.week = change,
                    _ => view.changes.month = change,
                }
            }
        }
        Err(e) => tracing::warn!(cause = %e, "the portfolio's changes were not read"),
    }
    Ok(view)
}
