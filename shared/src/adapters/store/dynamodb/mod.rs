//! The production store on one DynamoDB table (design: `docs/dynamodb-design.md`).
//!
//! Keys (`PK`, `SK`, both strings; no secondary indexes):
//! - position      `U#{owner}` / `P#{id}`: the full item, read by `GetItem`, and newest first
//!   by `Query` as the `all` list's pages.
//! - counters      `U#{owner}` / `COUNTS`: one number per list variant, the O(1) `total`.
//! - list entries  `IX#{variant}#{owner}` / `{id}`: key-only items, one per list variant a
//!   position appears in, queried newest first so skipping `offset` costs keys, not items.
//! - page items    `PG#{variant}#{owner}` / `{id}`: a copy of the position in each list variant
//!   but `all`, so a page (and the portfolio's open positions) is one `Query` of what it shows.
//! - catalog       `CATALOG` / `{chain}#{protocol}#{pool}`: the pool catalog and market state.
//! - pending       `PENDING#{chain}#{protocol}#{pool}` / `{id}#{owner}`: offers waiting for a sync.
//! - idempotency   `U#{owner}` / `K#{key}`: a key's request fingerprint and answer, with a TTL.
//! - wallets       `U#{owner}` / `W#{chain}#{address}`, `WALLETS` / `{chain}#{address}#{owner}`,
//!   challenges    `U#{owner}` / `CH#{nonce}` (see `wallets`).
//! - series        `SERIES#{chain}#{pool}` / `{tier}#{time}`: a pool's point at a boundary (see `series`).
//! - alerts        settings, watches per pool, events and their feed, webhook endpoints and
//!   their attempts (see `alerts`).
//!
//! One concern per file: `client` (TLS, retries, timeouts), `keys`, `item` (conversion),
//! `errors` (classification, backoff), `metrics` (read counting, off by default), `reads`
//! (queries, batch and key reads, counters), `store` (the `PositionStore`), `idempotency` (its keys), `catalog` (the market source) and `admin`
//! (table creation, seeding, bulk import).

mod admin;
mod alerts;
mod catalog;
pub mod client;
mod errors;
mod history;
mod holdings;
mod idempotency;
mod item;
mod keys;
mod metrics;
mod reads;
mod series;
mod store;
mod wallet_items;
mod wallets;

pub use catalog::DynamoDbMarket;
pub use client::{
    lambda_client, lambda_sdk_config, local_client, local_client_with_timeout, user_client,
};
pub use metrics::ReadMetrics;
pub use store::DynamoDbStore;
