//! Calldata of the transactions a linked wallet signs for an on-chain open, close or action:
//! ERC-20 `approve`, and the NonfungiblePositionManager's `mint`, `increaseLiquidity`,
//! `collect` and `multicall([decreaseLiquidity, collect])` (Uniswap v3 and PancakeSwap v3 share
//! these signatures); Uniswap v4's `modifyLiquidities` and Permit2's `approve` (`v4`). The words
//! and the `bytes` tails are `abi`'s. Addresses come from the catalog and the caller's own
//! linked wallet only.

use crate::domain::math::U256;
use abi::{address, call, int, multicall, small, uint};

mod abi;
mod router;
mod v4;
pub use abi::{CalldataError, MAX_UINT128};
pub use router::{zap, Zap, ZapInto};
pub use v4::*;

/// `approve(spender, amount)`.
pub fn approve(spender: &str, amount: U256) -> Result<Vec<u8>, CalldataError> {
    Ok(call(
        "approve(address,uint256)",
        &[address(spender)?, uint(amount)],
    ))
}

/// `INonfungiblePositionManager.MintParams`, token0 and token1 in protocol order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintParams {
    pub token0: String,
    pub token1: String,
    /// What names the pool beside its tokens.
    pub key: MintKey,
    pub tick_lower: i32,
    pub tick_upper: i32,
    pub amount0_desired: U256,
    pub amount1_desired: U256,
    pub amount0_min: U256,
    pub amount1_min: U256,
    pub recipient: String,
    /// Unix seconds.
    pub deadline: u64,
}

/// What names a pool to its position manager's `mint` beside its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MintKey {
    /// Uniswap v3 and its forks: the fee tier (hundredths of a basis point).
    Fee(u32),
    /// Aerodrome Slipstream: the tick spacing (its fee is the pool's own).
    TickSpacing(i32),
}

/// `mint(MintParams)`; Slipstream's takes the tick spacing for the fee and a last word,
/// `sqrtPriceX96`, 0 (a pool that exists is never created by it).
pub fn mint(p: &MintParams) -> Result<Vec<u8>, CalldataError> {
    let (signature, key) = match p.key {
        MintKey::Fee(fee) => (
            "mint((address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256))",
            small(u64::from(fee)),
        ),
        MintKey::TickSpacing(spacing) => (
            "mint((address,address,int24,int24,int24,uint256,uint256,uint256,uint256,address,uint256,uint160))",
            int(spacing),
        ),
    };
    let mut words = vec![
        address(&p.token0)?,
        address(&p.token1)?,
        key,
        int(p.tick_lower),
        int(p.tick_upper),
        uint(p.amount0_desired),
        uint(p.amount1_desired),
        uint(p.amount0_min),
        uint(p.amount1_min),
        address(&p.recipient)?,
        small(p.deadline),
    ];
    if let MintKey::TickSpacing(_) = p.key {
        words.push(uint(U256::ZERO));
    }
    Ok(call(signature, &words))
}

/// What a withdraw takes out: the position's whole liquidity, at least `minimums` (token0,
/// token1) of principal, everything owed collected to `recipient`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withdraw {
    pub token_id: U256,
    pub liquidity: u128,
    pub minimums: [U256; 2],
    /// Unix seconds.
    pub deadline: u64,
    pub recipient: String,
}

/// `multicall([decreaseLiquidity((tokenId, liquidity, amount0Min, amount1Min, deadline)),
/// collect((tokenId, recipient, 2^128-1, 2^128-1))])`: one transaction empties the position.
pub fn withdraw(w: &Withdraw) -> Result<Vec<u8>, CalldataError> {
    Ok(multicall(&[
        decrease(w),
        collect(w.token_id, &w.recipient)?,
    ]))
}

/// A staked position's close through its farm (MasterChefV3): `multicall([decreaseLiquidity,
/// collect, withdraw(tokenId, recipient)])`: emptied, everything owed and its rewards paid to
/// the wallet, the NFT back in it.
pub fn withdraw_and_unstake(w: &Withdraw) -> Result<Vec<u8>, CalldataError> {
    let unstake = call(
        "withdraw(uint256,address)",
        &[uint(w.token_id), address(&w.recipient)?],
    );
    Ok(multicall(&[
        decrease(w),
        collect(w.token_id, &w.recipient)?,
        unstake,
    ]))
}

