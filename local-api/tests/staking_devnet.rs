//! Every position a wallet holds, on the devnet with PancakeSwap v3's real contracts (npm) and
//! MasterChefV3 beside Uniswap v3: a wallet's positions on both managers are listed with their
//! histories; its PancakeSwap position staked in the farm after the link stays the wallet's
//! (never closed, same id), shows `staked` with `rewardsPending` = the farm's `pendingCake` at
//! the read's block, amounts equal to what the manager would pay, `staked` and `unstaked` in
//! its history, through a harvest, a decrease through the farm and the unstake. A wallet linked
//! while its position is already staked lists it at once. On memory and on DynamoDB (moto).
//! CAKE rewards here come from the devnet's stand-in LM pool through `pendingCake`, not from
//! PancakeSwap's reward maths.

use lambda_http::http::{Method, StatusCode};
use serde_json::Value;
use test_support::client::TestClient;
use test_support::devnet::{units, Devnet};
use test_support::json::text;
use test_support::on_both_stores;
use test_support::world::{local_api, operator, sync, user};

const PANCAKE: &[&str] = &["--protocol", "pancakeswap-v3"];

/// The caller's wallet positions, by protocol then token id.
async fn positions(client: &TestClient) -> Vec<Value> {
    let reply = client.list("limit=100").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let mut list = reply.json["data"].as_array().unwrap().clone();
    list.sort_by_key(|p| (text(&p["protocol"]), text(&p["tokenId"])));
    list
}

async fn history_kinds(client: &TestClient, id: &str) -> Vec<String> {
    let path = format!("/positions/{id}/history?limit=100");
    let reply = client.send(Method::GET, &path, &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| text(&e["kind"]))
        .collect()
}

