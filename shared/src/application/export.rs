//! The export use case (`GET /history/export`): the caller's wallet positions' events, read as
//! their histories are, written as a CSV a tax tool imports (`domain::export`).

use crate::application::app::App;
use crate::application::error::Outcome;
use crate::domain::export::{export_csv, ExportFormat, Exported};
use crate::domain::model::{Chain, HeldToken};
use std::collections::HashMap;

/// The CSV of the caller's wallet positions' token movements within `[from, to)` (unix
/// seconds), open and closed; `None` past the export's size limit. Costs the portfolio's reads
/// (the positions) and one history read per position (the progress, then its events).
pub async fn export(
    app: &App,
    owner: &str,
    format: ExportFormat,
    range: (i64, i64),
) -> Outcome<Option<String>> {
    let inputs = app.store.portfolio_inputs(owner).await?;
    let mut positions: Vec<_> = inputs
        .open
        .into_iter()
        .chain(inputs.closed_on_chain)
        .filter(|p| p.holding.is_some() && p.chain != Chain::Solana)
        .collect();
    positions.sort_by(|a, b| a.id.cmp(&b.id));
    positions.dedup_by(|a, b| a.id == b.id);
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
        let stored = app.history.history_progress(owner, &p.id).await?;
        let count = stored.map_or(0, |s| s.events);
        histories.push(app.history.history_page(owner, &p.id, 0, count).await?);
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
