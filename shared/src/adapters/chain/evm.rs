//! Uniswap v3 and PancakeSwap v3 pools read over JSON-RPC: the head's number first, then the
//! block a sync reads at (and the blocks of the stored states, to see reorgs) by number, then
//! every getter of every pool of the chain at that block's hash (EIP-1898: a block a reorg
//! replaces meanwhile fails the calls instead of mixing two chains), in batches. ABI encoding
//! and decoding by `alloy-sol-types` from the pools' Solidity signatures, decoded strictly: each
//! answer exactly its words, and no word with bits its type does not have.

use super::rpc::{RpcClient, RpcError};
use crate::domain::catalog::Pool;
use crate::domain::market::{Balances, PoolState, SlipstreamState, TickState};
use crate::domain::math::U256;
use crate::domain::model::Protocol;
use alloy_sol_types::{sol, SolCall};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

sol! {
    /// The getters both protocols share. PancakeSwap v3's `slot0` has a wider `feeProtocol`
    /// (uint32 for uint8): only the first two words are declared, and decoded.
    interface IConcentratedPool {
        function slot0() external view returns (uint160 sqrtPriceX96, int24 tick);
        function liquidity() external view returns (uint128);
        function feeGrowthGlobal0X128() external view returns (uint256);
        function feeGrowthGlobal1X128() external view returns (uint256);
        function ticks(int24 tick) external view returns (
            uint128 liquidityGross,
            int128 liquidityNet,
            uint256 feeGrowthOutside0X128,
            uint256 feeGrowthOutside1X128,
            int56 tickCumulativeOutside,
            uint160 secondsPerLiquidityOutsideX128,
            uint32 secondsOutside,
            bool initialized
        );
    }

    /// Aerodrome Slipstream's pool beside v3's getters: `ticks` with the staked liquidity and
    /// the reward growth among v3's words (ten), and the pool's own, dynamic `fee()`. Its
    /// `slot0` has no `feeProtocol` (six words).
    interface ISlipstreamPool {
        function ticks(int24 tick) external view returns (
            uint128 liquidityGross,
            int128 liquidityNet,
            int128 stakedLiquidityNet,
            uint256 feeGrowthOutside0X128,
            uint256 feeGrowthOutside1X128,
            uint256 rewardGrowthOutsideX128,
            int56 tickCumulativeOutside,
            uint160 secondsPerLiquidityOutsideX128,
            uint32 secondsOutside,
            bool initialized
        );
        function fee() external view returns (uint24);
        function gauge() external view returns (address);
    }

    /// A pool's own balance of each of its tokens: how deep a discovered pool is.
    interface IErc20Balance {
        function balanceOf(address owner) external view returns (uint256);
    }
}

use IConcentratedPool::{
    feeGrowthGlobal0X128Call, feeGrowthGlobal1X128Call, liquidityCall, slot0Call, ticksCall,
};

/// How a v3-like pool's getters answer: Uniswap v3's (and its forks'), or Slipstream's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    UniswapV3,
    Slipstream,
}

impl Layout {
    pub fn of(protocol: Protocol) -> Layout {
        if protocol.is_slipstream() {
            Layout::Slipstream
        } else {
            Layout::UniswapV3
        }
    }

    /// Calls of [`pool_calls`] before the ticks': Slipstream's `fee()` and `gauge()` after
    /// v3's four.
    pub fn state_calls(self) -> usize {
        match self {
            Layout::UniswapV3 => 4,
            Layout::Slipstream => 6,
        }
    }

    /// Words in `slot0`'s answer (PancakeSwap's has as many as Uniswap's).
    fn slot0_words(self) -> usize {
        match self {
            Layout::UniswapV3 => 7,
            Layout::Slipstream => 6,
        }
    }
}

/// A pool's state or why it could not be read whole.
pub type PoolRead = Result<PoolState, String>;

pub(super) fn hex_data(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 + bytes.len() * 2);
    text.push_str("0x");
    for b in bytes {
        text.push_str(&format!("{b:02x}"));
    }
    text
}

