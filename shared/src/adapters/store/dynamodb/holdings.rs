//! Wallet positions on the table: the positions themselves are position items like any other
//! (with the last read as the `holding` attribute), found by their key items
//! `U#{owner}` / `H#{chain}#{manager}#{token}` (naming the id, taken in the insert's own
//! transaction, so a position read twice keeps one id); a later read replaces the item in one
//! transaction conditioned on the read it replaces, moving its list entries and counts when
//! its status changes.

use super::errors::build_error;
use super::item::{position_item, same_order, text, ORDER};
use super::keys::{
    counter_attribute, holding_index, holding_prefix, list_key, pending_key, position_key, s,
    status_variants, user_pk, variants, Item,
};
use super::store::DynamoDbStore;
use crate::application::ports::{StoreError, StoreResult};
use crate::domain::model::{Chain, ChainOrder, Position, Status};
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem};
use std::collections::{BTreeMap, HashMap};

/// The most positions a wallet's unlink removes in its own transaction: eighteen items each
/// (the item, its key item, eight list entries, eight page copies), with the wallet's two and
/// the counters, within DynamoDB's 100.
const UNLINK_IN_ONE: usize = 5;

impl DynamoDbStore {
    /// The owner's positions read from `wallet` on `chain`: one Query of their key items, then
    /// the positions.
    pub(super) async fn holdings_of(
        &self,
        owner: &str,
        chain: Chain,
        wallet: &str,
    ) -> StoreResult<Vec<Position>> {
        let mut ids = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk AND begins_with(SK, :h)")
                .expression_attribute_values(":pk", s(user_pk(owner)))
                .expression_attribute_values(":h", s(holding_prefix(chain)))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(super::errors::classify)?;
            for item in page.items() {
                if text(item, "wallet")? == wallet {
                    ids.push(text(item, "id")?.to_string());
                }
            }
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }
        self.fetch_positions(owner, &ids).await
    }

    /// The owner's position under a holding key: its key item (naming the id), then the item.
    pub(super) async fn holding_keyed(
        &self,
        owner: &str,
        chain: Chain,
        key: &str,
    ) -> StoreResult<Option<Position>> {
        // A key is `{chain}#{manager}#{token}`; its item's sort key `H#` and the key.
        if !key.starts_with(&format!("{chain}#")) {
            return Ok(None);
        }
        let index = HashMap::from([
            ("PK".into(), s(user_pk(owner))),
            ("SK".into(), s(format!("H#{key}"))),
        ]);
        let Some(index) = self.item(index, &["id"]).await? else {
            return Ok(None);
        };
        let id = text(&index, "id")?.to_string();
        Ok(self.fetch_positions(owner, &[id]).await?.pop())
    }

    /// One transaction: the item replaced if it still holds `previous`'s read and status, the
    /// status's list entries moved and its counts adjusted.
    /// A read that moved the position to another of the owner's wallets also rewrites its key
    /// item, which names the wallet its reads are found by.
    pub(super) async fn replace_holding(
        &self,
        read: &Position,
        previous: &Position,
    ) -> StoreResult<()> {
        let height = previous.holding.as_ref().map_or(0, |h| h.height);
        let wallet = previous.holding.as_ref().map_or("", |h| &h.wallet);
        let (order_condition, order) = same_order(previous);
        // Items from before `holdingWallet` have none: their height alone holds them.
        let mut put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(position_item(read)))
            .condition_expression(format!(
                "#s = :from AND holdingHeight = :height AND \
                 (attribute_not_exists(holdingWallet) OR holdingWallet = :wallet) AND \
                 {order_condition}"
            ))
            .expression_attribute_names("#s", "status")
            .expression_attribute_names("#o", ORDER)
            .expression_attribute_values(":from", s(previous.status.as_str()))
            .expression_attribute_values(":height", AttributeValue::N(height.to_string()))
            .expression_attribute_values(":wallet", s(wallet.to_string()));
        if let Some(order) = order {
            put = put.expression_attribute_values(":order", order);
        }
        let put = put.build().map_err(build_error)?;
        let mut items = vec![TransactWriteItem::builder().put(put).build()];
        let (owner, id) = (&read.owner, &read.id);
        let current = variants(read.status, read.chain, read.source());
        let left = if read.status == previous.status {
            Vec::new()
        } else {
            status_variants(previous.status, read.chain, read.source())
        };
        items.extend(self.page_writes(&position_item(read), (owner, id), &current, &left)?);
        if let (Some(now), Some(before)) = (&read.holding, &previous.holding) {
            if now.wallet != before.wallet {
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(holding_index(read, now)))
                    .build()
                    .map_err(build_error)?;
                items.push(TransactWriteItem::builder().put(put).build());
            }
        }
        if read.status != previous.status {
            let old = left;
            let new = status_variants(read.status, read.chain, read.source());
            for v in &old {
                items.push(self.delete(list_key(v, owner, id))?);
            }
            for v in &new {
                items.push(self.put(list_key(v, owner, id), "attribute_not_exists(PK)")?);
            }
            items.push(self.count_update(owner, &new, &old, &[])?);
        }
        self.transact(items, None).await
    }

    /// One transaction: the item replaced with `position`'s order if it still holds
    /// `previous` in `position`'s status (and, for a wallet position, `position`'s read); an active position joins its pool's pending index
    /// with an order (the sync follows its close) and leaves it without.
    pub(super) async fn replace_order(
        &self,
        position: &Position,
        previous: Option<&ChainOrder>,
    ) -> StoreResult<()> {
        self.transact(self.order_writes(position, previous)?, None)
            .await
    }

    /// The writes of [`Self::replace_order`]: the position conditioned on its stored order
    /// (and read), its page copies, and its pending index entry joined or left.
    pub(super) fn order_writes(
        &self,
        position: &Position,
        previous: Option<&ChainOrder>,
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let stored = Position {
            order: previous.cloned().map(Box::new),
            ..position.clone()
        };
        let (order_condition, order) = same_order(&stored);
        // A wallet position's read as well: a newer read stored meanwhile is never undone.
        let read_condition = match &position.holding {
            Some(_) => " AND holdingHeight = :height",
            None => "",
        };
        let mut put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(position_item(position)))
            .condition_expression(format!("#s = :s AND {order_condition}{read_condition}"))
            .expression_attribute_names("#s", "status")
            .expression_attribute_names("#o", ORDER)
            .expression_attribute_values(":s", s(position.status.as_str()));
        if let Some(order) = order {
            put = put.expression_attribute_values(":order", order);
        }
        if let Some(holding) = &position.holding {
            put = put.expression_attribute_values(
                ":height",
                AttributeValue::N(holding.height.to_string()),
            );
        }
        let mut items = vec![TransactWriteItem::builder()
            .put(put.build().map_err(build_error)?)
            .build()];
        let every = variants(position.status, position.chain, position.source());
        let (owner, id) = (position.owner.as_str(), position.id.as_str());
        items.extend(self.page_writes(&position_item(position), (owner, id), &every, &[])?);
        if position.status == Status::Active {
            let (p, id) = (position, &position.id);
            match (&position.order, previous) {
                (Some(_), None) => items.push(self.pending_entry(position)?),
                (None, Some(_)) => items
                    .push(self.delete(pending_key(p.chain, p.protocol, &p.pool, id, &p.owner))?),
                _ => {}
            }
        }
        Ok(items)
    }

    /// The deletes of one wallet position: its item, its key item and its list entries; and
    /// the list variants whose counts it held.
    fn holding_deletes(
        &self,
        position: &Position,
    ) -> StoreResult<(Vec<TransactWriteItem>, Vec<String>)> {
        let (owner, id) = (&position.owner, &position.id);
        let every = variants(position.status, position.chain, position.source());
        let mut items = vec![self.delete(position_key(owner, id))?];
        if let Some(holding) = &position.holding {
            let index = holding_index(position, holding);
            let key = [("PK", &index["PK"]), ("SK", &index["SK"])]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            let delete = Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key))
                .build()
                .map_err(build_error)?;
            items.push(TransactWriteItem::builder().delete(delete).build());
        }
        for v in &every {
            items.push(self.delete(list_key(v, owner, id))?);
        }
        items.extend(self.page_writes(&Item::new(), (owner, id), &[], &every)?);
        Ok((items, every))
    }

    /// Unlinks a wallet with its positions: in one transaction (the wallet, its registry
    /// entry, each position's items, and one counters update) when it holds at most
    /// [`UNLINK_IN_ONE`] positions; past that, its positions first, one transaction each, then
    /// the wallet's. `false` when the wallet is not linked.
    pub(super) async fn unlink_with_holdings(
        &self,
        owner: &str,
        chain: Chain,
        wallet: &str,
        wallet_items: [TransactWriteItem; 2],
        counter: &str,
    ) -> StoreResult<bool> {
        let positions = self.holdings_of(owner, chain, wallet).await?;
        let mut items = Vec::from(wallet_items);
        let mut counts: BTreeMap<String, i64> = BTreeMap::from([(counter.to_string(), -1)]);
        if positions.len() <= UNLINK_IN_ONE {
            for position in &positions {
                let (deletes, every) = self.holding_deletes(position)?;
                items.extend(deletes);
                for v in every {
                    *counts.entry(counter_attribute(&v)).or_default() -= 1;
                }
            }
        } else {
            self.remove_holdings_of(owner, chain, wallet).await?;
        }
        let sums: Vec<(String, String)> = counts
            .into_iter()
            .map(|(name, n)| (name, n.to_string()))
            .collect();
        let sums: Vec<(&str, String)> = sums.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        items.push(self.count_update(owner, &[], &[], &sums)?);
        match self.transact(items, None).await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Each of the wallet's positions removed in a transaction of its own: the item, its key
    /// item, its list entries and counts.
    pub(super) async fn remove_holdings_of(
        &self,
        owner: &str,
        chain: Chain,
        wallet: &str,
    ) -> StoreResult<u64> {
        let mut removed = 0;
        for position in self.holdings_of(owner, chain, wallet).await? {
            let (mut items, every) = self.holding_deletes(&position)?;
            items.push(self.count_update(owner, &[], &every, &[])?);
            match self.transact(items, None).await {
                Ok(()) => removed += 1,
                // Removed meanwhile (a racing unlink).
                Err(StoreError::Conflict) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(removed)
    }
}
