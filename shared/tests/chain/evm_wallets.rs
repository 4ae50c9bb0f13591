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
    RpcStub::start(move |body| {
        each_call(body, |call| {
            let hash = format!("0x{}", "ab".repeat(32));
            match call["method"].as_str().unwrap() {
                "eth_blockNumber" => return Ok(json!("0x10")),
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
                "70a08231" => word(if fault == Fault::DuplicateIds { 3 } else { 1 }),
                "2f745c59" => word(5),
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
