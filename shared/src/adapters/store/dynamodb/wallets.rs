//! Linked wallets on the table. A wallet is `U#{owner}` / `W#{chain}#{address}`, listed by one
//! Query of the owner's partition; the owner's wallet count sits on the `COUNTS` item; every
//! linked wallet has an entry `WALLETS` / `{chain}#{address}#{owner}` that the scheduled
//! refresh pages through (never a scan). A challenge is `U#{owner}` / `CH#{nonce}`, kept a day
//! past its expiry (the table's TTL) so that a late answer is told it expired.

use super::errors::{build_error, classify, classify_put};
use super::item::{malformed, parsed, text};
use super::keys::{counter_key, s, user_pk, Item};
use super::store::{DynamoDbStore, RegistrySnapshot};
use crate::application::ports::{StoreError, StoreResult, WalletStore};
use crate::domain::model::{format_time, Chain};
use crate::domain::wallets::challenge::Challenge;
use crate::domain::wallets::{
    LinkOutcome, LinkedWallet, ScanProgress, WalletKind, MAX_WALLETS_PER_USER,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// The partition of every linked wallet's registry entry.
pub(super) const WALLETS_PK: &str = "WALLETS";
const WALLET_PREFIX: &str = "W#";

fn key(pk: String, sk: String) -> Item {
    HashMap::from([("PK".into(), s(pk)), ("SK".into(), s(sk))])
}

fn challenge_key(owner: &str, nonce: &str) -> Item {
    key(user_pk(owner), format!("CH#{nonce}"))
}

fn wallet_key(owner: &str, chain: Chain, address: &str) -> Item {
    key(user_pk(owner), format!("{WALLET_PREFIX}{chain}#{address}"))
}

/// A chain's scan progress: its own partition, so no wallet or catalog read meets it.
fn scan_key(chain: Chain) -> Item {
    key("SCAN".into(), chain.as_str().into())
}

fn registry_key(owner: &str, chain: Chain, address: &str) -> Item {
    key(WALLETS_PK.into(), format!("{chain}#{address}#{owner}"))
}

/// The registry's version (attribute `v`): raised after every change of what the scan reads
/// of an entry (a link, an unlink, a read that changed a wallet's tokens or its retry). Its own
/// partition, so no registry `Query` meets it.
fn registry_version_key() -> Item {
    key("WALLETS#VERSION".into(), "VERSION".into())
}

/// A store keeps the registry it last read for at most this long, whatever its version says.
const REGISTRY_KEPT: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Whether a registry update whose old values are `old` changed what the scan reads of `w`:
/// its tokens (a good read's) or its retry.
fn registry_changed(old: Option<&HashMap<String, AttributeValue>>, w: &LinkedWallet) -> bool {
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

fn time(item: &Item, name: &str) -> StoreResult<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text(item, name)?)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| malformed(name))
}

fn optional<T>(
    item: &Item,
    name: &str,
    read: impl Fn(&Item, &str) -> StoreResult<T>,
) -> StoreResult<Option<T>> {
    match item.get(name) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(_) => read(item, name).map(Some),
    }
}

