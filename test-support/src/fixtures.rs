//! Stored positions for store and event tests.

use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use shared::model::{Chain, Position, Protocol, Status};

pub fn unique_owner(prefix: &str) -> String {
    format!("{prefix}-{}", ulid::Ulid::new())
}

/// A stored position created at `millis` (ids are time-ordered like the server's).
pub fn position(owner: &str, status: Status, chain: Chain, millis: i64) -> Position {
    let created_at: DateTime<Utc> = DateTime::from_timestamp_millis(millis).unwrap();
    Position {
        id: ulid::Ulid::from_datetime(created_at.into()).to_string(),
        owner: owner.to_string(),
        chain,
        protocol: Protocol::UniswapV3,
        pool: crate::bodies::ETH_USDC.to_string(),
        status,
        tick_lower: -80000,
        tick_upper: -70000,
        liquidity: 1_000_000_000_000,
        cost_basis_usd: BigDecimal::from(100),
        deposit: None,
        fee_checkpoint: None,
        closing: None,
        created_at,
        activated_at: (status != Status::Pending).then_some(created_at),
        holding: None,
        order: None,
    }
}