pub(super) fn hex_bytes(value: &Value) -> Result<Vec<u8>, String> {
    let text = value
        .as_str()
        .and_then(|t| t.strip_prefix("0x"))
        .ok_or("eth_call answered no hex data")?;
    if text.len() % 2 != 0 {
        return Err("eth_call answered odd-length hex".into());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&text[i..i + 2], 16)
                .map_err(|_| "eth_call answered bad hex".to_string())
        })
        .collect()
}

/// A JSON-RPC quantity: `0x` and at most 16 hex digits, no leading zero (`0x0` for zero).
pub(super) fn quantity(value: &Value) -> Option<u64> {
    let digits = value.as_str()?.strip_prefix("0x")?;
    let canonical = !digits.is_empty()
        && digits.len() <= 16
        && (digits == "0" || !digits.starts_with('0'))
        && digits.bytes().all(|b| b.is_ascii_hexdigit());
    canonical
        .then(|| u64::from_str_radix(digits, 16).ok())
        .flatten()
}

/// A block the sync reads at, as the node names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub number: u64,
    /// `0x` and 64 lower-case hex digits.
    pub hash: String,
    /// Unix seconds, where the node answered them.
    pub timestamp: Option<u64>,
}

pub(super) fn block_hash(value: &Value) -> Option<String> {
    let text = value.as_str()?;
    let digits = text.strip_prefix("0x")?;
    (digits.len() == 64 && digits.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| text.to_ascii_lowercase())
}

fn to_u256<const BITS: usize, const LIMBS: usize>(
    value: alloy_sol_types::private::Uint<BITS, LIMBS>,
) -> U256 {
    U256::from_limbs_slice(value.as_limbs())
}

/// The latest block number of the chain.
pub async fn block_number(rpc: &RpcClient) -> Result<u64, RpcError> {
    quantity(&rpc.call("eth_blockNumber", json!([])).await?).ok_or(RpcError::Malformed(
        "eth_blockNumber answered no hex quantity",
    ))
}

/// The blocks at `numbers`, in one batch: `None` where the node knows no block of that number.
/// A block answered with another number, or without a well-formed hash, fails the whole read.
pub async fn blocks(rpc: &RpcClient, numbers: &[u64]) -> Result<Vec<Option<Block>>, RpcError> {
    let calls: Vec<_> = numbers
        .iter()
        .map(|n| ("eth_getBlockByNumber", json!([format!("0x{n:x}"), false])))
        .collect();
    let bad = RpcError::Malformed("eth_getBlockByNumber answered a malformed block");
    rpc.batch(&calls)
        .await
        .into_iter()
        .zip(numbers)
        .map(|(answer, &number)| {
            let answer = answer?;
            if answer.is_null() {
                return Ok(None);
            }
            let named = answer.get("number").and_then(quantity);
            let hash = answer.get("hash").and_then(block_hash);
            let timestamp = answer.get("timestamp").map(quantity);
            match (named, hash, timestamp) {
                (Some(n), Some(hash), None | Some(Some(_))) if n == number => Ok(Some(Block {
                    number,
                    hash,
                    timestamp: timestamp.flatten(),
                })),
                _ => Err(bad.clone()),
            }
        })
        .collect()
}

/// The call of a v3 pool's `slot0` at `at` (what prices its tokens at a block).
pub(super) fn slot0_call(pool: &str, at: &Value) -> (&'static str, Value) {
    let data = hex_data(&slot0Call {}.abi_encode());
    ("eth_call", json!([{"to": pool, "data": data}, at]))
}

/// [`slot0_call`]'s answer: the sqrt price and the tick.
pub(super) fn decode_slot0(
    answer: Result<Value, RpcError>,
    layout: Layout,
) -> Result<(U256, i32), String> {
    let slot0 = decoded::<slot0Call>(answer, layout.slot0_words(), "slot0")?;
    Ok((to_u256(slot0.sqrtPriceX96), slot0.tick.as_i32()))
}

