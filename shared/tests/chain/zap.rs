//! The zap's swap to the range's ratio (issue 63) on the devnet: the search by QuoterV2's quotes
//! finds an amount whose swap, done on the real pool, leaves what mints the liquidity it
//! promised to the unit, within 0.5 % of the best a dense scan of the same quotes finds.

use serde_json::{json, Value};
use shared::chain::quotes::{quote, swap_to_fit};
use shared::chain::rpc::RpcClient;
use shared::market::PoolState;
use shared::math::{Curve, U256};
use shared::model::Chain;
use shared::orders::zap::QuotedPool;
use shared::orders::zap::{after_swap, funded};
use std::str::FromStr;
use std::time::Duration;
use test_support::devnet::Devnet;
use test_support::json::text;

fn units(value: &Value) -> U256 {
    U256::from_str(&text(value)).unwrap()
}

/// The pool's state at the latest block, as the order would be built at.
async fn state(devnet: &Devnet) -> PoolState {
    let block = devnet
        .rpc("eth_getBlockByNumber", json!(["latest", false]))
        .await;
    let height = u64::from_str_radix(text(&block["number"]).trim_start_matches("0x"), 16).unwrap();
    let pool = devnet.run("pool", &["--block", &height.to_string()]).await;
    PoolState {
        sqrt_price: units(&pool["sqrtPriceX96"]),
        tick: pool["tick"].as_i64().unwrap() as i32,
        liquidity: text(&pool["liquidity"]).parse().unwrap(),
        fee_growth_global0: units(&pool["feeGrowthGlobal0X128"]),
        fee_growth_global1: units(&pool["feeGrowthGlobal1X128"]),
        height,
        block_hash: Some(text(&block["hash"])),
        observed_at: chrono::Utc::now(),
        ticks: Vec::new(),
        balances: None,
        slipstream: None,
    }
}

/// Whole units (18 decimals) of `base` units, as the devnet's commands take them.
fn whole(base: U256) -> String {
    let scale = U256::from(10u64).pow(U256::from(18u8));
    format!("{}.{:018}", base / scale, base % scale)
}

#[tokio::test]
async fn the_swap_to_fit_mints_what_it_promised() {
    let devnet = Devnet::up(3000).await;
    let rpc = RpcClient::new(&devnet.rpc, Duration::from_secs(10)).unwrap();
    let (token0, token1) = (devnet.address("token0"), devnet.address("token1"));
    let pool = &QuotedPool {
        chain: Chain::Ethereum,
        quoter: devnet.state["quoter"].as_str().unwrap(),
        tokens: [&token0, &token1],
        fee: 3000,
    };
    let usdc_first = devnet.usdc_is_token0();
    let (lower, upper) = devnet.range_around(1200).await;
    let curve = Curve::UniswapV3;
    let range = (
        curve.sqrt_price_at_tick(lower).unwrap(),
        curve.sqrt_price_at_tick(upper).unwrap(),
    );
    let e18 = U256::from(10u64).pow(U256::from(18u8));
    // 2 WETH alone, 6,000 USDC alone, 1 WETH and 9,000 USDC (protocol order).
    let order = |weth: U256, usdc: U256| {
        if usdc_first {
            [usdc, weth]
        } else {
            [weth, usdc]
        }
    };
    let offers = [
        order(U256::from(2u8) * e18, U256::ZERO),
        order(U256::ZERO, U256::from(6_000u32) * e18),
        order(e18, U256::from(9_000u32) * e18),
    ];
    for offer in offers {
        let at = state(&devnet).await;
        let (sell, best, quotes) = swap_to_fit(&rpc, pool, &at, (offer, range))
            .await
            .unwrap()
            .expect("something to sell");
        println!(
            "figures: zap of {offer:?}: {quotes} quotes, sells {} of token{sell}",
            best.amount_in
        );
        assert!(quotes <= 24, "{quotes}");
        // A dense scan of the same quotes, independent of the search: none funds more than
        // 0.5 % above what the search found.
        let mut scanned = U256::ZERO;
        for k in 1..=64u32 {
            let x = offer[sell] * U256::from(k) / U256::from(64u32);
            let q = quote(&rpc, pool, &at, (sell, x)).await.unwrap();
            scanned = scanned.max(funded(
                after_swap(offer, sell, x, &q),
                q.sqrt_price_after,
                range,
            ));
        }
        assert!(
            best.liquidity * U256::from(1_000u32) >= scanned * U256::from(995u32),
            "{best:?} against {scanned}"
        );
        // Done on the pool: the swap pays what was quoted, and the mint of what is left funds
        // the liquidity promised, to the unit.
        let symbol = if (sell == 0) == usdc_first {
            "usdc"
        } else {
            "weth"
        };
        let swapped = devnet
            .run(
                "swap",
                &["--sell", symbol, "--amount", &whole(best.amount_in)],
            )
            .await;
        assert_eq!(
            units(&swapped["sqrtPriceX96"]),
            best.quote.sqrt_price_after,
            "{swapped}"
        );
        let left = after_swap(offer, sell, best.amount_in, &best.quote);
        let (l, u) = (lower.to_string(), upper.to_string());
        let (a0, a1) = (left[0].to_string(), left[1].to_string());
        let args = [
            "--lower",
            &l,
            "--upper",
            &u,
            "--amount0",
            &a0,
            "--amount1",
            &a1,
        ];
        let minted = devnet.run("mint", &args).await;
        assert_eq!(units(&minted["liquidity"]), best.liquidity, "{minted}");
        // What the offer leaves unused: at most 0.5 % of either token.
        for t in 0..2 {
            let used = units(&minted[format!("amount{t}").as_str()]);
            let unused = left[t] - used;
            let offered = offer[t].max(left[t]);
            assert!(
                unused * U256::from(200u32) <= offered,
                "token{t}: {unused} of {offered} unused"
            );
        }
    }
}

