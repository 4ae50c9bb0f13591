//! A wallet read's faults on EVM, from a loopback JSON-RPC stub standing in for a chain. What a
//! lying node answers (a short `positions` answer, ticks no pool could hold) fails the read whole
//! with the reason (the wallet's last good read then stays: the handler tests check that);
//! what anyone can put in a wallet (a position on a token that answers no `decimals`, or on no
//! pool the factory knows) leaves that position out with the reason, never the wallet's other
//! positions; a token without `symbol` is named by its address. Never a panic.

use serde_json::{json, Value};
use shared::catalog::Deployment;
use shared::chain::refresh::{confirmed_block, WalletReader};
use shared::chain::wallets::{read_wallet, WalletHoldings};
use shared::chain::{RpcClient, RPC_TIMEOUT};
use shared::model::{Chain, Protocol};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use test_support::client::TestClient;
use test_support::fake_chain::{slot0, tick_word, word};
use test_support::rpc_stub::{each_call, RpcStub};
use test_support::wallets::{link_evm, EvmWallet};

const MANAGER: &str = "0xC36442b4a4522E871399CD717aBDD847Ab11FE88";
const FACTORY: &str = "0x1F98431c8aD98523631AE4a59f267346ea31F984";
const WALLET: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

fn address_word(tail: u8) -> String {
    format!("{:064x}", u128::from(tail))
}

/// What the fake chain gets wrong.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    ShortPositions,
    NoSymbol,
    NoDecimals,
    NoPool,
    /// `positions(5)` answers `tickLower > tickUpper`.
    ReversedTicks,
    /// `positions(5)` answers ticks off the pool's spacing of 60.
    OffSpacing,
    /// `balanceOf` answers 3 and `tokenOfOwnerByIndex` token 5 at every index.
    DuplicateIds,
    /// `symbol()` answers a right-to-left override before "CDSU" (shown as "USDC").
    BidiSymbol,
}

/// Answers a chain where the wallet holds one position (token id 5) on a pool of tokens 0x..a1
/// and 0x..a2, with `fault`.
async fn chain(fault: Fault) -> RpcStub {
    chain_holding(fault, Arc::new(Mutex::new(vec![5])), Arc::default()).await
}

/// The same chain, where the wallet holds the token ids `held` (by index, as they are when
/// asked), each on the pool 0x..b0 of tokens 0x..a1 and 0x..a2 but token 6, on the pool 0x..b1
/// of 0x..a1 and 0x..a3, a token whose `decimals()` reverts while `broken` is set (an upgradeable
/// token paused, or one made to revert), and token 9, whose `positions()` a lying node answers
/// with `tickLower > tickUpper`. Its head moves a block each time it is asked.
async fn chain_holding(
    fault: Fault,
    held: Arc<Mutex<Vec<u64>>>,
    broken: Arc<AtomicBool>,
) -> RpcStub {
    chain_held_by(fault, held, broken, String::new()).await
}