/// `balanceOf(pool)` of the pool's token0, then of its token1.
pub(super) fn balance_calls(pool: &Pool, block: &Block) -> Vec<(&'static str, Value)> {
    let (token0, token1) = if pool.orientation.base_is_token0 {
        (&pool.token_a, &pool.token_b)
    } else {
        (&pool.token_b, &pool.token_a)
    };
    let owner = pool.id.parse().unwrap_or_default();
    let data = hex_data(&IErc20Balance::balanceOfCall { owner }.abi_encode());
    let at = json!({"blockHash": block.hash});
    [token0, token1]
        .map(|t| ("eth_call", json!([{"to": t.address, "data": data}, at])))
        .to_vec()
}

/// Both balances, or `None` when either token does not answer one word: a token that will not
/// say what the pool holds leaves the pool without a depth (it prices nothing), never without
/// its state.
pub(super) fn decode_balances(answers: Vec<Result<Value, RpcError>>) -> Option<Balances> {
    let mut read = answers.into_iter().map(|answer| {
        let data = hex_bytes(&answer.ok()?).ok()?;
        strict::<IErc20Balance::balanceOfCall>(&data, 1).ok()
    });
    Some(Balances {
        token0: read.next()??,
        token1: read.next()??,
    })
}

/// The calls that read one pool at `block`: `slot0`, `liquidity`, both fee growth globals (and
/// a Slipstream pool's `fee()`), then `ticks(t)` for each of `ticks`.
pub(super) fn pool_calls(
    pool: impl std::fmt::Display,
    ticks: &[i32],
    block: &Block,
    layout: Layout,
) -> Vec<(&'static str, Value)> {
    let at = json!({"blockHash": block.hash});
    let to = pool.to_string();
    let call = |data: Vec<u8>| ("eth_call", json!([{"to": to, "data": hex_data(&data)}, at]));
    let mut calls = vec![
        call(slot0Call {}.abi_encode()),
        call(liquidityCall {}.abi_encode()),
        call(feeGrowthGlobal0X128Call {}.abi_encode()),
        call(feeGrowthGlobal1X128Call {}.abi_encode()),
    ];
    if layout == Layout::Slipstream {
        calls.push(call(ISlipstreamPool::feeCall {}.abi_encode()));
        calls.push(call(ISlipstreamPool::gaugeCall {}.abi_encode()));
    }
    for tick in ticks {
        let tick =
            alloy_sol_types::private::primitives::aliases::I24::try_from(*tick).unwrap_or_default();
        calls.push(call(ticksCall { tick }.abi_encode()));
    }
    calls
}

/// An answer of exactly `words` ABI words, decoded with every word checked against its type
/// (no stray high bits in an `int24`, `uint160` or `uint128`, a `bool` 0 or 1).
pub(super) fn strict<C: SolCall>(data: &[u8], words: usize) -> Result<C::Return, ()> {
    if data.len() != words * 32 {
        return Err(());
    }
    C::abi_decode_returns_validate(data).map_err(|_| ())
}

/// Words in a `ticks` answer: Uniswap v3's, Slipstream's.
const TICK_WORDS: usize = 8;
const SLIPSTREAM_TICK_WORDS: usize = 10;

