//! What talks to the outside on the application's behalf: the stores (`store`: memory and
//! DynamoDB, behind `application::ports`) and the chains (`chain`: JSON-RPC, EVM and Solana
//! reads, what a chain's answer is trusted with, the sync, wallet reads, on-chain orders).

#[cfg(feature = "chain")]
pub mod chain;
pub mod store;
#[cfg(feature = "webhooks")]
pub mod webhooks;