/// [`chain_holding`], answering `ownerOf` too: `owner` for a token in `held`, another address
/// for any other.
async fn chain_held_by(
    fault: Fault,
    held: Arc<Mutex<Vec<u64>>>,
    broken: Arc<AtomicBool>,
    owner: String,
) -> RpcStub {
    let head = Arc::new(AtomicU64::new(0x10));
    RpcStub::start(move |body| {
        let held = held.lock().unwrap().clone();
        let head = head.clone();
        let broken = broken.load(Ordering::SeqCst);
        each_call(body, |call| {
            let hash = format!("0x{}", "ab".repeat(32));
            match call["method"].as_str().unwrap() {
                "eth_blockNumber" => {
                    return Ok(json!(format!("{:#x}", head.fetch_add(1, Ordering::SeqCst))))
                }
                "eth_getBlockByNumber" => {
                    return Ok(json!({"number": call["params"][0], "hash": hash}))
                }
                "eth_call" => {}
                _ => return Err(json!({"code": -32601, "message": "no"})),
            }
            let data = call["params"][0]["data"].as_str().unwrap();
            let to = call["params"][0]["to"]
                .as_str()
                .unwrap()
                .to_ascii_lowercase();
            let selector = &data[2..10];
            let last_word = u64::from_str_radix(&data[data.len().saturating_sub(16).max(10)..], 16)
                .unwrap_or(0);
            let answer = match selector {
                // ownerOf
                "6352211e" if held.contains(&last_word) => {
                    format!(
                        "{:0>64}",
                        owner.trim_start_matches("0x").to_ascii_lowercase()
                    )
                }
                "6352211e" => address_word(0xde),
                // balanceOf (the wallet holds on Uniswap's manager only: the chain's other
                // deployments and PancakeSwap's farm answer none), tokenOfOwnerByIndex
                "70a08231" if !to.eq_ignore_ascii_case(MANAGER) => word(0),
                "70a08231" => word(if fault == Fault::DuplicateIds {
                    3
                } else {
                    held.len() as u128
                }),
                "2f745c59" => {
                    let index = usize::from_str_radix(&data[data.len() - 64..], 16).unwrap();
                    match fault {
                        Fault::DuplicateIds => word(5),
                        _ => word(u128::from(held[index])),
                    }
                }
                // positions(5): nonce, operator, token0, token1, fee, ticks, liquidity, growths, owed
                "99fbab88" => {
                    let lying = fault == Fault::ReversedTicks || last_word == 9;
                    let mut words = vec![
                        word(0),
                        word(0),
                        address_word(0xa1),
                        address_word(if last_word == 6 { 0xa3 } else { 0xa2 }),
                        word(3000),
                        tick_word(match fault {
                            _ if lying => 600,
                            Fault::OffSpacing => -590,
                            _ => -600,
                        }),
                        tick_word(if lying { -600 } else { 600 }),
                        word(1_000_000),
                        word(0),
                        word(0),
                        word(7),
                        word(9),
                    ];
                    if fault == Fault::ShortPositions {
                        words.pop();
                    }
                    words.concat()
                }
                // getPool
                "1698ee82" => {
                    if fault == Fault::NoPool {
                        word(0)
                    } else if data[74..138].ends_with("a3") {
                        address_word(0xb1)
                    } else {
                        address_word(0xb0)
                    }
                }
                // decimals, symbol
                "313ce567" => {
                    if fault == Fault::NoDecimals || (broken && to.ends_with("a3")) {
                        return Err(json!({"code": 3, "message": "execution reverted"}));
                    }
                    word(18)
                }
                "95d89b41" => {
                    if fault == Fault::NoSymbol {
                        return Err(json!({"code": 3, "message": "execution reverted"}));
                    }
                    if fault == Fault::BidiSymbol {
                        // U+202E, then "CDSU": 7 bytes.
                        return Ok(json!(format!(
                            "0x{}{}{:0<64}",
                            word(32),
                            word(7),
                            "e280ae43445355"
                        )));
                    }
                    format!("{}{}", word(32), word(3)) + &format!("{:0<64}", "544f4b")
                }
                // tickSpacing, slot0, liquidity, fee growth globals, ticks
                "d0c93a7c" => tick_word(60),
                "3850c7bd" => slot0(1u128 << 96, 0),
                "1a686502" => word(1_000_000),
                "f3058399" | "46141319" => word(0),
                "f30dba93" => [
                    word(1),
                    word(1),
                    word(0),
                    word(0),
                    word(0),
                    word(0),
                    word(0),
                    word(1),
                ]
                .concat(),
                other => panic!("unexpected call {other}"),
            };
            Ok(Value::String(format!("0x{answer}")))
        })
    })
    .await
}

async fn read(fault: Fault) -> Result<Vec<String>, String> {
    holdings(fault).await.map(|h| {
        h.positions
            .iter()
            .flat_map(|p| [p.token0.symbol.clone(), p.token1.symbol.clone()])
            .collect()
    })
}

async fn holdings(fault: Fault) -> Result<WalletHoldings, String> {
    let stub = chain(fault).await;
    let rpc = RpcClient::new(&stub.url, RPC_TIMEOUT).unwrap();
    let deployment = Deployment::v3(
        (Chain::Ethereum, Protocol::UniswapV3),
        1,
        (FACTORY, MANAGER),
    );
    let block = confirmed_block(&rpc, 0).await?;
    let read = read_wallet(&rpc, &[&deployment], &[], WALLET, &block).await?;
    // Its one deployment failing is the read failing whole (decision 63).
    match read.failed.first() {
        Some(failed) => Err(failed.reason.clone()),
        None => Ok(read),
    }
}