/// `harvest(tokenId, recipient)`: a staked position's rewards paid by its farm.
pub fn harvest(token_id: U256, recipient: &str) -> Result<Vec<u8>, CalldataError> {
    Ok(call(
        "harvest(uint256,address)",
        &[uint(token_id), address(recipient)?],
    ))
}

/// `safeTransferFrom(from, to, tokenId)` on the position manager: the position staked in a
/// farm that takes its NFT (PancakeSwap's MasterChefV3 registers it as it arrives).
pub fn stake_transfer(from: &str, farm: &str, token_id: U256) -> Result<Vec<u8>, CalldataError> {
    Ok(call(
        "safeTransferFrom(address,address,uint256)",
        &[address(from)?, address(farm)?, uint(token_id)],
    ))
}

/// What an Aerodrome Slipstream gauge is asked of one position (its token id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaugeCall {
    /// `deposit(tokenId)`: staked (the gauge takes the NFT it was approved for).
    Deposit,
    /// `withdraw(tokenId)`: unstaked, its AERO paid.
    Withdraw,
    /// `getReward(tokenId)`: its AERO paid.
    GetReward,
}

/// A Slipstream gauge's call on the position `token_id`.
pub fn gauge(function: GaugeCall, token_id: U256) -> Vec<u8> {
    let signature = match function {
        GaugeCall::Deposit => "deposit(uint256)",
        GaugeCall::Withdraw => "withdraw(uint256)",
        GaugeCall::GetReward => "getReward(uint256)",
    };
    call(signature, &[uint(token_id)])
}

/// `approve(spender, tokenId)` on the position manager (ERC-721): what a gauge's `deposit`
/// needs to take the NFT.
pub fn approve_position(spender: &str, token_id: U256) -> Result<Vec<u8>, CalldataError> {
    Ok(call(
        "approve(address,uint256)",
        &[address(spender)?, uint(token_id)],
    ))
}

/// `decreaseLiquidity((tokenId, liquidity, amount0Min, amount1Min, deadline))`.
fn decrease(w: &Withdraw) -> Vec<u8> {
    call(
        "decreaseLiquidity((uint256,uint128,uint256,uint256,uint256))",
        &[
            uint(w.token_id),
            uint(U256::from(w.liquidity)),
            uint(w.minimums[0]),
            uint(w.minimums[1]),
            small(w.deadline),
        ],
    )
}

/// A range move in one transaction: `multicall([decreaseLiquidity(all of the old position),
/// collect(to the wallet), mint(the new range)])`; the mint pulls its tokens from the wallet
/// the collect has just paid.
pub fn rebalance(w: &Withdraw, new: &MintParams) -> Result<Vec<u8>, CalldataError> {
    let collect = collect(w.token_id, &w.recipient)?;
    Ok(multicall(&[decrease(w), collect, mint(new)?]))
}

/// `collect((tokenId, recipient, 2^128-1, 2^128-1))`: everything owed paid to `recipient`.
pub fn collect(token_id: U256, recipient: &str) -> Result<Vec<u8>, CalldataError> {
    Ok(call(
        "collect((uint256,address,uint128,uint128))",
        &[
            uint(token_id),
            address(recipient)?,
            uint(U256::from(MAX_UINT128)),
            uint(U256::from(MAX_UINT128)),
        ],
    ))
}

/// What an `increaseLiquidity` adds to an existing position: the desired amounts and their
/// minimums (token0, token1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Increase {
    pub token_id: U256,
    pub desired: [U256; 2],
    pub minimums: [U256; 2],
    /// Unix seconds.
    pub deadline: u64,
}

/// `increaseLiquidity((tokenId, amount0Desired, amount1Desired, amount0Min, amount1Min,
/// deadline))`.
pub fn increase(i: &Increase) -> Result<Vec<u8>, CalldataError> {
    Ok(call(
        "increaseLiquidity((uint256,uint256,uint256,uint256,uint256,uint256))",
        &[
            uint(i.token_id),
            uint(i.desired[0]),
            uint(i.desired[1]),
            uint(i.minimums[0]),
            uint(i.minimums[1]),
            small(i.deadline),
        ],
    ))
}

