//! Positions a wallet's read did not find: whether each left the wallet or no longer exists,
//! asked of their managers (`ownerOf`, one batch) only when a read misses some.

use super::evm::Block;
use super::rpc::RpcClient;
use super::wallets::owners_of;
use crate::domain::holdings::ReadPosition;
use crate::domain::math::U256;
use crate::domain::model::{Position, Status};
use crate::domain::wallets::LinkedWallet;
use std::str::FromStr;

/// Takes out of `stored` the open positions `read` did not find whose tokens no longer
/// exist at `block` (burned: `ownerOf` reverts), and answers them: one `ownerOf` batch, only
/// when a read misses some. Where the owners cannot be read, none is taken (they close as
/// transferred, as before).
pub async fn burned(
    rpc: Option<&RpcClient>,
    block: Option<&Block>,
    read: &[ReadPosition],
    stored: &mut Vec<Position>,
) -> Vec<Position> {
    let (Some(block), Some(rpc)) = (block, rpc) else {
        return Vec::new();
    };
    let seen: std::collections::HashSet<String> = read
        .iter()
        .map(|r| format!("{}#{}", r.manager, r.token).to_ascii_lowercase())
        .collect();
    let token_of = |p: &Position| {
        let h = p.holding.as_deref()?;
        let key = format!("{}#{}", h.manager, h.token).to_ascii_lowercase();
        let missing = p.status != Status::Closed && !seen.contains(&key);
        missing.then(|| Some((h.manager.clone(), U256::from_str(&h.token).ok()?)))?
    };
    let (missing, kept): (Vec<Position>, Vec<Position>) = std::mem::take(stored)
        .into_iter()
        .partition(|p| token_of(p).is_some());
    *stored = kept;
    if missing.is_empty() {
        return Vec::new();
    }
    let tokens: Vec<(String, U256)> = missing.iter().filter_map(token_of).collect();
    let owners = match owners_of(rpc, &tokens, block).await {
        Ok(owners) => owners,
        Err(e) => {
            // None told apart: all close as transferred, as before.
            tracing::warn!(cause = %e, "owners of positions gone from a wallet not read");
            stored.extend(missing);
            return Vec::new();
        }
    };
    let (burned, transferred): (Vec<_>, Vec<_>) = missing
        .into_iter()
        .zip(owners)
        .partition(|(_, owner)| owner.is_none());
    stored.extend(transferred.into_iter().map(|(p, _)| p));
    burned.into_iter().map(|(p, _)| p).collect()
}

/// Of the open `positions` a capped read did not see, those `wallet` no longer holds (their
/// owner asked at `block`, one batch): a transfer away closes a position whatever the cap.
pub async fn no_longer_held(
    rpc: Option<&RpcClient>,
    wallet: &LinkedWallet,
    block: Option<&Block>,
    positions: Vec<Position>,
) -> Result<Vec<Position>, String> {
    let (Some(block), Some(rpc)) = (block, rpc) else {
        return Ok(Vec::new());
    };
    let open: Vec<Position> = positions
        .into_iter()
        .filter(|p| p.status != Status::Closed && p.holding.is_some())
        .collect();
    let tokens: Vec<(String, U256)> = open
        .iter()
        .filter_map(|p| {
            let h = p.holding.as_deref()?;
            Some((h.manager.clone(), U256::from_str(&h.token).ok()?))
        })
        .collect();
    if tokens.len() != open.len() || tokens.is_empty() {
        return Ok(Vec::new());
    }
    let owners = owners_of(rpc, &tokens, block).await?;
    Ok(open
        .into_iter()
        .zip(owners)
        .filter(|(_, owner)| {
            owner
                .as_deref()
                .is_none_or(|o| !o.eq_ignore_ascii_case(&wallet.address))
        })
        .map(|(p, _)| p)
        .collect())
}
