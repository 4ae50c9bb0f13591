//! What a position manager keeps of a position (`positions(tokenId)`: its fee growth inside at
//! its last change and what it owes), read at the blocks of the events that change it: what
//! its fees at any later block are computed from (decision 66).

use super::evm::{self, Block};
use super::rpc::RpcClient;
use super::wallets::IPositionManager::positionsCall;
use crate::domain::history::{EventKind, Kept, PositionEvent};
use crate::domain::math::U256;
use alloy_primitives::Address;
use alloy_sol_types::SolCall;
use std::str::FromStr;

/// What the manager kept at the blocks of `events` that change it (deposits, withdrawals,
/// collects), on every event of those blocks (decision 66).
pub(super) async fn keep(
    rpc: &RpcClient,
    (manager, token_id): (&str, U256),
    through: Option<&Block>,
    events: &mut [PositionEvent],
) {
    let changing = |e: &PositionEvent| {
        matches!(
            e.kind,
            EventKind::Deposit | EventKind::Withdraw | EventKind::Collect
        )
    };
    let mut blocks: Vec<Block> = Vec::new();
    for e in events.iter().filter(|e| changing(e)) {
        if !blocks.iter().any(|b| b.number == e.block) {
            blocks.push(Block {
                number: e.block,
                hash: e.block_hash.clone(),
                timestamp: None,
            });
        }
    }
    let refs: Vec<&Block> = blocks.iter().collect();
    let mut kept = kept_at(rpc, manager, token_id, &refs).await;
    // A node that keeps no old state (any non-archive one) refused the last event's block: the
    // manager keeps the same values until the position's next event, so where the events were
    // read through the head, the head's are the last event's (issue 61: the points after it are
    // then exact; only those whose own state was refused are not).
    if let (Some(head), Some(None)) = (through, kept.last()) {
        if let Some(at_head) = kept_at(rpc, manager, token_id, &[head]).await.pop() {
            if let Some(last) = kept.last_mut() {
                *last = at_head;
            }
        }
    }
    for event in events.iter_mut() {
        if let Some(i) = blocks.iter().position(|b| b.number == event.block) {
            event.kept.clone_from(&kept[i]);
        }
    }
}

/// What `manager` kept of `token_id` at the end of each of `blocks` (its `positions` at each
/// block's hash, one batch): `None` where the node could not answer (not an archive node) or
/// the token was burnt there.
pub async fn kept_at(
    rpc: &RpcClient,
    manager: &str,
    token_id: U256,
    blocks: &[&Block],
) -> Vec<Option<Kept>> {
    let Ok(manager) = Address::from_str(manager) else {
        return vec![None; blocks.len()];
    };
    let data = positionsCall {
        tokenId: alloy_primitives::U256::from_limbs(*token_id.as_limbs()),
    }
    .abi_encode();
    let calls: Vec<_> = blocks
        .iter()
        .map(|b| evm::call(manager, data.clone(), b))
        .collect();
    rpc.batch(&calls)
        .await
        .into_iter()
        .map(|answer| {
            let p = evm::decoded::<positionsCall>(answer, 12, "positions").ok()?;
            Some(Kept {
                inside_last: [p.feeGrowthInside0LastX128, p.feeGrowthInside1LastX128]
                    .map(|v| U256::from_limbs(*v.as_limbs())),
                owed: [p.tokensOwed0, p.tokensOwed1].map(U256::from),
            })
        })
        .collect()
}
