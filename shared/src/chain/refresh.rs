//! Reading linked wallets' positions for the API (`app::WalletRefresh`): the chain's RPC
//! endpoint, the catalog's deployments on it, one block `confirmations` behind the head.

use super::evm::{self, Block};
use super::rpc::RpcClient;
use super::wallets::{read_wallet, WalletHoldings};
use crate::app::WalletRefresh;
use crate::model::Chain;
use crate::store::Market;
use crate::wallets::LinkedWallet;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct WalletReader {
    endpoints: BTreeMap<Chain, Arc<RpcClient>>,
    market: Arc<dyn Market>,
    confirmations: u64,
}

impl WalletReader {
    pub fn new(
        endpoints: BTreeMap<Chain, Arc<RpcClient>>,
        market: Arc<dyn Market>,
        confirmations: u64,
    ) -> WalletReader {
        WalletReader {
            endpoints,
            market,
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

#[async_trait]
impl WalletRefresh for WalletReader {
    async fn refresh(&self, wallet: &LinkedWallet) -> Result<u64, String> {
        let holdings = self.holdings(wallet).await?;
        Ok(holdings.positions.len() as u64)
    }
}
