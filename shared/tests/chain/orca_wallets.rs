//! A wallet's Orca positions read from the recorded real accounts of the handouts, served by a
//! loopback JSON-RPC stub: the wallet's token accounts (made here: one holding the recorded
//! position's mint, others not positions), the Position PDA, its Whirlpool and tick arrays, the
//! mints' decimals.

use base64::Engine;
use serde_json::{json, Value};
use shared::chain::orca_wallets::{read_orca_wallet, TOKEN_2022_PROGRAM, TOKEN_PROGRAM};
use shared::chain::solana::{decode_position, find_program_address, PROGRAM_ID};
use shared::chain::{RpcClient, RPC_TIMEOUT};
use shared::math::U256;
use std::collections::HashMap;
use test_support::rpc_stub::{each_call, RpcStub};

const SLOT: u64 = 412_345_678;
const MINT_A: &str = "Jd4M8bfJG3sAkd82RsGWyEXoaBXQP7njFzBwEaCTuDa";
const MINT_B: &str = "BRjpCHtyQLNCo8gqRUr8jtdAj5AjPYQaoqbvcZiHok1k";

fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/orca-whirlpool")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn decode(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

fn account(data: &[u8], owner: &str) -> Value {
    json!({"lamports": 2039280, "data": [b64(data), "base64"], "owner": owner, "executable": false, "rentEpoch": 0})
}

/// An SPL token account: `mint`, the wallet as owner, `amount`.
fn token_account(mint: &[u8], wallet: &[u8], amount: u64) -> Vec<u8> {
    let mut data = vec![0u8; 165];
    data[..32].copy_from_slice(mint);
    data[32..64].copy_from_slice(wallet);
    data[64..72].copy_from_slice(&amount.to_le_bytes());
    data[108] = 1; // initialized
    data
}

/// An SPL mint with `decimals`.
fn mint(decimals: u8) -> Vec<u8> {
    let mut data = vec![0u8; 82];
    data[44] = decimals;
    data[45] = 1;
    data
}

fn key(text: &str) -> Vec<u8> {
    bs58::decode(text).into_vec().unwrap()
}

/// The recorded position, with `liquidity` and zero checkpoints and owed fees (the handouts'
/// worked example).
fn position_data(liquidity: u128) -> Vec<u8> {
    let mut data = decode(
        fixture("position.json")["account"]["data"][0]
            .as_str()
            .unwrap(),
    );
    data[72..88].copy_from_slice(&liquidity.to_le_bytes());
    for range in [96..112, 112..120, 120..136, 136..144] {
        data[range].fill(0);
    }
    data
}

async fn stub(accounts: HashMap<String, Value>, token_accounts: Vec<Value>) -> RpcStub {
    RpcStub::start(move |body| {
        each_call(body, |call| {
            let context = json!({"slot": SLOT});
            match call["method"].as_str() {
                Some("getTokenAccountsByOwner") => {
                    let program = call["params"][1]["programId"].as_str().unwrap();
                    let value = if program == TOKEN_PROGRAM {
                        token_accounts.clone()
                    } else {
                        Vec::new()
                    };
                    Ok(json!({"context": context, "value": value}))
                }
                Some("getMultipleAccounts") => {
                    let value: Vec<Value> = call["params"][0]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| {
                            accounts
                                .get(a.as_str().unwrap())
                                .cloned()
                                .unwrap_or(Value::Null)
                        })
                        .collect();
                    Ok(json!({"context": context, "value": value}))
                }
                _ => Err(json!({"code": -32601, "message": "Method not found"})),
            }
        })
    })
    .await
}

fn world(liquidity: u128) -> (String, HashMap<String, Value>, Vec<Value>) {
    let recorded = decode_position(&position_data(liquidity)).unwrap();
    let wallet = bs58::encode([7u8; 32]).into_string();
    let pda = find_program_address(
        &[b"position", &key(&recorded.position_mint)],
        &key(PROGRAM_ID).try_into().unwrap(),
    )
    .map(|a| bs58::encode(a).into_string())
    .unwrap();
    assert_eq!(
        pda,
        fixture("position.json")["pubkey"],
        "the recorded account is its mint's Position PDA"
    );
    let mut accounts: HashMap<String, Value> = [
        "whirlpool.json",
        "fixed_tick_array_lower.json",
        "fixed_tick_array_upper.json",
    ]
    .iter()
    .map(|name| {
        let f = fixture(name);
        (
            f["pubkey"].as_str().unwrap().to_string(),
            f["account"].clone(),
        )
    })
    .collect();
    accounts.insert(pda, account(&position_data(liquidity), PROGRAM_ID));
    accounts.insert(MINT_A.into(), account(&mint(9), TOKEN_PROGRAM));
    accounts.insert(MINT_B.into(), account(&mint(6), TOKEN_2022_PROGRAM));
    let holder = |m: &[u8], amount| json!({"pubkey": bs58::encode([9u8; 32]).into_string(), "account": account(&token_account(m, &[7u8; 32], amount), TOKEN_PROGRAM)});
    let token_accounts = vec![
        holder(&key(&recorded.position_mint), 1),
        // A fungible balance and an NFT that is no position: neither is read as one.
        holder(&key(MINT_A), 5_000),
        holder(&[3u8; 32], 1),
    ];
    (wallet, accounts, token_accounts)
}

