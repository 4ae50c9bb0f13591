//! The use cases: the domain's rules carried out over the ports (`ports`: the store's traits;
//! `app`: what every use case receives, with the chain readers' traits). Each endpoint's logic is
//! a function here taking plain inputs and returning domain values or a [`error::UseCaseError`];
//! nothing here knows DynamoDB, a chain's JSON-RPC or HTTP; the adapters implement the ports.

pub mod actions;
pub mod alert_ports;
pub mod alerts;
pub mod app;
pub mod charts;
pub mod error;
pub mod export;
pub mod inputs;
pub mod keys;
pub mod orders;
pub mod permits;
pub mod portfolio;
pub mod ports;
pub mod positions;
pub mod settling;
pub mod wallet_reads;
pub mod wallets;
pub mod watches;
pub mod webhooks;
pub mod zaps;

/// The reads one request runs at once where it reads per position or per pool (histories,
/// points): concurrent, never one after another, and bounded.
pub const READS_AT_ONCE: usize = 8;
