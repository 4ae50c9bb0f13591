//! A wallet position staked in its deployment's farm (PancakeSwap's MasterChefV3): the farm
//! holds the NFT, the position stays the staker's (decision 60). Staking changes nothing of the
//! position's amounts or fees; it adds a reward the farm pays in its own token, shown apart
//! from fees and counted in the PnL:
//!
//! `pnlUsd = valueUsd + taken out − costBasisUsd + rewardsHarvestedUsd + rewardsPendingUsd`,
//! the rewards at today's price of the reward token (harvested: what its history's `Harvest`
//! events paid since it came to the wallet, counted after an unstake too); `null` while the
//! position has rewards the catalog cannot price (a figure we cannot stand behind is never a
//! guess).

use crate::domain::history::HistorySummary;
use crate::domain::json::{plain_exact, Usd};
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::U256;
use crate::domain::model::{HeldToken, Staked, StakedView};
use bigdecimal::{BigDecimal, Zero};
use std::str::FromStr;

/// A staked position's farm rewards as its PnL counts them.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewards {
    /// Harvested and pending, in USD: what has a price.
    pub usd: BigDecimal,
    /// Whole tokens of reward without a USD price, left out of `usd` and of the PnL.
    pub unpriced: Option<BigDecimal>,
}

impl Rewards {
    /// A position never staked: no reward.
    pub fn none() -> Rewards {
        Rewards {
            usd: BigDecimal::zero(),
            unpriced: None,
        }
    }

    /// The reward token of `staked` and the whole tokens of it without a USD price, if any:
    /// left out of the PnL and said so, the priced rest of the position counting (decision 63).
    pub fn unpriced_of(&self, staked: Option<&Staked>) -> Option<(HeldToken, BigDecimal)> {
        let amount = self.unpriced.clone().filter(|a| !a.is_zero())?;
        Some((staked?.reward_token.clone(), amount))
    }
}

/// What a PnL leaves out for an unpriced reward, as `pnlLeavesOut` says it.
pub fn leaves_out((token, amount): &(HeldToken, BigDecimal)) -> String {
    let symbol = &token.symbol;
    format!(
        "{} {symbol} of farm rewards: {symbol} has no USD price",
        plain_exact(amount)
    )
}

/// The staked view (`None` once unstaked) at the reward token's USD `price`, its `history`'s
/// harvests and stake; and the rewards' USD the PnL adds: harvested, and pending while staked
/// and `open` (a closed position has nothing pending: its withdrawal harvested it, and what
/// its last read saw pending is in its harvests now); where the reward token has no USD price,
/// none, and the whole tokens of reward left out of the PnL for it (decision 63).
pub fn staked_view(
    staked: &Staked,
    open: bool,
    price: Option<BigDecimal>,
    history: Option<&HistorySummary>,
) -> (Option<StakedView>, Rewards) {
    let harvested = history.and_then(|h| h.rewards_harvested.as_deref());
    let units = |text: &str| U256::from_str(text).unwrap_or_default();
    let pending = if staked.unstaked || !open {
        U256::ZERO
    } else {
        units(&staked.rewards_pending)
    };
    let harvested = harvested.map(units).unwrap_or_default();
    let whole = |units: U256| base_units_to_decimal(units, staked.reward_token.decimals);
    let usd = |units: U256| match &price {
        Some(p) => Some(whole(units) * p),
        None if units.is_zero() => Some(BigDecimal::zero()),
        None => None,
    };
    let (pending_usd, harvested_usd) = (usd(pending), usd(harvested));
    let rewards = match pending_usd.clone().zip(harvested_usd.clone()) {
        Some((p, h)) => Rewards {
            usd: p + h,
            unpriced: None,
        },
        None => Rewards {
            usd: BigDecimal::zero(),
            unpriced: Some(whole(pending) + whole(harvested)),
        },
    };
    let view = (!staked.unstaked).then(|| StakedView {
        contract: staked.contract.clone(),
        // Its stake's block where its history has it, else the read that first saw it staked.
        since_block: history
            .and_then(|h| h.staked_at)
            .unwrap_or(staked.since_height),
        reward_token: staked.reward_token.clone(),
        rewards_pending: plain_exact(&whole(pending)),
        rewards_pending_block: staked.pending_height,
        rewards_pending_usd: pending_usd.map(Usd::new),
        rewards_harvested: plain_exact(&whole(harvested)),
        rewards_harvested_usd: harvested_usd.map(Usd::new),
    });
    (view, rewards)
}