#[tokio::test]
async fn a_wallets_orca_positions_are_read_from_their_accounts() {
    let (wallet, accounts, token_accounts) = world(1_000_000_000_000);
    let stub = stub(accounts, token_accounts).await;
    let rpc = RpcClient::new(&stub.url, RPC_TIMEOUT).unwrap();
    let symbol = |mint: &str| (mint == MINT_B).then(|| "USDC".to_string());
    let got = read_orca_wallet(&rpc, PROGRAM_ID, &wallet, false, &symbol)
        .await
        .unwrap();
    let (slot, read) = (got.slot, got.positions);
    assert_eq!(got.not_read, 0);
    assert_eq!(slot, SLOT);
    assert_eq!(read.len(), 1, "{read:?}");
    let p = &read[0];
    assert_eq!(p.pool, "EgxU92G34jw6QDG9RuTX9StFg1PmHuDqkRKAE5kVEiZ4");
    assert_eq!((p.tick_lower, p.tick_upper), (-443584, 443584));
    assert_eq!(p.liquidity, 1_000_000_000_000);
    // The handouts' worked example: the program's own fee update owes these.
    assert_eq!(p.fees, [U256::from(7305063510u64), U256::from(78119u64)]);
    assert_eq!([p.tokens[0].decimals, p.tokens[1].decimals], [9, 6]);
    assert_eq!(p.tokens[1].symbol, "USDC");
    assert_eq!(
        p.tokens[0].symbol, "Jd4M…TuDa",
        "a mint the catalog does not know: its short form"
    );
    assert!(
        p.amounts.iter().all(|a| !a.is_zero()),
        "a full-range position holds both"
    );
    // Requests: the token accounts (one batch), positions, whirlpools, ticks and mints.
    assert_eq!(stub.requests(), 4);
}

/// A wallet sent 1,001 Orca positions is read to the cap (1,000, by mint) and says how many it
/// did not read.
#[tokio::test]
async fn a_wallet_past_the_orca_cap_says_how_many_were_not_read() {
    let (wallet, mut accounts, _) = world(1_000);
    let mut token_accounts = Vec::new();
    for i in 0..1_001u32 {
        let mut mint = [5u8; 32];
        mint[..4].copy_from_slice(&i.to_be_bytes());
        let mut data = position_data(1_000);
        data[40..72].copy_from_slice(&mint);
        let pda = find_program_address(&[b"position", &mint], &key(PROGRAM_ID).try_into().unwrap())
            .map(|a| bs58::encode(a).into_string())
            .unwrap();
        accounts.insert(pda, account(&data, PROGRAM_ID));
        token_accounts.push(json!({
            "pubkey": bs58::encode([9u8; 32]).into_string(),
            "account": account(&token_account(&mint, &[7u8; 32], 1), TOKEN_PROGRAM),
        }));
    }
    let stub = stub(accounts, token_accounts).await;
    let rpc = RpcClient::new(&stub.url, RPC_TIMEOUT).unwrap();
    let got = read_orca_wallet(&rpc, PROGRAM_ID, &wallet, false, &|_: &str| None)
        .await
        .unwrap();
    assert_eq!(got.positions.len(), 1_000);
    assert_eq!(got.not_read, 1);
    let mut mints: Vec<&str> = got.positions.iter().map(|p| p.token.as_str()).collect();
    mints.dedup();
    assert_eq!(mints.len(), 1_000);
}

