//! Calldata of the transactions a linked wallet signs for an on-chain open, close or action:
//! ERC-20 `approve`, and the NonfungiblePositionManager's `mint`, `increaseLiquidity`,
//! `collect` and `multicall([decreaseLiquidity, collect])` (Uniswap v3 and PancakeSwap v3 share these signatures). Every argument is a static
//! ABI type, so the encoding is the words themselves; `multicall`'s `bytes[]` is the one
//! dynamic value. Addresses come from the catalog and the caller's own linked wallet only.

use crate::domain::math::U256;
use alloy_primitives::{keccak256, Address};
use std::str::FromStr;

/// A value that cannot be encoded (an address that is not 20 bytes of hex): a catalog or store
/// fault, never a client's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("cannot encode calldata: {0}")]
pub struct CalldataError(String);

/// `type(uint128).max`: `collect` takes everything owed.
pub const MAX_UINT128: u128 = u128::MAX;

fn selector(signature: &str) -> [u8; 4] {
    let hash = keccak256(signature.as_bytes());
    [hash[0], hash[1], hash[2], hash[3]]
}

fn uint(value: U256) -> [u8; 32] {
    value.to_be_bytes::<32>()
}

fn small(value: u64) -> [u8; 32] {
    uint(U256::from(value))
}

/// An `int24` word: two's complement, sign-extended to 256 bits.
fn int(value: i32) -> [u8; 32] {
    let fill = if value < 0 { 0xff } else { 0 };
    let mut word = [fill; 32];
    word[28..].copy_from_slice(&value.to_be_bytes());
    word
}

fn address(text: &str) -> Result<[u8; 32], CalldataError> {
    let parsed = Address::from_str(text)
        .map_err(|_| CalldataError(format!("{text:?} is not an EVM address")))?;
    let mut word = [0u8; 32];
    word[12..].copy_from_slice(parsed.as_slice());
    Ok(word)
}

fn call(signature: &str, words: &[[u8; 32]]) -> Vec<u8> {
    let mut data = Vec::with_capacity(4 + 32 * words.len());
    data.extend_from_slice(&selector(signature));
    for word in words {
        data.extend_from_slice(word);
    }
    data
}

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
    /// Hundredths of a basis point.
    pub fee: u32,
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

/// `mint(MintParams)`.
pub fn mint(p: &MintParams) -> Result<Vec<u8>, CalldataError> {
    Ok(call(
        "mint((address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256))",
        &[
            address(&p.token0)?,
            address(&p.token1)?,
            small(u64::from(p.fee)),
            int(p.tick_lower),
            int(p.tick_upper),
            uint(p.amount0_desired),
            uint(p.amount1_desired),
            uint(p.amount0_min),
            uint(p.amount1_min),
            address(&p.recipient)?,
            small(p.deadline),
        ],
    ))
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

/// `multicall(bytes[])`: the offset of the array, then the array.
fn multicall(calls: &[Vec<u8>]) -> Vec<u8> {
    let mut data = selector("multicall(bytes[])").to_vec();
    data.extend_from_slice(&small(32));
    data.extend_from_slice(&bytes_array(calls));
    data
}

/// A `bytes` value's tail: its length, then its bytes padded to whole words.
fn bytes_tail(bytes: &[u8]) -> Vec<u8> {
    let mut data = small(bytes.len() as u64).to_vec();
    data.extend_from_slice(bytes);
    data.resize(32 + bytes.len().div_ceil(32) * 32, 0);
    data
}

/// A `bytes[]` value's tail: its length, each element's offset (from the first offset's
/// word), then each element's tail.
fn bytes_array(elements: &[Vec<u8>]) -> Vec<u8> {
    let tails: Vec<Vec<u8>> = elements.iter().map(|e| bytes_tail(e)).collect();
    let mut data = small(elements.len() as u64).to_vec();
    let mut offset = 32 * elements.len();
    for tail in &tails {
        data.extend_from_slice(&small(offset as u64));
        offset += tail.len();
    }
    data.extend(tails.concat());
    data
}

/// The Uniswap v4 PositionManager's action codes (v4-periphery's `Actions`) this service sends.
pub mod v4_actions {
    pub const INCREASE_LIQUIDITY: u8 = 0x00;
    pub const DECREASE_LIQUIDITY: u8 = 0x01;
    pub const BURN_POSITION: u8 = 0x03;
    pub const TAKE_PAIR: u8 = 0x11;
    pub const CLOSE_CURRENCY: u8 = 0x12;
    pub const SWEEP: u8 = 0x14;
}

/// Permit2, at its canonical address on every chain: Uniswap v4's PositionManager takes
/// ERC-20 payments through it.
pub const PERMIT2: &str = "0x000000000022D473030F116dDEE9F6B43aC78BA3";

/// `Permit2.approve(token, spender, amount, expiration)`: `spender` may take up to `amount`
/// (a `uint160`) of the caller's `token` until `expiration` (unix seconds, a `uint48`).
pub fn permit2_approve(
    token: &str,
    spender: &str,
    amount: U256,
    expiration: u64,
) -> Result<Vec<u8>, CalldataError> {
    Ok(call(
        "approve(address,address,uint160,uint48)",
        &[
            address(token)?,
            address(spender)?,
            uint(amount),
            small(expiration),
        ],
    ))
}

/// One action of a Uniswap v4 `modifyLiquidities`, with its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum V4Action {
    /// `DECREASE_LIQUIDITY(tokenId, liquidity, amount0Min, amount1Min, hookData = "")`: 0
    /// liquidity collects the fees (v4 pays a position's fees at every modification).
    Decrease {
        token_id: U256,
        liquidity: u128,
        minimums: [U256; 2],
    },
    /// `BURN_POSITION(tokenId, amount0Min, amount1Min, hookData = "")`: all its liquidity and
    /// every fee owed out, the NFT burnt.
    Burn { token_id: U256, minimums: [U256; 2] },
    /// `TAKE_PAIR(currency0, currency1, recipient)`: what the actions owe the caller, paid to
    /// `recipient` (native ETH as `address(0)`).
    TakePair {
        currencies: [String; 2],
        recipient: String,
    },
    /// `INCREASE_LIQUIDITY(tokenId, liquidity, amount0Max, amount1Max, hookData = "")`.
    Increase {
        token_id: U256,
        liquidity: u128,
        maximums: [U256; 2],
    },
    /// `CLOSE_CURRENCY(currency)`: pays what the caller owes of it, or takes what it is owed
    /// (an add whose fees exceed its cost).
    CloseCurrency { currency: String },
    /// `SWEEP(currency, recipient)`: what the PositionManager holds of it back to `recipient`
    /// (the native currency a transaction's `value` sent beyond what it paid).
    Sweep { currency: String, recipient: String },
}

