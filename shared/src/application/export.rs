//! The export use case (`GET /history/export`): the caller's wallet positions' events, read as
//! their histories are, written as a CSV a tax tool imports (`domain::export`).

use crate::application::app::App;
use crate::application::error::Outcome;
use crate::application::READS_AT_ONCE;
use crate::domain::export::{export_csv, ExportFormat, Exported};
use crate::domain::history::units;
use crate::domain::model::{Chain, HeldToken};
use crate::domain::wallets::WalletKind;
use futures_util::{StreamExt, TryStreamExt};
use std::collections::{HashMap, HashSet};

/// The CSV of the caller's wallet positions' token movements within `[from, to)` (unix
/// seconds), open and closed; `None` past the export's size limit. The positions of addresses
/// the caller only watches (anyone's: no signature) are left out unless `watched` asks for
/// them. Costs the portfolio's reads (the positions), one read of the caller's wallets and one
/// history `Query` per position.
pub async fn export(
    app: &App,
    owner: &str,
    format: ExportFormat,
    range: (i64, i64),
    watched: bool,
) -> Outcome<Option<String>> {
    let inputs = app.store.portfolio_inputs(owner).await?;
    let wallets = app.wallets.wallets(owner).await?;
    let only_watched: HashSet<(Chain, String)> = wallets
        .iter()
        .filter(|w| w.kind == WalletKind::Watched)
        .map(|w| (w.chain, w.address.to_ascii_lowercase()))
        .collect();
    let mut own: HashMap<Chain, Vec<String>> = HashMap::new();
    for w in &wallets {
        own.entry(w.chain)
            .or_default()
            .push(w.address.to_ascii_lowercase());
    }
    let is_watched =
        |chain: Chain, wallet: &str| only_watched.contains(&(chain, wallet.to_ascii_lowercase()));
    // Open and closed are apart (a position is one or the other); the rows are sorted by time.
    let positions: Vec<_> = inputs
        .open
        .into_iter()
        .chain(inputs.closed_on_chain)
        .filter(|p| p.chain != Chain::Solana)
        .filter(|p| {
            p.holding
                .as_deref()
                .is_some_and(|h| watched || !is_watched(p.chain, &h.wallet))
        })
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
    // Every stored event of each: one read (the progress comes with the events' Query), a few
    // at a time.
    let mut reads = Vec::with_capacity(positions.len());
    for p in &positions {
        reads.push(app.history.history_page(owner, &p.id, 0, u64::MAX));
    }
    let histories: Vec<_> = futures_util::stream::iter(reads)
        .buffered(READS_AT_ONCE)
        .try_collect()
        .await?;
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
                wallet: &holding.wallet,
                watched: is_watched(p.chain, &holding.wallet),
                own: own.get(&p.chain).map_or(&[], Vec::as_slice),
                arrived_with: holding
                    .history
                    .as_ref()
                    .and_then(|h| h.arrived_with.as_ref())
                    .map(units),
            })
        })
        .collect();
    Ok(export_csv(format, &exported, range))
}
