//! [`DynamoDbStore`]: positions, list entries and counters on the one table.
//!
//! Every change to a position is one `TransactWriteItems`, so positions, list entries and
//! counters never drift (`bulk_import`, for backfills into an idle table, is the one exception).

use super::errors::{back_off, build_error, classify_transaction};
use super::item::{
    closing_attributes, page_body, page_copy, position_from, position_item, realized_of,
    same_order, text, ORDER, REALIZED_COST_BASIS, REALIZED_PNL,
};
use super::keys::{
    counter_attribute, counter_key, holding_index, list_key, list_pk, page_key, pending_key,
    pending_pk, position_key, s, status_variants, variant, variants, Item,
};
use super::metrics::{Meter, ReadKind, ReadMetrics};
use crate::application::ports::{PortfolioInputs, PositionStore, StoreError, StoreResult};
use crate::domain::model::{
    Chain, ChainOrder, Closing, Filter, KeyAnswer, KeyClaim, Page, PageRequest, Position, Protocol,
    Realized, Status,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem, Update};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use std::sync::Arc;

#[derive(Clone)]
pub struct DynamoDbStore {
    pub(super) client: Client,
    pub(super) table: String,
    pub(super) meter: Meter,
    /// The wallet registry as last read, with its version: shared by the clones of a store (one
    /// Lambda container's, local-api's), re-read only when the version moved.
    pub(super) registry: Arc<std::sync::Mutex<Option<RegistrySnapshot>>>,
}

/// The wallet registry as one read found it, at a version (issue 37: a sync reads the
/// version, one item, and the whole registry only when it moved).
pub(super) struct RegistrySnapshot {
    pub(super) version: u64,
    pub(super) read_at: std::time::Instant,
    pub(super) wallets: Vec<crate::domain::wallets::LinkedWallet>,
}

