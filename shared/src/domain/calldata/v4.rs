//! Uniswap v4's calldata: the PositionManager's `modifyLiquidities` (its actions' codes as
//! `bytes`, their parameters as `bytes[]`) and Permit2's `approve`.

use super::abi::{
    address, bytes_array, bytes_tail, call, int, multicall, selector, small, uint, CalldataError,
};
use crate::domain::math::U256;
use crate::domain::transactions::PermitBatch;

/// The Uniswap v4 PositionManager's action codes (v4-periphery's `Actions`) this service sends.
pub mod v4_actions {
    pub const INCREASE_LIQUIDITY: u8 = 0x00;
    pub const DECREASE_LIQUIDITY: u8 = 0x01;
    pub const MINT_POSITION: u8 = 0x02;
    pub const BURN_POSITION: u8 = 0x03;
    pub const MINT_POSITION_FROM_DELTAS: u8 = 0x05;
    pub const SETTLE_PAIR: u8 = 0x0d;
    pub const TAKE_PAIR: u8 = 0x11;
    pub const CLOSE_CURRENCY: u8 = 0x12;
    pub const SWEEP: u8 = 0x14;
}

/// Permit2, at its canonical address on every chain: Uniswap v4's PositionManager takes
/// ERC-20 payments through it.
pub use crate::domain::transactions::PERMIT2;

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

/// A Uniswap v4 pool's key: its currencies (native ETH as `address(0)`), fee, tick spacing and
/// hooks contract (`address(0)`: none); the pool's id is its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolKey {
    pub currencies: [String; 2],
    pub fee: u32,
    pub tick_spacing: i32,
    pub hooks: String,
}

impl PoolKey {
    /// The pool's id: `keccak256(abi.encode(key))`, `0x` and 64 lower-case hex digits.
    pub fn id(&self) -> Result<String, CalldataError> {
        Ok(format!("{:#x}", alloy_primitives::keccak256(self.words()?)))
    }

    /// Its five words, inline (a static struct).
    fn words(&self) -> Result<Vec<u8>, CalldataError> {
        Ok([
            address(&self.currencies[0])?,
            address(&self.currencies[1])?,
            small(u64::from(self.fee)),
            int(self.tick_spacing),
            address(&self.hooks)?,
        ]
        .concat())
    }
}

