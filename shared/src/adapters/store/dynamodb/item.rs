//! Positions to and from table items.

use super::keys::{position_key, s, Item};
use crate::application::ports::{StoreError, StoreResult};
use crate::domain::model::{
    format_time, Chain, Closing, FeeCheckpoint, Position, Protocol, Realized, Status, TokenPair,
};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use bigdecimal::{BigDecimal, Zero};
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use serde_json::Value;
use std::io::{Read, Write};
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
    if let Some(at) = &p.activated_at {
        item.insert("activatedAt".into(), s(format_time(at)));
    }
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
    if let Some(closing) = &p.closing {
        item.extend(closing_attributes(closing));
    }
    if let Some(holding) = &p.holding {
        // The last read whole, as JSON (its integers are strings); its height apart, for the
        // condition that keeps an older read from overwriting a newer one.
        if let Ok(json) = serde_json::to_string(holding) {
            item.insert("holding".into(), s(json));
        }
        item.insert(
            "holdingHeight".into(),
            AttributeValue::N(holding.height.to_string()),
        );
        // Its wallet apart too: a read of the wallet a position left never overwrites its move
        // to another of the owner's wallets read at the same height.
        item.insert("holdingWallet".into(), s(holding.wallet.clone()));
    }
    if let Some(json) = order_json(p) {
        item.insert(ORDER.into(), s(json));
    }
    item
}

/// The attribute holding a position's on-chain order, as JSON.
pub(super) const ORDER: &str = "chainOrder";

/// A position's order as stored.
fn order_json(p: &Position) -> Option<String> {
    p.order.as_ref().and_then(|o| serde_json::to_string(o).ok())
}

/// The condition that the stored order is still `previous`'s (`#o` naming [`ORDER`]), and the
/// value `:order` it compares with.
pub(super) fn same_order(previous: &Position) -> (&'static str, Option<AttributeValue>) {
    match order_json(previous) {
        Some(json) => ("#o = :order", Some(s(json))),
        None => ("attribute_not_exists(#o)", None),
    }
}

/// A closed position's frozen figures: base units and exact decimals, as strings.
pub(super) fn closing_attributes(c: &Closing) -> Vec<(String, AttributeValue)> {
    let text = |v: &BigDecimal| s(v.to_plain_string());
    let mut attributes = vec![
        ("closedAt".to_string(), s(format_time(&c.closed_at))),
        ("closePrice".to_string(), text(&c.price)),
        ("withdrawnA".to_string(), s(c.withdrawn.a.to_string())),
        ("withdrawnB".to_string(), s(c.withdrawn.b.to_string())),
        ("collectedA".to_string(), s(c.fees.a.to_string())),
        ("collectedB".to_string(), s(c.fees.b.to_string())),
        ("closeValueA".to_string(), text(&c.value_a)),
        ("closeValueB".to_string(), text(&c.value_b)),
        ("closeFeesUsdA".to_string(), text(&c.fees_usd_a)),
        ("closeFeesUsdB".to_string(), text(&c.fees_usd_b)),
        ("realizedPnlUsd".to_string(), text(&c.pnl_usd)),
        ("realizedCostBasisUsd".to_string(), text(&c.cost_basis_usd)),
    ];
    if let Some(hodl) = &c.hodl_usd {
        attributes.push(("closeHodlUsd".to_string(), text(hodl)));
    }
    if let Some(reason) = &c.reason {
        attributes.push(("closeReason".to_string(), s(reason)));
    }
    attributes
}

fn closing_from(item: &Item) -> Result<Option<Closing>, StoreError> {
    if !item.contains_key("closedAt") {
        return Ok(None);
    }
    let decimal = |name: &str| BigDecimal::from_str(text(item, name)?).map_err(|_| malformed(name));
    Ok(Some(Closing {
        closed_at: chrono::DateTime::parse_from_rfc3339(text(item, "closedAt")?)
            .map_err(|_| malformed("closedAt"))?
            .with_timezone(&chrono::Utc),
        price: decimal("closePrice")?,
        withdrawn: TokenPair {
            a: parsed(item, "withdrawnA")?,
            b: parsed(item, "withdrawnB")?,
        },
        fees: TokenPair {
            a: parsed(item, "collectedA")?,
            b: parsed(item, "collectedB")?,
        },
        value_a: decimal("closeValueA")?,
        value_b: decimal("closeValueB")?,
        fees_usd_a: decimal("closeFeesUsdA")?,
        fees_usd_b: decimal("closeFeesUsdB")?,
        hodl_usd: match item.get("closeHodlUsd") {
            None => None,
            Some(_) => Some(decimal("closeHodlUsd")?),
        },
        pnl_usd: decimal("realizedPnlUsd")?,
        cost_basis_usd: decimal("realizedCostBasisUsd")?,
        reason: match item.get("closeReason") {
            None => None,
            Some(_) => Some(text(item, "closeReason")?.to_string()),
        },
    }))
}

