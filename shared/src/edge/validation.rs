//! Turning untrusted input into typed values, each failure a 400 that names what is wrong.

use crate::application::inputs::{CreateRequest, OrderLimits};
use crate::domain::limits::{
    DEFAULT_DEADLINE_SECONDS, DEFAULT_SLIPPAGE_BPS, MAX_DEADLINE_SECONDS, MAX_SLIPPAGE_BPS,
    MIN_DEADLINE_SECONDS,
};
use crate::domain::model::{Chain, Filter, PageRequest, Protocol, Source, Status};
use crate::edge::error::ApiError;
use bigdecimal::{BigDecimal, Zero};
use lambda_http::aws_lambda_events::query_map::QueryMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::str::FromStr;

pub const DEFAULT_LIMIT: u32 = 20;
pub const MAX_LIMIT: u32 = 100;
/// Create bodies above this are refused with 413 before parsing.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The list endpoint's query: filters and page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListQuery {
    pub filter: Filter,
    pub page: PageRequest,
}

/// The single value of a query parameter; repeated parameters are ambiguous and refused.
fn single<'a>(query: &'a QueryMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    match query.all(name) {
        None => Ok(None),
        Some(values) if values.len() == 1 => Ok(Some(values[0])),
        Some(_) => Err(ApiError::bad_request(format!(
            "{name} must be given at most once"
        ))),
    }
}

fn enum_param<T: FromStr>(
    query: &QueryMap,
    name: &str,
    names: String,
) -> Result<Option<T>, ApiError> {
    single(query, name)?
        .map(|v| {
            T::from_str(v)
                .map_err(|_| ApiError::bad_request(format!("{name} must be one of: {names}")))
        })
        .transpose()
}

/// A non-negative integer written in plain digits (no sign, no fraction, no exponent).
fn digits_param(query: &QueryMap, name: &str, rule: &str) -> Result<Option<u64>, ApiError> {
    single(query, name)?
        .map(|v| {
            let digits = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
            digits
                .then(|| v.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| ApiError::bad_request(format!("{name} must be {rule}")))
        })
        .transpose()
}

impl ListQuery {
    /// Unknown parameters are ignored; known ones must be valid.
    pub fn parse(query: &QueryMap) -> Result<ListQuery, ApiError> {
        let status = enum_param(query, "status", Status::names())?;
        let chain = enum_param(query, "chain", Chain::names())?;
        let source = enum_param(query, "source", Source::names())?;
        Ok(ListQuery {
            filter: Filter {
                status,
                chain,
                source,
            },
            page: page_request(query)?,
        })
    }
}

/// A list's page: `limit` (1 to 100, default 20) and `offset` (default 0).
pub fn page_request(query: &QueryMap) -> Result<PageRequest, ApiError> {
    let limit_rule = format!("an integer from 1 to {MAX_LIMIT}");
    let limit = match digits_param(query, "limit", &limit_rule)? {
        None => DEFAULT_LIMIT,
        Some(n) if (1..=u64::from(MAX_LIMIT)).contains(&n) => n as u32,
        Some(_) => return Err(ApiError::bad_request(format!("limit must be {limit_rule}"))),
    };
    let offset_rule = format!("an integer from 0 to {}", u64::MAX);
    let offset = digits_param(query, "offset", &offset_rule)?.unwrap_or(0);
    Ok(PageRequest { offset, limit })
}

/// Position ids are ULIDs: 26 Crockford base32 characters, uppercase as the server issues them.
pub fn is_position_id(id: &str) -> bool {
    id.len() == 26 && ulid::Ulid::from_string(id).is_ok_and(|u| u.to_string() == id)
}

/// The create body exactly as the spec defines it: all seven fields required, nothing else.
/// Prices are kept as their JSON text so they are read as exact decimals.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateBody {
    chain: String,
    protocol: String,
    pool: String,
    amount_a: String,
    amount_b: String,
    price_lower: Box<RawValue>,
    price_upper: Box<RawValue>,
    /// Opens on chain from this linked wallet; without it the position is simulated.
    #[serde(default, deserialize_with = "present")]
    wallet: Option<String>,
    #[serde(default, deserialize_with = "integer")]
    slippage_bps: Option<i64>,
    #[serde(default, deserialize_with = "integer")]
    deadline_seconds: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    permit: Option<String>,
    #[serde(default, deserialize_with = "present")]
    swap: Option<bool>,
}

impl OrderLimits {
    /// These limits with `"swap"` as asked (absent: no swap).
    pub(crate) fn with_swap(self, swap: Option<bool>) -> Self {
        OrderLimits {
            swap: swap.unwrap_or(false),
            ..self
        }
    }

