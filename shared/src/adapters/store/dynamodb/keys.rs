//! The key scheme of the one table (see `docs/dynamodb-design.md`).

use crate::domain::catalog::Pool;
use crate::domain::model::{Chain, Filter, Position, Source, Status, WalletHolding};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

pub(super) type Item = HashMap<String, AttributeValue>;

pub(super) const CATALOG_PK: &str = "CATALOG";

/// The catalog partition's item holding the protocols' deployments; upper case sorts it before
/// every pool (`{chain}#…`, lower case).
pub(super) const DEPLOYMENTS_SK: &str = "DEPLOYMENTS";

/// A list variant: which filter a list entry or counter serves.
pub(super) fn variant(filter: Filter) -> String {
    let base = match (filter.status, filter.chain) {
        (None, None) => "all".to_string(),
        (Some(s), None) => format!("s#{s}"),
        (None, Some(c)) => format!("c#{c}"),
        (Some(s), Some(c)) => format!("sc#{s}#{c}"),
    };
    match filter.source {
        None => base,
        Some(source) => format!("{source}#{base}"),
    }
}

/// The eight list variants a position with this status, chain and source belongs to: each
/// combination of the three filters, none to all.
pub(super) fn variants(status: Status, chain: Chain, source: Source) -> Vec<String> {
    let mut all = Vec::with_capacity(8);
    for source in [None, Some(source)] {
        for status in [None, Some(status)] {
            for chain in [None, Some(chain)] {
                all.push(variant(Filter {
                    status,
                    chain,
                    source,
                }));
            }
        }
    }
    all
}

/// The variants a position's status decides: those that move when it changes.
pub(super) fn status_variants(status: Status, chain: Chain, source: Source) -> Vec<String> {
    let moving = variants(status, chain, source);
    let other = if status == Status::Closed {
        Status::Active
    } else {
        Status::Closed
    };
    let staying = variants(other, chain, source);
    moving
        .into_iter()
        .filter(|v| !staying.contains(v))
        .collect()
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

/// A position's page item in `variant`: `PG#{variant}#{owner}` / `{id}`, a copy of the
/// position in each list variant it belongs to, so a page is one `Query` of the items it shows
/// (the tag before the owner keeps the key prefix-free, as for list entries).
pub(super) fn page_key(variant: &str, owner: &str, id: &str) -> Item {
    HashMap::from([
        ("PK".into(), s(page_pk(variant, owner))),
        ("SK".into(), s(id)),
    ])
}

pub(super) fn page_pk(variant: &str, owner: &str) -> String {
    format!("PG#{variant}#{owner}")
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

/// The prefix of the owner's wallet-position keys on one chain.
pub(super) fn holding_prefix(chain: Chain) -> String {
    format!("H#{chain}#")
}

/// A wallet position's key under its owner (`H#{chain}#{manager}#{token}`), naming its id:
/// the one place a position read from a chain gets its id, taken once.
pub(super) fn holding_index(position: &Position, holding: &WalletHolding) -> Item {
    HashMap::from([
        ("PK".into(), s(user_pk(&position.owner))),
        ("SK".into(), s(format!("H#{}", holding.key(position.chain)))),
        ("id".into(), s(&position.id)),
        ("wallet".into(), s(&holding.wallet)),
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
    protocol: crate::domain::model::Protocol,
    pool: &str,
    id: &str,
    owner: &str,
) -> Item {
    HashMap::from([
        ("PK".into(), s(pending_pk(chain, protocol, pool))),
        ("SK".into(), s(format!("{id}#{owner}"))),
    ])
}

pub(super) fn pending_pk(
    chain: Chain,
    protocol: crate::domain::model::Protocol,
    pool: &str,
) -> String {
    format!("PENDING#{}", catalog_sort_key(chain, protocol, pool))
}

/// The catalog entry of one pool.
pub(super) fn catalog_sort_key(
    chain: Chain,
    protocol: crate::domain::model::Protocol,
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
    protocol: crate::domain::model::Protocol,
    pool: &str,
    tick: i32,
) -> String {
    format!(
        "{}{TICK_INFIX}{tick}",
        catalog_sort_key(chain, protocol, pool)
    )
}

/// A catalog pool's item key.
pub(super) fn pool_key(pool: &Pool) -> Item {
    HashMap::from([
        ("PK".into(), s(CATALOG_PK)),
        (
            "SK".into(),
            s(catalog_sort_key(pool.chain, pool.protocol, &pool.id)),
        ),
    ])
}

/// The key of the item of one tick of a catalog pool.
pub(super) fn tick_key(pool: &Pool, tick: i32) -> Item {
    HashMap::from([
        ("PK".into(), s(CATALOG_PK)),
        (
            "SK".into(),
            s(tick_sort_key(pool.chain, pool.protocol, &pool.id, tick)),
        ),
    ])
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
                source: None,
            }),
            "o",
        );
        let b = list_pk(
            &variant(Filter {
                status: Some(Status::Active),
                chain: None,
                source: None,
            }),
            "base#o",
        );
        assert_ne!(a, b);
        let all = variants(Status::Active, Chain::Base, Source::Wallet);
        assert_eq!(
            all,
            [
                "all",
                "c#base",
                "s#active",
                "sc#active#base",
                "wallet#all",
                "wallet#c#base",
                "wallet#s#active",
                "wallet#sc#active#base"
            ]
        );
        assert_eq!(
            status_variants(Status::Active, Chain::Base, Source::Wallet),
            [
                "s#active",
                "sc#active#base",
                "wallet#s#active",
                "wallet#sc#active#base"
            ]
        );
    }
}
