//! Reading pool state from the chains (feature `chain`: only the sync function and local-api
//! link it). `rpc` speaks JSON-RPC over HTTP(S); `evm` reads Uniswap v3 and PancakeSwap v3
//! pools, `solana` Orca Whirlpools; `sync` runs one sync over every catalog pool and stores the
//! states; `secrets` reads the RPC URLs from SSM; `lambda` is the sync function's entry point.

pub mod evm;
pub mod lambda;
pub mod rpc;
pub mod secrets;
pub mod solana;
pub mod sync;
pub mod trust;

pub use rpc::RpcClient;
pub use sync::{Syncer, RPC_TIMEOUT};
