//! Positions to and from table items.

use super::keys::{position_key, s, Item};
use crate::model::{format_time, Chain, Position, Protocol, Status};
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
        ("feesEarnedUsd".into(), s(p.fees_earned_usd.to_string())),
        ("createdAt".into(), s(format_time(&p.created_at))),
    ]);
    item
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
        fees_earned_usd: BigDecimal::from_str(text(item, "feesEarnedUsd")?)
            .map_err(|_| malformed("feesEarnedUsd"))?,
        created_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            fees_earned_usd: BigDecimal::from(0),
            created_at: chrono::DateTime::from_timestamp_millis(1_795_329_528_123).unwrap(),
        };
        assert_eq!(position_from(&position_item(&position)).unwrap(), position);
    }
}