async fn get(client: &TestClient, id: &str) -> Value {
    let reply = client.get(id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json
}

/// The position as the chain has it at the view's read block: the farm's answers and what the
/// manager would pay for its liquidity.
async fn chain_at(devnet: &Devnet, token: &str, view: &Value) -> (Value, Value) {
    let block = view["readHeight"].as_u64().unwrap().to_string();
    let args = ["--token-id", token, "--block", &block];
    let farm = devnet.run("staking-quote", &args).await;
    let mut quote_args = args.to_vec();
    quote_args.extend(PANCAKE);
    let position = devnet.run("position-quote", &quote_args).await;
    (farm, position)
}

/// The view's amounts in protocol order (token0, token1), base units.
fn amounts(view: &Value, usdc_is_token0: bool) -> [String; 2] {
    // tokenA is WETH (the base asset), tokenB USDC.
    let (weth, usdc) = (
        units(&view["tokenA"]["amount"]),
        units(&view["tokenB"]["amount"]),
    );
    if usdc_is_token0 {
        [usdc, weth]
    } else {
        [weth, usdc]
    }
}

fn assert_staked_as_chain(view: &Value, farm: &Value, position: &Value, devnet: &Devnet) {
    let staked = &view["staked"];
    assert_eq!(view["status"], "active", "{view}");
    assert_eq!(
        text(&staked["contract"]).to_lowercase(),
        devnet.state["pancake"]["masterChef"]
            .as_str()
            .unwrap()
            .to_lowercase()
    );
    assert_eq!(
        units(&staked["rewardsPending"]),
        text(&farm["pendingCake"]),
        "{view}"
    );
    assert_eq!(text(&staked["rewardToken"]["symbol"]), "CAKE");
    assert_eq!(text(&view["liquidity"]), text(&position["liquidity"]));
    assert_eq!(
        amounts(view, devnet.usdc_is_token0()),
        [text(&position["amount0"]), text(&position["amount1"])],
        "{view}"
    );
}

async fn staked_positions_stay_the_wallets(store: &[&str]) {
    let devnet = Devnet::with_pancake(3000).await;
    let wallet = devnet.account(1).await;
    let tick = devnet.run("pool", PANCAKE).await["tick"].as_i64().unwrap() as i32;
    let at = |t: i32, spacing: i32| t.div_euclid(spacing) * spacing;
    let amount = "1000000000000000000000";
    // One position on each manager, minted to the wallet (the deployer pays).
    let uniswap = devnet
        .mint_to(
            &wallet,
            (at(tick - 3000, 60), at(tick + 3000, 60)),
            None,
            amount,
        )
        .await;
    let (lower, upper) = (
        at(tick - 2000, 50).to_string(),
        at(tick + 2000, 50).to_string(),
    );
    let mut args = vec!["--lower", &lower, "--upper", &upper, "--amount0", amount];
    args.extend(["--amount1", amount, "--recipient", &wallet]);
    args.extend(PANCAKE);
    let pancake = text(&devnet.run("mint", &args).await["tokenId"]);

    let server = local_api(&devnet, &devnet.rpc, store).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);
    devnet.link_account(&alice, &wallet).await;
    sync(&ops).await;
    let listed = positions(&alice).await;
    let protocols: Vec<String> = listed.iter().map(|p| text(&p["protocol"])).collect();
    assert_eq!(protocols, ["pancakeswap-v3", "uniswap-v3"], "{listed:?}");
    for (view, token) in listed.iter().zip([&pancake, &uniswap]) {
        assert_eq!(&text(&view["tokenId"]), token);
        assert_eq!(view["historyComplete"], true, "{view}");
        assert!(view.get("staked").is_none(), "{view}");
        assert_eq!(
            history_kinds(&alice, &text(&view["id"])).await,
            ["mint", "deposit"]
        );
    }
    let id = text(&listed[0]["id"]);

    // Staked after the link: the NFT leaves the wallet for the farm; the position stays.
    devnet
        .run("stake", &["--account", &wallet, "--token-id", &pancake])
        .await;
    for sell in ["usdc", "weth"] {
        let mut args = vec!["--sell", sell, "--amount", "20"];
        args.extend(PANCAKE);
        devnet.run("swap", &args).await;
    }
    devnet.advance_time(60).await;
    sync(&ops).await;
    let view = get(&alice, &id).await;
    let (farm, position) = chain_at(&devnet, &pancake, &view).await;
    assert_eq!(text(&farm["user"]).to_lowercase(), wallet.to_lowercase());
    assert_ne!(text(&farm["pendingCake"]), "0");
    assert_staked_as_chain(&view, &farm, &position, &devnet);
    assert_eq!(
        history_kinds(&alice, &id).await,
        ["mint", "deposit", "staked"]
    );
    assert_eq!(positions(&alice).await.len(), 2, "counted once");

    // A harvest, then half the liquidity out through the farm: still staked, still the chain's.
    devnet
        .run("harvest", &["--account", &wallet, "--token-id", &pancake])
        .await;
    let half = (text(&view["liquidity"]).parse::<u128>().unwrap() / 2).to_string();
    let args = [
        "--account",
        &wallet,
        "--token-id",
        &pancake,
        "--liquidity",
        &half,
    ];
    devnet.run("chef-decrease", &args).await;
    devnet
        .run(
            "chef-collect",
            &["--account", &wallet, "--token-id", &pancake],
        )
        .await;
    devnet.advance_time(30).await;
    sync(&ops).await;
    let view = get(&alice, &id).await;
    let (farm, position) = chain_at(&devnet, &pancake, &view).await;
    assert_staked_as_chain(&view, &farm, &position, &devnet);

    // Unstaked: back in the wallet, the same position, its history goes on.
    devnet
        .run("unstake", &["--account", &wallet, "--token-id", &pancake])
        .await;
    sync(&ops).await;
    let view = get(&alice, &id).await;
    assert_eq!(view["status"], "active", "{view}");
    assert!(view.get("staked").is_none(), "{view}");
    assert_eq!(
        history_kinds(&alice, &id).await,
        ["mint", "deposit", "staked", "withdraw", "collect", "unstaked"]
    );

    // A wallet linked while its position is staked lists it at once.
    let bob_wallet = devnet.account(2).await;
    let mut args = vec!["--lower", &lower, "--upper", &upper, "--amount0", amount];
    args.extend(["--amount1", amount, "--recipient", &bob_wallet]);
    args.extend(PANCAKE);
    let bobs = text(&devnet.run("mint", &args).await["tokenId"]);
    devnet
        .run("stake", &["--account", &bob_wallet, "--token-id", &bobs])
        .await;
    let bob = user(&server, "bob").await;
    devnet.link_account(&bob, &bob_wallet).await;
    sync(&ops).await;
    let listed = positions(&bob).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let (farm, position) = chain_at(&devnet, &bobs, &listed[0]).await;
    assert_staked_as_chain(&listed[0], &farm, &position, &devnet);
    assert_eq!(
        history_kinds(&bob, &text(&listed[0]["id"])).await,
        ["mint", "deposit", "staked"]
    );
}

on_both_stores!(staked_positions => staked_positions_stay_the_wallets);
