//! The zap's swap, found by quotes (issue 63): Uniswap's QuoterV2 `quoteExactInputSingle` by
//! `eth_call` at the block of the pool state the order is built at, what the pool itself would
//! pay across every tick the swap crosses; the search (`domain::orders::zap`) asks for one at a
//! time, each from the bracket the last one left.

use super::allowances::at;
use super::evm::{self, hex_bytes};
use super::rpc::RpcClient;
use super::simulation::reverted;
use crate::domain::market::PoolState;
use crate::domain::math::U256;
use crate::domain::orders::simulation::SimulationError;
use crate::domain::orders::zap::{Candidate, Quote, QuotedPool, Search};
use alloy_primitives::{aliases::U24, Address, U160};
use alloy_sol_types::{sol, SolCall};
use serde_json::json;

sol! {
    interface IQuoterV2 {
        struct QuoteExactInputSingleParams {
            address tokenIn;
            address tokenOut;
            uint256 amountIn;
            uint24 fee;
            uint160 sqrtPriceLimitX96;
        }
        function quoteExactInputSingle(QuoteExactInputSingleParams memory params) external
            returns (uint256 amountOut, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed,
                uint256 gasEstimate);
    }
}

fn address(text: &str) -> Result<Address, SimulationError> {
    text.parse()
        .map_err(|_| SimulationError::Unavailable(format!("{text:?} is not an address")))
}

/// What selling `amount_in` of token `sell` (0 or 1) pays and where it leaves the price, at the
/// state's block; `Reverted` where the quoter refuses (a swap the pool cannot fill, a pool the
/// quoter does not know), `Unavailable` where the node did not answer.
pub async fn quote(
    rpc: &RpcClient,
    pool: &QuotedPool<'_>,
    state: &PoolState,
    (sell, amount_in): (usize, U256),
) -> Result<Quote, SimulationError> {
    let call = IQuoterV2::quoteExactInputSingleCall {
        params: IQuoterV2::QuoteExactInputSingleParams {
            tokenIn: address(pool.tokens[sell])?,
            tokenOut: address(pool.tokens[1 - sell])?,
            amountIn: amount_in,
            fee: U24::from(pool.fee),
            sqrtPriceLimitX96: U160::ZERO,
        },
    };
    let block = at(state);
    let request = json!({"to": pool.quoter, "data": evm::hex_data(&call.abi_encode())});
    let answer = rpc
        .call("eth_call", json!([request, block]))
        .await
        .map_err(|e| match reverted(&e) {
            Some(reason) => SimulationError::Reverted {
                kind: "swap".into(),
                reason,
            },
            None => SimulationError::Unavailable(format!("the quoter did not answer: {e}")),
        })?;
    let not_a_quote = || SimulationError::Unavailable("the quoter's answer is not a quote".into());
    let bytes = hex_bytes(&answer).map_err(|_| not_a_quote())?;
    let quoted = IQuoterV2::quoteExactInputSingleCall::abi_decode_returns(&bytes)
        .map_err(|_| not_a_quote())?;
    Ok(Quote {
        amount_out: quoted.amountOut,
        sqrt_price_after: U256::from(quoted.sqrtPriceX96After),
    })
}

/// The swap of `offer` (token0, token1 base units) to the range `(sqrt_a, sqrt_b)`'s ratio on
/// `pool` at `state`: the candidate funding the most liquidity, and the quotes it took. `None`
/// when there is nothing to sell.
pub async fn swap_to_fit(
    rpc: &RpcClient,
    pool: &QuotedPool<'_>,
    state: &PoolState,
    (offer, range): ([U256; 2], (U256, U256)),
) -> Result<Option<(usize, Candidate, usize)>, SimulationError> {
    let Some(mut search) = Search::new(offer, state.sqrt_price, range) else {
        return Ok(None);
    };
    while let Some(amount_in) = search.next() {
        let quoted = quote(rpc, pool, state, (search.sell, amount_in)).await?;
        search.record(amount_in, quoted);
    }
    Ok(search
        .best()
        .map(|best| (search.sell, best, search.quotes())))
}
