//! The use cases: the domain's rules carried out over the ports (`ports`: the store's traits;
//! `app`: what every handler receives, with the chain readers' traits). Nothing here knows
//! DynamoDB, a chain's JSON-RPC or HTTP; the adapters implement the ports.

pub mod app;
pub mod portfolio;
pub mod ports;
pub mod settling;
pub mod wallet_reads;
