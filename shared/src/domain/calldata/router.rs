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
        struct IncreaseLiquidityParams {
            address token0;
            address token1;
            uint256 tokenId;
            uint256 amount0Min;
            uint256 amount1Min;
        }
        function increaseLiquidity(IncreaseLiquidityParams calldata params) external payable
            returns (bytes memory result);
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

/// Where a zap's liquidity goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZapInto {
    /// A new position of `[tick_lower, tick_upper)` minted to `recipient`.
    Mint {
        ticks: (i32, i32),
        recipient: String,
    },
    /// The position `token_id` (any may add to a position; its owner keeps it).
    Increase { token_id: U256 },
}

/// A zap: the swap of `amount_in` of token `sell` (protocol order) on the pool (none where it
/// is 0), then the mint or increase from everything the router holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zap {
    /// token0, token1.
    pub tokens: [String; 2],
    /// Hundredths of a basis point.
    pub fee: u32,
    pub into: ZapInto,
    /// What the wallet offers of each token, all pulled into the router.
    pub offer: [U256; 2],
    pub sell: usize,
    pub amount_in: U256,
    pub amount_out_minimum: U256,
    /// The mint's minimums (token0, token1).
    pub minimums: [U256; 2],
    /// The tokens the router must first let the position manager take (`approveMax`): where
    /// its allowance is short of the offer.
    pub approve: [bool; 2],
    /// Unix seconds.
    pub deadline: u64,
}

/// `multicall(deadline, [exactInputSingle, pull…, approveMax…, mint | increaseLiquidity,
/// sweepToken ×2])`: the mint's answer is third from the end.
pub fn zap(z: &Zap) -> Result<Vec<u8>, CalldataError> {
    let tokens = [parse(&z.tokens[0])?, parse(&z.tokens[1])?];
    let (sell, buy) = (z.sell, 1 - z.sell);
    let too_small = |what: &str| CalldataError::new(&format!("{what} does not fit its type"));
    let fee = U24::try_from(z.fee).map_err(|_| too_small("the fee"))?;
    let tick = |t: i32| I24::try_from(t).map_err(|_| too_small("a tick"));
    let mut calls: Vec<Bytes> = Vec::new();
    let swap = ISwapRouter02::exactInputSingleCall {
        params: ISwapRouter02::ExactInputSingleParams {
            tokenIn: tokens[sell],
            tokenOut: tokens[buy],
            fee,
            recipient: ADDRESS_THIS,
            amountIn: z.amount_in,
            amountOutMinimum: z.amount_out_minimum,
            sqrtPriceLimitX96: U160::ZERO,
        },
    };
    if !z.amount_in.is_zero() {
        calls.push(swap.abi_encode().into());
    }
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
    for (token, _) in tokens.iter().zip(z.approve).filter(|(_, short)| *short) {
        let approve = ISwapRouter02::approveMaxCall { token: *token };
        calls.push(approve.abi_encode().into());
    }
    let deposit = match &z.into {
        ZapInto::Mint { ticks, recipient } => ISwapRouter02::mintCall {
            params: ISwapRouter02::MintParams {
                token0: tokens[0],
                token1: tokens[1],
                fee,
                tickLower: tick(ticks.0)?,
                tickUpper: tick(ticks.1)?,
                amount0Min: z.minimums[0],
                amount1Min: z.minimums[1],
                recipient: parse(recipient)?,
            },
        }
        .abi_encode(),
        ZapInto::Increase { token_id } => ISwapRouter02::increaseLiquidityCall {
            params: ISwapRouter02::IncreaseLiquidityParams {
                token0: tokens[0],
                token1: tokens[1],
                tokenId: *token_id,
                amount0Min: z.minimums[0],
                amount1Min: z.minimums[1],
            },
        }
        .abi_encode(),
    };
    calls.push(deposit.into());
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

    /// The router's calls in a multicall, by their selectors.
    fn selectors(multicall: &ISwapRouter02::multicallCall) -> Vec<[u8; 4]> {
        let selector = |c: &Bytes| <[u8; 4]>::try_from(&c[..4]).unwrap();
        multicall.data.iter().map(selector).collect()
    }

    #[test]
    fn a_zap_is_one_multicall_of_the_routers_calls_in_order() {
        let zapped = Zap {
            tokens: [
                "0x00000000000000000000000000000000000000a0".into(),
                "0x00000000000000000000000000000000000000a1".into(),
            ],
            fee: 3000,
            into: ZapInto::Mint {
                ticks: (-600, 600),
                recipient: "0x00000000000000000000000000000000000000aa".into(),
            },
            offer: [U256::from(100u8), U256::ZERO],
            sell: 0,
            amount_in: U256::from(40u8),
            amount_out_minimum: U256::from(39u8),
            minimums: [U256::from(1u8), U256::from(1u8)],
            approve: [true, true],
            deadline: 1_800_000_000,
        };
        let data = zap(&zapped).unwrap();
        let decoded = ISwapRouter02::multicallCall::abi_decode(&data).unwrap();
        assert_eq!(decoded.deadline, U256::from(1_800_000_000u64));
        // Nothing of token1 offered: one pull, of token0's rest.
        assert_eq!(
            selectors(&decoded),
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
        let bad = Zap {
            into: ZapInto::Mint {
                ticks: (-600, 600),
                recipient: "nope".into(),
            },
            ..zapped.clone()
        };
        assert!(zap(&bad).is_err());
        // An increase of a position whose router allowances stand, with nothing to sell: no
        // swap, no approveMax.
        let add = Zap {
            into: ZapInto::Increase {
                token_id: U256::from(7u8),
            },
            amount_in: U256::ZERO,
            approve: [false, false],
            ..zapped
        };
        let decoded = ISwapRouter02::multicallCall::abi_decode(&zap(&add).unwrap()).unwrap();
        assert_eq!(
            selectors(&decoded),
            [
                ISwapRouter02::pullCall::SELECTOR,
                ISwapRouter02::increaseLiquidityCall::SELECTOR,
                ISwapRouter02::sweepTokenCall::SELECTOR,
                ISwapRouter02::sweepTokenCall::SELECTOR,
            ]
        );
    }
}
