//! A wallet position staked in its deployment's farm (PancakeSwap's MasterChefV3): the farm
//! holds the NFT, the position stays the staker's (decision 60). Staking changes nothing of the
//! position's amounts or fees; it adds a reward the farm pays in its own token, shown apart
//! from fees and counted in the PnL:
//!
//! `pnlUsd = valueUsd + taken out − costBasisUsd + rewardsHarvestedUsd + rewardsPendingUsd`,
//! the rewards at today's price of the reward token; `null` while the position has rewards the
//! catalog cannot price (a figure we cannot stand behind is never a guess).

use super::usd_price;
use crate::domain::catalog::Catalog;
use crate::domain::json::{plain_exact, Usd};
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::U256;
use crate::domain::model::{Chain, HeldToken};
use bigdecimal::{BigDecimal, Zero};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// What the last read found of a staked position's farm. Integers are decimal strings of the
/// reward token's base units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Staked {
    /// The farm holding the NFT (EIP-55).
    pub contract: String,
    pub reward_token: HeldToken,
    /// What the farm's `pendingCake` answered at the read.
    pub rewards_pending: String,
    /// The read's block it was first seen staked at (its stake's block where the history has
    /// it).
    pub since_height: u64,
}

/// A staked position's farm and rewards as the API shows them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StakedView {
    pub contract: String,
    /// The block it was staked at (as first seen by a read).
    pub since_block: u64,
    pub reward_token: HeldToken,
    /// Whole tokens, exact.
    pub rewards_pending: String,
    pub rewards_pending_usd: Option<Usd>,
    /// Whole tokens harvested while staked: `null`, harvests are not read yet
    /// (`rewardsHarvestedReason`).
    pub rewards_harvested: Option<String>,
    pub rewards_harvested_usd: Option<Usd>,
    pub rewards_harvested_reason: Option<&'static str>,
}

/// Why `rewardsHarvested` is `null`.
pub const HARVESTS_NOT_READ: &str =
    "the farm's Harvest events are not read yet: harvested rewards are not counted";

/// The staked view, and the rewards' USD the PnL adds (`None` while a reward is unpriced).
pub fn staked_view(
    staked: &Staked,
    catalog: &Catalog,
    chain: Chain,
) -> (StakedView, Option<BigDecimal>) {
    let pending = U256::from_str(&staked.rewards_pending).unwrap_or_default();
    let whole = base_units_to_decimal(pending, staked.reward_token.decimals);
    let price = usd_price(catalog, chain, &staked.reward_token.address);
    let pending_usd = match price {
        Some(p) => Some(whole.clone() * p),
        None if pending.is_zero() => Some(BigDecimal::zero()),
        None => None,
    };
    let view = StakedView {
        contract: staked.contract.clone(),
        since_block: staked.since_height,
        reward_token: staked.reward_token.clone(),
        rewards_pending: plain_exact(&whole),
        rewards_pending_usd: pending_usd.clone().map(Usd::new),
        rewards_harvested: None,
        rewards_harvested_usd: None,
        rewards_harvested_reason: Some(HARVESTS_NOT_READ),
    };
    (view, pending_usd)
}