fn wallet_item(w: &LinkedWallet) -> Item {
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
const KIND: &str = "kind";

/// The deployments a wallet's last good read could not take, kept as JSON on its items.
const DEPLOYMENT_ERRORS: &str = "deploymentErrors";

fn deployment_errors_text(w: &LinkedWallet) -> Option<AttributeValue> {
    (!w.deployment_errors.is_empty())
        .then(|| serde_json::to_string(&w.deployment_errors).ok())
        .flatten()
        .map(s)
}

/// A wallet's stopped read, kept as JSON on its items (decision 58).
const RETRY: &str = "retry";

fn retry_text(w: &LinkedWallet) -> Option<AttributeValue> {
    w.retry
        .as_ref()
        .and_then(|r| serde_json::to_string(r).ok())
        .map(s)
}

fn wallet_from(item: &Item) -> StoreResult<LinkedWallet> {
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

fn challenge_from(item: &Item) -> StoreResult<Challenge> {
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
fn unlinked_meanwhile<T>(
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

impl DynamoDbStore {
    async fn get_item(&self, key: Item) -> StoreResult<Option<Item>> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(output.item)
    }

    /// The wallets in partition `pk` under `prefix`, page after page.
    async fn wallet_items(&self, pk: String, prefix: &str) -> StoreResult<Vec<LinkedWallet>> {
        let mut wallets = Vec::new();
        let mut start = None;
        loop {
            let mut query = self
                .client
                .query()
                .table_name(&self.table)
                .expression_attribute_values(":pk", s(pk.clone()));
            query = if prefix.is_empty() {
                query.key_condition_expression("PK = :pk")
            } else {
                query
                    .key_condition_expression("PK = :pk AND begins_with(SK, :w)")
                    .expression_attribute_values(":w", s(prefix))
            };
            let page = query
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in page.items() {
                wallets.push(wallet_from(item)?);
            }
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                return Ok(wallets);
            }
        }
    }

    /// Raises the registry's version, after the change it announces.
    async fn raise_registry_version(&self) -> StoreResult<()> {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(registry_version_key()))
            .update_expression("ADD v :one")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    fn update(
        &self,
        key: Item,
        build: impl FnOnce(
            aws_sdk_dynamodb::types::builders::UpdateBuilder,
        ) -> aws_sdk_dynamodb::types::builders::UpdateBuilder,
    ) -> StoreResult<TransactWriteItem> {
        let update = build(Update::builder().table_name(&self.table).set_key(Some(key)))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }
}

#[async_trait]
impl WalletStore for DynamoDbStore {
    async fn put_challenge(&self, c: &Challenge) -> StoreResult<()> {
        let mut item = challenge_key(&c.owner, &c.nonce);
        let kept_until = c.expires_at + chrono::Duration::days(1);
        item.extend([
            ("owner".into(), s(&c.owner)),
            ("chain".into(), s(c.chain.as_str())),
            ("address".into(), s(&c.address)),
            ("nonce".into(), s(&c.nonce)),
            ("message".into(), s(&c.message)),
            ("validUntil".into(), s(format_time(&c.expires_at))),
            (
                "expiresAt".into(),
                AttributeValue::N(kept_until.timestamp().to_string()),
            ),
        ]);
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(PK)")
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn challenge(&self, owner: &str, nonce: &str) -> StoreResult<Option<Challenge>> {
        self.get_item(challenge_key(owner, nonce))
            .await?
            .as_ref()
            .map(challenge_from)
            .transpose()
    }

    /// One transaction: the challenge marked used (if unused), the wallet (if new), its
    /// registry entry, and the count (if below the cap). When it is cancelled, consistent
    /// reads say which condition failed.
    async fn link(&self, c: &Challenge, w: &LinkedWallet) -> StoreResult<LinkOutcome> {
        let items = vec![
            self.update(challenge_key(&c.owner, &c.nonce), |u| {
                u.update_expression("SET usedAt = :now")
                    .condition_expression("attribute_exists(PK) AND attribute_not_exists(usedAt)")
                    .expression_attribute_values(":now", s(format_time(&w.linked_at)))
            })?,
            self.put(wallet_item(w), "attribute_not_exists(PK)")?,
            self.put(
                {
                    let mut entry = registry_key(&w.owner, w.chain, &w.address);
                    entry.extend([
                        ("owner".into(), s(&w.owner)),
                        ("chain".into(), s(w.chain.as_str())),
                        ("address".into(), s(&w.address)),
                        ("linkedAt".into(), s(format_time(&w.linked_at))),
                    ]);
                    entry
                },
                "attribute_not_exists(PK)",
            )?,
            self.update(registry_version_key(), |u| {
                u.update_expression("ADD v :one")
                    .expression_attribute_values(":one", AttributeValue::N("1".into()))
            })?,
            self.update(counter_key(&w.owner), |u| {
                u.update_expression("ADD wallets :one")
                    .condition_expression("attribute_not_exists(wallets) OR wallets < :max")
                    .expression_attribute_values(":one", AttributeValue::N("1".into()))
                    .expression_attribute_values(
                        ":max",
                        AttributeValue::N(MAX_WALLETS_PER_USER.to_string()),
                    )
            })?,
        ];
        match self.transact(items, None).await {
            Ok(()) => return Ok(LinkOutcome::Linked),
            Err(StoreError::Conflict) => {}
            Err(e) => return Err(e),
        }
        if self
            .challenge(&c.owner, &c.nonce)
            .await?
            .is_none_or(|c| c.used)
        {
            return Ok(LinkOutcome::ChallengeUsed);
        }
        if self
            .get_item(wallet_key(&w.owner, w.chain, &w.address))
            .await?
            .is_some()
        {
            return Ok(LinkOutcome::AlreadyLinked);
        }
        Ok(LinkOutcome::TooMany)
    }

    async fn wallets(&self, owner: &str) -> StoreResult<Vec<LinkedWallet>> {
        self.wallet_items(user_pk(owner), WALLET_PREFIX).await
    }

    /// The registry's version first (one item); the whole registry only when it moved since
    /// this store last read it (or that read is older than [`REGISTRY_KEPT`]).
    async fn linked(&self) -> StoreResult<Vec<LinkedWallet>> {
        let version = match self.get_item(registry_version_key()).await? {
            Some(item) => match item.get("v") {
                Some(AttributeValue::N(n)) => n.parse().map_err(|_| malformed("v"))?,
                _ => 0,
            },
            None => 0,
        };
        {
            let kept = self.registry.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(snapshot) = kept
                .as_ref()
                .filter(|k| k.version == version && k.read_at.elapsed() < REGISTRY_KEPT)
            {
                return Ok(snapshot.wallets.clone());
            }
        }
        let wallets = self.wallet_items(WALLETS_PK.to_string(), "").await?;
        *self.registry.lock().unwrap_or_else(|e| e.into_inner()) = Some(RegistrySnapshot {
            version,
            read_at: std::time::Instant::now(),
            wallets: wallets.clone(),
        });
        Ok(wallets)
    }

    /// A good read sets its time and count and clears the error; a failed one sets only the
    /// error, so the last good read stays.
    async fn record_refresh(&self, w: &LinkedWallet) -> StoreResult<()> {
        let mut set = Vec::new();
        let mut remove = Vec::new();
        let mut values = HashMap::new();
        let fields = [
            (
                "refreshedAt",
                w.refreshed_at.as_ref().map(|t| s(format_time(t))),
            ),
            (
                "positions",
                w.positions.map(|n| AttributeValue::N(n.to_string())),
            ),
            ("refreshError", w.refresh_error.as_ref().map(s)),
            (RETRY, retry_text(w)),
            (DEPLOYMENT_ERRORS, deployment_errors_text(w)),
        ];
        for (name, value) in fields {
            match value {
                Some(value) => {
                    set.push(format!("{name} = :{name}"));
                    values.insert(format!(":{name}"), value);
                }
                None if ["refreshError", RETRY, DEPLOYMENT_ERRORS].contains(&name) => {
                    remove.push(name);
                }
                None => {}
            }
        }
        let mut expression = String::new();
        if !set.is_empty() {
            expression.push_str(&format!("SET {}", set.join(", ")));
        }
        if !remove.is_empty() {
            expression.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(wallet_key(&w.owner, w.chain, &w.address)))
            .update_expression(expression.trim())
            .condition_expression("attribute_exists(PK)")
            .set_expression_attribute_values((!values.is_empty()).then_some(values))
            .send()
            .await;
        if !unlinked_meanwhile(result)? {
            // What the chain scan follows, and when it retries the wallet: on the entry the
            // scan pages through (its tokens only from a good read).
            let mut values = HashMap::new();
            let mut set = Vec::new();
            if w.positions.is_some() {
                set.push("tokens = :tokens");
                let tokens = w.tokens.iter().map(s).collect();
                values.insert(":tokens".to_string(), AttributeValue::L(tokens));
            }
            let mut expression = String::new();
            match retry_text(w) {
                Some(retry) => {
                    set.push("retry = :retry");
                    values.insert(":retry".to_string(), retry);
                    expression.push_str(&format!("SET {}", set.join(", ")));
                }
                None => {
                    if !set.is_empty() {
                        expression.push_str(&format!("SET {} ", set.join(", ")));
                    }
                    expression.push_str("REMOVE retry");
                }
            }
            let result = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(registry_key(&w.owner, w.chain, &w.address)))
                .update_expression(expression)
                .condition_expression("attribute_exists(PK)")
                .set_expression_attribute_values((!values.is_empty()).then_some(values))
                // The entry as it was, to tell a change (no read is billed for it).
                .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
                .send()
                .await;
            let changed = result
                .as_ref()
                .is_ok_and(|out| registry_changed(out.attributes(), w));
            if !unlinked_meanwhile(result)? && changed {
                self.raise_registry_version().await?;
            }
        }
        Ok(())
    }

    async fn scan_progress(&self, chain: Chain) -> StoreResult<Option<ScanProgress>> {
        let Some(item) = self.get_item(scan_key(chain)).await? else {
            return Ok(None);
        };
        Ok(Some(ScanProgress {
            chain,
            through: parsed(&item, "through")?,
            hash: text(&item, "hash")?.to_string(),
            scanned_at: time(&item, "scannedAt")?,
            recent: serde_json::from_str(text(&item, "recent")?)
                .map_err(|_| malformed("recent"))?,
        }))
    }

    /// One conditional `PutItem` (1 WCU): over the very progress it read, or where none was.
    async fn save_scan_progress(
        &self,
        previous: Option<&ScanProgress>,
        progress: &ScanProgress,
    ) -> StoreResult<()> {
        let mut item = scan_key(progress.chain);
        item.extend([
            (
                "through".into(),
                AttributeValue::N(progress.through.to_string()),
            ),
            ("hash".into(), s(&progress.hash)),
            ("scannedAt".into(), s(format_time(&progress.scanned_at))),
            (
                "recent".into(),
                s(serde_json::to_string(&progress.recent)
                    .map_err(|e| StoreError::Failure(e.into()))?),
            ),
        ]);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item));
        let put = match previous {
            None => put.condition_expression("attribute_not_exists(PK)"),
            Some(p) => put
                .condition_expression("through = :through AND #hash = :hash")
                .expression_attribute_names("#hash", "hash")
                .expression_attribute_values(":through", AttributeValue::N(p.through.to_string()))
                .expression_attribute_values(":hash", s(&p.hash)),
        };
        put.send().await.map(|_| ()).map_err(classify_put)
    }

    /// The wallet, its registry entry and its positions deleted and the counts lowered, in one
    /// transaction (`holdings::unlink_with_holdings`).
    async fn unlink(&self, owner: &str, chain: Chain, address: &str) -> StoreResult<bool> {
        let wallet_items = [
            self.delete(wallet_key(owner, chain, address))?,
            self.delete(registry_key(owner, chain, address))?,
        ];
        let unlinked = self
            .unlink_with_holdings(owner, chain, address, wallet_items)
            .await?;
        if unlinked {
            self.raise_registry_version().await?;
        }
        Ok(unlinked)
    }
}