    /// These limits with the `permit` asked: `"transaction"` (the default) or `"signature"`.
    pub(crate) fn with_permit(self, permit: Option<&str>) -> Result<Self, ApiError> {
        let permit_signature = match permit {
            None | Some("transaction") => false,
            Some("signature") => true,
            Some(_) => {
                return Err(ApiError::bad_request(
                    "permit must be \"transaction\" or \"signature\"",
                ))
            }
        };
        Ok(OrderLimits {
            permit_signature,
            ..self
        })
    }

    pub(crate) fn from_fields(
        slippage_bps: Option<i64>,
        deadline_seconds: Option<i64>,
    ) -> Result<Self, ApiError> {
        let within = |value: Option<i64>, default: u32, (low, high): (u32, u32), name: &str| {
            let value = value.unwrap_or(i64::from(default));
            u32::try_from(value)
                .ok()
                .filter(|v| (low..=high).contains(v))
                .ok_or_else(|| {
                    ApiError::bad_request(format!("{name} must be an integer from {low} to {high}"))
                })
        };
        Ok(OrderLimits {
            slippage_bps: within(
                slippage_bps,
                DEFAULT_SLIPPAGE_BPS,
                (0, MAX_SLIPPAGE_BPS),
                "slippageBps",
            )?,
            deadline_seconds: within(
                deadline_seconds,
                DEFAULT_DEADLINE_SECONDS,
                (MIN_DEADLINE_SECONDS, MAX_DEADLINE_SECONDS),
                "deadlineSeconds",
            )?,
            permit_signature: false,
            swap: false,
        })
    }

    /// The optional body of a close: `{"slippageBps", "deadlineSeconds"}`, both optional; an
    /// empty body takes the defaults.
    pub fn parse_close(body: &[u8]) -> Result<Self, ApiError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Self::from_fields(None, None);
        }
        let body: CloseBody = json_object(body)?;
        Self::from_fields(body.slippage_bps, body.deadline_seconds)
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CloseBody {
    #[serde(default, deserialize_with = "integer")]
    slippage_bps: Option<i64>,
    #[serde(default, deserialize_with = "integer")]
    deadline_seconds: Option<i64>,
}

/// An optional field that, when present, holds a `T`: `null` is refused, as the schema says.
pub(crate) fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// An optional integer as JSON Schema reads one: any number without a fraction (`60.0` too);
/// `null`, a fraction or a string are refused.
pub(crate) fn integer<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<i64>, D::Error> {
    let number = serde_json::Number::deserialize(deserializer)?;
    let whole = number.as_i64().or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0)
            // Past i64 is past every bound: the range check says which.
            .map(|f| f.clamp(i64::MIN as f64, i64::MAX as f64) as i64)
    });
    whole
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(format!("{number} is not an integer")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportBody {
    #[serde(default, deserialize_with = "present")]
    hash: Option<String>,
    #[serde(default, deserialize_with = "present")]
    signature: Option<String>,
}

/// What a wallet did with a position's order: sent a transaction (its hash), or signed the
/// Permit2 batch the order waits for (its signature's bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reported {
    Hash(String),
    Signature(Vec<u8>),
}

/// The most bytes a signature may have: an EOA's is 65 (64 compact); a contract wallet's
/// (ERC-1271, a Safe's owners') longer, never this long.
const MAX_SIGNATURE_BYTES: usize = 4096;

/// `{"hash": "0x…"}` (a transaction hash, 0x and 64 hex digits, answered in lower case) or
/// `{"signature": "0x…"}` (0x and an even number of hex digits), exactly one of them.
pub fn parse_report(body: &[u8]) -> Result<Reported, ApiError> {
    let body: ReportBody = json_object(body)?;
    match (body.hash, body.signature) {
        (Some(hash), None) => {
            let digits = hash.strip_prefix("0x").unwrap_or("");
            if digits.len() != 64 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(ApiError::bad_request(
                    "hash must be a transaction hash: 0x and 64 hexadecimal digits",
                ));
            }
            Ok(Reported::Hash(format!("0x{}", digits.to_ascii_lowercase())))
        }
        (None, Some(signature)) => signature
            .strip_prefix("0x")
            .filter(|d| !d.is_empty() && d.len() <= 2 * MAX_SIGNATURE_BYTES)
            .and_then(|d| alloy_primitives::hex::decode(d).ok())
            .map(Reported::Signature)
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "signature must be 0x and an even number of hexadecimal digits (at most \
                     {MAX_SIGNATURE_BYTES} bytes)"
                ))
            }),
        _ => Err(ApiError::bad_request(
            "give either hash (a transaction the wallet sent) or signature (the Permit2 batch \
             the wallet signed)",
        )),
    }
}