/// The answers of [`pool_calls`] as the pool's state at `block`.
pub(super) fn decode_state(
    answers: Vec<Result<Value, RpcError>>,
    tick_list: &[i32],
    block: &Block,
    observed_at: DateTime<Utc>,
    layout: Layout,
) -> PoolRead {
    let mut answers = answers.into_iter();
    let next = &mut answers;
    let slot0 = next_decoded::<slot0Call>(next, layout.slot0_words(), "slot0")?;
    let liquidity = next_decoded::<liquidityCall>(next, 1, "liquidity")?;
    let growth0 = next_decoded::<feeGrowthGlobal0X128Call>(next, 1, "feeGrowthGlobal0X128")?;
    let growth1 = next_decoded::<feeGrowthGlobal1X128Call>(next, 1, "feeGrowthGlobal1X128")?;
    let slipstream = match layout {
        Layout::UniswapV3 => None,
        Layout::Slipstream => {
            let fee = next_decoded::<ISlipstreamPool::feeCall>(next, 1, "fee")?;
            let gauge = next_decoded::<ISlipstreamPool::gaugeCall>(next, 1, "gauge")?;
            Some(SlipstreamState {
                fee: fee.to::<u32>(),
                gauge: (gauge != alloy_primitives::Address::ZERO).then(|| gauge.to_checksum(None)),
            })
        }
    };
    let mut ticks = Vec::with_capacity(tick_list.len());
    for tick in tick_list {
        let (initialized, outside) = match layout {
            Layout::UniswapV3 => {
                let info = next_decoded::<ticksCall>(next, TICK_WORDS, "ticks")?;
                let outside = [info.feeGrowthOutside0X128, info.feeGrowthOutside1X128];
                (info.initialized, outside)
            }
            Layout::Slipstream => {
                let info = next_decoded::<ISlipstreamPool::ticksCall>(
                    next,
                    SLIPSTREAM_TICK_WORDS,
                    "ticks",
                )?;
                let outside = [info.feeGrowthOutside0X128, info.feeGrowthOutside1X128];
                (info.initialized, outside)
            }
        };
        ticks.push(TickState {
            tick: *tick,
            initialized,
            fee_growth_outside0: to_u256(outside[0]),
            fee_growth_outside1: to_u256(outside[1]),
        });
    }
    Ok(PoolState {
        sqrt_price: to_u256(slot0.sqrtPriceX96),
        tick: slot0.tick.as_i32(),
        liquidity,
        fee_growth_global0: to_u256(growth0),
        fee_growth_global1: to_u256(growth1),
        height: block.number,
        block_hash: Some(block.hash.clone()),
        observed_at,
        ticks,
        balances: None,
        slipstream,
    })
}

/// One `eth_call` at the block's hash.
pub fn call(to: alloy_primitives::Address, data: Vec<u8>, block: &Block) -> (&'static str, Value) {
    let to = to.to_checksum(None);
    (
        "eth_call",
        json!([{"to": to, "data": hex_data(&data)}, {"blockHash": block.hash}]),
    )
}

/// The next of a batch's answers decoded strictly as `C`'s return ([`decoded`]).
pub(super) fn next_decoded<C: SolCall>(
    answers: &mut impl Iterator<Item = Result<Value, RpcError>>,
    words: usize,
    what: &str,
) -> Result<C::Return, String> {
    decoded::<C>(next_answer(answers), words, what)
}

/// A batch's next answer; one that answered fewer calls than it was sent is malformed.
pub(super) fn next_answer(
    answers: &mut impl Iterator<Item = Result<Value, RpcError>>,
) -> Result<Value, RpcError> {
    answers
        .next()
        .unwrap_or(Err(RpcError::Malformed("no answer")))
}

