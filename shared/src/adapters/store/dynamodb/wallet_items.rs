//! A linked wallet's items and keys on the table (`wallets` uses them): the wallet, its
//! registry entry, its challenge, the chain's scan progress; their conversions.

use super::errors::classify;
use super::item::{malformed, parsed, text};
use super::keys::{s, user_pk, Item};
use crate::application::ports::StoreResult;
use crate::domain::model::{format_time, Chain};
use crate::domain::wallets::challenge::Challenge;
use crate::domain::wallets::{LinkedWallet, WalletKind};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// The partition of every linked wallet's registry entry.
pub(super) const WALLETS_PK: &str = "WALLETS";
pub(super) const WALLET_PREFIX: &str = "W#";

pub(super) fn key(pk: String, sk: String) -> Item {
    HashMap::from([("PK".into(), s(pk)), ("SK".into(), s(sk))])
}

pub(super) fn challenge_key(owner: &str, nonce: &str) -> Item {
    key(user_pk(owner), format!("CH#{nonce}"))
}

pub(super) fn wallet_key(owner: &str, chain: Chain, address: &str) -> Item {
    key(user_pk(owner), format!("{WALLET_PREFIX}{chain}#{address}"))
}

/// A chain's scan progress: its own partition, so no wallet or catalog read meets it.
pub(super) fn scan_key(chain: Chain) -> Item {
    key("SCAN".into(), chain.as_str().into())
}

pub(super) fn registry_key(owner: &str, chain: Chain, address: &str) -> Item {
    key(WALLETS_PK.into(), format!("{chain}#{address}#{owner}"))
}

/// The registry's version (attribute `v`): raised after every change of what the scan reads
/// of an entry (a link, an unlink, a read that changed a wallet's tokens or its retry). Its own
/// partition, so no registry `Query` meets it.
pub(super) fn registry_version_key() -> Item {
    key("WALLETS#VERSION".into(), "VERSION".into())
}

/// A store keeps the registry it last read for at most this long, whatever its version says.
pub(super) const REGISTRY_KEPT: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Whether a registry update whose old values are `old` changed what the scan reads of `w`:
/// its tokens (a good read's) or its retry.
pub(super) fn registry_changed(
    old: Option<&HashMap<String, AttributeValue>>,
    w: &LinkedWallet,
) -> bool {
    let old_tokens: Vec<&str> = match old.and_then(|o| o.get("tokens")) {
        Some(AttributeValue::L(list)) => list
            .iter()
            .filter_map(|t| t.as_s().ok())
            .map(String::as_str)
            .collect(),
        _ => Vec::new(),
    };
    let tokens_moved = w.positions.is_some()
        && old_tokens != w.tokens.iter().map(String::as_str).collect::<Vec<_>>();
    let old_retry = old.and_then(|o| o.get(RETRY)).and_then(|r| r.as_s().ok());
    let retry = retry_text(w);
    tokens_moved || old_retry != retry.as_ref().and_then(|r| r.as_s().ok())
}

pub(super) fn time(item: &Item, name: &str) -> StoreResult<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text(item, name)?)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| malformed(name))
}

pub(super) fn optional<T>(
    item: &Item,
    name: &str,
    read: impl Fn(&Item, &str) -> StoreResult<T>,
) -> StoreResult<Option<T>> {
    match item.get(name) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(_) => read(item, name).map(Some),
    }
}

