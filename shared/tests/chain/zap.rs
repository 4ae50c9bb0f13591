//! The zap's swap to the range's ratio (issue 63) on the devnet: the search by QuoterV2's quotes
//! finds an amount whose swap, done on the real pool, leaves what mints the liquidity it
//! promised to the unit, within 0.5 % of the best a dense scan of the same quotes finds.

use serde_json::{json, Value};
use shared::chain::quotes::{quote, swap_to_fit, QuotedPool};
use shared::chain::rpc::RpcClient;
use shared::market::PoolState;
use shared::math::{Curve, U256};
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
    let pool = QuotedPool {
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
