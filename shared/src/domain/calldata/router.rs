//! Uniswap's SwapRouter02 calls of a zap (issue 63), encoded with alloy's `sol!` types: one
//! `multicall(deadline, [...])` that swaps part of the offer on the position's pool to the
//! router itself, pulls the rest of the offer, lets the position manager take the router's
//! balances (`approveMax`), mints from them (`ApproveAndCall.mint`, whose amounts are the
//! router's balances and whose minimums are ours), and sweeps what the mint left back to the
//! wallet.

use super::abi::CalldataError;
use crate::domain::math::U256;
use alloy_primitives::aliases::{I24, U24};
use alloy_primitives::{Address, Bytes, U160};
use alloy_sol_types::{sol, SolCall};

sol! {
    interface ISwapRouter02 {
        struct ExactInputSingleParams {
            address tokenIn;
            address tokenOut;
            uint24 fee;
            address recipient;
            uint256 amountIn;
            uint256 amountOutMinimum;
            uint160 sqrtPriceLimitX96;
        }
        function exactInputSingle(ExactInputSingleParams calldata params) external payable
            returns (uint256 amountOut);
        function pull(address token, uint256 value) external payable;
        function approveMax(address token) external payable;
        struct MintParams {
            address token0;
            address token1;
            uint24 fee;
            int24 tickLower;
            int24 tickUpper;
            uint256 amount0Min;
            uint256 amount1Min;
            address recipient;
        }
        function mint(MintParams calldata params) external payable returns (bytes memory result);
        function sweepToken(address token, uint256 amountMinimum) external payable;
        function multicall(uint256 deadline, bytes[] calldata data) external payable
            returns (bytes[] memory results);
    }
}

/// The router's own address in its calls (`Constants.ADDRESS_THIS`): the swap pays it.
const ADDRESS_THIS: Address = Address::with_last_byte(2);

fn parse(address: &str) -> Result<Address, CalldataError> {
    address
        .parse()
        .map_err(|_| CalldataError::new(&format!("{address:?} is not an EVM address")))
}

/// A zap into a new position: the swap of `amount_in` of token `sell` (protocol order) on the
/// pool, then the mint of `[tick_lower, tick_upper)` from everything the router holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZapMint {
    /// token0, token1.
    pub tokens: [String; 2],
    /// Hundredths of a basis point.
    pub fee: u32,
    pub ticks: (i32, i32),
    /// What the wallet offers of each token, all pulled into the router.
    pub offer: [U256; 2],
    pub sell: usize,
    pub amount_in: U256,
    pub amount_out_minimum: U256,
    /// The mint's minimums (token0, token1).
    pub minimums: [U256; 2],
    pub recipient: String,
    /// Unix seconds.
    pub deadline: u64,
}

/// `multicall(deadline, [exactInputSingle, pull…, approveMax ×2, mint, sweepToken ×2])`.
pub fn zap_mint(z: &ZapMint) -> Result<Vec<u8>, CalldataError> {
    let tokens = [parse(&z.tokens[0])?, parse(&z.tokens[1])?];
    let (sell, buy) = (z.sell, 1 - z.sell);
    let too_small = |what: &str| CalldataError::new(&format!("{what} does not fit its type"));
    let fee = U24::try_from(z.fee).map_err(|_| too_small("the fee"))?;
    let tick = |t: i32| I24::try_from(t).map_err(|_| too_small("a tick"));
    let mut calls: Vec<Bytes> = vec![ISwapRouter02::exactInputSingleCall {
        params: ISwapRouter02::ExactInputSingleParams {
            tokenIn: tokens[sell],
            tokenOut: tokens[buy],
            fee,
            recipient: ADDRESS_THIS,
            amountIn: z.amount_in,
            amountOutMinimum: z.amount_out_minimum,
            sqrtPriceLimitX96: U160::ZERO,
        },
    }
    .abi_encode()
    .into()];
    // The rest of the offer: the swap took its input from the wallet itself.
    let rest = [
        (sell, z.offer[sell].saturating_sub(z.amount_in)),
        (buy, z.offer[buy]),
    ];
    for (t, value) in rest.into_iter().filter(|(_, v)| !v.is_zero()) {
        let pull = ISwapRouter02::pullCall {
            token: tokens[t],
            value,
        };
        calls.push(pull.abi_encode().into());
    }
    for token in tokens {
        calls.push(ISwapRouter02::approveMaxCall { token }.abi_encode().into());
    }
    calls.push(
        ISwapRouter02::mintCall {
            params: ISwapRouter02::MintParams {
                token0: tokens[0],
                token1: tokens[1],
                fee,
                tickLower: tick(z.ticks.0)?,
                tickUpper: tick(z.ticks.1)?,
                amount0Min: z.minimums[0],
                amount1Min: z.minimums[1],
                recipient: parse(&z.recipient)?,
            },
        }
        .abi_encode()
        .into(),
    );
    for token in tokens {
        let sweep = ISwapRouter02::sweepTokenCall {
            token,
            amountMinimum: U256::ZERO,
        };
        calls.push(sweep.abi_encode().into());
    }
    Ok(ISwapRouter02::multicallCall {
        deadline: U256::from(z.deadline),
        data: calls,
    }
    .abi_encode())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zap_is_one_multicall_of_the_routers_calls_in_order() {
        let zap = ZapMint {
            tokens: [
                "0x00000000000000000000000000000000000000a0".into(),
                "0x00000000000000000000000000000000000000a1".into(),
            ],
            fee: 3000,
            ticks: (-600, 600),
            offer: [U256::from(100u8), U256::ZERO],
            sell: 0,
            amount_in: U256::from(40u8),
            amount_out_minimum: U256::from(39u8),
            minimums: [U256::from(1u8), U256::from(1u8)],
            recipient: "0x00000000000000000000000000000000000000aa".into(),
            deadline: 1_800_000_000,
        };
        let data = zap_mint(&zap).unwrap();
        let decoded = ISwapRouter02::multicallCall::abi_decode(&data).unwrap();
        assert_eq!(decoded.deadline, U256::from(1_800_000_000u64));
        let selectors: Vec<[u8; 4]> = decoded
            .data
            .iter()
            .map(|c| c[..4].try_into().unwrap())
            .collect();
        // Nothing of token1 offered: one pull, of token0's rest.
        assert_eq!(
            selectors,
            [
                ISwapRouter02::exactInputSingleCall::SELECTOR,
                ISwapRouter02::pullCall::SELECTOR,
                ISwapRouter02::approveMaxCall::SELECTOR,
                ISwapRouter02::approveMaxCall::SELECTOR,
                ISwapRouter02::mintCall::SELECTOR,
                ISwapRouter02::sweepTokenCall::SELECTOR,
                ISwapRouter02::sweepTokenCall::SELECTOR,
            ]
        );
        let pull = ISwapRouter02::pullCall::abi_decode(&decoded.data[1]).unwrap();
        assert_eq!(pull.value, U256::from(60u8));
        let swap = ISwapRouter02::exactInputSingleCall::abi_decode(&decoded.data[0]).unwrap();
        assert_eq!(swap.params.recipient, ADDRESS_THIS);
        // A bad address is an error, not a panic.
        let bad = ZapMint {
            recipient: "nope".into(),
            ..zap
        };
        assert!(zap_mint(&bad).is_err());
    }
}
