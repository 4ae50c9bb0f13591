//! A wallet position staked in its deployment's farm (PancakeSwap's MasterChefV3): the farm
//! holds the NFT, the position stays the staker's (decision 60). Staking changes nothing of the
//! position's amounts or fees; it adds a reward the farm pays in its own token, shown apart
//! from fees and counted in the PnL:
//!
//! `pnlUsd = valueUsd + taken out − costBasisUsd + rewardsHarvestedUsd + rewardsPendingUsd`,
//! the rewards at today's price of the reward token; `null` while the position has rewards the
//! catalog cannot price (a figure we cannot stand behind is never a guess).

use crate::domain::json::{plain_exact, Usd};
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::U256;
use crate::domain::model::{Staked, StakedView};
use bigdecimal::{BigDecimal, Zero};
use std::str::FromStr;

/// Why `rewardsHarvested` is `null`.
pub const HARVESTS_NOT_READ: &str =
    "the farm's Harvest events are not read yet: harvested rewards are not counted";

/// The staked view at the reward token's USD `price`, and the rewards' USD the PnL adds
/// (`None` while a reward is unpriced).
pub fn staked_view(staked: &Staked, price: Option<BigDecimal>) -> (StakedView, Option<BigDecimal>) {
    let pending = U256::from_str(&staked.rewards_pending).unwrap_or_default();
    let whole = base_units_to_decimal(pending, staked.reward_token.decimals);
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
