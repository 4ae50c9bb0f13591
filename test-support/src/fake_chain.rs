//! A loopback EVM chain whose answers a test sets: one Uniswap v3 pool's getters, blocks with
//! hashes (a fork renames the blocks from a height on, as a reorg does), and faults a provider
//! may answer with (a far-ahead head, dirty ABI words, repeated batch ids).

use crate::rpc_stub::{Reply, RpcStub};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

const Q96: u128 = 1 << 96;

/// What the chain answers now.
#[derive(Debug, Clone)]
pub struct ChainState {
    /// What `eth_blockNumber` answers.
    pub head: u64,
    /// Blocks up to this number exist (`eth_getBlockByNumber` answers `null` above it).
    pub known_up_to: u64,
    /// Blocks from `fork_from` on carry fork `fork` in their hash (0: the first chain).
    pub fork: u64,
    pub fork_from: u64,
    /// `slot0`'s answer as hex words (without `0x`).
    pub slot0: String,
    /// `liquidity()`'s word.
    pub liquidity: String,
    /// The fee growth globals, as words.
    pub growth: [String; 2],
    /// Every answer of a batch given twice.
    pub repeat_ids: bool,
}

/// An ABI word of `value`.
pub fn word(value: u128) -> String {
    format!("{value:064x}")
}

/// An ABI word of a 256-bit value given as (high, low) halves.
pub fn wide_word(high: u128, low: u128) -> String {
    format!("{high:032x}{low:032x}")
}

/// A tick's word: sign-extended over 256 bits.
pub fn tick_word(tick: i32) -> String {
    if tick < 0 {
        format!("{}{:08x}", "f".repeat(56), tick as u32)
    } else {
        word(tick as u128)
    }
}

/// `slot0`'s seven words for a sqrt price and a tick.
pub fn slot0(sqrt_price: u128, tick: i32) -> String {
    format!(
        "{}{}{}",
        word(sqrt_price),
        tick_word(tick),
        word(0).repeat(5)
    )
}

impl ChainState {
    /// Block 100, price 1 (tick 0), liquidity 10^12, fee growth `growth` per token.
    pub fn at_price_one(growth: u128) -> ChainState {
        ChainState {
            head: 100,
            known_up_to: 100,
            fork: 0,
            fork_from: 0,
            slot0: slot0(Q96, 0),
            liquidity: word(1_000_000_000_000),
            growth: [word(growth), word(growth)],
            repeat_ids: false,
        }
    }

    /// Block `number`'s hash on this chain.
    pub fn hash(&self, number: u64) -> String {
        let fork = if number >= self.fork_from {
            self.fork
        } else {
            0
        };
        format!("0x{fork:032x}{number:032x}")
    }

    /// The chain moved on by one block (known and head alike).
    pub fn mine(&mut self) {
        self.head += 1;
        self.known_up_to = self.head;
    }

    fn answer(&self, call: &Value) -> Result<Value, Value> {
        let quantity = |n: u64| json!(format!("0x{n:x}"));
        match call["method"].as_str() {
            Some("eth_blockNumber") => Ok(quantity(self.head)),
            Some("eth_getBlockByNumber") => {
                let text = call["params"][0].as_str().unwrap_or("0x0");
                let number = u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap();
                if number > self.known_up_to {
                    return Ok(Value::Null);
                }
                Ok(json!({"number": quantity(number), "hash": self.hash(number)}))
            }
            Some("eth_call") => {
                let at = call["params"][1]["blockHash"].as_str().unwrap_or("");
                let number = at
                    .get(34..)
                    .and_then(|n| u64::from_str_radix(n, 16).ok())
                    .filter(|n| *n <= self.known_up_to && self.hash(*n) == at);
                if number.is_none() {
                    return Err(json!({"code": -32000, "message": "header not found"}));
                }
                let data = call["params"][0]["data"].as_str().unwrap_or("");
                let words = match data.get(2..10) {
                    Some("3850c7bd") => self.slot0.clone(),
                    Some("1a686502") => self.liquidity.clone(),
                    Some("f3058399") => self.growth[0].clone(),
                    Some("46141319") => self.growth[1].clone(),
                    // `ticks(t)`: uninitialized, as a tick no position on chain uses.
                    Some("f30dba93") => word(0).repeat(8),
                    _ => return Err(json!({"code": 3, "message": "execution reverted"})),
                };
                Ok(json!(format!("0x{words}")))
            }
            _ => Err(json!({"code": -32601, "message": "Method not found"})),
        }
    }
}

/// The chain served on a loopback port; the test changes `state` between syncs.
pub struct FakeChain {
    pub state: Arc<Mutex<ChainState>>,
    pub stub: RpcStub,
}

impl FakeChain {
    pub async fn start(state: ChainState) -> FakeChain {
        let state = Arc::new(Mutex::new(state));
        let served = state.clone();
        let stub = RpcStub::start(move |body| {
            let chain = served.lock().unwrap().clone();
            let one = |call: &Value| match chain.answer(call) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": call["id"], "result": result}),
                Err(error) => json!({"jsonrpc": "2.0", "id": call["id"], "error": error}),
            };
            match body {
                Value::Array(calls) => {
                    let mut answers: Vec<Value> = calls.iter().map(one).collect();
                    if chain.repeat_ids {
                        answers.extend(calls.iter().map(one));
                    }
                    Reply::Json(Value::Array(answers))
                }
                call => Reply::Json(one(call)),
            }
        })
        .await;
        FakeChain { state, stub }
    }

    /// Changes what the chain answers.
    pub fn set(&self, change: impl FnOnce(&mut ChainState)) {
        change(&mut self.state.lock().unwrap());
    }
}
