//! A wallet read's faults on EVM, from a loopback JSON-RPC stub standing in for a chain: a
//! short `positions` answer, a token that answers no `decimals`, a pool the factory does not
//! know. Each fails the read whole with the reason (a token without `symbol` is named by its
//! address instead) (the wallet's last good read then stays: the
//! handler tests check that), never a panic.

use serde_json::{json, Value};
use shared::catalog::Deployment;
use shared::chain::refresh::confirmed_block;
use shared::chain::wallets::read_wallet;
use shared::chain::{RpcClient, RPC_TIMEOUT};
use shared::model::{Chain, Protocol};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use test_support::fake_chain::{slot0, tick_word, word};
use test_support::rpc_stub::{each_call, RpcStub};

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
    chain_holding(fault, Arc::new(Mutex::new(vec![5]))).await
}

/// The same chain, where the wallet holds the token ids `held` (by index, as they are when
/// asked), each on the same pool; its head moves a block each time it is asked.
async fn chain_holding(fault: Fault, held: Arc<Mutex<Vec<u64>>>) -> RpcStub {
    let head = Arc::new(AtomicU64::new(0x10));
    RpcStub::start(move |body| {
        let held = held.lock().unwrap().clone();
        let head = head.clone();
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
            let selector = &data[2..10];
            let answer = match selector {
                // balanceOf, tokenOfOwnerByIndex
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
                    let mut words = vec![
                        word(0),
                        word(0),
                        address_word(0xa1),
                        address_word(0xa2),
                        word(3000),
                        tick_word(match fault {
                            Fault::ReversedTicks => 600,
                            Fault::OffSpacing => -590,
                            _ => -600,
                        }),
                        tick_word(if fault == Fault::ReversedTicks {
                            -600
                        } else {
                            600
                        }),
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
                    } else {
                        address_word(0xb0)
                    }
                }
                // decimals, symbol
                "313ce567" => {
                    if fault == Fault::NoDecimals {
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
    let stub = chain(fault).await;
    let rpc = RpcClient::new(&stub.url, RPC_TIMEOUT).unwrap();
    let deployment = Deployment {
        chain: Chain::Ethereum,
        protocol: Protocol::UniswapV3,
        chain_id: Some(1),
        factory: Some(FACTORY.into()),
        position_manager: Some(MANAGER.into()),
        program: None,
    };
    let block = confirmed_block(&rpc, 0).await?;
    read_wallet(&rpc, &[&deployment], WALLET, &block)
        .await
        .map(|h| {
            h.positions
                .iter()
                .flat_map(|p| [p.token0.symbol.clone(), p.token1.symbol.clone()])
                .collect()
        })
}

#[tokio::test]
async fn a_wallet_read_fails_whole_with_the_reason() {
    assert_eq!(
        read(Fault::None).await,
        Ok(vec!["TOK".into(), "TOK".into()])
    );
    let short = read(Fault::ShortPositions).await.unwrap_err();
    assert!(short.contains("positions: undecodable"), "{short}");
    // Without `symbol()` a token is named by its address; without `decimals()` it is refused.
    let unnamed = read(Fault::NoSymbol).await.unwrap();
    assert_eq!(unnamed[0], "0x0000…00A1", "{unnamed:?}");
    let decimals = read(Fault::NoDecimals).await.unwrap_err();
    assert!(
        decimals.contains("decimals") && decimals.contains("token 0x"),
        "{decimals}"
    );
    let pool = read(Fault::NoPool).await.unwrap_err();
    assert!(pool.contains("no pool"), "{pool}");
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

/// A wallet sent more positions than a read takes (the cap per position manager): the read
/// stores what it read, closes none of the stored positions it could not see (the owner's
/// position pushed past the cap stays open), and the wallet says how many were not read.
#[tokio::test]
async fn a_wallet_past_the_read_cap_says_so_and_closes_nothing_it_did_not_see() {
    use lambda_http::http::{Method, StatusCode};
    use shared::chain::refresh::WalletReader;
    use shared::chain::wallets::MAX_POSITIONS_PER_MANAGER;
    use std::collections::BTreeMap;
    use test_support::client::TestClient;
    use test_support::wallets::{link_evm, EvmWallet};

    let held = Arc::new(Mutex::new(vec![1, 2]));
    let stub = chain_holding(Fault::None, held.clone()).await;
    let mut app = shared::App::in_memory();
    let endpoints = BTreeMap::from([(
        Chain::Ethereum,
        Arc::new(RpcClient::new(&stub.url, RPC_TIMEOUT).unwrap()),
    )]);
    app.wallet_refresh = Some(Arc::new(WalletReader::new(endpoints, &app, 0)));
    let alice = TestClient::in_process(&app, Some("alice"));
    let wallet = EvmWallet::from_seed(31);
    let linked = link_evm(&alice, "ethereum", &wallet).await;
    assert_eq!(linked["positions"], 2, "{linked}");

    // Spam fills the indexes before the owner's token 2; token 1 is at the last index read.
    let cap = MAX_POSITIONS_PER_MANAGER;
    let mut spam: Vec<u64> = (0..cap - 1).map(|i| 1_000 + i).collect();
    spam.extend([1, 2]);
    *held.lock().unwrap() = spam;
    let refreshed = app.refresh_all_wallets().await.unwrap();
    assert_eq!(refreshed.failed.len(), 1, "{refreshed:?}");
    let reason = &refreshed.failed[0].reason;
    assert!(
        reason.contains(&format!("holds {} positions", cap + 1))
            && reason.contains("1 past the read's cap"),
        "{reason}"
    );
    // The 999 spam positions and token 1, read, and token 2, not read but never closed.
    let open = alice.list("source=wallet&status=active").await.json;
    assert_eq!(open["total"], cap + 1, "{}", open["total"]);
    let closed = alice.list("source=wallet&status=closed").await.json;
    assert_eq!(closed["total"], 0, "{closed}");
    let wallets = alice.send(Method::GET, "/wallets", &[], b"").await;
    assert_eq!(wallets.status, StatusCode::OK);
    let shown = wallets.json["data"][0]["refreshError"]
        .as_str()
        .unwrap_or("");
    assert!(shown.contains("were not"), "{}", wallets.json);

    // Below the cap again, token 1 gone: an uncapped read closes it as transferred.
    *held.lock().unwrap() = vec![2];
    let refreshed = app.refresh_all_wallets().await.unwrap();
    assert!(refreshed.failed.is_empty(), "{refreshed:?}");
    let open = alice.list("source=wallet&status=active").await.json;
    assert_eq!(open["total"], 1, "{open}");
    assert_eq!(open["data"][0]["tokenId"], "2");
}