/// An answer decoded strictly (exactly `words` words, each valid for its type).
pub fn decoded<C: SolCall>(
    answer: Result<Value, RpcError>,
    words: usize,
    what: &str,
) -> Result<C::Return, String> {
    let answer = answer.map_err(|e| format!("{what}: {e}"))?;
    let data = hex_bytes(&answer).map_err(|e| format!("{what}: {e}"))?;
    strict::<C>(&data, words).map_err(|_| format!("{what}: undecodable answer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(value: u128, negative: bool) -> Vec<u8> {
        let mut w = if negative {
            vec![0xff; 32]
        } else {
            vec![0; 32]
        };
        if negative {
            let v = (-(value as i128)) as u128;
            w[16..].copy_from_slice(&v.to_be_bytes());
        } else {
            w[16..].copy_from_slice(&value.to_be_bytes());
        }
        w
    }

    #[test]
    fn a_pancakeswap_slot0_decodes_its_first_two_words() {
        // Uniswap's seven words and PancakeSwap's (its feeProtocol a uint32 word) decode alike.
        let sqrt = 79228162514264337593543950336u128;
        for fee_protocol in [0u128, 0x0213_0213] {
            let mut data = word(sqrt, false);
            data.extend(word(12, true));
            for extra in [1, 2, 3, fee_protocol, 1] {
                data.extend(word(extra, false));
            }
            let decoded = strict::<slot0Call>(&data, Layout::UniswapV3.slot0_words()).unwrap();
            assert_eq!(to_u256(decoded.sqrtPriceX96), U256::from(sqrt));
            assert_eq!(decoded.tick.as_i32(), -12);
        }
        assert!(strict::<slot0Call>(&word(sqrt, false), Layout::UniswapV3.slot0_words()).is_err());
    }

    #[test]
    fn words_with_bits_their_type_lacks_are_refused() {
        let slot0 = |sqrt: Vec<u8>, tick: Vec<u8>| {
            let mut data = sqrt;
            data.extend(tick);
            for _ in 0..5 {
                data.extend(word(0, false));
            }
            data
        };
        let sqrt = word(1 << 96, false);
        assert!(strict::<slot0Call>(
            &slot0(sqrt.clone(), word(5, true)),
            Layout::UniswapV3.slot0_words()
        )
        .is_ok());
        // int24: a negative tick must be sign-extended over the whole word, a positive one
        // zero-extended.
        let mut dirty_tick = word(5, true);
        dirty_tick[0] = 0x7f;
        let mut high_tick = word(5, false);
        high_tick[28] = 0x01;
        // uint160: a bit above 160.
        let mut dirty_sqrt = sqrt.clone();
        dirty_sqrt[11] = 0x01;
        for data in [
            slot0(sqrt.clone(), dirty_tick),
            slot0(sqrt, high_tick),
            slot0(dirty_sqrt, word(5, false)),
        ] {
            assert!(strict::<slot0Call>(&data, Layout::UniswapV3.slot0_words()).is_err());
        }
        // uint128: a bit above 128; a word too many.
        let mut dirty_liquidity = word(7, false);
        dirty_liquidity[15] = 0x01;
        assert!(strict::<liquidityCall>(&dirty_liquidity, 1).is_err());
        let mut long = word(7, false);
        long.extend(word(0, false));
        assert!(strict::<liquidityCall>(&long, 1).is_err());
        assert_eq!(strict::<liquidityCall>(&word(7, false), 1), Ok(7));
        // bool: only 0 or 1.
        let mut ticks: Vec<u8> = (0..7).flat_map(|_| word(0, false)).collect();
        ticks.extend(word(2, false));
        assert!(strict::<ticksCall>(&ticks, TICK_WORDS).is_err());
    }

    #[test]
    fn quantities_and_hashes_are_read_strictly() {
        assert_eq!(quantity(&json!("0x0")), Some(0));
        assert_eq!(quantity(&json!("0xff")), Some(255));
        assert_eq!(quantity(&json!("0xffffffffffffffff")), Some(u64::MAX));
        for bad in ["0x", "0x01", "ff", "0x1ffffffffffffffff", "0xg", " 0x1"] {
            assert_eq!(quantity(&json!(bad)), None, "{bad}");
        }
        assert_eq!(quantity(&json!(255)), None);
        let hash = format!("0x{}", "Ab".repeat(32));
        assert_eq!(block_hash(&json!(hash)), Some(hash.to_ascii_lowercase()));
        assert_eq!(block_hash(&json!(format!("0x{}", "a".repeat(63)))), None);
    }

    #[test]
    fn calls_encode_as_the_selectors_solidity_computes() {
        assert_eq!(hex_data(&slot0Call {}.abi_encode()), "0x3850c7bd");
        assert_eq!(hex_data(&liquidityCall {}.abi_encode()), "0x1a686502");
        let tick = alloy_sol_types::private::primitives::aliases::I24::try_from(-60).unwrap();
        let encoded = ticksCall { tick }.abi_encode();
        assert_eq!(hex_data(&encoded[..4]), "0xf30dba93");
        assert_eq!(encoded[4..], word(60, true)[..]);
    }
}