#[tokio::test]
async fn a_lying_node_fails_the_read_and_a_bad_position_only_itself() {
    assert_eq!(
        read(Fault::None).await,
        Ok(vec!["TOK".into(), "TOK".into()])
    );
    let short = read(Fault::ShortPositions).await.unwrap_err();
    assert!(short.contains("positions: undecodable"), "{short}");
    // Without `symbol()` a token is named by its address.
    let unnamed = read(Fault::NoSymbol).await.unwrap();
    assert_eq!(unnamed[0], "0x0000…00A1", "{unnamed:?}");
    // Without `decimals()` or a pool, the position is left out with the reason.
    for (fault, says) in [
        (
            Fault::NoDecimals,
            "token 0x00000000000000000000000000000000000000A1: decimals",
        ),
        (Fault::NoPool, "no pool for 0x"),
    ] {
        let read = holdings(fault).await.unwrap();
        assert!(read.positions.is_empty(), "{read:?}");
        assert_eq!(read.unread.len(), 1, "{read:?}");
        assert_eq!(read.unread[0].token_id, shared::math::U256::from(5u8));
        assert!(read.unread[0].reason.contains(says), "{read:?}");
    }
}

#[tokio::test]
async fn a_wallet_read_takes_positions_only_as_the_position_manager_can_hold_them() {
    // Ticks reversed or off the pool's spacing: no pool could hold that position, so the node
    // is lying and the read is refused whole (the wallet's last good read stays).
    let reversed = read(Fault::ReversedTicks).await.unwrap_err();
    assert!(
        reversed.contains("position 5") && reversed.contains("ordered range"),
        "{reversed}"
    );
    let off = read(Fault::OffSpacing).await.unwrap_err();
    assert!(off.contains("tick spacing 60"), "{off}");
    // One token id answered at three indexes is one position, read and counted once.
    assert_eq!(
        read(Fault::DuplicateIds).await,
        Ok(vec!["TOK".into(), "TOK".into()])
    );
    // A symbol with a bidirectional override is not shown: the token is named by its address.
    let named = read(Fault::BidiSymbol).await.unwrap();
    assert_eq!(named, vec!["0x0000…00A1", "0x0000…00A2"], "{named:?}");
}

/// An in-memory app reading its wallets through `stub`, and user alice, who has linked the
/// wallet of `seed` (the link's answer).
async fn linked_through(stub: &RpcStub, seed: u64) -> (shared::App, TestClient, Value) {
    linked_with(shared::App::in_memory(), stub, seed).await
}

/// `app` reading its wallets through `stub`, and user alice, who has linked the wallet of
/// `seed` (the link's answer).
async fn linked_with(
    mut app: shared::App,
    stub: &RpcStub,
    seed: u64,
) -> (shared::App, TestClient, Value) {
    let endpoints = BTreeMap::from([(
        Chain::Ethereum,
        Arc::new(RpcClient::new(&stub.url, RPC_TIMEOUT).unwrap()),
    )]);
    app.wallet_refresh = Some(Arc::new(WalletReader::new(endpoints, &app, 0)));
    let alice = TestClient::in_process(&app, Some("alice"));
    let linked = link_evm(&alice, "ethereum", &EvmWallet::from_seed(seed)).await;
    (app, alice, linked)
}