impl DynamoDbStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoDbStore {
            client,
            table: table.into(),
            meter: Meter::default(),
            registry: Arc::default(),
        }
    }

    /// Counts every read from now on (the cost benchmark); off by default.
    pub fn with_read_metrics(mut self) -> Self {
        self.meter = Meter(Some(Arc::default()));
        self
    }

    /// The reads counted so far, if counting is on.
    pub fn read_metrics(&self) -> Option<&ReadMetrics> {
        self.meter.0.as_deref()
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub(super) fn put(&self, item: Item, condition: &str) -> Result<TransactWriteItem, StoreError> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// The position's entry in its pool's pending index, naming it for the sync.
    pub(super) fn pending_entry(&self, p: &Position) -> Result<TransactWriteItem, StoreError> {
        let mut item = pending_key(p.chain, p.protocol, &p.pool, &p.id, &p.owner);
        item.insert("owner".into(), s(&p.owner));
        item.insert("id".into(), s(&p.id));
        self.put(item, "attribute_not_exists(PK)")
    }

    pub(super) fn delete(&self, key: Item) -> Result<TransactWriteItem, StoreError> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key))
            .condition_expression("attribute_exists(PK)")
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }

    /// The page copies of `item` (a position item, as its transaction leaves it): a Put in
    /// each variant of `current`, a Delete in each of `left`. Neither is conditioned: the
    /// position's own write in the same transaction is, and a position stored before page
    /// copies existed has none to delete.
    pub(super) fn page_writes(
        &self,
        item: &Item,
        (owner, id): (&str, &str),
        current: &[String],
        left: &[String],
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let mut writes = Vec::new();
        if !current.is_empty() {
            let body = page_body(item)?;
            for v in current {
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(page_copy(&body, v, owner, id)))
                    .build()
                    .map_err(build_error)?;
                writes.push(TransactWriteItem::builder().put(put).build());
            }
        }
        for v in left {
            let delete = Delete::builder()
                .table_name(&self.table)
                .set_key(Some(page_key(v, owner, id)))
                .build()
                .map_err(build_error)?;
            writes.push(TransactWriteItem::builder().delete(delete).build());
        }
        Ok(writes)
    }

    /// `ADD` to counters: +1 for `up` variants, -1 for `down` ones, and the `sums` (attribute,
    /// decimal number) added as they are.
    pub(super) fn count_update(
        &self,
        owner: &str,
        up: &[String],
        down: &[String],
        sums: &[(&str, String)],
    ) -> Result<TransactWriteItem, StoreError> {
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(counter_key(owner)));
        let counters = up
            .iter()
            .map(|v| (counter_attribute(v), "1".to_string()))
            .chain(
                down.iter()
                    .map(|v| (counter_attribute(v), "-1".to_string())),
            )
            .chain(sums.iter().map(|(name, n)| (name.to_string(), n.clone())));
        let mut clauses = Vec::new();
        for (i, (attribute, delta)) in counters.enumerate() {
            clauses.push(format!("#c{i} :d{i}"));
            update = update
                .expression_attribute_names(format!("#c{i}"), attribute)
                .expression_attribute_values(format!(":d{i}"), AttributeValue::N(delta));
        }
        let update = update
            .update_expression(format!("ADD {}", clauses.join(", ")))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// One transaction moving a position from `from` to `to`: the status (conditioned on
    /// `from`) with `set` attributes, the status list entries and page copies moved, the other
    /// page copies rewritten, the status counters adjusted and `sums` added to the owner's
    /// totals. The copies are made from the position as read, so the write is also conditioned
    /// on what else could change it meanwhile (its order, its wallet read); when that is what
    /// failed, the position is read again and moved again.
    async fn transition(
        &self,
        owner: &str,
        id: &str,
        (from, to): (Status, Status),
        (set, extra): (Vec<(String, AttributeValue)>, Vec<TransactWriteItem>),
        sums: &[(&str, String)],
        answer: Option<&KeyAnswer>,
    ) -> StoreResult<()> {
        const ATTEMPTS: usize = 3;
        for attempt in 1.. {
            let position = self.get(owner, id).await?.ok_or(StoreError::Conflict)?;
            if position.status != from {
                return Err(StoreError::Conflict);
            }
            if from == to {
                return Ok(());
            }
            let items = self.transition_items(&position, to, (&set, &extra), sums, answer)?;
            match self.transact(items, None).await {
                Err(StoreError::Conflict) if attempt < ATTEMPTS => continue,
                other => return other,
            }
        }
        unreachable!("the loop returns")
    }

    /// The items of [`Self::transition`]'s transaction for `position` as read.
    fn transition_items(
        &self,
        position: &Position,
        to: Status,
        (set, extra): (&[(String, AttributeValue)], &[TransactWriteItem]),
        sums: &[(&str, String)],
        answer: Option<&KeyAnswer>,
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let (owner, id, from) = (
            position.owner.as_str(),
            position.id.as_str(),
            position.status,
        );
        let source = position.source();
        let old_moved = status_variants(from, position.chain, source);
        let new_moved = status_variants(to, position.chain, source);
        // An on-chain open confirmed: its order is done.
        let order_done =
            from == Status::Pending && to == Status::Active && position.order.is_some();
        let mut moved = position_item(position);
        moved.insert("status".into(), s(to.as_str()));
        moved.extend(set.iter().cloned());
        if order_done {
            moved.remove(ORDER);
        }
        let (order_condition, order) = same_order(position);
        let (read_condition, height) = match &position.holding {
            Some(h) => (
                "holdingHeight = :height",
                Some(AttributeValue::N(h.height.to_string())),
            ),
            None => ("attribute_not_exists(holdingHeight)", None),
        };
        let mut expression = "SET #s = :to".to_string();
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(position_key(owner, id)))
            .condition_expression(format!(
                "#s = :from AND {order_condition} AND {read_condition}"
            ))
            .expression_attribute_names("#s", "status")
            .expression_attribute_names("#o", ORDER)
            .expression_attribute_values(":to", s(to.as_str()))
            .expression_attribute_values(":from", s(from.as_str()));
        if let Some(order) = order {
            update = update.expression_attribute_values(":order", order);
        }
        if let Some(height) = height {
            update = update.expression_attribute_values(":height", height);
        }
        for (i, (name, value)) in set.iter().enumerate() {
            expression.push_str(&format!(", #a{i} = :a{i}"));
            update = update
                .expression_attribute_names(format!("#a{i}"), name)
                .expression_attribute_values(format!(":a{i}"), value.clone());
        }
        if order_done {
            expression.push_str(" REMOVE #o");
        }
        let update = update
            .update_expression(expression)
            .build()
            .map_err(build_error)?;
        let mut items = vec![TransactWriteItem::builder().update(update).build()];
        items.extend(extra.iter().cloned());
        for v in &old_moved {
            items.push(self.delete(list_key(v, owner, id))?);
        }
        for v in &new_moved {
            items.push(self.put(list_key(v, owner, id), "attribute_not_exists(PK)")?);
        }
        let current = variants(to, position.chain, source);
        items.extend(self.page_writes(&moved, (owner, id), &current, &old_moved)?);
        // Pending, or active with a close waiting for the chain: on the pool's pending index.
        if from == Status::Pending || (from == Status::Active && position.order.is_some()) {
            let p = position;
            items.push(self.delete(pending_key(p.chain, p.protocol, &p.pool, id, owner))?);
        }
        if to == Status::Pending {
            items.push(self.pending_entry(position)?);
        }
        items.push(self.count_update(owner, &new_moved, &old_moved, sums)?);
        if let Some(answer) = answer {
            items.push(self.answer_item(answer)?);
        }
        Ok(items)
    }

    /// The writes of an insert: the position (`attribute_not_exists`), its wallet key, its
    /// list entries, page copies and pending entry, the counters, and `answer`.
    pub(super) fn insert_writes(
        &self,
        position: &Position,
        answer: Option<&KeyAnswer>,
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let variants = variants(position.status, position.chain, position.source());
        let item = position_item(position);
        let mut items = vec![self.put(item.clone(), "attribute_not_exists(PK)")?];
        if let Some(holding) = &position.holding {
            // The holding's key, taken once: a racing refresh's insert of it fails whole.
            items.push(self.put(holding_index(position, holding), "attribute_not_exists(PK)")?);
        }
        for v in &variants {
            items.push(self.put(
                list_key(v, &position.owner, &position.id),
                "attribute_not_exists(PK)",
            )?);
        }
        items.extend(self.page_writes(&item, (&position.owner, &position.id), &variants, &[])?);
        if position.status == Status::Pending {
            items.push(self.pending_entry(position)?);
        }
        items.push(self.count_update(&position.owner, &variants, &[], &[])?);
        if let Some(answer) = answer {
            items.push(self.answer_item(answer)?);
        }
        Ok(items)
    }

    pub(super) async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
        token: Option<String>,
    ) -> StoreResult<()> {
        self.client
            .transact_write_items()
            .set_transact_items(Some(items))
            .set_client_request_token(token)
            .send()
            .await
            .map_err(classify_transaction)?;
        Ok(())
    }
}

