//! The key scheme of the one table (see `docs/dynamodb-design.md`).

use crate::model::{Chain, Filter, Status};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

pub(super) type Item = HashMap<String, AttributeValue>;

pub(super) const CATALOG_PK: &str = "CATALOG";

/// The catalog partition's item holding the protocols' deployments; upper case sorts it before
/// every pool (`{chain}#…`, lower case).
pub(super) const DEPLOYMENTS_SK: &str = "DEPLOYMENTS";

/// A list variant: which filter a list entry or counter serves.
pub(super) fn variant(filter: Filter) -> String {
    match (filter.status, filter.chain) {
        (None, None) => "all".to_string(),
        (Some(s), None) => format!("s#{s}"),
        (None, Some(c)) => format!("c#{c}"),
        (Some(s), Some(c)) => format!("sc#{s}#{c}"),
    }
}

/// The four list variants a position with this status and chain belongs to.
pub(super) fn variants(status: Status, chain: Chain) -> [String; 4] {
    [
        Filter::default(),
        Filter {
            status: Some(status),
            chain: None,
        },
        Filter {
            status: None,
            chain: Some(chain),
        },
        Filter {
            status: Some(status),
            chain: Some(chain),
        },
    ]
    .map(variant)
}

pub(super) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub(super) fn user_pk(owner: &str) -> String {
    format!("U#{owner}")
}

/// The tag before the owner makes the key prefix-free: no owner name can forge another's key.
pub(super) fn list_pk(variant: &str, owner: &str) -> String {
    format!("IX#{variant}#{owner}")
}

pub(super) fn counter_attribute(variant: &str) -> String {
    format!("n#{variant}")
}

pub(super) fn position_key(owner: &str, id: &str) -> Item {
    HashMap::from([
        ("PK".into(), s(user_pk(owner))),
        ("SK".into(), s(format!("P#{id}"))),
    ])
}

/// An idempotency key of the owner's (printable ASCII, at most 255 characters).
pub(super) fn idempotency_key(owner: &str, key: &str) -> Item {
    HashMap::from([
        ("PK".into(), s(user_pk(owner))),
        ("SK".into(), s(format!("K#{key}"))),
    ])
}

pub(super) fn counter_key(owner: &str) -> Item {
    HashMap::from([("PK".into(), s(user_pk(owner))), ("SK".into(), s("COUNTS"))])
}

pub(super) fn list_key(variant: &str, owner: &str, id: &str) -> Item {
    HashMap::from([
        ("PK".into(), s(list_pk(variant, owner))),
        ("SK".into(), s(id)),
    ])
}

/// The entry of a pending position in its pool's pending index: the pool's partition, ids
/// oldest first; the owner after the id keeps two owners' equal ids apart.
pub(super) fn pending_key(
    chain: Chain,
    protocol: crate::model::Protocol,
    pool: &str,
    id: &str,
    owner: &str,
) -> Item {
    HashMap::from([
        ("PK".into(), s(pending_pk(chain, protocol, pool))),
        ("SK".into(), s(format!("{id}#{owner}"))),
    ])
}

pub(super) fn pending_pk(chain: Chain, protocol: crate::model::Protocol, pool: &str) -> String {
    format!("PENDING#{}", catalog_sort_key(chain, protocol, pool))
}

/// The catalog entry of one pool.
pub(super) fn catalog_sort_key(
    chain: Chain,
    protocol: crate::model::Protocol,
    pool: &str,
) -> String {
    format!("{chain}#{protocol}#{pool}")
}

/// What separates a pool's sort key from its tick's: `{pool SK}#tick#{tick}`, so that one query
/// of the catalog partition reads every pool and each pool's tracked ticks after it.
pub(super) const TICK_INFIX: &str = "#tick#";

/// The catalog item of one tick of one pool (its fee record and how many positions use it).
pub(super) fn tick_sort_key(
    chain: Chain,
    protocol: crate::model::Protocol,
    pool: &str,
    tick: i32,
) -> String {
    format!(
        "{}{TICK_INFIX}{tick}",
        catalog_sort_key(chain, protocol, pool)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_keys_are_prefix_free_across_owners_and_variants() {
        // An owner named like a variant suffix cannot reach another owner's entries.
        let a = list_pk(
            &variant(Filter {
                status: Some(Status::Active),
                chain: Some(Chain::Base),
            }),
            "o",
        );
        let b = list_pk(
            &variant(Filter {
                status: Some(Status::Active),
                chain: None,
            }),
            "base#o",
        );
        assert_ne!(a, b);
        let all: Vec<String> = variants(Status::Active, Chain::Base).into();
        assert_eq!(all, ["all", "s#active", "c#base", "sc#active#base"]);
    }
}
