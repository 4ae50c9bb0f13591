//! What one read of a linked wallet makes of the positions stored for it: new ones keyed once,
//! later reads over earlier ones, the ones it no longer holds closed (the domain's `holdings`
//! says how each is read and shown).

use crate::application::ports::{PositionStore, StoreError};
use crate::domain::catalog::Catalog;
use crate::domain::holdings::{holding_of, usd_price, value_of, ReadPosition, TRANSFERRED};
use crate::domain::model::{Chain, Position, Status, WalletHolding};
use crate::domain::wallets::LinkedWallet;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// Stores what one read of `wallet` found at `height` over `stored` (the wallet's positions as
/// stored): positions seen for the first time get an id; positions already stored take the read
/// where it changed them (unless a newer read was stored meanwhile: one write per changed
/// position); the wallet's open positions the read did not find are closed as transferred.
/// Answers how many positions the wallet holds.
pub async fn record(
    store: &dyn PositionStore,
    catalog: &Catalog,
    wallet: &LinkedWallet,
    (height, read): (u64, Vec<ReadPosition>),
    stored: Vec<Position>,
    now: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let chain = wallet.chain;
    let mut by_key: HashMap<String, Position> = stored
        .into_iter()
        .filter_map(|p| Some((p.holding.as_ref()?.key(chain), p)))
        .collect();
    let held = read.len() as u64;
    for found in read {
        let holding = holding_of(&wallet.address, &found, height, now);
        let status = if found.liquidity == 0 {
            Status::Closed
        } else {
            Status::Active
        };
        match by_key.remove(&holding.key(chain)) {
            Some(previous) => {
                let Some(before) = previous.holding.as_deref() else {
                    continue;
                };
                // An older read, or one that changed nothing (same figures, same pool price):
                // no write. A read at the same height that differs replaces figures that were
                // not read from the chain (those a confirmed mint starts with).
                let unchanged = previous.status == status
                    && before.read_error.is_none()
                    && previous.liquidity == found.liquidity
                    && (
                        before.amounts.clone(),
                        before.fees.clone(),
                        &before.sqrt_price,
                    ) == (
                        holding.amounts.clone(),
                        holding.fees.clone(),
                        &holding.sqrt_price,
                    );
                if before.height > height || unchanged {
                    continue;
                }
                let read = Position {
                    status,
                    tick_lower: found.tick_lower,
                    tick_upper: found.tick_upper,
                    liquidity: found.liquidity,
                    // Its history's sums stay until the history read that follows replaces them.
                    holding: Some(Box::new(WalletHolding {
                        first_value_usd: before.first_value_usd.clone(),
                        history: before.history.clone(),
                        moved_from: before.moved_from.clone(),
                        moved_to: before.moved_to.clone(),
                        ..holding
                    })),
                    ..previous.clone()
                };
                ignore_lost_race(store.update_holding(&read, &previous).await)?;
            }
            None => {
                let prices = found
                    .tokens
                    .clone()
                    .map(|t| usd_price(catalog, chain, &t.address));
                let first_value = value_of(&prices, &found.tokens, found.amounts);
                let created_at =
                    DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now);
                let position = Position {
                    id: ulid::Ulid::from_datetime(created_at.into()).to_string(),
                    owner: wallet.owner.clone(),
                    chain,
                    protocol: found.protocol,
                    pool: found.pool.clone(),
                    status,
                    tick_lower: found.tick_lower,
                    tick_upper: found.tick_upper,
                    liquidity: found.liquidity,
                    cost_basis_usd: first_value.clone().unwrap_or_default(),
                    deposit: None,
                    fee_checkpoint: None,
                    closing: None,
                    created_at,
                    holding: Some(Box::new(WalletHolding {
                        first_value_usd: first_value.map(|v| v.to_plain_string()),
                        ..holding
                    })),
                    order: None,
                };
                match store.insert(&position).await {
                    // The key is the owner's already: another of the owner's wallets held it
                    // (it moved here, and keeps its id, history and figures), or a racing
                    // refresh of this wallet stored it first (its read stands).
                    Err(StoreError::Conflict) => {
                        let key = holding_key(chain, &position);
                        // A read of the wallet it left may close it meanwhile ("transferred",
                        // at the same block): read it again and move it over that.
                        for _ in 0..3 {
                            let Some(previous) = store.holding(&wallet.owner, chain, &key).await?
                            else {
                                break;
                            };
                            match moved(store, &previous, &position, height).await {
                                Err(StoreError::Conflict) => continue,
                                other => {
                                    other?;
                                    break;
                                }
                            }
                        }
                    }
                    other => other?,
                }
            }
        }
    }
    // Open positions the wallet no longer holds: transferred (or burned), figures of the last
    // read kept.
    for previous in by_key.into_values() {
        let Some(before) = previous.holding.as_deref() else {
            continue;
        };
        if previous.status == Status::Closed || before.height >= height {
            continue;
        }
        let read = Position {
            status: Status::Closed,
            holding: Some(Box::new(WalletHolding {
                height,
                close_reason: Some(TRANSFERRED.to_string()),
                ..before.clone()
            })),
            ..previous.clone()
        };
        ignore_lost_race(store.update_holding(&read, &previous).await)?;
    }
    Ok(held)
}