/// A token's balance of `account` (protocol order index `t`).
async fn balance(devnet: &Devnet, account: &str, token: &str) -> U256 {
    let read = devnet
        .run("allowance", &["--account", account, "--token", token])
        .await;
    units(&read["balance"])
}

#[tokio::test]
async fn one_multicall_to_swaprouter02_swaps_mints_and_sweeps_as_answered() {
    let devnet = Devnet::up(3000).await;
    let rpc = RpcClient::new(&devnet.rpc, Duration::from_secs(10)).unwrap();
    let wallet = devnet.funded_account(1).await;
    let router = devnet.address("router02");
    let max = U256::MAX.to_string();
    for token in ["usdc", "weth"] {
        let args = [
            "--account",
            &wallet,
            "--token",
            token,
            "--amount",
            &max,
            "--spender",
            &router,
        ];
        devnet.run("approve", &args).await;
    }
    let tokens = [devnet.address("token0"), devnet.address("token1")];
    let pool = &QuotedPool {
        chain: Chain::Ethereum,
        quoter: devnet.state["quoter"].as_str().unwrap(),
        tokens: [&tokens[0], &tokens[1]],
        fee: 3000,
    };
    let (lower, upper) = devnet.range_around(1200).await;
    let curve = Curve::UniswapV3;
    let range = (
        curve.sqrt_price_at_tick(lower).unwrap(),
        curve.sqrt_price_at_tick(upper).unwrap(),
    );
    // 2 WETH alone.
    let weth = usize::from(devnet.usdc_is_token0());
    let mut offer = [U256::ZERO; 2];
    offer[weth] = U256::from(2u8) * U256::from(10u64).pow(U256::from(18u8));
    let at = state(&devnet).await;
    let (sell, best, _) = swap_to_fit(&rpc, pool, &at, (offer, range))
        .await
        .unwrap()
        .unwrap();
    // What the mint takes at the price the swap leaves (rounded up, as the pool takes it).
    let deposit = curve
        .amounts_for_liquidity(
            best.quote.sqrt_price_after,
            range.0,
            range.1,
            u128::try_from(best.liquidity).unwrap(),
            true,
        )
        .unwrap();
    let deposit = [deposit.amount0, deposit.amount1];
    let less = |v: U256| v * U256::from(9_950u32) / U256::from(10_000u32);
    let zap = shared::calldata::Zap {
        tokens: tokens.clone(),
        fee: 3000,
        into: shared::calldata::ZapInto::Mint {
            ticks: (lower, upper),
            recipient: wallet.clone(),
        },
        offer,
        sell,
        amount_in: best.amount_in,
        amount_out_minimum: less(best.quote.amount_out),
        minimums: deposit.map(less),
        approve: [true, true],
        deadline: 1 << 40,
    };
    let data = shared::calldata::zap(&zap).unwrap();
    let before = [
        balance(&devnet, &wallet, &tokens[0]).await,
        balance(&devnet, &wallet, &tokens[1]).await,
    ];
    let transaction = json!({
        "from": wallet,
        "to": router,
        "data": format!("0x{}", alloy_primitives::hex::encode(&data)),
        "value": "0",
    });
    let (hash, receipt) = devnet.send(&transaction).await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    println!(
        "figures: a zap open from 2 WETH through SwapRouter02: {} gas",
        u64::from_str_radix(text(&receipt["gasUsed"]).trim_start_matches("0x"), 16).unwrap()
    );
    // The mint: the promised liquidity and deposit, to the unit.
    let events = devnet.run("events", &["--hash", &hash]).await;
    let increase = &test_support::devnet::event(&events, "IncreaseLiquidity")["args"];
    assert_eq!(units(&increase["liquidity"]), best.liquidity, "{events}");
    assert_eq!(units(&increase["amount0"]), deposit[0], "{events}");
    assert_eq!(units(&increase["amount1"]), deposit[1], "{events}");
    // The wallet: the sold token less by what was swapped and deposited, the other by what was
    // deposited less what the swap paid; the rest swept back.
    let after = [
        balance(&devnet, &wallet, &tokens[0]).await,
        balance(&devnet, &wallet, &tokens[1]).await,
    ];
    let other = 1 - sell;
    assert_eq!(before[sell] - after[sell], best.amount_in + deposit[sell]);
    assert_eq!(
        after[other] + deposit[other],
        before[other] + best.quote.amount_out
    );
}
