//! Wallets on the devnet (anvil with the real Uniswap v3 contracts): one of anvil's accounts,
//! not the deployer, links through local-api by `personal_sign` of its challenge (anvil signs
//! for it); the positions it holds (in range, out of range on each side, in a pool outside the
//! catalog with a token of the test's own, one withdrawn with its fees left, one transferred
//! away) are read at one block and compared with the position manager's own answers there:
//! `positions`, `decreaseLiquidity` and `collect` as `eth_call`s from the holder.

use lambda_http::http::{Method, StatusCode};
use local_api::auth::JwtSettings;
use serde_json::{json, Value};
use shared::catalog::{CatalogFile, Deployment};
use shared::chain::refresh::confirmed_block;
use shared::chain::wallets::{read_wallet, ChainPosition};
use shared::chain::{RpcClient, RPC_TIMEOUT};
use test_support::devnet::Devnet;
use test_support::local_api::LocalApi;
use test_support::wallets::post;

fn jwt() -> JwtSettings {
    JwtSettings {
        secret: "local-dev-secret".into(),
        issuer: "local-dev".into(),
        audience: "positions-api".into(),
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Mints a position for `recipient` (the deployer pays); its token id.
async fn mint(devnet: &Devnet, recipient: &str, range: (i32, i32), pool: Option<&Value>) -> String {
    let (lower, upper) = (range.0.to_string(), range.1.to_string());
    let amount = "1000000000000000000000";
    let mut args = vec![
        "--lower",
        &lower,
        "--upper",
        &upper,
        "--amount0",
        amount,
        "--amount1",
        amount,
        "--recipient",
        recipient,
    ];
    let (token0, token1, fee);
    if let Some(pool) = pool {
        (token0, token1, fee) = (
            text(&pool["token0"]),
            text(&pool["token1"]),
            text(&pool["fee"]),
        );
        args.extend(["--token0", &token0, "--token1", &token1, "--fee", &fee]);
    }
    text(&devnet.run("mint", &args).await["tokenId"])
}

/// Every figure of `ours` against the position manager's answers at the same block.
fn assert_is_the_chains(ours: &ChainPosition, chain: &Value) {
    let id = ours.token_id.to_string();
    assert_eq!(
        ours.liquidity.to_string(),
        text(&chain["liquidity"]),
        "liquidity of {id}"
    );
    assert_eq!(
        ours.tick_lower.to_string(),
        text(&chain["tickLower"]),
        "tickLower of {id}"
    );
    assert_eq!(
        ours.tick_upper.to_string(),
        text(&chain["tickUpper"]),
        "tickUpper of {id}"
    );
    assert_eq!(ours.fee.to_string(), text(&chain["fee"]), "fee of {id}");
    assert_eq!(
        ours.token0.address,
        text(&chain["token0"]),
        "token0 of {id}"
    );
    assert_eq!(
        ours.token1.address,
        text(&chain["token1"]),
        "token1 of {id}"
    );
    assert_eq!(
        ours.amounts[0].to_string(),
        text(&chain["amount0"]),
        "amount0 of {id}"
    );
    assert_eq!(
        ours.amounts[1].to_string(),
        text(&chain["amount1"]),
        "amount1 of {id}"
    );
    assert_eq!(
        ours.fees[0].to_string(),
        text(&chain["fees0"]),
        "fees0 of {id}"
    );
    assert_eq!(
        ours.fees[1].to_string(),
        text(&chain["fees1"]),
        "fees1 of {id}"
    );
}

#[tokio::test]
async fn a_linked_wallets_positions_are_the_chains_to_the_unit() {
    let devnet = Devnet::up(3000).await;
    let wallet = text(&devnet.run("account", &["--index", "1"]).await["address"]);
    let stranger = text(&devnet.run("account", &["--index", "2"]).await["address"]);
    let tick = devnet.run("pool", &[]).await["tick"].as_i64().unwrap() as i32;
    let at = |offset: i32| (tick + offset).div_euclid(60) * 60;

    let in_range = mint(&devnet, &wallet, (at(-600), at(600)), None).await;
    let below = mint(&devnet, &wallet, (at(-3000), at(-1200)), None).await;
    let above = mint(&devnet, &wallet, (at(1200), at(3000)), None).await;
    let withdrawn = mint(&devnet, &wallet, (at(-1200), at(1200)), None).await;
    let transferred = mint(&devnet, &wallet, (at(-1800), at(1800)), None).await;
    let own = devnet
        .run("new-pool", &["--symbol", "OWN", "--fee", "500"])
        .await;
    let outside = mint(&devnet, &wallet, (-600, 600), Some(&own)).await;

    // Linking through local-api: the challenge names the devnet's chain id, anvil signs it.
    let rpc = format!("ethereum={}", devnet.rpc);
    let args = [
        "--catalog",
        devnet.catalog.to_str().unwrap(),
        "--rpc",
        &rpc,
        "--sync-interval",
        "3600",
        "--confirmations",
        "0",
    ];
    let server = LocalApi::start(env!("CARGO_BIN_EXE_local-api"), &args).await;
    let alice = server.client(Some(&jwt().issue("alice", 3600)));
    let reply = post(
        &alice,
        "/wallets/challenge",
        &json!({"chain": "ethereum", "address": wallet.to_lowercase()}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let message = text(&reply.json["message"]);
    assert!(message.contains("\nChain ID: 31337\n"), "{message}");
    let signed = devnet
        .run("sign", &["--account", &wallet, "--message", &message])
        .await;
    let link = json!({"chain": "ethereum", "address": wallet, "message": message, "signature": signed["signature"]});
    let reply = post(&alice, "/wallets", &link).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(reply.json["address"], wallet.as_str());
    assert_eq!(reply.json["positions"], 6, "{}", reply.json);
    assert!(reply.json.get("refreshError").is_none(), "{}", reply.json);
    // The same signature again: the challenge is used.
    let reply = post(&alice, "/wallets", &link).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    let listed = alice.send(Method::GET, "/wallets", &[], b"").await;
    assert_eq!(listed.json["data"][0]["positions"], 6, "{}", listed.json);

    // Fees in both tokens, one position withdrawn with its fees left, one sent away.
    devnet
        .run("swap", &["--sell", "weth", "--amount", "20"])
        .await;
    devnet
        .run("swap", &["--sell", "usdc", "--amount", "70000"])
        .await;
    devnet
        .run(
            "withdraw",
            &["--account", &wallet, "--token-id", &withdrawn],
        )
        .await;
    devnet
        .run(
            "transfer",
            &[
                "--account",
                &wallet,
                "--token-id",
                &transferred,
                "--to",
                &stranger,
            ],
        )
        .await;

    // One read at one block, compared with the chain at that block.
    let file: CatalogFile =
        serde_json::from_str(&std::fs::read_to_string(&devnet.catalog).unwrap()).unwrap();
    let deployments: Vec<&Deployment> = file.deployments.iter().collect();
    let client = RpcClient::new(&devnet.rpc, RPC_TIMEOUT).unwrap();
    let block = confirmed_block(&client, 0).await.unwrap();
    let holdings = read_wallet(&client, &deployments, &wallet, &block)
        .await
        .unwrap();
    let ids: Vec<String> = holdings
        .positions
        .iter()
        .map(|p| p.token_id.to_string())
        .collect();
    let mut expected = vec![
        in_range.clone(),
        below.clone(),
        above.clone(),
        withdrawn.clone(),
        outside.clone(),
    ];
    expected.sort();
    let mut got = ids.clone();
    got.sort();
    assert_eq!(
        got, expected,
        "the transferred position is no longer the wallet's"
    );
    let block_number = block.number.to_string();
    for position in &holdings.positions {
        let id = position.token_id.to_string();
        let chain = devnet
            .run(
                "position-quote",
                &["--token-id", &id, "--block", &block_number],
            )
            .await;
        assert_eq!(text(&chain["owner"]), wallet);
        assert_is_the_chains(position, &chain);
        if id == in_range {
            assert!(
                position.fees.iter().all(|f| *f > 0),
                "fees in both tokens: {position:?}"
            );
            assert!(position.amounts.iter().all(|a| !a.is_zero()));
        }
        if id == below || id == above {
            assert_eq!(
                position.amounts.iter().filter(|a| a.is_zero()).count(),
                1,
                "one side only"
            );
        }
        if id == withdrawn {
            assert_eq!(position.liquidity, 0);
            assert!(
                position.fees.iter().all(|f| *f > 0),
                "uncollected fees stay: {position:?}"
            );
        }
        if id == outside {
            assert_eq!(position.pool, text(&own["pool"]));
            let symbols = [&position.token0.symbol, &position.token1.symbol];
            assert!(symbols.contains(&&"OWN".to_string()), "{symbols:?}");
        }
    }
    // Twice read, nothing duplicates.
    let figures = |h: &shared::chain::wallets::WalletHoldings| -> Vec<String> {
        h.positions
            .iter()
            .map(|p| {
                format!(
                    "{} {} {:?} {:?}",
                    p.token_id, p.liquidity, p.amounts, p.fees
                )
            })
            .collect()
    };
    let again = read_wallet(&client, &deployments, &wallet, &block)
        .await
        .unwrap();
    assert_eq!(figures(&again), figures(&holdings));
}