/// What a wallet position's `readError` says when the wallet's whole read failed (one text,
/// so a read failing again writes nothing).
pub const WALLET_NOT_READ: &str =
    "the wallet could not be read (its refreshError says why): these are the figures of its last good read";

/// Marks each of `positions` not taken by the wallet's last read with why, keeping its last
/// good read: one write per position whose reason changed, none for one already marked so.
pub async fn mark_unread(
    store: &dyn PositionStore,
    positions: impl IntoIterator<Item = (Position, String)>,
) -> Result<(), StoreError> {
    for (previous, reason) in positions {
        let Some(before) = previous.holding.as_deref() else {
            continue;
        };
        if previous.status == Status::Closed || before.read_error.as_ref() == Some(&reason) {
            continue;
        }
        let marked = Position {
            holding: Some(Box::new(WalletHolding {
                read_error: Some(reason),
                ..before.clone()
            })),
            ..previous.clone()
        };
        ignore_lost_race(store.update_holding(&marked, &previous).await)?;
    }
    Ok(())
}

/// A write that lost to a racing refresh's is not a failure: the newer read stands.
fn ignore_lost_race(result: Result<(), StoreError>) -> Result<(), StoreError> {
    match result {
        Err(StoreError::Conflict) => Ok(()),
        other => other,
    }
}

fn holding_key(chain: Chain, position: &Position) -> String {
    position
        .holding
        .as_ref()
        .map(|h| h.key(chain))
        .unwrap_or_default()
}

/// Stores `found` (read from the wallet now holding it) over `previous`, the same position as
/// another of the owner's wallets last read it: same id, first value and history, the new
/// wallet and read. A read older than the stored one, or one of the same wallet (a racing
/// refresh), changes nothing; `Conflict` when `previous` is no longer what is stored.
async fn moved(
    store: &dyn PositionStore,
    previous: &Position,
    found: &Position,
    height: u64,
) -> Result<(), StoreError> {
    let (Some(before), Some(now)) = (previous.holding.as_deref(), found.holding.as_deref()) else {
        return Ok(());
    };
    if before.wallet == now.wallet || before.height > height {
        return Ok(());
    }
    let read = Position {
        status: found.status,
        tick_lower: found.tick_lower,
        tick_upper: found.tick_upper,
        liquidity: found.liquidity,
        // Its figures stay its own until the history, read on for the new wallet, replaces them.
        holding: Some(Box::new(WalletHolding {
            first_value_usd: before.first_value_usd.clone(),
            history: before.history.clone(),
            moved_from: before.moved_from.clone(),
            moved_to: before.moved_to.clone(),
            ..now.clone()
        })),
        ..previous.clone()
    };
    tracing::info!(position = %previous.id, from = %before.wallet, to = %now.wallet, "wallet position moved between the owner's wallets");
    store.update_holding(&read, previous).await
}