/// A JSON object body read into `T` (unknown fields refused by `T`'s own rules); the messages
/// never name our types: a body that is not an object is said to be one, and serde's field
/// errors name the field and the problem.
pub fn json_object<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("request body must be a JSON object"));
    }
    let not_json = |e: &serde_json::Error| {
        ApiError::bad_request(format!(
            "request body is not valid JSON: {}",
            without_position(e)
        ))
    };
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(
            match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                Ok(_) => ApiError::bad_request("request body must be a JSON object"),
                Err(e) => not_json(&e),
            },
        );
    }
    serde_json::from_slice(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => {
            ApiError::bad_request(format!("invalid request body: {}", without_position(&e)))
        }
        _ => not_json(&e),
    })
}

impl CreateRequest {
    pub fn parse(body: &[u8]) -> Result<CreateRequest, ApiError> {
        let body: CreateBody = json_object(body)?;
        let chain = Chain::from_str(&body.chain).map_err(|_| {
            ApiError::bad_request(format!("chain must be one of: {}", Chain::names()))
        })?;
        let protocol = Protocol::from_str(&body.protocol).map_err(|_| {
            ApiError::bad_request(format!("protocol must be one of: {}", Protocol::names()))
        })?;
        // The range between the two prices: a JSON Schema cannot order two fields, so neither
        // does the contract (decision 34).
        let (price_lower, price_upper) = {
            let (a, b) = (
                price(&body.price_lower, "priceLower")?,
                price(&body.price_upper, "priceUpper")?,
            );
            if a <= b {
                (a, b)
            } else {
                (b, a)
            }
        };
        Ok(CreateRequest {
            chain,
            protocol,
            pool: body.pool,
            amount_a: body.amount_a,
            amount_b: body.amount_b,
            price_lower,
            price_upper,
            // The limits are checked whenever given, and apply to an open from a wallet only.
            on_chain: {
                let limits = OrderLimits::from_fields(body.slippage_bps, body.deadline_seconds)?
                    .with_permit(body.permit.as_deref())?
                    .with_swap(body.swap);
                if limits.swap && body.wallet.is_none() {
                    return Err(ApiError::bad_request(
                        "swap is for an open from a wallet: give the wallet the swap and the \
                         mint are built for",
                    ));
                }
                body.wallet.map(|wallet| (wallet, limits))
            },
        })
    }
}

