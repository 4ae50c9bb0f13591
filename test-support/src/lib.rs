//! Helpers for the workspace's tests, written once: [`client::TestClient`] calls the API in
//! process (through the handlers, as the Lambda runtime would) or over HTTP (local-api), with
//! `create`, `list`, `get`, `portfolio` and `pools`; [`bodies`] holds the standard requests;
//! [`fixtures`] builds stored positions; [`dynamodb`] gives a fresh table on the test server;
//! [`contract`] is the suite every store must pass; [`earnings`] the fee scenario each runs; [`events`] reads `events/`; [`local_api`]
//! runs the local server and speaks raw HTTP to it; [`devnet`] runs anvil with the real
//! Uniswap v3 contracts; [`rpc_stub`] is a loopback JSON-RPC endpoint answering what a test says;
//! [`fake_chain`] a loopback EVM chain on it whose blocks, pool and faults a test sets;
//! [`tracked_ticks`] the scenario of the ticks a pool tracks, run on each store; [`json::text`]
//! reads a JSON value as text; [`portfolio`] checks the portfolio against its positions.

pub mod alerts;
pub mod bodies;
pub mod client;
pub mod contract;
pub mod devnet;
pub mod dynamodb;
pub mod earnings;
pub mod events;
pub mod fake_chain;
pub mod fixtures;
pub mod history;
pub mod idempotency;
pub mod json;
pub mod lifecycle;
pub mod local_api;
pub mod orders;
pub mod portfolio;
pub mod rpc_stub;
pub mod sample;
pub mod tracked_ticks;
pub mod wallets;
pub mod watched;
pub mod webhooks;
pub mod world;