/// An attribute that older items lack: `None` when absent, parsed when present.
fn optional<T: FromStr>(item: &Item, name: &str) -> Result<Option<T>, StoreError> {
    if item.contains_key(name) {
        parsed(item, name).map(Some)
    } else {
        Ok(None)
    }
}

/// The attribute holding a page copy's body.
pub(super) const PAGE: &str = "page";

/// The most bytes a page copy's body inflates to: an item is at most 400 KB.
const PAGE_LIMIT: u64 = 400 * 1024;

/// A page copy's body: the position item's attributes but its keys, id and owner (the copy's
/// keys name them) as JSON (a string for `S`, a one-element array for `N`), deflated: a page
/// is billed by the bytes it reads, and this is about two thirds of the item's.
pub(super) fn page_body(item: &Item) -> Result<AttributeValue, StoreError> {
    let mut fields = serde_json::Map::new();
    for (name, value) in item {
        if matches!(name.as_str(), "PK" | "SK" | "id" | "owner") {
            continue;
        }
        let json = match value {
            AttributeValue::S(text) => Value::String(text.clone()),
            AttributeValue::N(number) => Value::Array(vec![Value::String(number.clone())]),
            _ => return Err(malformed("a position attribute of another type")),
        };
        fields.insert(name.clone(), json);
    }
    let json = serde_json::to_vec(&fields).map_err(|_| malformed("page body"))?;
    let mut encoder = DeflateEncoder::new(Vec::with_capacity(json.len()), Compression::best());
    let deflated = encoder
        .write_all(&json)
        .and_then(|()| encoder.finish())
        .map_err(|_| malformed("page body"))?;
    Ok(AttributeValue::B(Blob::new(deflated)))
}

/// The page copy in `variant` of `owner`'s position `id` with its `body` ([`page_body`]).
pub(super) fn page_copy(body: &AttributeValue, variant: &str, owner: &str, id: &str) -> Item {
    let mut copy = super::keys::page_key(variant, owner, id);
    copy.insert(PAGE.into(), body.clone());
    copy
}

/// The position a page copy of `owner`'s holds.
pub(super) fn position_from_page(copy: &Item, owner: &str) -> Result<Position, StoreError> {
    let Some(AttributeValue::B(body)) = copy.get(PAGE) else {
        return Err(malformed(PAGE));
    };
    let mut json = Vec::new();
    DeflateDecoder::new(body.as_ref())
        .take(PAGE_LIMIT)
        .read_to_end(&mut json)
        .map_err(|_| malformed(PAGE))?;
    let fields: serde_json::Map<String, Value> =
        serde_json::from_slice(&json).map_err(|_| malformed(PAGE))?;
    let mut item = Item::with_capacity(fields.len() + 2);
    for (name, value) in fields {
        let value = match value {
            Value::String(text) => AttributeValue::S(text),
            Value::Array(mut number) => match number.pop() {
                Some(Value::String(n)) if number.is_empty() => AttributeValue::N(n),
                _ => return Err(malformed(PAGE)),
            },
            _ => return Err(malformed(PAGE)),
        };
        item.insert(name, value);
    }
    item.insert("id".into(), s(text(copy, "SK")?));
    item.insert("owner".into(), s(owner));
    position_from(&item)
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
        closing: closing_from(item)?,
        created_at,
        activated_at: match item.get("activatedAt") {
            None => None,
            Some(_) => Some(
                chrono::DateTime::parse_from_rfc3339(text(item, "activatedAt")?)
                    .map_err(|_| malformed("activatedAt"))?
                    .with_timezone(&chrono::Utc),
            ),
        },
        holding: match item.get("holding") {
            None => None,
            Some(_) => Some(Box::new(
                serde_json::from_str(text(item, "holding")?).map_err(|_| malformed("holding"))?,
            )),
        },
        order: match item.get(ORDER) {
            None => None,
            Some(_) => Some(Box::new(
                serde_json::from_str(text(item, ORDER)?).map_err(|_| malformed(ORDER))?,
            )),
        },
    })
}

/// The owner's realized totals on the counters item (numbers, added to by each close).
pub(super) const REALIZED_PNL: &str = "realizedPnlUsd";
pub(super) const REALIZED_COST_BASIS: &str = "realizedCostBasisUsd";

