//! What an RPC endpoint can do wrong: fail over HTTP, time out, answer JSON-RPC errors or
//! malformed results, lag behind. A pool updates whole or keeps its last state, one chain's
//! fault leaves the others alone, and no reason names the endpoint.

use super::support::{entry, market, pool, stable_pool, sync, syncer};
use serde_json::{json, Value};
use shared::math::U256;
use shared::model::Chain;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::rpc_stub::{each_call, Reply, RpcStub};

const POOL: &str = "0x00000000000000000000000000000000000000c1";
const OTHER: &str = "0x00000000000000000000000000000000000000c2";
const Q96: u128 = 1 << 96;

fn word(value: u128) -> String {
    format!("{value:064x}")
}

/// The pools' getters at price 1 (tick 0), as `eth_call` answers them; `slot0` as `slot0`.
fn getter(data: &str, slot0: &str) -> Result<Value, Value> {
    let selector = &data[2..10];
    let words = match selector {
        "3850c7bd" => return Ok(json!(slot0)),
        "1a686502" => word(5_000_000),
        "f3058399" => word(7),
        "46141319" => word(11),
        _ => return Err(json!({"code": -32000, "message": "execution reverted"})),
    };
    Ok(json!(format!("0x{words}")))
}

/// `slot0`'s seven words: the sqrt price, the tick (non-negative here), five zero words.
fn slot0(sqrt_price: u128, tick: u128) -> String {
    format!("0x{}{}{}", word(sqrt_price), word(tick), word(0).repeat(5))
}

fn healthy_slot0() -> String {
    slot0(Q96, 0)
}

/// The hash the stubs give block `number`.
pub fn hash_of(number: u64) -> String {
    format!("0x{number:064x}")
}

/// An EVM endpoint at `block` whose `eth_call`s `call` answers; every block up to the head is
/// known, with the hash [`hash_of`] its number.
async fn evm_stub(
    block: Arc<AtomicU64>,
    call: impl Fn(&str) -> Result<Value, Value> + Send + Sync + 'static,
) -> RpcStub {
    RpcStub::start(move |body| {
        each_call(body, |c| match c["method"].as_str() {
            Some("eth_blockNumber") => Ok(json!(format!("0x{:x}", block.load(Ordering::SeqCst)))),
            Some("eth_getBlockByNumber") => {
                let number = c["params"][0].as_str().unwrap();
                let number = u64::from_str_radix(&number[2..], 16).unwrap();
                if number > block.load(Ordering::SeqCst) {
                    return Ok(Value::Null);
                }
                Ok(json!({"number": format!("0x{number:x}"), "hash": hash_of(number)}))
            }
            Some("eth_call") => {
                let at = c["params"][1]["blockHash"].as_str().unwrap();
                assert_eq!(
                    at,
                    hash_of(block.load(Ordering::SeqCst)),
                    "at the block read"
                );
                call(c["params"][0]["data"].as_str().unwrap())
            }
            _ => Err(json!({"code": -32601, "message": "Method not found"})),
        })
    })
    .await
}

fn reason(report: &Value, id: &str) -> String {
    let entry = entry(report, id);
    assert_eq!(entry["updated"], false, "{entry}");
    let reason = entry["reason"].as_str().unwrap().to_string();
    assert!(
        !reason.contains("127.0.0.1"),
        "no endpoint in a reason: {reason}"
    );
    reason
}

#[tokio::test]
async fn a_healthy_endpoint_is_read_in_two_requests_at_one_block() {
    let market = market(&[
        stable_pool("ethereum", POOL),
        stable_pool("ethereum", OTHER),
    ]);
    let stub = evm_stub(Arc::new(AtomicU64::new(100)), |d| {
        getter(d, &healthy_slot0())
    })
    .await;
    let syncer = syncer(
        market.clone(),
        &[(Chain::Ethereum, &stub.url)],
        Duration::from_secs(5),
    );
    let report = sync(&syncer).await;
    assert_eq!(report["updated"], 2, "{report}");
    assert_eq!(
        stub.requests(),
        3,
        "eth_blockNumber, the block read, then one batch of every eth_call"
    );
    let stats = &syncer.endpoints()[&Chain::Ethereum].stats;
    assert_eq!(stats.requests.load(Ordering::SeqCst), 3);
    assert_eq!(stats.calls.load(Ordering::SeqCst), 1 + 1 + 2 * 4);
    let e = entry(&report, POOL);
    assert_eq!(
        (e["block"].as_u64(), e["tick"].as_i64()),
        (Some(100), Some(0))
    );
    assert_eq!(e["sqrtPrice"], Q96.to_string());
    assert_eq!(e["price"], 1.0);
    let state = pool(&market, POOL).await.state.unwrap();
    assert_eq!(
        (
            state.liquidity,
            state.fee_growth_global0,
            state.fee_growth_global1
        ),
        (5_000_000, U256::from(7u8), U256::from(11u8))
    );
}

