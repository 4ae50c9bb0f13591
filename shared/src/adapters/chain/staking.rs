//! A wallet's staked positions: the position NFTs it staked in a deployment's farm
//! (PancakeSwap's MasterChefV3) are the farm's on the position manager, the wallet's in the
//! farm. The farm enumerates them like the manager (`balanceOf`, `tokenOfOwnerByIndex`); each is
//! confirmed the wallet's by `userPositionInfos(tokenId).user`, and its pending reward read with
//! `pendingCake`, the reward token with `CAKE()`: one batch for all the wallet's staked
//! positions, at the read's block. Staking changes nothing of the position itself: its
//! liquidity, ticks and fees stay in the manager and are read there as a held one's.

use super::evm::{call, decoded, Block};
use super::rpc::RpcClient;
use super::simulation::reverted;
use super::tokens::TokenMeta;
use crate::domain::math::U256;
use alloy_primitives::Address;
use alloy_sol_types::{sol, SolCall};
use std::collections::BTreeMap;

sol! {
    interface IMasterChefV3 {
        function CAKE() external view returns (address);
        function pendingCake(uint256 tokenId) external view returns (uint256);
        function userPositionInfos(uint256 tokenId) external view returns (
            uint128 liquidity,
            uint128 boostLiquidity,
            int24 tickLower,
            int24 tickUpper,
            uint256 rewardGrowthInside,
            uint256 reward,
            address user,
            uint256 pid,
            uint256 boostMultiplier
        );
    }
}

use IMasterChefV3::{pendingCakeCall, userPositionInfosCall, CAKECall};

sol! {
    /// A Slipstream gauge's reward token and a staker's pending AERO of one position.
    interface IGaugeRewards {
        function rewardToken() external view returns (address);
        function earned(address account, uint256 tokenId) external view returns (uint256);
    }
}

/// A staked position's farm and what it owes the staker at the read's block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StakedRead {
    /// The farm (EIP-55).
    pub farm: String,
    pub reward_token: TokenMeta,
    /// Base units `pendingCake` answers.
    pub rewards_pending: U256,
}

/// A staked position as its farm answers for it at the read's block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stake {
    pub farm: Address,
    /// Base units of the reward token `pendingCake` answers.
    pub rewards_pending: U256,
}

/// The farms' answers for the wallet's staked `(farm, tokenId)`s: each one the farm confirms is
/// the wallet's, by `(farm, tokenId)`, with its pending reward; and each farm's reward token. A
/// token whose farm names another user is left out (a node answering an enumeration it does not
/// back).
pub async fn stakes(
    rpc: &RpcClient,
    staked: &[(Address, U256)],
    wallet: Address,
    block: &Block,
) -> Result<(BTreeMap<(Address, U256), Stake>, BTreeMap<Address, Address>), String> {
    if staked.is_empty() {
        return Ok((BTreeMap::new(), BTreeMap::new()));
    }
    let mut farms: Vec<Address> = staked.iter().map(|(f, _)| *f).collect();
    farms.sort_unstable();
    farms.dedup();
    let mut calls = Vec::with_capacity(staked.len() * 2 + farms.len());
    for (farm, id) in staked {
        let token_id = alloy_primitives::U256::from_limbs(*id.as_limbs());
        calls.push(call(
            *farm,
            userPositionInfosCall { tokenId: token_id }.abi_encode(),
            block,
        ));
        calls.push(call(
            *farm,
            pendingCakeCall { tokenId: token_id }.abi_encode(),
            block,
        ));
    }
    for farm in &farms {
        calls.push(call(*farm, CAKECall {}.abi_encode(), block));
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    let mut next = |what: &str| answers.next().ok_or(format!("{what}: no answer"));
    let mut found = BTreeMap::new();
    for (farm, id) in staked {
        let info =
            decoded::<userPositionInfosCall>(next("userPositionInfos")?, 9, "userPositionInfos")?;
        let pending = decoded::<pendingCakeCall>(next("pendingCake")?, 1, "pendingCake")?;
        if info.user != wallet {
            tracing::warn!(token = %id, "a farm enumerated a position it does not hold for the wallet");
            continue;
        }
        found.insert(
            (*farm, *id),
            Stake {
                farm: *farm,
                rewards_pending: U256::from_limbs(*pending.as_limbs()),
            },
        );
    }
    let mut rewards = BTreeMap::new();
    for farm in farms {
        let token = decoded::<CAKECall>(next("CAKE")?, 1, "CAKE")?;
        rewards.insert(farm, token);
    }
    Ok((found, rewards))
}

/// What a point asks of one farm: MasterChefV3's `pendingCake(tokenId)`, or a Slipstream
/// gauge's `earned(staker, tokenId)` (`gauge`), for each followed token and its staker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FarmAsk {
    pub gauge: bool,
    pub tokens: Vec<(U256, Option<Address>)>,
}

/// A farm at a block: its reward token and the pending reward of each of the asked token ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FarmAt {
    pub reward_token: Address,
    /// By token id, base units.
    pub pending: BTreeMap<U256, U256>,
}

/// Each farm's reward token and the pending reward of its `tokens` at `block` (the series'
/// points, decision 66): one batch for all of them. A gauge's token without its staker is not
/// asked.
pub async fn farms_at(
    rpc: &RpcClient,
    farms: &BTreeMap<Address, FarmAsk>,
    block: &Block,
) -> Result<BTreeMap<Address, FarmAt>, String> {
    let mut calls = Vec::new();
    let asked = |ask: &FarmAsk| -> Vec<(U256, Option<Address>)> {
        let known = |(_, staker): &&(U256, Option<Address>)| !ask.gauge || staker.is_some();
        ask.tokens.iter().filter(known).copied().collect()
    };
    for (farm, ask) in farms {
        let reward = match ask.gauge {
            true => IGaugeRewards::rewardTokenCall {}.abi_encode(),
            false => CAKECall {}.abi_encode(),
        };
        calls.push(call(*farm, reward, block));
        for (id, staker) in asked(ask) {
            let token_id = alloy_primitives::U256::from_limbs(*id.as_limbs());
            let data = match staker.filter(|_| ask.gauge) {
                Some(account) => IGaugeRewards::earnedCall {
                    account,
                    tokenId: token_id,
                }
                .abi_encode(),
                None => pendingCakeCall { tokenId: token_id }.abi_encode(),
            };
            calls.push(call(*farm, data, block));
        }
    }
    if calls.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    let mut next = |what: &str| answers.next().ok_or(format!("{what}: no answer"));
    let mut found = BTreeMap::new();
    for (farm, ask) in farms {
        // Both answer one word: an address, an amount.
        let reward_token = decoded::<CAKECall>(next("reward token")?, 1, "reward token")?;
        let mut pending = BTreeMap::new();
        for (id, _) in asked(ask) {
            let answer = next("pending reward")?;
            // A gauge's `earned` reverts for a position not staked there at the block (before
            // its stake): it owes it nothing there.
            if ask.gauge && answer.as_ref().is_err_and(|e| reverted(e).is_some()) {
                pending.insert(id, U256::ZERO);
                continue;
            }
            let owed = decoded::<pendingCakeCall>(answer, 1, "pending reward")?;
            pending.insert(id, U256::from_limbs(*owed.as_limbs()));
        }
        found.insert(
            *farm,
            FarmAt {
                reward_token,
                pending,
            },
        );
    }
    Ok(found)
}