/// The realized totals on the counters item.
pub(super) fn realized_of(item: &Item) -> StoreResult<Realized> {
    let sum = |name: &str| match item.get(name) {
        Some(AttributeValue::N(n)) => {
            BigDecimal::from_str(n).map_err(|_| malformed("realized totals"))
        }
        None => Ok(BigDecimal::zero()),
        Some(_) => Err(malformed("realized totals")),
    };
    Ok(Realized {
        pnl_usd: sum(REALIZED_PNL)?,
        cost_basis_usd: sum(REALIZED_COST_BASIS)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::math::U256;

    /// Through its item, and through a page copy of it (keyed by its owner and id).
    fn assert_round_trips(position: &Position) {
        let item = position_item(position);
        assert_eq!(position_from(&item).unwrap(), *position);
        let body = page_body(&item).unwrap();
        let copy = page_copy(&body, "all", &position.owner, &position.id);
        assert_eq!(
            position_from_page(&copy, &position.owner).unwrap(),
            *position
        );
    }

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
            closing: None,
            created_at: chrono::DateTime::from_timestamp_millis(1_795_329_528_123).unwrap(),
            activated_at: chrono::DateTime::from_timestamp_millis(1_795_329_540_001),
            holding: None,
            order: None,
        };
        assert_round_trips(&position);
        let closed = Position {
            status: Status::Closed,
            closing: Some(Closing {
                closed_at: chrono::DateTime::from_timestamp_millis(1_795_329_999_001).unwrap(),
                price: BigDecimal::from_str("0.000123456789").unwrap(),
                withdrawn: TokenPair {
                    a: U256::from(5u8),
                    b: U256::MAX,
                },
                fees: TokenPair {
                    a: U256::ZERO,
                    b: U256::from(77u8),
                },
                value_a: BigDecimal::from_str("1e-30").unwrap(),
                value_b: BigDecimal::from_str("12345.678901234567890123456789").unwrap(),
                fees_usd_a: BigDecimal::from(0),
                fees_usd_b: BigDecimal::from_str("0.5").unwrap(),
                hodl_usd: None,
                pnl_usd: BigDecimal::from_str("-3.000000000001").unwrap(),
                cost_basis_usd: BigDecimal::from_str("1234.567890123457").unwrap(),
                reason: Some("the offered amounts fund no liquidity".into()),
            }),
            ..position.clone()
        };
        assert_round_trips(&closed);
        let legacy = Position {
            deposit: None,
            fee_checkpoint: None,
            ..position
        };
        assert_round_trips(&legacy);
        let token = |symbol: &str| crate::domain::model::HeldToken {
            symbol: symbol.into(),
            address: format!("0x{symbol}"),
            decimals: 18,
        };
        let held = Position {
            status: Status::Active,
            holding: Some(Box::new(crate::domain::model::WalletHolding {
                wallet: "0xW".into(),
                manager: "0xM".into(),
                token: "42".into(),
                height: 7,
                read_at: chrono::DateTime::from_timestamp_millis(1_795_329_528_999).unwrap(),
                tokens: [token("A"), token("B")],
                amounts: [U256::MAX.to_string(), "0".into()],
                fees: ["1".into(), "2".into()],
                sqrt_price: (U256::from(1u8) << 96usize).to_string(),
                tick: -5,
                first_value_usd: None,
                close_reason: Some("transferred".into()),
                read_error: Some("token 42: decimals() reverted".into()),
                moved_from: Some("01JD8Z6C6XK4W5S7R9T2V3M1QA".into()),
                moved_to: None,
                fee_state: Some(crate::domain::model::FeeState {
                    fee_growth_inside_last: [U256::MAX.to_string(), "0".into()],
                    tokens_owed: ["1".into(), "2".into()],
                }),
                tracked: true,
                watched: true,
                staked: None,
                history: Some(crate::domain::history::HistorySummary {
                    complete: true,
                    through: 99,
                    counted_from: Some(7),
                    deposited: [U256::MAX.to_string(), "3".into()],
                    deposited_usd: [Some("1.000000000000000000000001".into()), None],
                    ..Default::default()
                }),
            })),
            ..legacy
        };
        assert_round_trips(&held);
        let ordered = Position {
            order: Some(Box::new(crate::domain::model::ChainOrder {
                kind: crate::domain::model::OrderKind::Close,
                wallet: "0xW".into(),
                manager: "0xM".into(),
                requested_at: chrono::DateTime::from_timestamp_millis(1_795_329_528_123).unwrap(),
                expires_at: chrono::DateTime::from_timestamp(1_795_330_728, 0).unwrap(),
                height: 9,
                slippage_bps: 50,
                transactions: vec![crate::domain::model::TransactionRequest {
                    kind: "withdraw".into(),
                    chain_id: 1,
                    from: "0xW".into(),
                    to: "0xM".into(),
                    data: "0xac9650d8".into(),
                    value: "0".into(),
                    gas: Some("250000".into()),
                    expected: Some(crate::domain::model::ExpectedAmounts {
                        token_a: "1.5".into(),
                        token_b: "0".into(),
                        ..Default::default()
                    }),
                }],
                hash: Some(format!("0x{}", "ab".repeat(32))),
                moved: Some("01JD8Z6C6XK4W5S7R9T2V3M1QB".into()),
                permit: Some(crate::domain::model::PermitBatch {
                    details: vec![crate::domain::model::PermitDetails {
                        token: "0xT".into(),
                        amount: "1461501637330902918203684832716283019655932542975".into(),
                        expiration: 1_795_330_728,
                        nonce: 3,
                    }],
                    spender: "0xM".into(),
                    sig_deadline: 1_795_330_728,
                }),
            })),
            ..held
        };
        assert_round_trips(&ordered);
    }
}