#[async_trait]
impl PositionStore for DynamoDbStore {
    /// One transaction: the position (`attribute_not_exists`), its four list entries and the
    /// four counters. The id as client request token makes the SDK's retries idempotent.
    async fn insert_answering(
        &self,
        position: &Position,
        answer: Option<&KeyAnswer>,
    ) -> StoreResult<()> {
        let items = self.insert_writes(position, answer)?;
        self.transact(items, Some(position.id.clone())).await
    }

    /// The move's two sides in one transaction: their items are distinct (each position's own
    /// keys, one counter update).
    async fn set_move_order(
        &self,
        position: &Position,
        previous: Option<&ChainOrder>,
        opening: &Position,
    ) -> StoreResult<()> {
        let mut items = self.order_writes(position, previous)?;
        items.extend(self.insert_writes(opening, None)?);
        self.transact(items, Some(opening.id.clone())).await
    }

    async fn get(&self, owner: &str, id: &str) -> StoreResult<Option<Position>> {
        self.meter.request();
        let item = self.item(position_key(owner, id), &[]).await?;
        if let Some(item) = &item {
            self.meter
                .items(ReadKind::PositionItems, std::slice::from_ref(item), true);
        }
        item.as_ref().map(position_from).transpose()
    }

    /// The counter for `total` and the page's items: at offset 0 both at once, the page one
    /// `Query` of the variant's page items; deeper, the counter first (an offset past the end
    /// reads nothing more), the key-only entries before the page, then the page's items after
    /// the last of them.
    async fn list(&self, owner: &str, filter: Filter, page: PageRequest) -> StoreResult<Page> {
        let variant = variant(filter);
        let limit = u64::from(page.limit);
        if page.offset == 0 {
            let (total, items) = tokio::try_join!(
                self.count(owner, &variant),
                self.page_items(&variant, owner, None, limit)
            )?;
            return Ok(Page { items, total });
        }
        let total = self.count(owner, &variant).await?;
        let mut items = Vec::new();
        if page.offset < total {
            let before = self.list_ids(list_pk(&variant, owner), page.offset).await?;
            // Fewer than `offset` entries: the list shrank since the count, the page is empty.
            if let (Some(last), true) = (before.last(), before.len() as u64 == page.offset) {
                let wanted = limit.min(total - page.offset);
                items = self.page_items(&variant, owner, Some(last), wanted).await?;
            }
        }
        Ok(Page { items, total })
    }

