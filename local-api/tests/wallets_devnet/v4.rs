//! Uniswap v4 positions on the devnet with v4's real contracts from npm (`devnet/v4.mjs`:
//! v4-core 1.0.2's PoolManager, a devnet-only use its BUSL-1.1 licence grants; v4-periphery
//! 1.0.3's PositionManager and StateView): a wallet holding a position on the native-ETH pool
//! and one on the USDC/WETH pool, minted before the link, lists both at the link, each as the
//! contracts answer it at its read; swaps, a zero decrease (v4's collect), a deposit, a partial
//! withdrawal and a transfer out are followed by the syncs (the scan's `ModifyLiquidity` and
//! `Transfer` filters), the fees equal to the unit what the zero decrease paid, the history's
//! amounts what the wallet received. On memory and on DynamoDB (moto).

use alloy_primitives::U256;
use lambda_http::http::{Method, StatusCode};
use local_api::auth::JwtSettings;
use serde_json::Value;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use test_support::client::TestClient;
use test_support::devnet::{units, Devnet};
use test_support::json::text;
use test_support::local_api::LocalApi;
use test_support::on_both_stores;
use test_support::rpc_stub::RpcStub;
use test_support::wallets::{link_evm, EvmWallet};
use test_support::world::{local_api, operator, sync, user};

pub(super) const NATIVE: &str = "0x0000000000000000000000000000000000000000";

/// The caller's v4 positions, by token id.
pub(super) async fn positions(client: &TestClient) -> Vec<Value> {
    let reply = client.list("limit=100").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let mut list: Vec<Value> = reply.json["data"].as_array().unwrap().clone();
    list.retain(|p| p["protocol"] == "uniswap-v4");
    list.sort_by_key(|p| text(&p["tokenId"]).parse::<u64>().unwrap());
    list
}

