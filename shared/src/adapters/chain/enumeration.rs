//! Which tokens of an enumerable position manager (or of a farm holding its positions) a wallet
//! holds, and who holds given tokens: the first reads of a wallet's v3 positions, each
//! contract's answers judged apart, so one contract that fails leaves the others' ids standing.

use super::evm::{call, decoded, Block};
use super::rpc::{RpcClient, RpcError};
use crate::domain::math::U256;
use alloy_primitives::Address;
use alloy_sol_types::{sol, SolCall};
use std::collections::{BTreeMap, BTreeSet};

sol! {
    interface IEnumerable {
        function balanceOf(address owner) external view returns (uint256);
        function ownerOf(uint256 tokenId) external view returns (address);
        function tokenOfOwnerByIndex(address owner, uint256 index) external view returns (uint256);
    }
}

use IEnumerable::{balanceOfCall, ownerOfCall, tokenOfOwnerByIndexCall};

/// The most positions one wallet's read takes from one position manager: what bounds the cost
/// of a wallet anyone can send positions to. A wallet holding more is read up to here, its
/// newest positions first (a wallet's own mint is not pushed out by dust sent to it before),
/// and says how many were not read; its stored positions such a read did not see are asked
/// their owner ([`owners_of`]): those it no longer holds close, the others keep their read.
pub const MAX_POSITIONS_PER_MANAGER: u64 = 1_000;

/// The token ids each contract enumerated for a wallet at one block.
#[derive(Debug, Default)]
pub struct Enumerated {
    /// `(contract, id)`, each once.
    pub ids: Vec<(Address, U256)>,
    /// Positions held past [`MAX_POSITIONS_PER_MANAGER`] at the contracts that answered.
    pub not_read: u64,
    /// The contracts whose `balanceOf` or `tokenOfOwnerByIndex` failed, with why: none of
    /// their ids is in `ids`.
    pub failed: BTreeMap<Address, String>,
}

/// The token ids of `wallet` at each of `contracts` (position managers, or farms holding their
/// positions), read at `block`: `balanceOf`, then `tokenOfOwnerByIndex` for every index, two
/// batches whatever the count. Past the cap, the newest first.
pub async fn token_ids(
    rpc: &RpcClient,
    contracts: &[Address],
    wallet: Address,
    block: &Block,
) -> Enumerated {
    let calls: Vec<_> = contracts
        .iter()
        .map(|m| call(*m, balanceOfCall { owner: wallet }.abi_encode(), block))
        .collect();
    let mut found = Enumerated::default();
    let mut indexes = Vec::new();
    let mut past_cap = BTreeMap::new();
    for (contract, answer) in contracts.iter().zip(rpc.batch(&calls).await) {
        let held = match decoded::<balanceOfCall>(answer, 1, "balanceOf") {
            Ok(held) => u64::try_from(held).unwrap_or(u64::MAX),
            Err(e) => {
                found.failed.insert(*contract, e);
                continue;
            }
        };
        let count = held.min(MAX_POSITIONS_PER_MANAGER);
        past_cap.insert(*contract, held - count);
        if held > count {
            // Past the cap, the newest first: the earliest indexes are the ones left out.
            indexes.extend((held - count..held).rev().map(|i| (*contract, i)));
        } else {
            indexes.extend((0..held).map(|i| (*contract, i)));
        }
    }
    let calls: Vec<_> = indexes
        .iter()
        .map(|(m, i)| {
            let data = tokenOfOwnerByIndexCall {
                owner: wallet,
                index: alloy_primitives::U256::from(*i),
            };
            call(*m, data.abi_encode(), block)
        })
        .collect();
    // A token id answered twice (a lying or inconsistent node) is one position: read once,
    // counted once.
    let mut seen = BTreeSet::new();
    for ((m, _), answer) in indexes.iter().zip(rpc.batch(&calls).await) {
        match decoded::<tokenOfOwnerByIndexCall>(answer, 1, "tokenOfOwnerByIndex") {
            Ok(id) => {
                let id = U256::from_limbs(*id.as_limbs());
                if seen.insert((*m, id)) {
                    found.ids.push((*m, id));
                }
            }
            Err(e) => {
                found.failed.entry(*m).or_insert(e);
            }
        }
    }
    let failed = &found.failed;
    found.ids.retain(|(m, _)| !failed.contains_key(m));
    found.not_read = past_cap
        .iter()
        .filter(|(m, _)| !failed.contains_key(*m))
        .map(|(_, n)| *n)
        .fold(0u64, u64::saturating_add);
    found
}

/// The owner of each `(manager, token id)` at `block` (EIP-55), `None` for a token that no
/// longer exists (burned: `ownerOf` reverts). Any other failure fails the whole answer.
pub async fn owners_of(
    rpc: &RpcClient,
    tokens: &[(String, U256)],
    block: &Block,
) -> Result<Vec<Option<String>>, String> {
    let mut calls = Vec::with_capacity(tokens.len());
    for (manager, id) in tokens {
        let token_id = alloy_primitives::U256::from_limbs(*id.as_limbs());
        let data = ownerOfCall { tokenId: token_id }.abi_encode();
        let manager = crate::domain::wallets::address::evm_address(manager)
            .map_err(|e| format!("{manager}: {e}"))?;
        calls.push(call(manager, data, block));
    }
    rpc.batch(&calls)
        .await
        .into_iter()
        .map(|answer| match answer {
            Err(RpcError::Rpc { message, .. })
                if message.to_ascii_lowercase().contains("revert") =>
            {
                Ok(None)
            }
            answer => {
                decoded::<ownerOfCall>(answer, 1, "ownerOf").map(|a| Some(a.to_checksum(None)))
            }
        })
        .collect()
}