/// A wallet sent more positions than a read takes (the cap per position manager): the read
/// takes the newest first (the owner's own mint after the dust is read), stores what it read,
/// closes a stored position it did not see only where the chain says the wallet no longer holds
/// it (`ownerOf`), and the wallet says how many were not read.
#[tokio::test]
async fn a_wallet_past_the_read_cap_says_so_and_closes_only_what_it_no_longer_holds() {
    use lambda_http::http::{Method, StatusCode};
    use shared::chain::wallets::MAX_POSITIONS_PER_MANAGER;

    let held = Arc::new(Mutex::new(vec![1, 2]));
    let owner = EvmWallet::from_seed(31).address;
    let stub = chain_held_by(Fault::None, held.clone(), Arc::default(), owner).await;
    let (app, alice, linked) = linked_through(&stub, 31).await;
    assert_eq!(linked["positions"], 2, "{linked}");

    // Dust fills the indexes after the owner's tokens 1 and 2, then the owner mints token 3:
    // the newest read first, tokens 1 and 2 are the earliest, past the cap.
    let cap = MAX_POSITIONS_PER_MANAGER;
    let mut spam: Vec<u64> = vec![1, 2];
    spam.extend((0..cap - 1).map(|i| 1_000 + i));
    spam.push(3);
    *held.lock().unwrap() = spam;
    let refreshed = app.reconcile_all().await.unwrap();
    assert_eq!(refreshed.failed.len(), 1, "{refreshed:?}");
    let reason = &refreshed.failed[0].reason;
    assert!(
        reason.contains(&format!("holds {} positions", cap + 2))
            && reason.contains("2 past the read's cap"),
        "{reason}"
    );
    // Token 3 and the 999 dust positions read; tokens 1 and 2, not read but still the wallet's,
    // never closed.
    let open = alice
        .list("source=wallet&status=active&limit=100")
        .await
        .json;
    assert_eq!(open["total"], cap + 2, "{}", open["total"]);
    let every = test_support::portfolio::every_position(&alice).await;
    assert!(
        every
            .iter()
            .any(|p| p["tokenId"] == "3" && p["status"] == "active"),
        "the owner's newest is listed"
    );
    let closed = alice.list("source=wallet&status=closed").await.json;
    assert_eq!(closed["total"], 0, "{closed}");

    // Token 1 sent away while the wallet is still past the cap: closed as transferred.
    let mut spam: Vec<u64> = vec![2];
    spam.extend((0..cap - 1).map(|i| 1_000 + i));
    spam.extend([3, 5]);
    *held.lock().unwrap() = spam;
    app.reconcile_all().await.unwrap();
    let closed = alice.list("source=wallet&status=closed").await.json;
    assert_eq!(closed["total"], 1, "{closed}");
    assert_eq!(closed["data"][0]["tokenId"], "1", "{closed}");
    assert_eq!(closed["data"][0]["closeReason"], "transferred", "{closed}");
    let wallets = alice.send(Method::GET, "/wallets", &[], b"").await;
    assert_eq!(wallets.status, StatusCode::OK);
    let shown = wallets.json["data"][0]["refreshError"]
        .as_str()
        .unwrap_or("");
    assert!(shown.contains("were not"), "{}", wallets.json);

    // Below the cap again, token 1 gone: an uncapped read closes it as transferred.
    *held.lock().unwrap() = vec![2];
    let refreshed = app.reconcile_all().await.unwrap();
    assert!(refreshed.failed.is_empty(), "{refreshed:?}");
    let open = alice.list("source=wallet&status=active").await.json;
    assert_eq!(open["total"], 1, "{open}");
    assert_eq!(open["data"][0]["tokenId"], "2");
}

