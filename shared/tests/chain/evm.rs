//! Uniswap v3 on the devnet: anvil running the real v3-core pool, read by the service and by
//! the contracts' own getters (ethers, in `devnet/devnet.mjs`) at the same block.

use super::support::{entry, market, pool, sync, syncer};
use serde_json::Value;
use shared::catalog::CatalogFile;
use shared::market::PoolState;
use shared::model::Chain;
use shared::store::Market;
use std::sync::atomic::Ordering;
use std::time::Duration;
use test_support::devnet::Devnet;

fn assert_state_is_the_pools(state: &PoolState, chain: &Value) {
    let text = |v: &Value| v.as_str().unwrap().to_string();
    assert_eq!(state.height, chain["block"].as_u64().unwrap());
    assert_eq!(state.sqrt_price.to_string(), text(&chain["sqrtPriceX96"]));
    assert_eq!(i64::from(state.tick), chain["tick"].as_i64().unwrap());
    assert_eq!(state.liquidity.to_string(), text(&chain["liquidity"]));
    assert_eq!(
        state.fee_growth_global0.to_string(),
        text(&chain["feeGrowthGlobal0X128"])
    );
    assert_eq!(
        state.fee_growth_global1.to_string(),
        text(&chain["feeGrowthGlobal1X128"])
    );
    let ticks = chain["ticks"].as_array().unwrap();
    assert_eq!(state.ticks.len(), ticks.len());
    for (ours, theirs) in state.ticks.iter().zip(ticks) {
        assert_eq!(i64::from(ours.tick), theirs["tick"].as_i64().unwrap());
        assert_eq!(ours.initialized, theirs["initialized"].as_bool().unwrap());
        assert_eq!(
            ours.fee_growth_outside0.to_string(),
            text(&theirs["feeGrowthOutside0X128"])
        );
        assert_eq!(
            ours.fee_growth_outside1.to_string(),
            text(&theirs["feeGrowthOutside1X128"])
        );
    }
}

#[tokio::test]
async fn the_state_read_is_the_pools_own_at_the_block_read() {
    let devnet = Devnet::up(3000).await;
    let file: CatalogFile =
        serde_json::from_str(&std::fs::read_to_string(&devnet.catalog).unwrap()).unwrap();
    let records: Vec<Value> = file
        .pools
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    let market = market(&records);
    let address = devnet.address("pool");
    let tracked = pool(&market, &address).await;
    let wide = [
        devnet.state["wideLower"].as_i64().unwrap() as i32,
        devnet.state["wideUpper"].as_i64().unwrap() as i32,
    ];
    market.track_ticks(&tracked, wide, &[]).await.unwrap();
    // A tick no position on chain uses: uninitialized, zero outside growth.
    market.track_ticks(&tracked, [60, 120], &[]).await.unwrap();
    // Ascending, as the state lists them.
    let ticks = format!("{},{},60,120", wide[0], wide[1]);
    let syncer = syncer(
        market.clone(),
        &[(Chain::Ethereum, &devnet.rpc)],
        Duration::from_secs(8),
    );

    // Swaps both ways, so that both fee growths and the outside values are not zero.
    for (sell, amount) in [("weth", "40"), ("usdc", "200000"), ("weth", "10")] {
        devnet
            .run("swap", &["--sell", sell, "--amount", amount])
            .await;
        let requests_before = syncer.endpoints()[&Chain::Ethereum]
            .stats
            .requests
            .load(Ordering::SeqCst);
        let report = sync(&syncer).await;
        let e = entry(&report, &address);
        assert_eq!(e["updated"], true, "{report}");
        let block = e["block"].as_u64().unwrap().to_string();
        let requests = syncer.endpoints()[&Chain::Ethereum]
            .stats
            .requests
            .load(Ordering::SeqCst);
        assert_eq!(
            requests - requests_before,
            3,
            "the head, the blocks read and stored, then one batch of calls"
        );

        let chain = devnet
            .run("pool", &["--block", &block, "--ticks", &ticks])
            .await;
        let state = pool(&market, &address).await.state.expect("a state");
        assert_state_is_the_pools(&state, &chain);
        let initialized: Vec<bool> = state.ticks.iter().map(|t| t.initialized).collect();
        assert_eq!(initialized, [true, true, false, false]);
        assert_eq!(e["sqrtPrice"], chain["sqrtPriceX96"]);
        assert_eq!(e["tick"], chain["tick"]);
    }
    let state = pool(&market, &address).await.state.unwrap();
    assert!(!state.fee_growth_global0.is_zero() && !state.fee_growth_global1.is_zero());
}