impl V4Action {
    fn code(&self) -> u8 {
        match self {
            V4Action::Decrease { .. } => v4_actions::DECREASE_LIQUIDITY,
            V4Action::TakePair { .. } => v4_actions::TAKE_PAIR,
            V4Action::Burn { .. } => v4_actions::BURN_POSITION,
            V4Action::Increase { .. } => v4_actions::INCREASE_LIQUIDITY,
            V4Action::CloseCurrency { .. } => v4_actions::CLOSE_CURRENCY,
            V4Action::Sweep { .. } => v4_actions::SWEEP,
        }
    }

    /// Its parameters, `abi.encode`d as the PositionManager decodes them.
    fn params(&self) -> Result<Vec<u8>, CalldataError> {
        Ok(match self {
            V4Action::Decrease {
                token_id,
                liquidity,
                minimums: limits,
            }
            | V4Action::Increase {
                token_id,
                liquidity,
                maximums: limits,
            } => [
                uint(*token_id),
                uint(U256::from(*liquidity)),
                uint(limits[0]),
                uint(limits[1]),
                // `hookData`: its offset (five words), then its length, none.
                small(5 * 32),
                small(0),
            ]
            .concat(),
            V4Action::Burn { token_id, minimums } => [
                uint(*token_id),
                uint(minimums[0]),
                uint(minimums[1]),
                // `hookData`: its offset (four words), then its length, none.
                small(4 * 32),
                small(0),
            ]
            .concat(),
            V4Action::CloseCurrency { currency } => address(currency)?.to_vec(),
            V4Action::Sweep {
                currency,
                recipient,
            } => [address(currency)?, address(recipient)?].concat(),
            V4Action::TakePair {
                currencies,
                recipient,
            } => [
                address(&currencies[0])?,
                address(&currencies[1])?,
                address(recipient)?,
            ]
            .concat(),
        })
    }
}

/// `modifyLiquidities(abi.encode(actions, params), deadline)`: the actions' codes as `bytes`
/// and their parameters as `bytes[]`, run in one unlock of the PoolManager.
pub fn modify_liquidities(actions: &[V4Action], deadline: u64) -> Result<Vec<u8>, CalldataError> {
    let codes: Vec<u8> = actions.iter().map(V4Action::code).collect();
    let params: Vec<Vec<u8>> = actions
        .iter()
        .map(V4Action::params)
        .collect::<Result<_, _>>()?;
    let codes = bytes_tail(&codes);
    let unlock = [
        small(2 * 32).to_vec(),
        small((2 * 32 + codes.len()) as u64).to_vec(),
        codes,
        bytes_array(&params),
    ]
    .concat();
    let mut data = selector("modifyLiquidities(bytes,uint256)").to_vec();
    data.extend_from_slice(&small(2 * 32));
    data.extend_from_slice(&small(deadline));
    data.extend_from_slice(&bytes_tail(&unlock));
    Ok(data)
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
    use alloy_sol_types::{sol, SolCall};

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
        function modifyLiquidities(bytes unlockData, uint256 deadline);
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
            fee: 3000,
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
            fee: 500,
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

    #[test]
    fn a_v4_modification_is_the_position_managers_unlock_data() {
        use alloy_primitives::Bytes;
        use alloy_sol_types::SolValue;
        let (token_id, liquidity) = (U256::from(77u8), u128::MAX - 3);
        let minimums = [U256::from(5u8), U256::MAX];
        let actions = [
            V4Action::Decrease {
                token_id,
                liquidity,
                minimums,
            },
            V4Action::TakePair {
                currencies: [
                    "0x0000000000000000000000000000000000000000".into(),
                    TOKEN1.into(),
                ],
                recipient: WALLET.into(),
            },
        ];
        let ours = modify_liquidities(&actions, 1_800_000_000).unwrap();
        let decrease = (
            token_id,
            U256::from(liquidity),
            minimums[0],
            minimums[1],
            Bytes::new(),
        )
            .abi_encode_params();
        let take = (Address::ZERO, addr(TOKEN1), addr(WALLET)).abi_encode_params();
        let codes = Bytes::from(vec![0x01u8, 0x11]);
        let unlock = (codes, vec![Bytes::from(decrease), Bytes::from(take)]).abi_encode_params();
        let burn = V4Action::Burn { token_id, minimums };
        let theirs_burn = (token_id, minimums[0], minimums[1], Bytes::new()).abi_encode_params();
        assert_eq!(burn.params().unwrap(), theirs_burn);
        let theirs = modifyLiquiditiesCall {
            unlockData: unlock.into(),
            deadline: U256::from(1_800_000_000u64),
        }
        .abi_encode();
        assert_eq!(hex(&ours), hex(&theirs));
    }
}
