//! A chain's pools read at one block in one run of batches, whatever contract answers for
//! each: a v3 pool itself (`evm`), a Uniswap v4 pool its deployment's `StateView` (`v4`). What
//! the sync stores and what a history's events are priced with.

use super::evm::{self, Block, Layout, PoolRead};
use super::rpc::{RpcClient, RpcError};
use super::v4;
use crate::domain::catalog::Pool;
use crate::domain::market::PoolState;
use crate::domain::math::U256;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

type Call = (&'static str, Value);

/// Every pool's state at `block`, all in one batch (more only past the batch size): a v3
/// pool's `slot0`, `liquidity`, both fee growth globals and `ticks(t)` per tracked tick, then
/// for a discovered one its tokens' `balanceOf(pool)`; a v4 pool's `getSlot0`, `getLiquidity`,
/// `getFeeGrowthGlobals` and `getTickInfo` per tracked tick (no balances: the singleton holds
/// every pool's tokens, so a discovered v4 pool has no depth and prices nothing by it). Each
/// call at the block's hash; the reads in the order of `pools`.
pub async fn read_pools(
    rpc: &RpcClient,
    pools: &[&Pool],
    block: &Block,
    observed_at: DateTime<Utc>,
) -> Vec<PoolRead> {
    let at = json!({"blockHash": block.hash});
    let mut calls: Vec<Call> = Vec::new();
    for pool in pools {
        let ticks = &pool.tracked_ticks;
        match &pool.state_view {
            Some(view) => calls.extend(v4::pool_calls(view, &pool.id, ticks, &at)),
            None => {
                let layout = Layout::of(pool.protocol);
                calls.extend(evm::pool_calls(&pool.id, ticks, block, layout));
                if pool.discovered {
                    calls.extend(evm::balance_calls(pool, block));
                }
            }
        }
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    let mut take =
        |n: usize| -> Vec<Result<Value, RpcError>> { answers.by_ref().take(n).collect() };
    pools
        .iter()
        .map(|pool| {
            let ticks = &pool.tracked_ticks;
            if pool.state_view.is_some() {
                let own = take(v4::STATE_CALLS + ticks.len());
                return v4::decode_state(own, ticks, block, observed_at);
            }
            let layout = Layout::of(pool.protocol);
            let own = take(layout.state_calls() + ticks.len());
            let state = evm::decode_state(own, ticks, block, observed_at, layout);
            if !pool.discovered {
                return state;
            }
            let balances = evm::decode_balances(take(2));
            state.map(|state| PoolState { balances, ..state })
        })
        .collect()
}

/// What prices each pool's tokens at its block (a history's events are valued so): its
/// `slot0` (a v4 pool's `getSlot0`), and a discovered v3 pool's balances, at the block's hash,
/// all in one batch. The state holds only its price, tick and balances (no liquidity, fee
/// growth or ticks).
pub async fn prices_at(rpc: &RpcClient, reads: &[(&Pool, &Block)]) -> Vec<PoolRead> {
    let mut calls: Vec<Call> = Vec::new();
    for (pool, block) in reads {
        let at = json!({"blockHash": block.hash});
        match &pool.state_view {
            Some(view) => calls.push(v4::slot0_call(view, &pool.id, &at)),
            None => {
                calls.push(evm::slot0_call(&pool.id, &at));
                if pool.discovered {
                    calls.extend(evm::balance_calls(pool, block));
                }
            }
        }
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    reads
        .iter()
        .map(|(pool, block)| {
            let slot0 = evm::next_answer(&mut answers);
            let v3_balances = pool.discovered && pool.state_view.is_none();
            let balances = v3_balances
                .then(|| evm::decode_balances(answers.by_ref().take(2).collect()))
                .flatten();
            let (sqrt_price, tick) = match pool.state_view {
                Some(_) => v4::decode_slot0(slot0)?,
                None => evm::decode_slot0(slot0, Layout::of(pool.protocol))?,
            };
            let observed_at = block
                .timestamp
                .and_then(|t| DateTime::from_timestamp(i64::try_from(t).ok()?, 0))
                .unwrap_or_default();
            Ok(PoolState {
                sqrt_price,
                tick,
                liquidity: 0,
                fee_growth_global0: U256::ZERO,
                fee_growth_global1: U256::ZERO,
                height: block.number,
                block_hash: Some(block.hash.clone()),
                observed_at,
                ticks: Vec::new(),
                balances,
                slipstream: None,
            })
        })
        .collect()
}