pub(super) async fn get(client: &TestClient, id: &str) -> Value {
    let reply = client.get(id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json
}

pub(super) async fn history(client: &TestClient, id: &str) -> Vec<Value> {
    let path = format!("/positions/{id}/history?limit=100");
    let reply = client.send(Method::GET, &path, &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json["data"].as_array().unwrap().clone()
}

pub(super) fn kinds(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| text(&e["kind"])).collect()
}

/// The view's `field` of each token in protocol order (currency0, currency1), base units.
pub(super) fn protocol_order(view: &Value, field: &str, currency0: &str) -> [U256; 2] {
    let of = |token: &str| U256::from_str(&units(&view[token][field])).unwrap();
    if text(&view["tokenA"]["address"]).eq_ignore_ascii_case(currency0) {
        [of("tokenA"), of("tokenB")]
    } else {
        [of("tokenB"), of("tokenA")]
    }
}

pub(super) fn chain_pair(quote: &Value, a: &str, b: &str) -> [U256; 2] {
    [a, b].map(|f| U256::from_str(&text(&quote[f])).unwrap())
}

/// The view against the contracts at its read's block: key, ticks, liquidity, and the fees a
/// zero decrease would pay there.
pub(super) async fn assert_view_is_the_chains(devnet: &Devnet, view: &Value) -> Value {
    let block = view["readHeight"].as_u64().unwrap().to_string();
    let token = text(&view["tokenId"]);
    let quote = devnet
        .run("v4-quote", &["--token-id", &token, "--block", &block])
        .await;
    assert_eq!(view["protocol"], "uniswap-v4");
    assert_eq!(text(&view["pool"]), text(&quote["poolId"]), "{view}");
    for field in ["liquidity", "tickLower", "tickUpper"] {
        assert_eq!(text(&view[field]), text(&quote[field]), "{field}: {view}");
    }
    let currency0 = text(&quote["currency0"]);
    assert_eq!(
        protocol_order(view, "feesUnclaimed", &currency0),
        chain_pair(&quote, "fees0", "fees1"),
        "{view}"
    );
    quote
}

fn range(pool: &Value, half_width: i64) -> (String, String) {
    let spacing = pool["tickSpacing"].as_i64().unwrap();
    let tick = pool["tick"].as_i64().unwrap();
    let at = |t: i64| (t.div_euclid(spacing) * spacing).to_string();
    (at(tick - half_width), at(tick + half_width))
}

/// A position on the devnet's `pool` (`eth` or `erc20`) around its initial tick, `half_width`
/// ticks each side, of `liquidity`, minted for `recipient` (the deployer pays): the command's
/// answer (`tokenId`, `block`).
pub(super) async fn v4_mint(
    devnet: &Devnet,
    pool: &str,
    half_width: i64,
    liquidity: &str,
    recipient: &str,
) -> Value {
    let (lower, upper) = range(&devnet.state["v4"]["pools"][pool], half_width);
    let args = [
        "--pool",
        pool,
        "--lower",
        &lower,
        "--upper",
        &upper,
        "--liquidity",
        liquidity,
        "--recipient",
        recipient,
    ];
    devnet.run("v4-mint", &args).await
}

/// Swaps both ways on both of the devnet's v4 pools: fees in both currencies.
pub(super) async fn swaps_on_both_pools(devnet: &Devnet) {
    for (pool, amounts) in [
        ("eth", ["2000000000000000000", "6000000000000000000000"]),
        ("erc20", ["6000000000000000000000", "2000000000000000000"]),
    ] {
        for (zero_for_one, amount) in [("true", amounts[0]), ("false", amounts[1])] {
            let args = [
                "--pool",
                pool,
                "--zero-for-one",
                zero_for_one,
                "--amount",
                amount,
            ];
            devnet.run("v4-swap", &args).await;
        }
    }
}

async fn v4_positions_are_followed(store: &[&str]) {
    let devnet = Devnet::with_v4(3000).await;
    let wallet = devnet.account(1).await;
    let stranger = devnet.account(2).await;
    let liquidity = "1000000000000000000000";
    let mint = |pool, half_width, to| v4_mint(&devnet, pool, half_width, liquidity, to);
    let on_eth = text(&mint("eth", 1200, &wallet).await["tokenId"]);
    let on_erc20 = text(&mint("erc20", 600, &wallet).await["tokenId"]);
    // A stranger's, sent to the wallet after fees accrued on it.
    let arriving = text(&mint("eth", 1800, &stranger).await["tokenId"]);

    let server = local_api(&devnet, &devnet.rpc, store).await;
    let (alice, ops) = (user(&server, "alice").await, operator(&server).await);
    devnet.link_account(&alice, &wallet).await;
    sync(&ops).await;
    let listed = positions(&alice).await;
    let tokens: Vec<String> = listed.iter().map(|p| text(&p["tokenId"])).collect();
    assert_eq!(tokens, [on_eth.clone(), on_erc20.clone()], "{listed:?}");
    for view in &listed {
        assert_eq!(view["status"], "active", "{view}");
        assert_eq!(view["historyComplete"], true, "{view}");
        assert!(view["valueUsd"].is_number(), "{view}");
        assert_view_is_the_chains(&devnet, view).await;
        let events = history(&alice, &text(&view["id"])).await;
        assert_eq!(kinds(&events), ["mint", "deposit"], "{events:?}");
    }
    // Native ETH is shown as ETH at address(0), priced as WETH.
    let eth_view = &listed[0];
    let eth_side = if text(&eth_view["tokenA"]["address"]) == NATIVE {
        "tokenA"
    } else {
        "tokenB"
    };
    assert_eq!(eth_view[eth_side]["symbol"], "ETH", "{eth_view}");
    assert!(eth_view[eth_side]["valueUsd"].is_number(), "{eth_view}");
    let (eth_id, erc20_id) = (text(&listed[0]["id"]), text(&listed[1]["id"]));

    // Swaps both ways on both pools: fees in both currencies, followed by the sync.
    swaps_on_both_pools(&devnet).await;
    sync(&ops).await;
    let view = get(&alice, &eth_id).await;
    let quote = assert_view_is_the_chains(&devnet, &view).await;
    let currency0 = text(&quote["currency0"]);
    let unclaimed = protocol_order(&view, "feesUnclaimed", &currency0);
    assert!(unclaimed.iter().all(|f| !f.is_zero()), "{view}");
    // A zero decrease pays exactly the fees the API showed (no block between them).
    let collect = [
        "--account",
        &wallet,
        "--token-id",
        &on_eth,
        "--liquidity",
        "0",
    ];
    let paid = devnet.run("v4-decrease", &collect).await;
    assert_eq!(chain_pair(&paid, "amount0", "amount1"), unclaimed, "{paid}");
    sync(&ops).await;
    let view = get(&alice, &eth_id).await;
    assert_view_is_the_chains(&devnet, &view).await;
    assert_eq!(
        protocol_order(&view, "feesUnclaimed", &currency0),
        [U256::ZERO; 2]
    );
    assert_eq!(
        protocol_order(&view, "feesCollected", &currency0),
        unclaimed,
        "{view}"
    );
    assert_eq!(
        kinds(&history(&alice, &eth_id).await),
        ["mint", "deposit", "collect"]
    );

    // A deposit and a partial withdrawal by the wallet on the ERC-20 pool.
    devnet.run("fund", &["--account", &wallet]).await;
    let more = [
        "--account",
        &wallet,
        "--token-id",
        &on_erc20,
        "--liquidity",
        "500000000000000000000",
    ];
    devnet.run("v4-increase", &more).await;
    sync(&ops).await;
    let view = get(&alice, &erc20_id).await;
    assert_eq!(text(&view["liquidity"]), "1500000000000000000000", "{view}");
    let quote = assert_view_is_the_chains(&devnet, &view).await;
    let currency0 = text(&quote["currency0"]);
    let fees_before = protocol_order(&view, "feesEarned", &currency0);
    let out = [
        "--account",
        &wallet,
        "--token-id",
        &on_erc20,
        "--liquidity",
        "700000000000000000000",
    ];
    let received = devnet.run("v4-decrease", &out).await;
    sync(&ops).await;
    let view = get(&alice, &erc20_id).await;
    assert_eq!(text(&view["liquidity"]), "800000000000000000000", "{view}");
    assert_view_is_the_chains(&devnet, &view).await;
    let events = history(&alice, &erc20_id).await;
    assert_eq!(
        kinds(&events),
        ["mint", "deposit", "deposit", "withdraw"],
        "{events:?}"
    );
    // What the withdrawal paid the wallet is its principal and the fees it paid out: every
    // fee earned is now collected, and the principal is the history's withdrawn amount.
    let collected = protocol_order(&view, "feesCollected", &currency0);
    assert_eq!(collected, fees_before, "{view}");
    let withdrawn = events.last().unwrap();
    let of = |field: &str| {
        let side = |token: &str| U256::from_str(&units(&withdrawn[token][field])).unwrap();
        if text(&view["tokenA"]["address"]).eq_ignore_ascii_case(&currency0) {
            [side("tokenA"), side("tokenB")]
        } else {
            [side("tokenB"), side("tokenA")]
        }
    };
    let (principal, fees) = (of("principal"), of("fees"));
    let got = chain_pair(&received, "amount0", "amount1");
    assert_eq!(
        [principal[0] + fees[0], principal[1] + fees[1]],
        got,
        "{withdrawn}"
    );
    assert_eq!(of("amount"), principal, "{withdrawn}");

    // Arrived from the stranger with fees accrued on it: its count starts at the transfer, what
    // it held then (principal and the fees a zero decrease would have paid) read at that block.
    let send = [
        "--account",
        &stranger,
        "--token-id",
        &arriving,
        "--to",
        &wallet,
    ];
    devnet.run("v4-transfer", &send).await;
    sync(&ops).await;
    let listed = positions(&alice).await;
    let view = listed
        .iter()
        .find(|p| text(&p["tokenId"]) == arriving)
        .unwrap_or_else(|| panic!("the arrived position is listed: {listed:?}"));
    assert_eq!(view["status"], "active", "{view}");
    assert_eq!(view["historyComplete"], true, "{view}");
    assert!(view["costBasisUsd"].is_number(), "{view}");
    assert_view_is_the_chains(&devnet, view).await;
    let events = history(&alice, &text(&view["id"])).await;
    assert_eq!(
        kinds(&events),
        ["mint", "deposit", "transfer-in"],
        "{events:?}"
    );

    // Sent away: closed as transferred, its history saying so.
    let send = [
        "--account",
        &wallet,
        "--token-id",
        &on_eth,
        "--to",
        &stranger,
    ];
    devnet.run("v4-transfer", &send).await;
    sync(&ops).await;
    let view = get(&alice, &eth_id).await;
    assert_eq!(view["status"], "closed", "{view}");
    assert_eq!(view["closeReason"], "transferred", "{view}");

    // Burned (BURN_POSITION): a close, as a withdrawal closed on chain is, holding nothing.
    let burn = ["--account", &wallet, "--token-id", &on_erc20];
    devnet.run("v4-burn", &burn).await;
    sync(&ops).await;
    let view = get(&alice, &erc20_id).await;
    assert_eq!(view["status"], "closed", "{view}");
    assert_eq!(view["closeReason"], "withdrawn", "{view}");
    assert_eq!(text(&view["liquidity"]), "0", "{view}");
}

on_both_stores!(v4_wallet_positions => v4_positions_are_followed);

/// The devnet behind a counting proxy, local-api on it with `--log-range 4`: the requests it
/// sends, and its back-scan's `eth_getLogs` (the v4 manager's `Transfer`s to a wallet).
struct Counted {
    devnet: Devnet,
    node: RpcStub,
    back_scans: Arc<AtomicUsize>,
    server: LocalApi,
}

impl Counted {
    async fn start() -> Counted {
        let devnet = Devnet::with_v4(3000).await;
        let manager = text(&devnet.state["v4"]["positionManager"]).to_lowercase();
        let back_scans = Arc::new(AtomicUsize::new(0));
        let counted = back_scans.clone();
        let node = RpcStub::proxy(&devnet.rpc, move |call| {
            let filter = &call["params"][0];
            let to_wallet = filter["topics"][2].is_string() && filter["topics"][1].is_null();
            let address = filter["address"]
                .as_str()
                .unwrap_or_default()
                .to_lowercase();
            if call["method"] == "eth_getLogs" && address == manager && to_wallet {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            None
        })
        .await;
        let server = local_api(&devnet, &node.url, &["--log-range", "4"]).await;
        Counted {
            devnet,
            node,
            back_scans,
            server,
        }
    }

    async fn mint(&self, to: &str) -> Value {
        v4_mint(&self.devnet, "erc20", 600, "1000000000000000000", to).await
    }

    async fn swap(&self) {
        let args = [
            "--pool",
            "erc20",
            "--zero-for-one",
            "true",
            "--amount",
            "1000000000000000",
        ];
        self.devnet.run("v4-swap", &args).await;
    }

    fn back_scans(&self) -> usize {
        self.back_scans.swap(0, Ordering::SeqCst)
    }
}

/// The back-scan stops once it found the wallet's positions: a position that arrived last
/// costs one chunk, one that arrived earlier the chunks back to it, never the manager's whole
/// history; a sync costs the same requests with 1 and with 50 idle wallets holding v4
/// positions.
#[tokio::test]
async fn the_back_scan_stops_at_the_last_arrival_and_idle_wallets_cost_nothing() {
    let world = Counted::start().await;
    let boundary = world.devnet.clock_past_a_boundary().await;
    let ops = operator(&world.server).await;
    let alice = user(&world.server, "alice").await;
    let wallet = world.devnet.account(1).await;
    // Blocks of other activity first: the manager's history is longer than one chunk.
    for _ in 0..12 {
        world.swap().await;
    }
    world.mint(&wallet).await;
    world.back_scans();
    let before = world.node.requests();
    world.devnet.link_account(&alice, &wallet).await;
    println!(
        "the link of a wallet with one v4 position: {} JSON-RPC requests (its read, its history)",
        world.node.requests() - before
    );
    assert_eq!(world.back_scans(), 1, "the newest chunk holds the mint");
    sync(&ops).await;
    world.back_scans();

    // A second position, then 9 blocks: the read its transfer triggers goes back 3 chunks.
    let minted = world.mint(&wallet).await["block"].as_u64().unwrap();
    for _ in 0..9 {
        world.swap().await;
    }
    let report = sync(&ops).await;
    assert_eq!(report["wallets"]["refreshed"], 1, "{report}");
    let head = minted + 9;
    let chunks = (head - minted) / 4 + 1;
    assert_eq!(
        world.back_scans() as u64,
        chunks,
        "from {head} back to {minted}"
    );
    assert_eq!(positions(&alice).await.len(), 2);

    // Each of three syncs: the pools' points at the boundary were recorded by the first sync,
    // and no other boundary passes (asserted below).
    let requests_of_syncs = || async {
        let mut each = Vec::new();
        for _ in 0..3 {
            world.swap().await;
            let before = world.node.requests();
            let report = sync(&ops).await;
            assert_eq!(report["wallets"]["refreshed"], 0, "{report}");
            each.push(world.node.requests() - before);
        }
        each
    };
    let one = requests_of_syncs().await;
    for seed in 0..49u64 {
        let other = EvmWallet::from_seed(9_000 + seed);
        world.mint(&other.address).await;
        let owner = world.server.client(Some(
            &JwtSettings::local_default().issue(&format!("v4-user-{seed}"), 3600),
        ));
        link_evm(&owner, "ethereum", &other).await;
    }
    let report = sync(&ops).await;
    assert_eq!(report["wallets"]["refreshed"], 49, "{report}");
    let fifty = requests_of_syncs().await;
    println!("requests per sync: {one:?} with 1 linked v4 wallet, {fifty:?} with 50");
    assert_eq!(one, [one[0]; 3]);
    assert_eq!(one, fifty);
    world.devnet.assert_no_boundary_since(boundary).await;
}