pub(super) fn wallet_item(w: &LinkedWallet) -> Item {
    let mut item = wallet_key(&w.owner, w.chain, &w.address);
    item.extend([
        ("owner".into(), s(&w.owner)),
        ("chain".into(), s(w.chain.as_str())),
        ("address".into(), s(&w.address)),
        ("linkedAt".into(), s(format_time(&w.linked_at))),
    ]);
    if let Some(at) = &w.refreshed_at {
        item.insert("refreshedAt".into(), s(format_time(at)));
    }
    if let Some(n) = w.positions {
        item.insert("positions".into(), AttributeValue::N(n.to_string()));
    }
    if let Some(e) = &w.refresh_error {
        item.insert("refreshError".into(), s(e));
    }
    if let Some(retry) = retry_text(w) {
        item.insert(RETRY.into(), retry);
    }
    if let Some(errors) = deployment_errors_text(w) {
        item.insert(DEPLOYMENT_ERRORS.into(), errors);
    }
    if w.kind != WalletKind::Eoa {
        item.insert(KIND.into(), s(w.kind.as_str()));
    }
    item
}

/// How the wallet is the user's (absent: an EOA's).
pub(super) const KIND: &str = "kind";

/// The deployments a wallet's last good read could not take, kept as JSON on its items.
pub(super) const DEPLOYMENT_ERRORS: &str = "deploymentErrors";

pub(super) fn deployment_errors_text(w: &LinkedWallet) -> Option<AttributeValue> {
    (!w.deployment_errors.is_empty())
        .then(|| serde_json::to_string(&w.deployment_errors).ok())
        .flatten()
        .map(s)
}

/// A wallet's stopped read, kept as JSON on its items (decision 58).
pub(super) const RETRY: &str = "retry";

pub(super) fn retry_text(w: &LinkedWallet) -> Option<AttributeValue> {
    w.retry
        .as_ref()
        .and_then(|r| serde_json::to_string(r).ok())
        .map(s)
}

pub(super) fn wallet_from(item: &Item) -> StoreResult<LinkedWallet> {
    Ok(LinkedWallet {
        owner: text(item, "owner")?.to_string(),
        chain: parsed(item, "chain")?,
        address: text(item, "address")?.to_string(),
        linked_at: time(item, "linkedAt")?,
        refreshed_at: optional(item, "refreshedAt", time)?,
        positions: optional(item, "positions", parsed)?,
        refresh_error: optional(item, "refreshError", |i, n| text(i, n).map(str::to_string))?,
        // Only registry entries carry them.
        tokens: match item.get("tokens") {
            Some(AttributeValue::L(list)) => list
                .iter()
                .map(|t| t.as_s().cloned().map_err(|_| malformed("tokens")))
                .collect::<StoreResult<_>>()?,
            _ => Vec::new(),
        },
        retry: match item.get(RETRY) {
            None => None,
            Some(_) => {
                Some(serde_json::from_str(text(item, RETRY)?).map_err(|_| malformed(RETRY))?)
            }
        },
        deployment_errors: match item.get(DEPLOYMENT_ERRORS) {
            None => Vec::new(),
            Some(_) => serde_json::from_str(text(item, DEPLOYMENT_ERRORS)?)
                .map_err(|_| malformed(DEPLOYMENT_ERRORS))?,
        },
        // Absent on the wallets linked before kinds: an EOA's.
        kind: optional(item, KIND, parsed)?.unwrap_or(WalletKind::Eoa),
    })
}

pub(super) fn challenge_from(item: &Item) -> StoreResult<Challenge> {
    Ok(Challenge {
        owner: text(item, "owner")?.to_string(),
        chain: parsed(item, "chain")?,
        address: text(item, "address")?.to_string(),
        nonce: text(item, "nonce")?.to_string(),
        message: text(item, "message")?.to_string(),
        expires_at: time(item, "validUntil")?,
        used: item.contains_key("usedAt"),
    })
}

/// Whether a conditional update found its wallet unlinked (nothing to record then).
pub(super) fn unlinked_meanwhile<T>(
    result: Result<
        T,
        aws_sdk_dynamodb::error::SdkError<
            aws_sdk_dynamodb::operation::update_item::UpdateItemError,
        >,
    >,
) -> StoreResult<bool> {
    match result {
        Ok(_) => Ok(false),
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
        {
            Ok(true)
        }
        Err(e) => Err(classify(e)),
    }
}