    /// The open positions from the `active` and `pending` page items: one paginated `Query`
    /// each, newest first.
    async fn open_positions(&self, owner: &str) -> StoreResult<Vec<Position>> {
        let of = |status| {
            let filter = Filter {
                status: Some(status),
                ..Filter::default()
            };
            async move {
                self.page_items(&variant(filter), owner, None, u64::MAX)
                    .await
            }
        };
        let (active, pending) = tokio::try_join!(of(Status::Active), of(Status::Pending))?;
        Ok(active.into_iter().chain(pending).collect())
    }

    /// One consistent Query of the pool's pending partition, then each position's item.
    async fn pending_on(
        &self,
        chain: Chain,
        protocol: Protocol,
        pool: &str,
    ) -> StoreResult<Vec<Position>> {
        let pk = pending_pk(chain, protocol, pool);
        let entries = self.entries(pk, false, u64::MAX).await?;
        let entries = entries
            .iter()
            .map(|item| Ok((text(item, "owner")?, text(item, "id")?)))
            .collect::<StoreResult<Vec<_>>>()?;
        // Few at a time (offers made while the pool was stale): one read each.
        let mut found = Vec::with_capacity(entries.len());
        for (owner, id) in entries {
            // One that moved on between the two reads (closed, activated) is skipped.
            if let Some(p) = self.get(owner, id).await? {
                let waiting = p.status == Status::Pending
                    || (p.status == Status::Active && p.order.is_some());
                if waiting {
                    found.push(p);
                }
            }
        }
        Ok(found)
    }

    async fn holdings(
        &self,
        owner: &str,
        chain: Chain,
        wallet: &str,
    ) -> StoreResult<Vec<Position>> {
        self.holdings_of(owner, chain, wallet).await
    }

    async fn holding(&self, owner: &str, chain: Chain, key: &str) -> StoreResult<Option<Position>> {
        self.holding_keyed(owner, chain, key).await
    }

    async fn update_holding(&self, read: &Position, previous: &Position) -> StoreResult<()> {
        self.replace_holding(read, previous).await
    }