/// 0x-hex, lower case, as JSON-RPC takes data.
pub fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 + 2 * bytes.len());
    text.push_str("0x");
    for b in bytes {
        text.push_str(&format!("{b:02x}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::Address;
    use alloy_sol_types::{sol, SolCall};
    use std::str::FromStr;

    sol! {
        struct MintParamsAbi {
            address token0; address token1; uint24 fee; int24 tickLower; int24 tickUpper;
            uint256 amount0Desired; uint256 amount1Desired; uint256 amount0Min; uint256 amount1Min;
            address recipient; uint256 deadline;
        }
        struct DecreaseAbi { uint256 tokenId; uint128 liquidity; uint256 amount0Min; uint256 amount1Min; uint256 deadline; }
        struct CollectAbi { uint256 tokenId; address recipient; uint128 amount0Max; uint128 amount1Max; }
        function approve(address spender, uint256 amount);
        function mint(MintParamsAbi params);
        function decreaseLiquidity(DecreaseAbi params);
        function collect(CollectAbi params);
        function multicall(bytes[] data);
    }

    const WALLET: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
    const TOKEN0: &str = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
    const TOKEN1: &str = "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2";

    fn addr(text: &str) -> Address {
        Address::from_str(text).unwrap()
    }

    #[test]
    fn approve_is_the_erc20_call() {
        let amount = U256::from(123_456_789u64);
        let ours = approve(WALLET, amount).unwrap();
        let theirs = approveCall {
            spender: addr(WALLET),
            amount,
        }
        .abi_encode();
        assert_eq!(ours, theirs);
        assert_eq!(hex(&ours[..4]), "0x095ea7b3");
    }

    #[test]
    fn mint_encodes_negative_ticks_and_every_field() {
        let params = MintParams {
            token0: TOKEN0.into(),
            token1: TOKEN1.to_lowercase(),
            key: MintKey::Fee(3000),
            tick_lower: -887_220,
            tick_upper: 201_960,
            amount0_desired: U256::from(10u8).pow(U256::from(30u8)),
            amount1_desired: U256::from(7u8),
            amount0_min: U256::from(1u8),
            amount1_min: U256::ZERO,
            recipient: WALLET.into(),
            deadline: 1_800_000_000,
        };
        let ours = mint(&params).unwrap();
        let theirs = mintCall {
            params: MintParamsAbi {
                token0: addr(TOKEN0),
                token1: addr(TOKEN1),
                fee: alloy_primitives::aliases::U24::from(3000u32),
                tickLower: alloy_primitives::aliases::I24::try_from(-887_220i32).unwrap(),
                tickUpper: alloy_primitives::aliases::I24::try_from(201_960i32).unwrap(),
                amount0Desired: params.amount0_desired,
                amount1Desired: params.amount1_desired,
                amount0Min: params.amount0_min,
                amount1Min: params.amount1_min,
                recipient: addr(WALLET),
                deadline: U256::from(params.deadline),
            },
        }
        .abi_encode();
        assert_eq!(ours, theirs);
        assert_eq!(hex(&ours[..4]), "0x88316456");
    }

    /// Aerodrome Slipstream's manager and gauge, as their sources declare them.
    mod slipstream {
        alloy_sol_types::sol! {
            struct SlipstreamMint {
                address token0; address token1; int24 tickSpacing; int24 tickLower;
                int24 tickUpper; uint256 amount0Desired; uint256 amount1Desired;
                uint256 amount0Min; uint256 amount1Min; address recipient; uint256 deadline;
                uint160 sqrtPriceX96;
            }
            function mint(SlipstreamMint params);
            function approve(address to, uint256 tokenId);
            function deposit(uint256 tokenId);
            function withdraw(uint256 tokenId);
            function getReward(uint256 tokenId);
        }
    }

    #[test]
    fn a_slipstream_mint_names_its_pool_by_tick_spacing_and_gauge_calls_take_the_token() {
        let params = MintParams {
            token0: TOKEN0.into(),
            token1: TOKEN1.into(),
            key: MintKey::TickSpacing(100),
            tick_lower: -81_900,
            tick_upper: -78_200,
            amount0_desired: U256::from(3u8),
            amount1_desired: U256::from(4u8),
            amount0_min: U256::from(1u8),
            amount1_min: U256::from(2u8),
            recipient: WALLET.into(),
            deadline: 1_800_000_000,
        };
        let i24 = |v: i32| alloy_primitives::aliases::I24::try_from(v).unwrap();
        let theirs = slipstream::mintCall {
            params: slipstream::SlipstreamMint {
                token0: addr(TOKEN0),
                token1: addr(TOKEN1),
                tickSpacing: i24(100),
                tickLower: i24(-81_900),
                tickUpper: i24(-78_200),
                amount0Desired: params.amount0_desired,
                amount1Desired: params.amount1_desired,
                amount0Min: params.amount0_min,
                amount1Min: params.amount1_min,
                recipient: addr(WALLET),
                deadline: U256::from(params.deadline),
                sqrtPriceX96: alloy_primitives::aliases::U160::ZERO,
            },
        };
        assert_eq!(mint(&params).unwrap(), theirs.abi_encode());
        let id = U256::from(7u8);
        let calls = [
            (
                GaugeCall::Deposit,
                slipstream::depositCall { tokenId: id }.abi_encode(),
            ),
            (
                GaugeCall::Withdraw,
                slipstream::withdrawCall { tokenId: id }.abi_encode(),
            ),
            (
                GaugeCall::GetReward,
                slipstream::getRewardCall { tokenId: id }.abi_encode(),
            ),
        ];
        for (function, theirs) in calls {
            assert_eq!(gauge(function, id), theirs, "{function:?}");
        }
        let approve = slipstream::approveCall {
            to: addr(WALLET),
            tokenId: id,
        };
        assert_eq!(approve_position(WALLET, id).unwrap(), approve.abi_encode());
    }

    #[test]
    fn withdraw_is_a_multicall_of_decrease_then_collect() {
        let w = Withdraw {
            token_id: U256::from(42u8),
            liquidity: 9_876_543_210_123,
            minimums: [U256::from(5u8), U256::from(6u8)],
            deadline: 1_700_000_000,
            recipient: WALLET.into(),
        };
        let ours = withdraw(&w).unwrap();
        let decrease = decreaseLiquidityCall {
            params: DecreaseAbi {
                tokenId: w.token_id,
                liquidity: w.liquidity,
                amount0Min: w.minimums[0],
                amount1Min: w.minimums[1],
                deadline: U256::from(w.deadline),
            },
        }
        .abi_encode();
        let collect = collectCall {
            params: CollectAbi {
                tokenId: w.token_id,
                recipient: addr(WALLET),
                amount0Max: u128::MAX,
                amount1Max: u128::MAX,
            },
        }
        .abi_encode();
        let theirs = multicallCall {
            data: vec![decrease.into(), collect.into()],
        }
        .abi_encode();
        assert_eq!(ours, theirs);
        assert_eq!(hex(&ours[..4]), "0xac9650d8");
    }

    #[test]
    fn a_move_is_one_multicall_of_decrease_collect_and_mint() {
        let w = Withdraw {
            token_id: U256::from(7u8),
            liquidity: 1_000,
            minimums: [U256::from(1u8), U256::from(2u8)],
            deadline: 1_800_000_000,
            recipient: WALLET.into(),
        };
        let new = MintParams {
            token0: TOKEN0.into(),
            token1: TOKEN1.into(),
            key: MintKey::Fee(500),
            tick_lower: -60,
            tick_upper: 120,
            amount0_desired: U256::from(3u8),
            amount1_desired: U256::from(4u8),
            amount0_min: U256::ZERO,
            amount1_min: U256::ZERO,
            recipient: WALLET.into(),
            deadline: 1_800_000_000,
        };
        let ours = rebalance(&w, &new).unwrap();
        let decoded = multicallCall::abi_decode(&ours).unwrap();
        let parts: Vec<Vec<u8>> = decoded.data.iter().map(|b| b.to_vec()).collect();
        assert_eq!(
            parts,
            [
                decrease(&w),
                collect(w.token_id, WALLET).unwrap(),
                mint(&new).unwrap()
            ]
        );
        // The withdraw is the same multicall without the mint.
        let withdrawn = multicallCall::abi_decode(&withdraw(&w).unwrap()).unwrap();
        assert_eq!(withdrawn.data.len(), 2);
        assert_eq!(withdrawn.data[0].to_vec(), parts[0]);
    }

    #[test]
    fn a_malformed_address_is_refused() {
        assert!(approve("0x1234", U256::ZERO).is_err());
        assert!(approve("not an address", U256::ZERO).is_err());
    }
}
