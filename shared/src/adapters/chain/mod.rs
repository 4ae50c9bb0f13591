//! Reading the chains (feature `chain`: only the functions that read them and local-api link
//! it). `rpc` speaks JSON-RPC over HTTP(S); `evm` reads Uniswap v3 and PancakeSwap v3 pools,
//! `solana` Orca Whirlpools; `trust` judges what a chain answers; `sync` runs one sync over
//! every catalog pool and stores the states; `secrets` reads the RPC URLs from SSM; `wallets`
//! reads a wallet's positions at one block, `refresh` serves those reads to the API, `fanout`
//! spreads the scheduled refresh over the queue; `orders` reads what an on-chain open needs
//! and follows its transactions until they settle (`events`; `mints` confirms a mint as an open's), `simulation` runs them before
//! they are answered; `history` reads a position's events over block ranges, `scan` follows every linked wallet's
//! and position's events chain by chain; `v4` reads Uniswap v4's singleton's pools, `v4_wallets` a wallet's v4 positions,
//! `pools` every pool of a chain in one batch whichever contract answers for it; `signatures` asks a
//! chain whether a contract wallet signed a link's challenge. The functions' entry points are the wiring's `chain_lambda`.

pub mod allowances;
pub mod backfill;
pub mod enumeration;
pub mod events;
pub mod evm;
pub mod fanout;
pub mod gone;
pub mod history;
pub mod kept;
pub mod logs;
pub mod mints;
pub mod orca_wallets;
pub mod orders;
pub mod pools;
pub mod quotes;
pub mod refresh;
pub mod rpc;
pub mod scan;
pub mod secrets;
pub mod series;
pub mod signatures;
pub mod simulation;
pub mod slipstream;
pub mod solana;
pub mod staking;
pub mod sync;
pub mod tokens;
pub mod trust;
pub mod v4;
pub mod v4_wallets;
pub mod wallets;

pub use rpc::RpcClient;
pub use sync::{Syncer, RPC_TIMEOUT};
