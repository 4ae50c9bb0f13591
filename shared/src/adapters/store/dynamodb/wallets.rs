//! Linked wallets on the table. A wallet is `U#{owner}` / `W#{chain}#{address}`, listed by one
//! Query of the owner's partition; the owner's wallet count sits on the `COUNTS` item; every
//! linked wallet has an entry `WALLETS` / `{chain}#{address}#{owner}` that the scheduled
//! refresh pages through (never a scan). A challenge is `U#{owner}` / `CH#{nonce}`, kept a day
//! past its expiry (the table's TTL) so that a late answer is told it expired.

use super::errors::{build_error, classify, classify_put};
use super::item::{malformed, parsed, text};
use super::keys::{counter_key, s, user_pk, Item};
use super::store::{DynamoDbStore, RegistrySnapshot};
use super::wallet_items::{
    challenge_from, challenge_key, deployment_errors_text, registry_changed, registry_key,
    registry_version_key, retry_text, scan_key, time, unlinked_meanwhile, wallet_from, wallet_item,
    wallet_key, DEPLOYMENT_ERRORS, KIND, REGISTRY_KEPT, RETRY, WALLETS_PK, WALLET_PREFIX,
};

/// The owner's counts on `COUNTS`: linked wallets, and watched ones apart.
const LINKED: &str = "wallets";
const WATCHED: &str = "watched";
use crate::application::ports::{StoreError, StoreResult, WalletStore};
use crate::domain::model::{format_time, Chain};
use crate::domain::wallets::challenge::Challenge;
use crate::domain::wallets::{
    LinkOutcome, LinkedWallet, ScanProgress, WalletKind, MAX_WALLETS_PER_USER, MAX_WATCHED_PER_USER,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use std::collections::HashMap;

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

    /// Runs a link's (or a watch's) transaction; when it is cancelled, consistent reads say
    /// which condition failed: `challenge` used meanwhile, the wallet held already (as
    /// `held_already` judges its item), or else the owner's count at its cap.
    async fn linked_or_why(
        &self,
        items: Vec<TransactWriteItem>,
        challenge: Option<&Challenge>,
        w: &LinkedWallet,
        held_already: impl Fn(Option<&Item>) -> bool,
    ) -> StoreResult<LinkOutcome> {
        match self.transact(items, None).await {
            Ok(()) => return Ok(LinkOutcome::Linked),
            Err(StoreError::Conflict) => {}
            Err(e) => return Err(e),
        }
        if let Some(c) = challenge {
            if self
                .challenge(&c.owner, &c.nonce)
                .await?
                .is_none_or(|c| c.used)
            {
                return Ok(LinkOutcome::ChallengeUsed);
            }
        }
        let held = self
            .get_item(wallet_key(&w.owner, w.chain, &w.address))
            .await?;
        Ok(if held_already(held.as_ref()) {
            LinkOutcome::AlreadyLinked
        } else {
            LinkOutcome::TooMany
        })
    }

    /// The challenge marked used by `w`'s link, if it was not.
    fn use_challenge(&self, c: &Challenge, w: &LinkedWallet) -> StoreResult<TransactWriteItem> {
        self.update(challenge_key(&c.owner, &c.nonce), |u| {
            u.update_expression("SET usedAt = :now")
                .condition_expression("attribute_exists(PK) AND attribute_not_exists(usedAt)")
                .expression_attribute_values(":now", s(format_time(&w.linked_at)))
        })
    }

    /// The wallet's registry entry (the refresh's work list), put if it is new.
    fn registry_entry(&self, w: &LinkedWallet) -> StoreResult<TransactWriteItem> {
        let mut entry = registry_key(&w.owner, w.chain, &w.address);
        entry.extend([
            ("owner".into(), s(&w.owner)),
            ("chain".into(), s(w.chain.as_str())),
            ("address".into(), s(&w.address)),
            ("linkedAt".into(), s(format_time(&w.linked_at))),
        ]);
        self.put(entry, "attribute_not_exists(PK)")
    }

    fn raise_registry_in_transaction(&self) -> StoreResult<TransactWriteItem> {
        self.update(registry_version_key(), |u| {
            u.update_expression("ADD v :one")
                .expression_attribute_values(":one", AttributeValue::N("1".into()))
        })
    }

    /// One more on the owner's counter `name`, refused at `max`; `from_watched`: one watched
    /// less too (a watched wallet linked).
    fn count_one_more(
        &self,
        owner: &str,
        name: &'static str,
        max: usize,
        from_watched: bool,
    ) -> StoreResult<TransactWriteItem> {
        let expression = if from_watched {
            format!("ADD {name} :one, {WATCHED} :less")
        } else {
            format!("ADD {name} :one")
        };
        self.update(counter_key(owner), |u| {
            let u = u
                .update_expression(expression)
                .condition_expression(format!("attribute_not_exists({name}) OR {name} < :max"))
                .expression_attribute_values(":one", AttributeValue::N("1".into()))
                .expression_attribute_values(":max", AttributeValue::N(max.to_string()));
            if from_watched {
                u.expression_attribute_values(":less", AttributeValue::N("-1".into()))
            } else {
                u
            }
        })
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
            self.use_challenge(c, w)?,
            self.put(wallet_item(w), "attribute_not_exists(PK)")?,
            self.registry_entry(w)?,
            self.raise_registry_in_transaction()?,
            self.count_one_more(&w.owner, LINKED, MAX_WALLETS_PER_USER, false)?,
        ];
        let held_already = |held: Option<&Item>| held.is_some();
        self.linked_or_why(items, Some(c), w, held_already).await
    }

    async fn watch(&self, w: &LinkedWallet) -> StoreResult<LinkOutcome> {
        let items = vec![
            self.put(wallet_item(w), "attribute_not_exists(PK)")?,
            self.registry_entry(w)?,
            self.raise_registry_in_transaction()?,
            self.count_one_more(&w.owner, WATCHED, MAX_WATCHED_PER_USER, false)?,
        ];
        let held_already = |held: Option<&Item>| held.is_some();
        self.linked_or_why(items, None, w, held_already).await
    }

    async fn promote(&self, c: &Challenge, w: &LinkedWallet) -> StoreResult<LinkOutcome> {
        let items = vec![
            self.use_challenge(c, w)?,
            self.update(wallet_key(&w.owner, w.chain, &w.address), |u| {
                u.update_expression("SET #kind = :kind")
                    .condition_expression("#kind = :watched")
                    .expression_attribute_names("#kind", KIND)
                    .expression_attribute_values(":kind", s(w.kind.as_str()))
                    .expression_attribute_values(":watched", s(WalletKind::Watched.as_str()))
            })?,
            self.count_one_more(&w.owner, LINKED, MAX_WALLETS_PER_USER, true)?,
        ];
        // No longer a watched wallet there (linked meanwhile, or gone): nothing to promote.
        let held_already = |held: Option<&Item>| {
            let kind = held.and_then(|i| i.get(KIND)).and_then(|k| k.as_s().ok());
            kind.map(String::as_str) != Some(WalletKind::Watched.as_str())
        };
        self.linked_or_why(items, Some(c), w, held_already).await
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
        // Its kind says which count it leaves.
        let Some(held) = self.get_item(wallet_key(owner, chain, address)).await? else {
            return Ok(false);
        };
        let counter = match wallet_from(&held)?.kind {
            WalletKind::Watched => WATCHED,
            _ => LINKED,
        };
        let wallet_items = [
            self.delete(wallet_key(owner, chain, address))?,
            self.delete(registry_key(owner, chain, address))?,
        ];
        let unlinked = self
            .unlink_with_holdings(owner, chain, address, wallet_items, counter)
            .await?;
        if unlinked {
            self.raise_registry_version().await?;
        }
        Ok(unlinked)
    }
}