#[tokio::test]
async fn one_chain_failing_leaves_the_others_synced() {
    let market = market(&[stable_pool("ethereum", POOL), stable_pool("base", OTHER)]);
    let down = RpcStub::start(|_| Reply::Status(500)).await;
    let up = evm_stub(Arc::new(AtomicU64::new(7)), |d| getter(d, &healthy_slot0())).await;
    let syncer = syncer(
        market.clone(),
        &[(Chain::Ethereum, &down.url), (Chain::Base, &up.url)],
        Duration::from_secs(5),
    );
    let report = sync(&syncer).await;
    assert_eq!(
        (report["updated"].as_u64(), report["notUpdated"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(reason(&report, POOL).contains("HTTP 500"));
    assert_eq!(entry(&report, OTHER)["updated"], true);
    assert!(pool(&market, POOL).await.state.is_none());
    assert!(pool(&market, OTHER).await.state.is_some());
}

#[tokio::test]
async fn an_endpoint_that_never_answers_times_out() {
    let market = market(&[stable_pool("ethereum", POOL)]);
    let hang = RpcStub::start(|_| Reply::Hang).await;
    let syncer = syncer(
        market,
        &[(Chain::Ethereum, &hang.url)],
        Duration::from_millis(300),
    );
    let started = Instant::now();
    let report = sync(&syncer).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(reason(&report, POOL).contains("did not answer"), "{report}");
}

#[tokio::test]
async fn an_unreachable_endpoint_is_reported_without_its_address() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let market = market(&[stable_pool("ethereum", POOL)]);
    let url = format!("http://127.0.0.1:{port}");
    let report = sync(&syncer(
        market,
        &[(Chain::Ethereum, &url)],
        Duration::from_secs(2),
    ))
    .await;
    assert!(reason(&report, POOL).contains("cannot reach"), "{report}");
}

#[tokio::test]
async fn errors_and_malformed_answers_leave_the_pool_as_it_was() {
    type Answer = Box<dyn Fn() -> Reply + Send + Sync>;
    let cases: Vec<(Answer, &str)> = vec![
        (Box::new(|| Reply::Raw("not json".into())), "malformed"),
        (
            Box::new(|| Reply::Json(json!({"jsonrpc": "2.0", "id": 1}))),
            "malformed",
        ),
    ];
    for (reply, expected) in cases {
        let market = market(&[stable_pool("ethereum", POOL)]);
        let stub = RpcStub::start(move |_| reply()).await;
        let report = sync(&syncer(
            market.clone(),
            &[(Chain::Ethereum, &stub.url)],
            Duration::from_secs(5),
        ))
        .await;
        assert!(reason(&report, POOL).contains(expected), "{report}");
        assert!(pool(&market, POOL).await.state.is_none());
    }
    // Per call: a reverted getter, a short answer, a tick that is not the sqrt price's.
    let calls: Vec<(String, &str)> = vec![
        (String::new(), "execution reverted"),
        ("0x1234".to_string(), "slot0"),
        (slot0(Q96, 5), "does not match"),
        (slot0(0, 0), "not initialized"),
    ];
    for (slot0, expected) in calls {
        let market = market(&[stable_pool("ethereum", POOL)]);
        let stub = evm_stub(Arc::new(AtomicU64::new(9)), move |d| {
            if slot0.is_empty() && d.starts_with("0x3850c7bd") {
                return Err(json!({"code": 3, "message": "execution reverted"}));
            }
            getter(d, &slot0)
        })
        .await;
        let report = sync(&syncer(
            market.clone(),
            &[(Chain::Ethereum, &stub.url)],
            Duration::from_secs(5),
        ))
        .await;
        assert!(
            reason(&report, POOL).contains(expected),
            "{expected}: {report}"
        );
        assert!(pool(&market, POOL).await.state.is_none());
    }
}

#[tokio::test]
async fn a_lagging_endpoint_never_moves_a_pool_back_in_time() {
    let market = market(&[stable_pool("ethereum", POOL)]);
    let block = Arc::new(AtomicU64::new(100));
    let stub = evm_stub(block.clone(), |d| getter(d, &healthy_slot0())).await;
    let syncer = syncer(
        market.clone(),
        &[(Chain::Ethereum, &stub.url)],
        Duration::from_secs(5),
    );
    assert_eq!(sync(&syncer).await["updated"], 1);
    block.store(90, Ordering::SeqCst);
    let report = sync(&syncer).await;
    assert!(reason(&report, POOL).contains("already stored"), "{report}");
    assert_eq!(pool(&market, POOL).await.state.unwrap().height, 100);
    block.store(101, Ordering::SeqCst);
    assert_eq!(sync(&syncer).await["updated"], 1);
    assert_eq!(pool(&market, POOL).await.state.unwrap().height, 101);
}