/// serde's text without its " at line L column C" suffix, which adds nothing for a client.
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    text.split(" at line ")
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A positive JSON number, kept as its exact decimal. Numbers a double cannot hold (below about
/// 5e-324 or above about 1.8e308) are outside any pool's prices and refused as such.
pub(crate) fn price(raw: &RawValue, name: &str) -> Result<BigDecimal, ApiError> {
    let text = raw.get();
    let invalid = || ApiError::bad_request(format!("{name} must be a positive number"));
    let is_number = text.starts_with(|c: char| c == '-' || c.is_ascii_digit());
    if !is_number {
        return Err(invalid());
    }
    let exact = BigDecimal::from_str(text).map_err(|_| invalid())?;
    if exact <= BigDecimal::zero() {
        return Err(invalid());
    }
    match serde_json::from_str::<f64>(text) {
        Ok(0.0) => Err(ApiError::bad_request(format!(
            "{name} is below the smallest price any pool supports"
        ))),
        Ok(read) if read.is_finite() => Ok(exact),
        _ => Err(ApiError::bad_request(format!(
            "{name} is above the largest price any pool supports"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> QueryMap {
        let text: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        text.join("&").parse().unwrap()
    }

    fn bad(pairs: &[(&str, &str)], name: &str) {
        match ListQuery::parse(&query(pairs)) {
            Err(ApiError::BadRequest(m)) => assert!(m.starts_with(name), "{m}"),
            other => panic!("{pairs:?} gave {other:?}"),
        }
    }

    #[test]
    fn list_query_defaults() {
        let q = ListQuery::parse(&query(&[("unknown", "x")])).unwrap();
        assert_eq!(
            q.page,
            PageRequest {
                offset: 0,
                limit: 20
            }
        );
        assert_eq!(q.filter, Filter::default());
    }

    #[test]
    fn list_query_accepts_the_bounds() {
        let q = ListQuery::parse(&query(&[
            ("limit", "100"),
            ("offset", "5"),
            ("status", "closed"),
            ("chain", "base"),
        ]))
        .unwrap();
        assert_eq!(
            q.page,
            PageRequest {
                offset: 5,
                limit: 100
            }
        );
        assert_eq!(
            q.filter,
            Filter {
                status: Some(Status::Closed),
                chain: Some(Chain::Base),
                source: None,
            }
        );
        assert_eq!(
            ListQuery::parse(&query(&[("limit", "1")]))
                .unwrap()
                .page
                .limit,
            1
        );
    }

    #[test]
    fn list_query_refuses_bad_values_naming_the_parameter() {
        for v in ["0", "101", "-1", "1.5", "abc", "", "+5", "1e2"] {
            bad(&[("limit", v)], "limit");
        }
        for v in ["-1", "abc", "", "1.0", "99999999999999999999999"] {
            bad(&[("offset", v)], "offset");
        }
        for v in ["Active", "open", "", "ACTIVE"] {
            bad(&[("status", v)], "status");
        }
        for v in ["Ethereum", "polygon", ""] {
            bad(&[("chain", v)], "chain");
        }
        bad(&[("limit", "5"), ("limit", "6")], "limit");
    }

    #[test]
    fn ids_are_canonical_ulids() {
        let id = ulid::Ulid::new().to_string();
        assert!(is_position_id(&id));
        assert!(!is_position_id(&id.to_lowercase()));
        assert!(!is_position_id("not-an-id"));
        assert!(!is_position_id(""));
        assert!(!is_position_id("ZZZZZZZZZZZZZZZZZZZZZZZZZZ"));
    }

    fn body(overrides: &[(&str, serde_json::Value)], remove: &[&str]) -> Vec<u8> {
        let mut v = serde_json::json!({
            "chain": "ethereum", "protocol": "uniswap-v3",
            "pool": "0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640",
            "amountA": "1", "amountB": "3000", "priceLower": 2500, "priceUpper": 3500.5
        });
        for (k, val) in overrides {
            v[*k] = val.clone();
        }
        for k in remove {
            v.as_object_mut().unwrap().remove(*k);
        }
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn create_body_parses_exact_prices() {
        let req = CreateRequest::parse(&body(&[], &[])).unwrap();
        assert_eq!(req.price_upper, BigDecimal::from_str("3500.5").unwrap());
        assert_eq!(req.chain, Chain::Ethereum);
    }

    #[test]
    fn create_body_refuses_missing_null_mistyped_and_unknown_fields() {
        use serde_json::json;
        let fields = [
            "chain",
            "protocol",
            "pool",
            "amountA",
            "amountB",
            "priceLower",
            "priceUpper",
        ];
        for f in fields {
            assert!(
                CreateRequest::parse(&body(&[], &[f])).is_err(),
                "missing {f}"
            );
            assert!(
                CreateRequest::parse(&body(&[(f, json!(null))], &[])).is_err(),
                "null {f}"
            );
        }
        let cases = [
            ("amountA", json!(1)),
            ("priceLower", json!("2500")),
            ("chain", json!("Ethereum")),
            ("protocol", json!("uniswap")),
            ("priceLower", json!(0)),
            ("priceLower", json!(-1)),
            ("priceLower", json!([1])),
            ("extra", json!(1)),
        ];
        for (k, v) in cases {
            assert!(
                matches!(
                    CreateRequest::parse(&body(&[(k, v.clone())], &[])),
                    Err(ApiError::BadRequest(_))
                ),
                "{k}={v}"
            );
        }
        // The two bounds in either order, or equal, name the range between them.
        for (lower, upper) in [(4000, 3500), (3500, 3500)] {
            let request = CreateRequest::parse(&body(
                &[("priceLower", json!(lower)), ("priceUpper", json!(upper))],
                &[],
            ))
            .unwrap();
            assert!(request.price_lower <= request.price_upper);
            assert_eq!(request.price_lower, BigDecimal::from(lower.min(upper)));
        }
        for raw in [
            "",
            "  ",
            "{",
            "[]",
            "null",
            "{\"chain\":\"ethereum\",\"chain\":\"base\"}",
            "{} x",
        ] {
            assert!(CreateRequest::parse(raw.as_bytes()).is_err(), "{raw}");
        }
        let huge = br#"{"chain":"ethereum","protocol":"uniswap-v3","pool":"p","amountA":"1","amountB":"1","priceLower":1e400,"priceUpper":1e401}"#;
        assert!(CreateRequest::parse(huge).is_err());
    }
}
