//! A position's events on the devnet (anvil with the real position manager): minted to a
//! wallet, half withdrawn without collecting, part collected, sent to another account; read
//! whole in ranges of any size. Then the same logs, recorded, served by a stub that refuses
//! ranges over four blocks as too many results (the read splits them and finds the same
//! events) and one whose block hashes moved (a reorg: the logs are not kept).

use serde_json::{json, Value};
use shared::chain::evm::blocks;
use shared::chain::history::{position_events, Source, DEFAULT_LOG_RANGE};
use shared::chain::refresh::confirmed_block;
use shared::chain::{RpcClient, RPC_TIMEOUT};
use shared::history::{EventKind, Ledger};
use shared::math::U256;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use test_support::devnet::Devnet;
use test_support::json::text;
use test_support::rpc_stub::{each_call, RpcStub};

fn number(value: &Value) -> u128 {
    text(value).parse().unwrap()
}

/// A quantity's value, `0x` hex.
fn hex(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// A v3 position manager's events, no farm.
fn source(manager: &str) -> Source<'_> {
    Source {
        manager,
        farm: None,
        v4: None,
        gauge: None,
    }
}

#[tokio::test]
async fn a_positions_events_are_read_whole_in_ranges_of_any_size() {
    let devnet = Devnet::up(3000).await;
    let account = |i: &'static str| {
        let devnet = &devnet;
        async move { text(&devnet.run("account", &["--index", i]).await["address"]) }
    };
    let (wallet, other) = (account("1").await, account("2").await);
    let tick = devnet.run("pool", &[]).await["tick"].as_i64().unwrap() as i32;
    let range = (
        (tick - 600).div_euclid(60) * 60,
        (tick + 600).div_euclid(60) * 60,
    );
    let token = devnet
        .mint_to(&wallet, range, None, "1000000000000000000000")
        .await;
    devnet
        .run("swap", &["--sell", "weth", "--amount", "5"])
        .await;
    let id = ["--account", wallet.as_str(), "--token-id", token.as_str()];
    let quote = devnet.run("position-quote", &["--token-id", &token]).await;
    let half = (number(&quote["liquidity"]) / 2).to_string();
    let withdrawn = devnet
        .run("withdraw", &[&id[..], &["--liquidity", &half]].concat())
        .await;
    let collected = devnet
        .run(
            "collect",
            &[&id[..], &["--amount0", "1000", "--amount1", "1000"]].concat(),
        )
        .await;
    let sent = devnet
        .run("transfer", &[&id[..], &["--to", &other]].concat())
        .await;

    let rpc = RpcClient::new(&devnet.rpc, RPC_TIMEOUT).unwrap();
    let head = confirmed_block(&rpc, 0).await.unwrap();
    let manager = devnet.address("manager");
    let token_id = U256::from(number(&json!(token)));
    let whole = position_events(
        &rpc,
        &source(&manager),
        token_id,
        0,
        &head,
        DEFAULT_LOG_RANGE,
    )
    .await;
    assert_eq!(whole.stopped, None);
    assert_eq!(whole.through, head.number);
    let kinds: Vec<EventKind> = whole.events.iter().map(|e| e.kind).collect();
    use EventKind::*;
    assert_eq!(
        kinds,
        [Mint, Deposit, Withdraw, Collect, Transfer],
        "{whole:?}"
    );
    let [mint, deposit, withdraw, collect, transfer] = &whole.events[..] else {
        unreachable!()
    };
    assert_eq!(mint.to.as_deref(), Some(wallet.to_lowercase().as_str()));
    assert_eq!(
        (mint.block, mint.transaction.clone()),
        (deposit.block, deposit.transaction.clone())
    );
    assert_eq!(deposit.liquidity.to_string(), text(&quote["liquidity"]));
    assert_eq!(withdraw.liquidity.to_string(), half);
    assert_eq!(withdraw.block, withdrawn["block"].as_u64().unwrap());
    assert_eq!(collect.block, collected["block"].as_u64().unwrap());
    assert_eq!(
        collect.amounts.map(|a| a.to_string()),
        [text(&collected["amount0"]), text(&collected["amount1"])]
    );
    assert_eq!(collect.to.as_deref(), Some(wallet.to_lowercase().as_str()));
    assert_eq!(transfer.block, sent["block"].as_u64().unwrap());
    assert_eq!(transfer.to.as_deref(), Some(other.to_lowercase().as_str()));
    assert!(whole.events.iter().all(|e| e.timestamp.is_some()));
    // The ledger: the collect paid principal first (1,000 base units of each, far below the
    // half withdrawn), so no fee is collected yet.
    let ledger = Ledger::of(&whole.events);
    assert_eq!(ledger.fees_collected, [U256::ZERO; 2]);
    assert_eq!(
        ledger.uncollected_principal,
        [0, 1].map(|t| withdraw.amounts[t] - collect.amounts[t])
    );
    // One block at a time: the same events.
    let narrow = position_events(&rpc, &source(&manager), token_id, 0, &head, 1).await;
    assert_eq!(narrow.events, whole.events);

    // The same logs served by a stub refusing more than four blocks at once.
    let all = rpc
        .call(
            "eth_getLogs",
            json!([{"address": manager, "fromBlock": "0x0", "toBlock": format!("0x{:x}", head.number)}]),
        )
        .await
        .unwrap();
    let recorded: Vec<Value> = all.as_array().unwrap().clone();
    let numbers: Vec<u64> = (0..=head.number).collect();
    let chain_blocks = blocks(&rpc, &numbers).await.unwrap();
    let reorged = Arc::new(AtomicBool::new(false));
    let moved = reorged.clone();
    let stub = RpcStub::start(move |body| {
        let (recorded, chain_blocks) = (recorded.clone(), chain_blocks.clone());
        let reorged = moved.load(Ordering::SeqCst);
        each_call(body, |call| match call["method"].as_str().unwrap() {
            "eth_getLogs" => {
                let filter = &call["params"][0];
                let (from, to) = (hex(&filter["fromBlock"]), hex(&filter["toBlock"]));
                if to - from >= 4 {
                    return Err(json!({"code": -32005, "message": "query returned more than 10000 results"}));
                }
                let topics = &filter["topics"];
                let wanted = |log: &Value| {
                    let block = hex(&log["blockNumber"]);
                    let first = log["topics"][0].as_str().unwrap();
                    let matches_first = match &topics[0] {
                        Value::Array(any) => any.iter().any(|t| t == first),
                        one => one == first,
                    };
                    let position = if topics.as_array().unwrap().len() == 4 { 3 } else { 1 };
                    (from..=to).contains(&block)
                        && matches_first
                        && log["topics"].get(position) == topics.get(position)
                };
                Ok(Value::Array(recorded.iter().filter(|l| wanted(l)).cloned().collect()))
            }
            "eth_getBlockByNumber" => {
                let number = hex(&call["params"][0]);
                let block = chain_blocks[number as usize].clone().unwrap();
                let hash = if reorged {
                    format!("0x{}", "ee".repeat(32))
                } else {
                    block.hash
                };
                Ok(json!({"number": format!("0x{number:x}"), "hash": hash, "timestamp": format!("0x{:x}", block.timestamp.unwrap())}))
            }
            _ => Err(json!({"code": -32601, "message": "no"})),
        })
    })
    .await;
    let stubbed = RpcClient::new(&stub.url, RPC_TIMEOUT).unwrap();
    let split = position_events(
        &stubbed,
        &source(&manager),
        token_id,
        0,
        &head,
        DEFAULT_LOG_RANGE,
    )
    .await;
    assert_eq!(split.stopped, None);
    assert_eq!(split.events, whole.events);
    // A reorg replaced the blocks: none of their logs is kept, and the read says so.
    reorged.store(true, Ordering::SeqCst);
    let replaced = position_events(
        &stubbed,
        &source(&manager),
        token_id,
        0,
        &head,
        DEFAULT_LOG_RANGE,
    )
    .await;
    assert!(replaced.events.is_empty(), "{replaced:?}");
    assert!(replaced.stopped.is_some_and(|s| s.contains("no longer")));
    assert!(replaced.through < mint.block);
}