#[tokio::test]
async fn refused_orca_answers_fail_the_read_whole() {
    // A Position account with another discriminator, one byte short, its ticks swapped (no
    // Whirlpool holds a range upside down), or its upper tick off the pool's spacing.
    for corrupt in [
        |d: &mut Vec<u8>| d[0] ^= 1,
        |d: &mut Vec<u8>| {
            d.pop();
        },
        |d: &mut Vec<u8>| {
            let (lower, upper) = (d[88..92].to_vec(), d[92..96].to_vec());
            d[88..92].copy_from_slice(&upper);
            d[92..96].copy_from_slice(&lower);
        },
        |d: &mut Vec<u8>| {
            let upper = i32::from_le_bytes(d[92..96].try_into().unwrap());
            d[92..96].copy_from_slice(&(upper + 1).to_le_bytes());
        },
    ] {
        let (wallet, mut accounts, token_accounts) = world(1);
        let pda = accounts
            .iter()
            .find(|(_, a)| {
                a["owner"] == PROGRAM_ID && decode(a["data"][0].as_str().unwrap()).len() == 216
            })
            .map(|(k, _)| k.clone())
            .unwrap();
        let mut data = position_data(1);
        corrupt(&mut data);
        accounts.insert(pda, account(&data, PROGRAM_ID));
        let stub = stub(accounts, token_accounts).await;
        let rpc = RpcClient::new(&stub.url, RPC_TIMEOUT).unwrap();
        let error = read_orca_wallet(&rpc, PROGRAM_ID, &wallet, false, &|_: &str| None)
            .await
            .unwrap_err();
        assert!(error.contains("position of"), "{error}");
        let swapped = data[88..96] != position_data(1)[88..96];
        assert_eq!(error.contains("its ticks"), swapped, "{error}");
    }
    // A Position account owned by another program.
    let (wallet, mut accounts, token_accounts) = world(1);
    for value in accounts.values_mut() {
        if value["owner"] == PROGRAM_ID && decode(value["data"][0].as_str().unwrap()).len() == 216 {
            value["owner"] = json!(TOKEN_PROGRAM);
        }
    }
    let stub = stub(accounts, token_accounts).await;
    let rpc = RpcClient::new(&stub.url, RPC_TIMEOUT).unwrap();
    let error = read_orca_wallet(&rpc, PROGRAM_ID, &wallet, false, &|_: &str| None)
        .await
        .unwrap_err();
    assert!(error.contains("owned by the program expected"), "{error}");
}

/// Through the API: a Solana wallet (an ed25519 key made here) links by signing its challenge,
/// and its Orca position, read through the stub, is listed as the caller's.
#[tokio::test]
async fn a_linked_solana_wallet_lists_its_orca_position() {
    use lambda_http::http::StatusCode;
    use shared::chain::refresh::WalletReader;
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use test_support::client::TestClient;
    use test_support::wallets::{challenge, link, SolanaWallet};

    let (_, accounts, token_accounts) = world(1_000_000_000_000);
    let stub = stub(accounts, token_accounts).await;
    let mut app = shared::App::in_memory();
    let endpoints = BTreeMap::from([(
        shared::model::Chain::Solana,
        Arc::new(RpcClient::new(&stub.url, RPC_TIMEOUT).unwrap()),
    )]);
    app.wallet_refresh = Some(Arc::new(WalletReader::new(endpoints, &app, 0)));
    let alice = TestClient::in_process(&app, Some("alice"));
    let wallet = SolanaWallet::from_seed(21);
    let message = challenge(&alice, "solana", &wallet.address).await;
    let reply = link(
        &alice,
        "solana",
        &wallet.address,
        &message,
        &wallet.sign(&message),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(reply.json["positions"], 1, "{}", reply.json);
    let listed = alice.list("source=wallet&chain=solana").await.json;
    assert_eq!(listed["total"], 1, "{listed}");
    let view = &listed["data"][0];
    let recorded = decode_position(&position_data(1)).unwrap();
    assert_eq!(
        view["positionMint"],
        recorded.position_mint.as_str(),
        "{view}"
    );
    assert_eq!(view["protocol"], "orca-whirlpools");
    assert_eq!(view["status"], "active");
    assert_eq!(view["readHeight"], SLOT);
    // 7305063510 base units of a 9-decimal token, 78119 of a 6-decimal one.
    assert_eq!(view["tokenA"]["feesEarned"], "7.30506351", "{view}");
    assert_eq!(view["tokenB"]["feesEarned"], "0.078119", "{view}");
    assert!(
        view["valueUsd"].is_null(),
        "devnet mints have no USD price: {view}"
    );
    assert!(view.get("tokenId").is_none());
}