/// Anyone can mint a position to a victim's wallet on a token made to revert: that position is
/// left out of each read with the reason (keeping its last good read, never closed), while the
/// wallet's other positions keep refreshing, new ones are seen and gone ones closed.
async fn one_bad_position_never_freezes_the_wallet(app: shared::App) {
    use lambda_http::http::Method;

    let held = Arc::new(Mutex::new(vec![5, 6]));
    let broken = Arc::new(AtomicBool::new(false));
    let stub = chain_holding(Fault::None, held.clone(), broken.clone()).await;
    let (app, alice, linked) = linked_with(app, &stub, 41).await;
    assert_eq!(linked["positions"], 2, "{linked}");
    assert!(linked.get("refreshError").is_none(), "{linked}");
    let six = |listed: &Value| -> Value {
        listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["tokenId"] == "6")
            .cloned()
            .unwrap_or(Value::Null)
    };
    let before = six(&alice.list("source=wallet").await.json);
    assert_eq!(before["status"], "active", "{before}");

    // Token 0x..a3 now reverts `decimals()`; the wallet also got token 7 and lost token 5.
    broken.store(true, Ordering::SeqCst);
    *held.lock().unwrap() = vec![6, 7];
    let refreshed = app.reconcile_all().await.unwrap();
    assert_eq!(refreshed.failed.len(), 1, "{refreshed:?}");
    let reason = &refreshed.failed[0].reason;
    assert!(
        reason.contains("6: token 0x00000000000000000000000000000000000000A3: decimals"),
        "{reason}"
    );
    let listed = alice.list("source=wallet").await.json;
    let status = |token: &str| {
        listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["tokenId"] == token)
            .map(|p| p["status"].clone())
    };
    assert_eq!(status("7"), Some(json!("active")), "{listed}");
    assert_eq!(status("5"), Some(json!("closed")), "{listed}");
    // Token 6 keeps its last good read, open, and says why it is stale.
    let kept = six(&listed);
    assert!(
        kept["readError"]
            .as_str()
            .is_some_and(|e| e.contains("decimals")),
        "{kept}"
    );
    assert_eq!(kept["stale"], true, "{kept}");
    let unmarked = |view: &Value| {
        let mut view = view.clone();
        view["readError"] = Value::Null;
        view["stale"] = json!(false);
        view
    };
    assert_eq!(unmarked(&kept), before, "{listed}");
    assert_eq!(before["readError"], Value::Null, "{before}");
    assert_eq!(before["stale"], false, "{before}");
    assert_eq!(
        listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["stale"] == true)
            .count(),
        1,
        "{listed}"
    );
    let wallets = alice.send(Method::GET, "/wallets", &[], b"").await.json;
    let shown = &wallets["data"][0];
    assert_eq!(shown["positions"], 2, "{wallets}");
    assert!(shown["refreshedAt"].is_string(), "{wallets}");
    assert!(
        shown["refreshError"]
            .as_str()
            .is_some_and(|e| e.contains("could not be read")),
        "{wallets}"
    );

    // A lying node's answer for token 9 fails the read whole: every open position says its
    // figures are the last good read's, and nothing else changes.
    *held.lock().unwrap() = vec![6, 7, 9];
    let refreshed = app.reconcile_all().await.unwrap();
    assert_eq!(refreshed.failed.len(), 1, "{refreshed:?}");
    let failed = alice.list("source=wallet").await.json;
    for view in failed["data"].as_array().unwrap() {
        let open = view["status"] == "active";
        assert_eq!(view["stale"], open, "{view}");
        if open {
            let said = view["readError"].as_str().unwrap_or_default();
            assert!(said.contains("could not be read"), "{view}");
        }
    }
    assert_eq!(failed["total"], listed["total"], "{failed}");

    // The token readable again: the positions read again and the wallet says nothing.
    broken.store(false, Ordering::SeqCst);
    *held.lock().unwrap() = vec![6, 7];
    let refreshed = app.reconcile_all().await.unwrap();
    assert!(refreshed.failed.is_empty(), "{refreshed:?}");
    let now = alice.list("source=wallet").await.json;
    for view in now["data"].as_array().unwrap() {
        assert_eq!(view["stale"], false, "{view}");
        assert_eq!(view["readError"], Value::Null, "{view}");
    }
    let after = six(&now);
    assert_eq!(after["status"], "active", "{after}");
    let wallets = alice.send(Method::GET, "/wallets", &[], b"").await.json;
    assert!(
        wallets["data"][0].get("refreshError").is_none(),
        "{wallets}"
    );
}

#[tokio::test]
async fn one_bad_position_never_freezes_the_wallet_in_memory() {
    one_bad_position_never_freezes_the_wallet(shared::App::in_memory()).await;
}

#[tokio::test]
async fn one_bad_position_never_freezes_the_wallet_on_dynamodb() {
    let store = test_support::dynamodb::dynamodb_store().await;
    let snapshot = shared::market::Freshness::Snapshot;
    let app = shared::App::on_dynamodb(store, std::time::Duration::ZERO, snapshot);
    one_bad_position_never_freezes_the_wallet(app).await;
}