/// `multicall([PositionManager.permitBatch(owner, batch, signature), call])`: the wallet's
/// signed Permit2 batch spent by `call` (a `modifyLiquidities`) in one transaction. The
/// batch is `((address token, uint160 amount, uint48 expiration, uint48 nonce)[] details,
/// address spender, uint256 sigDeadline)`.
pub fn with_permit(
    owner: &str,
    (batch, signature): (&PermitBatch, &[u8]),
    call: &[u8],
) -> Result<Vec<u8>, CalldataError> {
    let mut details = small(batch.details.len() as u64).to_vec();
    for d in &batch.details {
        let amount = d
            .amount
            .parse::<U256>()
            .map_err(|_| CalldataError::new("a permit's amount is not a number"))?;
        details.extend(
            [
                address(&d.token)?,
                uint(amount),
                small(d.expiration),
                small(d.nonce),
            ]
            .concat(),
        );
    }
    // The batch: its details' offset (past its three head words), spender, sigDeadline.
    let batch_words = [
        small(3 * 32).to_vec(),
        address(&batch.spender)?.to_vec(),
        small(batch.sig_deadline).to_vec(),
        details,
    ]
    .concat();
    let mut permit =
        selector("permitBatch(address,((address,uint160,uint48,uint48)[],address,uint256),bytes)")
            .to_vec();
    permit.extend(address(owner)?);
    permit.extend(small(3 * 32));
    permit.extend(small((3 * 32 + batch_words.len()) as u64));
    permit.extend(batch_words);
    permit.extend(bytes_tail(signature));
    Ok(multicall(&[permit, call.to_vec()]))
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
    /// `MINT_POSITION(poolKey, tickLower, tickUpper, liquidity, amount0Max, amount1Max, owner,
    /// hookData = "")`: a new position's NFT to `owner`.
    Mint {
        key: PoolKey,
        ticks: (i32, i32),
        liquidity: u128,
        maximums: [U256; 2],
        owner: String,
    },
    /// `MINT_POSITION_FROM_DELTAS(poolKey, tickLower, tickUpper, amount0Max, amount1Max, owner,
    /// hookData = "")`: a new position of all the credit the actions before it left (a range
    /// move's burn).
    MintFromDeltas {
        key: PoolKey,
        ticks: (i32, i32),
        maximums: [U256; 2],
        owner: String,
    },
    /// `SETTLE_PAIR(currency0, currency1)`: what the actions owe of both, paid by the caller.
    SettlePair { currencies: [String; 2] },
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
            V4Action::Mint { .. } => v4_actions::MINT_POSITION,
            V4Action::MintFromDeltas { .. } => v4_actions::MINT_POSITION_FROM_DELTAS,
            V4Action::SettlePair { .. } => v4_actions::SETTLE_PAIR,
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
            V4Action::Mint {
                key,
                ticks,
                liquidity,
                maximums,
                owner,
            } => mint_params(key, *ticks, Some(*liquidity), maximums, owner)?,
            V4Action::MintFromDeltas {
                key,
                ticks,
                maximums,
                owner,
            } => mint_params(key, *ticks, None, maximums, owner)?,
            V4Action::SettlePair { currencies } => {
                [address(&currencies[0])?, address(&currencies[1])?].concat()
            }
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

/// A mint's parameters: the key, the range, the liquidity (`MINT_POSITION`; none for
/// `MINT_POSITION_FROM_DELTAS`, which mints what the credit funds), the maximums, the owner and
/// an empty `hookData`.
fn mint_params(
    key: &PoolKey,
    (lower, upper): (i32, i32),
    liquidity: Option<u128>,
    maximums: &[U256; 2],
    owner: &str,
) -> Result<Vec<u8>, CalldataError> {
    let mut words = key.words()?;
    words.extend(int(lower));
    words.extend(int(upper));
    if let Some(liquidity) = liquidity {
        words.extend(uint(U256::from(liquidity)));
    }
    words.extend(uint(maximums[0]));
    words.extend(uint(maximums[1]));
    words.extend(address(owner)?);
    // `hookData`: its offset (past this word), then its length, none.
    words.extend(small(words.len() as u64 + 32));
    words.extend(small(0));
    Ok(words)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::calldata::hex;
    use alloy_primitives::aliases::{I24, U24};
    use alloy_primitives::Address;
    use alloy_sol_types::{sol, SolCall};
    use std::str::FromStr;

    sol! {
        function modifyLiquidities(bytes unlockData, uint256 deadline);
        struct Details { address token; uint160 amount; uint48 expiration; uint48 nonce; }
        struct Batch { Details[] details; address spender; uint256 sigDeadline; }
        function permitBatch(address owner, Batch _permitBatch, bytes signature);
        function multicall(bytes[] data);
    }

    #[test]
    fn a_signed_permit_is_the_position_managers_permit_batch_in_a_multicall() {
        use crate::domain::transactions::PermitDetails;
        use alloy_primitives::aliases::{U160, U48};
        let details = |token: &str, amount: u128, nonce: u64| PermitDetails {
            token: token.into(),
            amount: amount.to_string(),
            expiration: 1_800_000_600,
            nonce,
        };
        let batch = PermitBatch {
            details: vec![
                details(TOKEN1, u128::MAX, 0),
                details(WALLET, 5, 281_474_976_710_655),
            ],
            spender: TOKEN1.into(),
            sig_deadline: 1_800_000_000,
        };
        let signature = [7u8; 65];
        let call = vec![1u8, 2, 3, 4, 5];
        let ours = with_permit(WALLET, (&batch, &signature), &call).unwrap();
        let theirs_details = |token: &str, amount: u128, nonce: u64| Details {
            token: addr(token),
            amount: U160::from(amount),
            expiration: U48::from(1_800_000_600u64),
            nonce: U48::from(nonce),
        };
        let permit = permitBatchCall {
            owner: addr(WALLET),
            _permitBatch: Batch {
                details: vec![
                    theirs_details(TOKEN1, u128::MAX, 0),
                    theirs_details(WALLET, 5, 281_474_976_710_655),
                ],
                spender: addr(TOKEN1),
                sigDeadline: U256::from(1_800_000_000u64),
            },
            signature: signature.to_vec().into(),
        }
        .abi_encode();
        let theirs = multicallCall {
            data: vec![permit.into(), call.into()],
        }
        .abi_encode();
        assert_eq!(hex(&ours), hex(&theirs));
    }

    const WALLET: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
    const TOKEN1: &str = "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2";

    fn addr(text: &str) -> Address {
        Address::from_str(text).unwrap()
    }

    #[test]
    fn a_v4_modification_is_the_position_managers_unlock_data() {
        use alloy_primitives::Bytes;
        use alloy_sol_types::SolValue;
        let (token_id, liquidity) = (U256::from(77u8), u128::MAX - 3);
        let limits = [U256::from(5u8), U256::MAX];
        let (native, token) = (Address::ZERO.to_string(), TOKEN1.to_string());
        let decrease = V4Action::Decrease {
            token_id,
            liquidity,
            minimums: limits,
        };
        let currencies = [native.clone(), token.clone()];
        let take = V4Action::TakePair {
            currencies,
            recipient: WALLET.into(),
        };
        let ours = modify_liquidities(&[decrease, take], 1_800_000_000).unwrap();
        let (l, none) = (U256::from(liquidity), Bytes::new());
        let decrease = (token_id, l, limits[0], limits[1], none.clone()).abi_encode_params();
        let take = (Address::ZERO, addr(TOKEN1), addr(WALLET)).abi_encode_params();
        let codes = Bytes::from(vec![0x01u8, 0x11]);
        let unlock = (codes, vec![Bytes::from(decrease), Bytes::from(take)]).abi_encode_params();
        let deadline = U256::from(1_800_000_000u64);
        let theirs = modifyLiquiditiesCall {
            unlockData: unlock.into(),
            deadline,
        }
        .abi_encode();
        assert_eq!(hex(&ours), hex(&theirs));
        // The other actions' parameters, each as `abi.encode` lays them out.
        let burn = (token_id, limits[0], limits[1], none.clone()).abi_encode_params();
        let increase = (token_id, l, limits[0], limits[1], none.clone()).abi_encode_params();
        let sweep = (Address::ZERO, addr(WALLET)).abi_encode_params();
        let key = PoolKey {
            currencies: [native.clone(), token.clone()],
            fee: 3000,
            tick_spacing: -60,
            hooks: WALLET.into(),
        };
        let their_key = (
            Address::ZERO,
            addr(TOKEN1),
            U24::from(3000u32),
            I24::try_from(-60i32).unwrap(),
            addr(WALLET),
        );
        let (lower, upper) = (
            I24::try_from(-887_220).unwrap(),
            I24::try_from(600).unwrap(),
        );
        let (max0, max1) = (7u128, u128::MAX);
        let owner = addr(WALLET);
        let mint = (their_key, lower, upper, l, max0, max1, owner, none.clone());
        let from_deltas = (their_key, lower, upper, max0, max1, owner, none);
        let (mint, from_deltas) = (mint.abi_encode_params(), from_deltas.abi_encode_params());
        let settle = (Address::ZERO, addr(TOKEN1)).abi_encode_params();
        let maximums = [U256::from(max0), U256::from(max1)];
        for (action, theirs) in [
            (
                V4Action::Burn {
                    token_id,
                    minimums: limits,
                },
                burn,
            ),
            (
                V4Action::Increase {
                    token_id,
                    liquidity,
                    maximums: limits,
                },
                increase,
            ),
            (
                V4Action::Mint {
                    key: key.clone(),
                    ticks: (-887_220, 600),
                    liquidity,
                    maximums,
                    owner: WALLET.into(),
                },
                mint,
            ),
            (
                V4Action::MintFromDeltas {
                    key,
                    ticks: (-887_220, 600),
                    maximums,
                    owner: WALLET.into(),
                },
                from_deltas,
            ),
            (
                V4Action::SettlePair {
                    currencies: [native.clone(), token.clone()],
                },
                settle,
            ),
            (
                V4Action::CloseCurrency { currency: token },
                addr(TOKEN1).abi_encode(),
            ),
            (
                V4Action::Sweep {
                    currency: native,
                    recipient: WALLET.into(),
                },
                sweep,
            ),
        ] {
            assert_eq!(action.params().unwrap(), theirs, "{action:?}");
        }
    }
}
