//! The export use case (`GET /history/export`): the caller's wallet positions' events, read as
//! their histories are, written as a CSV a tax tool imports (`domain::export`).

use crate::application::app::App;
use crate::application::error::Outcome;
use crate::domain::export::{export_csv, ExportFormat, Exported};
use crate::domain::model::{Chain, HeldToken};
use std::collections::HashMap;

/// The CSV of the caller's wallet positions' token movements within `[from, to)` (unix
/// seconds), open and closed; `None` past the export's size limit. Costs the portfolio's reads
/// (the positions) and one history `Query` per position.
pub async fn export(
    app: &App,
    owner: &str,
    format: ExportFormat,
    range: (i64, i64),
) -> Outcome<Option<String>> {
    let inputs = app.store.portfolio_inputs(owner).await?;
    // Open and closed are apart (a position is one or the other); the rows are sorted by time.
    let positions: Vec<_> = inputs
        .open
        .into_iter()
        .chain(inputs.closed_on_chain)
        .filter(|p| p.holding.is_some() && p.chain != Chain::Solana)
        .collect();
    // A farm's reward token, by position manager: known from any position staked there.
    let rewards: HashMap<String, HeldToken> = positions
        .iter()
        .filter_map(|p| p.holding.as_deref())
        .filter_map(|h| {
            let token = h.staked.as_ref()?.reward_token.clone();
            Some((h.manager.to_ascii_lowercase(), token))
        })
        .collect();
    let mut histories = Vec::with_capacity(positions.len());
    for p in &positions {
        // Every stored event: one read (the progress comes with the events' Query).
        histories.push(app.history.history_page(owner, &p.id, 0, u64::MAX).await?);
    }
    let exported: Vec<Exported<'_>> = positions
        .iter()
        .zip(&histories)
        .filter_map(|(p, events)| {
            let holding = p.holding.as_deref()?;
            Some(Exported {
                position: &p.id,
                chain: p.chain,
                tokens: &holding.tokens,
                reward: rewards.get(&holding.manager.to_ascii_lowercase()),
                events,
            })
        })
        .collect();
    Ok(export_csv(format, &exported, range))
}