    async fn set_order(
        &self,
        position: &Position,
        previous: Option<&ChainOrder>,
    ) -> StoreResult<()> {
        self.replace_order(position, previous).await
    }

    async fn remove_holdings(&self, owner: &str, chain: Chain, wallet: &str) -> StoreResult<u64> {
        self.remove_holdings_of(owner, chain, wallet).await
    }

    /// [`Self::set_status`] to active, with the sized attributes in the same transaction.
    /// [`Self::set_status`] from pending to active with the sized (or minted) figures; a
    /// position minted from a wallet takes its wallet key in the same transaction.
    async fn activate(&self, activated: &Position) -> StoreResult<()> {
        let set = position_item(activated)
            .into_iter()
            .filter(|(name, _)| !matches!(name.as_str(), "PK" | "SK" | "status"))
            .collect();
        let mut key = Vec::new();
        if let Some(holding) = &activated.holding {
            key.push(self.put(
                holding_index(activated, holding),
                "attribute_not_exists(PK)",
            )?);
        }
        self.transition(
            &activated.owner,
            &activated.id,
            (Status::Pending, Status::Active),
            (set, key),
            &[],
            None,
        )
        .await
    }

    /// One transaction: the status (conditioned on `from`), the status list entries moved,
    /// and the status counters adjusted.
    async fn set_status(&self, owner: &str, id: &str, from: Status, to: Status) -> StoreResult<()> {
        self.transition(owner, id, (from, to), (Vec::new(), Vec::new()), &[], None)
            .await
    }

    /// [`Self::set_status`] to closed, with the frozen figures and the realized totals added
    /// in the same transaction.
    async fn close_answering(
        &self,
        owner: &str,
        id: &str,
        from: Status,
        closing: &Closing,
        answer: Option<&KeyAnswer>,
    ) -> StoreResult<()> {
        if from == Status::Closed {
            return Err(StoreError::Conflict);
        }
        // Normalized (a zero PnL as `0`, not `0.000000000000`): moto's `ADD` keeps a sum of a
        // zero and such a zero as `0E-12`, which its next `ADD` cannot read (DynamoDB reads both).
        let sums = [
            (REALIZED_PNL, closing.pnl_usd.normalized().to_plain_string()),
            (
                REALIZED_COST_BASIS,
                closing.cost_basis_usd.normalized().to_plain_string(),
            ),
        ];
        // Concurrent closes of one item can cancel each other's transactions
        // (`TransactionConflict`, transient) instead of failing the condition: a retry's read
        // then sees the winner's close and answers `Conflict`, so losers get 409, not 503.
        let mut attempt = 0;
        loop {
            back_off(&mut attempt, "close contention").await?;
            let result = self
                .transition(
                    owner,
                    id,
                    (from, Status::Closed),
                    (closing_attributes(closing), Vec::new()),
                    &sums,
                    answer,
                )
                .await;
            match result {
                Err(StoreError::Unavailable(_)) if attempt < 4 => continue,
                other => return other,
            }
        }
    }

    async fn claim_key(
        &self,
        owner: &str,
        key: &str,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> StoreResult<KeyClaim> {
        self.claim(owner, key, fingerprint, now).await
    }

    async fn answer_key(&self, answer: &KeyAnswer) -> StoreResult<()> {
        self.answer(answer).await
    }

    async fn release_key(&self, owner: &str, key: &str, lease: &str) -> StoreResult<()> {
        self.release(owner, key, lease).await
    }

    async fn realized(&self, owner: &str) -> StoreResult<Realized> {
        let item = self
            .counters(owner, &[REALIZED_PNL, REALIZED_COST_BASIS])
            .await?;
        realized_of(&item)
    }

    async fn portfolio_inputs(&self, owner: &str) -> StoreResult<PortfolioInputs> {
        Box::pin(self.portfolio_reads(owner)).await
    }
}
