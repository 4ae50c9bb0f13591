//! Reading linked wallets' positions for the API (`app::WalletRefresh`): the chain's RPC
//! endpoint, the catalog's deployments on it, one block `confirmations` behind the head.

use super::evm::{self, Block};
use super::rpc::RpcClient;
use super::wallets::{read_wallet, ChainPosition, TokenMeta, WalletHoldings};
use crate::app::{App, WalletRefresh};
use crate::clock::Clock;
use crate::holdings::{record, ReadPosition};
use crate::math::U256;
use crate::model::{Chain, HeldToken};
use crate::store::{Market, PositionStore};
use crate::wallets::LinkedWallet;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct WalletReader {
    endpoints: BTreeMap<Chain, Arc<RpcClient>>,
    market: Arc<dyn Market>,
    store: Arc<dyn PositionStore>,
    clock: Arc<dyn Clock>,
    confirmations: u64,
}

impl WalletReader {
    pub fn new(
        endpoints: BTreeMap<Chain, Arc<RpcClient>>,
        app: &App,
        confirmations: u64,
    ) -> WalletReader {
        WalletReader {
            endpoints,
            market: app.market.clone(),
            store: app.store.clone(),
            clock: app.clock.clone(),
            confirmations,
        }
    }

    /// Everything the wallet holds on its chain, at one block.
    pub async fn holdings(&self, wallet: &LinkedWallet) -> Result<WalletHoldings, String> {
        let chain = wallet.chain;
        let rpc = self
            .endpoints
            .get(&chain)
            .ok_or_else(|| format!("no RPC endpoint is configured for {chain}"))?;
        if chain == Chain::Solana {
            return Err(
                "reading Orca Whirlpools positions from a wallet is not supported yet".into(),
            );
        }
        let catalog = self
            .market
            .catalog()
            .await
            .map_err(|e| format!("the catalog cannot be read: {e}"))?;
        let deployments: Vec<_> = catalog.deployments_on(chain).collect();
        if deployments.is_empty() {
            return Err(format!("no protocol deployment is known on {chain}"));
        }
        let block = confirmed_block(rpc, self.confirmations).await?;
        read_wallet(rpc, &deployments, &wallet.address, &block).await
    }
}

/// The block `confirmations` behind the head, by number and hash.
pub async fn confirmed_block(rpc: &RpcClient, confirmations: u64) -> Result<Block, String> {
    let head = evm::block_number(rpc)
        .await
        .map_err(|e| format!("eth_blockNumber: {e}"))?;
    let number = head.saturating_sub(confirmations);
    evm::blocks(rpc, &[number])
        .await
        .map_err(|e| format!("eth_getBlockByNumber: {e}"))?
        .pop()
        .flatten()
        .ok_or_else(|| format!("the node has no block {number}"))
}

/// A chain's read of a position in the chain-neutral form the store keeps.
fn neutral(p: ChainPosition) -> ReadPosition {
    let token = |t: TokenMeta| HeldToken {
        symbol: t.symbol,
        address: t.address,
        decimals: t.decimals,
    };
    ReadPosition {
        protocol: p.protocol,
        pool: p.pool,
        manager: p.manager,
        token: p.token_id.to_string(),
        tokens: [token(p.token0), token(p.token1)],
        tick_lower: p.tick_lower,
        tick_upper: p.tick_upper,
        liquidity: p.liquidity,
        amounts: p.amounts,
        fees: p.fees.map(U256::from),
        sqrt_price: p.state.sqrt_price,
        tick: p.state.tick,
    }
}

#[async_trait]
impl WalletRefresh for WalletReader {
    /// One read at one block, then one write per position that changed.
    async fn refresh(&self, wallet: &LinkedWallet) -> Result<u64, String> {
        let holdings = self.holdings(wallet).await?;
        let catalog = self
            .market
            .catalog()
            .await
            .map_err(|e| format!("the catalog cannot be read: {e}"))?;
        let read = holdings.positions.into_iter().map(neutral).collect();
        record(
            self.store.as_ref(),
            &catalog,
            wallet,
            holdings.block.number,
            read,
            self.clock.now(),
        )
        .await
        .map_err(|e| format!("the positions cannot be stored: {e}"))
    }
}
