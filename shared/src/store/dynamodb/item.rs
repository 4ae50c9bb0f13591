//! Positions to and from table items.

use super::keys::{position_key, s, Item};
use crate::model::{format_time, Chain, FeeCheckpoint, Position, Protocol, Status, TokenPair};
use crate::store::traits::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use bigdecimal::BigDecimal;
use std::str::FromStr;

pub(super) fn position_item(p: &Position) -> Item {
    let mut item = position_key(&p.owner, &p.id);
    item.extend([
        ("id".into(), s(&p.id)),
        ("owner".into(), s(&p.owner)),
        ("chain".into(), s(p.chain.as_str())),
        ("protocol".into(), s(p.protocol.as_str())),
        ("pool".into(), s(&p.pool)),
        ("status".into(), s(p.status.as_str())),
        (
            "tickLower".into(),
            AttributeValue::N(p.tick_lower.to_string()),
        ),
        (
            "tickUpper".into(),
            AttributeValue::N(p.tick_upper.to_string()),
        ),
        // u128 has 39 digits, past DynamoDB's 38-digit numbers: stored as a string.
        ("liquidity".into(), s(p.liquidity.to_string())),
        ("costBasisUsd".into(), s(p.cost_basis_usd.to_string())),
        ("createdAt".into(), s(format_time(&p.created_at))),
    ]);
    // Base units and Q128.128 growths pass 38 digits: strings.
    if let Some(deposit) = &p.deposit {
        item.insert("depositA".into(), s(deposit.a.to_string()));
        item.insert("depositB".into(), s(deposit.b.to_string()));
    }
    if let Some(checkpoint) = &p.fee_checkpoint {
        item.insert(
            "feeCheckpointHeight".into(),
            AttributeValue::N(checkpoint.height.to_string()),
        );
        item.insert(
            "feeGrowthInside0".into(),
            s(checkpoint.growth[0].to_string()),
        );
        item.insert(
            "feeGrowthInside1".into(),
            s(checkpoint.growth[1].to_string()),
        );
    }
    item
}

/// An attribute that older items lack: `None` when absent, parsed when present.
fn optional<T: FromStr>(item: &Item, name: &str) -> Result<Option<T>, StoreError> {
    if item.contains_key(name) {
        parsed(item, name).map(Some)
    } else {
        Ok(None)
    }
}

pub(super) fn malformed(what: &str) -> StoreError {
    StoreError::Failure(format!("malformed position item: {what}").into())
}

pub(super) fn text<'a>(item: &'a Item, name: &str) -> Result<&'a str, StoreError> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .ok_or_else(|| malformed(name))
}

pub(super) fn parsed<T: FromStr>(item: &Item, name: &str) -> Result<T, StoreError> {
    let raw = match item.get(name) {
        Some(AttributeValue::N(n)) => n.as_str(),
        _ => text(item, name)?,
    };
    raw.parse().map_err(|_| malformed(name))
}

pub(super) fn position_from(item: &Item) -> Result<Position, StoreError> {
    let created_at = chrono::DateTime::parse_from_rfc3339(text(item, "createdAt")?)
        .map_err(|_| malformed("createdAt"))?
        .with_timezone(&chrono::Utc);
    Ok(Position {
        id: text(item, "id")?.to_string(),
        owner: text(item, "owner")?.to_string(),
        chain: Chain::from_str(text(item, "chain")?).map_err(|_| malformed("chain"))?,
        protocol: Protocol::from_str(text(item, "protocol")?).map_err(|_| malformed("protocol"))?,
        pool: text(item, "pool")?.to_string(),
        status: Status::from_str(text(item, "status")?).map_err(|_| malformed("status"))?,
        tick_lower: parsed(item, "tickLower")?,
        tick_upper: parsed(item, "tickUpper")?,
        liquidity: parsed(item, "liquidity")?,
        cost_basis_usd: BigDecimal::from_str(text(item, "costBasisUsd")?)
            .map_err(|_| malformed("costBasisUsd"))?,
        deposit: match (optional(item, "depositA")?, optional(item, "depositB")?) {
            (Some(a), Some(b)) => Some(TokenPair { a, b }),
            _ => None,
        },
        fee_checkpoint: match (
            optional(item, "feeCheckpointHeight")?,
            optional(item, "feeGrowthInside0")?,
            optional(item, "feeGrowthInside1")?,
        ) {
            (Some(height), Some(growth0), Some(growth1)) => Some(FeeCheckpoint {
                height,
                growth: [growth0, growth1],
            }),
            _ => None,
        },
        created_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::U256;

    #[test]
    fn position_items_round_trip() {
        let position = Position {
            id: "01M80ZN5THC1YJF5B5S3W75H2C".into(),
            owner: "alice".into(),
            chain: Chain::Solana,
            protocol: Protocol::OrcaWhirlpools,
            pool: "pool".into(),
            status: Status::Pending,
            tick_lower: -443632,
            tick_upper: 443632,
            liquidity: u128::MAX,
            cost_basis_usd: BigDecimal::from_str("1234.567890123456789").unwrap(),
            deposit: Some(TokenPair {
                a: U256::from(u64::MAX),
                b: U256::ZERO,
            }),
            fee_checkpoint: Some(FeeCheckpoint {
                height: 401_234_567,
                growth: [U256::MAX, U256::from(1u8) << 200],
            }),
            created_at: chrono::DateTime::from_timestamp_millis(1_795_329_528_123).unwrap(),
        };
        assert_eq!(position_from(&position_item(&position)).unwrap(), position);
        let legacy = Position {
            deposit: None,
            fee_checkpoint: None,
            ..position
        };
        assert_eq!(position_from(&position_item(&legacy)).unwrap(), legacy);
    }
}
