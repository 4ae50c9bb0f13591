//! The production store on one DynamoDB table (design: `docs/dynamodb-design.md`).
//!
//! Keys (`PK`, `SK`, both strings; no secondary indexes):
//! - position      `U#{owner}` / `P#{id}`: the full item, read by `GetItem` and `BatchGetItem`.
//! - counters      `U#{owner}` / `COUNTS`: one number per list variant, the O(1) `total`.
//! - list entries  `IX#{variant}#{owner}` / `{id}`: key-only items, one per list variant a
//!   position appears in, queried newest first so skipping `offset` costs keys, not items.
//! - catalog       `CATALOG` / `{chain}#{protocol}#{pool}`: the pool catalog and market state.
//!
//! Every change to a position is one `TransactWriteItems`, so positions, list entries and
//! counters never drift (`bulk_import`, for backfills into an idle table, is the one exception).

use super::{PositionStore, StoreError};
use crate::app::Market;
use crate::catalog::{Catalog, PoolRecord};
use crate::model::{Chain, Filter, Page, PageRequest, Position, Protocol, Status};
use async_trait::async_trait;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, Delete, KeySchemaElement, KeyType,
    KeysAndAttributes, Put, PutRequest, ScalarAttributeType, TransactWriteItem, Update,
    WriteRequest,
};
use aws_sdk_dynamodb::Client;
use bigdecimal::BigDecimal;
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

type Item = HashMap<String, AttributeValue>;

/// Largest number of keys one `BatchGetItem` takes.
const BATCH_GET_LIMIT: usize = 100;
/// How long a warm container reuses the catalog before reading it again.
pub const CATALOG_TTL: Duration = Duration::from_secs(60);
const CATALOG_PK: &str = "CATALOG";

/// Reads made by the store, for the cost benchmark (DynamoDB-compatible test servers do not
/// report real consumed capacity, so the store counts for itself).
#[derive(Debug, Default)]
pub struct ReadMetrics {
    pub requests: AtomicU64,
    pub position_items: AtomicU64,
    pub list_keys: AtomicU64,
    pub counter_items: AtomicU64,
    /// Item sizes as DynamoDB bills them (attribute names plus values).
    pub bytes: AtomicU64,
    /// Read capacity units a strongly consistent read of these items costs.
    pub read_units: AtomicU64,
}

impl ReadMetrics {
    pub fn snapshot(&self) -> [u64; 6] {
        [
            &self.requests,
            &self.position_items,
            &self.list_keys,
            &self.counter_items,
            &self.bytes,
            &self.read_units,
        ]
        .map(|c| c.load(Ordering::Relaxed))
    }

    fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Records items read by one request; `per_item` units as `GetItem`/`BatchGetItem` bill,
    /// else summed as a `Query` bills.
    fn items(&self, counter: &AtomicU64, items: &[Item], per_item: bool) {
        counter.fetch_add(items.len() as u64, Ordering::Relaxed);
        let sizes: Vec<u64> = items.iter().map(item_size).collect();
        let total: u64 = sizes.iter().sum();
        self.bytes.fetch_add(total, Ordering::Relaxed);
        let units = if per_item {
            sizes.iter().map(|s| s.div_ceil(4096).max(1)).sum()
        } else {
            total.div_ceil(4096).max(1)
        };
        self.read_units.fetch_add(units, Ordering::Relaxed);
    }
}

fn item_size(item: &Item) -> u64 {
    item.iter()
        .map(|(name, value)| {
            name.len() as u64
                + match value {
                    AttributeValue::S(s) | AttributeValue::N(s) => s.len() as u64,
                    _ => 8,
                }
        })
        .sum()
}

fn retry() -> RetryConfig {
    RetryConfig::standard().with_max_attempts(3)
}

/// Timeouts well inside the function's 10 s: a hung connection fails fast and is retried.
fn timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(1))
        .operation_attempt_timeout(Duration::from_secs(2))
        .operation_timeout(Duration::from_secs(6))
        .build()
}

/// The CAs every AWS endpoint chains to (Amazon Trust Services).
const AWS_ROOT_CAS: &str = include_str!("../../data/amazon-trust-services-roots.pem");

/// HTTPS (rustls with ring) that trusts the Amazon Trust Services roots only. Parsing the
/// system's whole CA bundle at every cold start costs milliseconds; five embedded roots cost
/// microseconds, and AWS endpoints need no others.
fn aws_https_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
    let trust = TrustStore::empty().with_pem_certificate(AWS_ROOT_CAS.as_bytes());
    let context = TlsContext::builder()
        .with_trust_store(trust)
        .build()
        .expect("a trust store of valid certificates");
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .tls_context(context)
        .build_https()
}

/// The client of a Lambda, built once per cold start: region and credentials from the
/// environment variables Lambda sets (`aws-config`'s environment providers: no profile files,
/// no metadata service), an optional endpoint override (`DYNAMODB_ENDPOINT`), standard retries
/// with 3 attempts, explicit timeouts.
pub async fn client_from_env() -> Client {
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::environment::EnvironmentVariableRegionProvider::new())
        .credentials_provider(
            aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
        )
        .http_client(aws_https_client())
        .retry_config(retry())
        .timeout_config(timeouts())
        .load()
        .await;
    let mut builder = aws_sdk_dynamodb::config::Builder::from(&config);
    if let Ok(url) = std::env::var("DYNAMODB_ENDPOINT") {
        builder = builder.endpoint_url(url);
    }
    Client::from_conf(builder.build())
}

/// The client of a tool run by a person (`local-api seed-catalog`): the full default chain of
/// `aws-config` (profiles, SSO, environment).
pub async fn client_from_default_chain() -> Client {
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(aws_https_client())
        .retry_config(retry())
        .timeout_config(timeouts())
        .load()
        .await;
    Client::new(&config)
}

/// A client for a local DynamoDB-API server (moto, DynamoDB Local): fixed region and dummy
/// credentials, the same retries, and patient timeouts because such servers are slow under load.
pub fn local_client(endpoint: &str) -> Client {
    local_client_with_timeout(endpoint, Duration::from_secs(60))
}

/// [`local_client`] with another per-attempt timeout (fault tests use short ones).
pub fn local_client_with_timeout(endpoint: &str, attempt_timeout: Duration) -> Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "local",
        ))
        .endpoint_url(endpoint)
        .http_client(aws_https_client())
        .retry_config(retry())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(5))
                .operation_attempt_timeout(attempt_timeout)
                .build(),
        )
        .build();
    Client::from_conf(config)
}

#[derive(Clone)]
pub struct DynamoDbStore {
    client: Client,
    table: String,
    pub metrics: Arc<ReadMetrics>,
}

/// A list variant: which filter a list entry or counter serves.
fn variant(filter: Filter) -> String {
    match (filter.status, filter.chain) {
        (None, None) => "all".to_string(),
        (Some(s), None) => format!("s#{s}"),
        (None, Some(c)) => format!("c#{c}"),
        (Some(s), Some(c)) => format!("sc#{s}#{c}"),
    }
}

/// The four list variants a position with this status and chain belongs to.
fn variants(status: Status, chain: Chain) -> [String; 4] {
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

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn user_pk(owner: &str) -> String {
    format!("U#{owner}")
}

/// The tag before the owner makes the key prefix-free: no owner name can forge another's key.
fn list_pk(variant: &str, owner: &str) -> String {
    format!("IX#{variant}#{owner}")
}

fn counter_attribute(variant: &str) -> String {
    format!("n#{variant}")
}

fn position_key(owner: &str, id: &str) -> Item {
    HashMap::from([
        ("PK".into(), s(user_pk(owner))),
        ("SK".into(), s(format!("P#{id}"))),
    ])
}

fn counter_key(owner: &str) -> Item {
    HashMap::from([("PK".into(), s(user_pk(owner))), ("SK".into(), s("COUNTS"))])
}

fn list_key(variant: &str, owner: &str, id: &str) -> Item {
    HashMap::from([
        ("PK".into(), s(list_pk(variant, owner))),
        ("SK".into(), s(id)),
    ])
}

fn position_item(p: &Position) -> Item {
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
        (
            "createdAt".into(),
            s(crate::model::format_time(&p.created_at)),
        ),
    ]);
    item
}

fn malformed(what: &str) -> StoreError {
    StoreError::Failure(format!("malformed position item: {what}").into())
}

fn text<'a>(item: &'a Item, name: &str) -> Result<&'a str, StoreError> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .ok_or_else(|| malformed(name))
}

fn parsed<T: FromStr>(item: &Item, name: &str) -> Result<T, StoreError> {
    let raw = match item.get(name) {
        Some(AttributeValue::N(n)) => n.as_str(),
        _ => text(item, name)?,
    };
    raw.parse().map_err(|_| malformed(name))
}

fn position_from(item: &Item) -> Result<Position, StoreError> {
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

/// Error codes that mean "try again later": throttling, or DynamoDB itself failing.
fn is_transient(code: &str) -> bool {
    matches!(
        code,
        "ProvisionedThroughputExceededException"
            | "ThrottlingException"
            | "RequestLimitExceeded"
            | "InternalServerError"
            | "ServiceUnavailable"
            | "TransactionInProgressException"
    )
}

/// Sorts an SDK failure into the store's error classes.
fn classify<E>(error: SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    // The whole chain (code, message, cause) for the log; clients never see it.
    let detail = || DisplayErrorContext(&error).to_string().into();
    match &error {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            StoreError::Unavailable(detail())
        }
        SdkError::ServiceError(service) if service.err().code().is_some_and(is_transient) => {
            StoreError::Unavailable(detail())
        }
        _ => StoreError::Failure(detail()),
    }
}

/// A cancelled transaction: a failed condition is a conflict, contention or throttling is
/// transient, anything else a failure. Nothing of a cancelled transaction is written.
fn classify_transaction(
    error: SdkError<TransactWriteItemsError, aws_sdk_dynamodb::config::http::HttpResponse>,
) -> StoreError {
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
        error.as_service_error()
    {
        let codes: Vec<&str> = cancelled
            .cancellation_reasons()
            .iter()
            .filter_map(|r| r.code())
            .collect();
        if codes.contains(&"ConditionalCheckFailed") {
            return StoreError::Conflict;
        }
        if codes.iter().any(|c| {
            matches!(
                *c,
                "ThrottlingError" | "TransactionConflict" | "ProvisionedThroughputExceeded"
            )
        }) {
            return StoreError::Unavailable(Box::new(error));
        }
    }
    classify(error)
}

/// Before each batch round after the first, waits with exponential backoff (25 ms doubling,
/// capped at 800 ms), as DynamoDB asks for unprocessed batch entries; gives up after 8 rounds.
async fn back_off(attempt: &mut u32, what: &'static str) -> Result<(), StoreError> {
    if *attempt >= 8 {
        return Err(StoreError::Unavailable(what.into()));
    }
    if *attempt > 0 {
        tokio::time::sleep(Duration::from_millis(25 << (*attempt).min(5))).await;
    }
    *attempt += 1;
    Ok(())
}

fn build_error(error: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Failure(Box::new(error))
}

impl DynamoDbStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoDbStore {
            client,
            table: table.into(),
            metrics: Arc::default(),
        }
    }

    /// Configured as a Lambda is: `TABLE_NAME`, plus what `client_from_env` reads.
    pub async fn from_env() -> Result<Self, StoreError> {
        let table = std::env::var("TABLE_NAME")
            .map_err(|_| StoreError::Failure("TABLE_NAME is not set".into()))?;
        Ok(DynamoDbStore::new(client_from_env().await, table))
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Creates the table if it is missing (local servers; production uses `template.yaml`).
    pub async fn ensure_table(&self) -> Result<(), StoreError> {
        let exists = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await;
        if exists.is_ok() {
            return Ok(());
        }
        let attribute = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(build_error)
        };
        let key = |name: &str, kind| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .map_err(build_error)
        };
        self.client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attribute("PK")?)
            .attribute_definitions(attribute("SK")?)
            .key_schema(key("PK", KeyType::Hash)?)
            .key_schema(key("SK", KeyType::Range)?)
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// Loads catalog records into the table (the documented seeding step); existing entries
    /// are replaced, so re-running it updates the market state.
    pub async fn seed_catalog(&self, records: &[PoolRecord]) -> Result<(), StoreError> {
        for record in records {
            let body =
                serde_json::to_string(record).map_err(|e| StoreError::Failure(Box::new(e)))?;
            let sort_key = format!("{}#{}#{}", record.chain, record.protocol, record.pool);
            self.client
                .put_item()
                .table_name(&self.table)
                .item("PK", s(CATALOG_PK))
                .item("SK", s(sort_key))
                .item("record", s(body))
                .send()
                .await
                .map_err(classify)?;
        }
        Ok(())
    }

    /// Creates the table if needed and seeds the catalog if it has none (local runs).
    pub async fn prepare_local(&self) -> Result<(), StoreError> {
        self.ensure_table().await?;
        if self.load_catalog().await.is_err() {
            self.seed_catalog(&crate::catalog::embedded_records())
                .await?;
        }
        Ok(())
    }

    /// Writes positions of a new owner in bulk (`BatchWriteItem`), with the same items and
    /// counters `insert` writes, but not atomically: for backfills and benchmarks into an
    /// otherwise idle table, where one transaction per position would be needlessly slow.
    pub async fn bulk_import(&self, owner: &str, positions: &[Position]) -> Result<(), StoreError> {
        let mut items = Vec::new();
        let mut counts: HashMap<String, u64> = HashMap::new();
        for position in positions.iter().filter(|p| p.owner == owner) {
            items.push(position_item(position));
            for v in variants(position.status, position.chain) {
                items.push(list_key(&v, owner, &position.id));
                *counts.entry(counter_attribute(&v)).or_default() += 1;
            }
        }
        let mut counter = counter_key(owner);
        counter.extend(
            counts
                .into_iter()
                .map(|(name, n)| (name, AttributeValue::N(n.to_string()))),
        );
        items.push(counter);
        for chunk in items.chunks(25) {
            let mut pending: Vec<WriteRequest> = chunk
                .iter()
                .map(|item| {
                    let put = PutRequest::builder()
                        .set_item(Some(item.clone()))
                        .build()
                        .map_err(build_error)?;
                    Ok(WriteRequest::builder().put_request(put).build())
                })
                .collect::<Result<_, StoreError>>()?;
            let mut attempt = 0u32;
            while !pending.is_empty() {
                back_off(&mut attempt, "BatchWriteItem left items unprocessed").await?;
                let output = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, pending)
                    .send()
                    .await
                    .map_err(classify)?;
                pending = output
                    .unprocessed_items()
                    .and_then(|u| u.get(&self.table))
                    .cloned()
                    .unwrap_or_default();
            }
        }
        Ok(())
    }

    /// Reads the catalog from the table.
    pub async fn load_catalog(&self) -> Result<Catalog, StoreError> {
        let mut records = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk")
                .expression_attribute_values(":pk", s(CATALOG_PK))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in page.items() {
                let record: PoolRecord = serde_json::from_str(text(item, "record")?)
                    .map_err(|e| StoreError::Failure(Box::new(e)))?;
                records.push(record);
            }
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }
        if records.is_empty() {
            return Err(StoreError::Failure(
                "the catalog is empty: run the seed step".into(),
            ));
        }
        Catalog::from_records(&records).map_err(|e| StoreError::Failure(Box::new(e)))
    }

    /// The list entries of one variant, newest first: up to `wanted` ids.
    async fn list_ids(&self, pk: String, wanted: u64) -> Result<Vec<String>, StoreError> {
        let mut ids = Vec::new();
        let mut start = None;
        while (ids.len() as u64) < wanted {
            let remaining = wanted - ids.len() as u64;
            self.metrics.request();
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk")
                .expression_attribute_values(":pk", s(pk.clone()))
                .scan_index_forward(false)
                .consistent_read(true)
                .limit(i32::try_from(remaining).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            self.metrics
                .items(&self.metrics.list_keys, page.items(), false);
            for item in page.items() {
                ids.push(text(item, "SK")?.to_string());
            }
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }
        Ok(ids)
    }

    /// Full items for `ids`, in the order given; `UnprocessedKeys` are retried with backoff.
    async fn fetch_positions(
        &self,
        owner: &str,
        ids: &[String],
    ) -> Result<Vec<Position>, StoreError> {
        let mut found: HashMap<String, Position> = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(BATCH_GET_LIMIT) {
            let mut pending: Vec<Item> = chunk.iter().map(|id| position_key(owner, id)).collect();
            let mut attempt = 0u32;
            while !pending.is_empty() {
                back_off(&mut attempt, "BatchGetItem left keys unprocessed").await?;
                let keys = KeysAndAttributes::builder()
                    .set_keys(Some(pending))
                    .consistent_read(true)
                    .build()
                    .map_err(build_error)?;
                self.metrics.request();
                let output = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, keys)
                    .send()
                    .await
                    .map_err(classify)?;
                let items = output
                    .responses()
                    .and_then(|r| r.get(&self.table))
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                self.metrics
                    .items(&self.metrics.position_items, items, true);
                for item in items {
                    let position = position_from(item)?;
                    found.insert(position.id.clone(), position);
                }
                pending = output
                    .unprocessed_keys()
                    .and_then(|u| u.get(&self.table))
                    .map(|k| k.keys().to_vec())
                    .unwrap_or_default();
            }
        }
        // A listed id without its position would mean a torn write, which transactions rule out.
        ids.iter()
            .map(|id| {
                found
                    .remove(id)
                    .ok_or_else(|| malformed("list entry without position"))
            })
            .collect()
    }

    async fn count(&self, owner: &str, variant: &str) -> Result<u64, StoreError> {
        let attribute = counter_attribute(variant);
        self.metrics.request();
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(counter_key(owner)))
            .projection_expression("#n")
            .expression_attribute_names("#n", &attribute)
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        let item = output.item().cloned().unwrap_or_default();
        self.metrics.items(
            &self.metrics.counter_items,
            std::slice::from_ref(&item),
            true,
        );
        match item.get(&attribute) {
            Some(AttributeValue::N(n)) => n.parse().map_err(|_| malformed("counter")),
            _ => Ok(0),
        }
    }

    fn put(&self, item: Item, condition: &str) -> Result<TransactWriteItem, StoreError> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    fn delete(&self, key: Item) -> Result<TransactWriteItem, StoreError> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key))
            .condition_expression("attribute_exists(PK)")
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }

    /// `ADD` to counters: +1 for `up` variants, -1 for `down` ones.
    fn count_update(
        &self,
        owner: &str,
        up: &[String],
        down: &[String],
    ) -> Result<TransactWriteItem, StoreError> {
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(counter_key(owner)));
        let mut clauses = Vec::new();
        for (i, (variant, delta)) in up
            .iter()
            .map(|v| (v, "1"))
            .chain(down.iter().map(|v| (v, "-1")))
            .enumerate()
        {
            clauses.push(format!("#c{i} :d{i}"));
            update = update
                .expression_attribute_names(format!("#c{i}"), counter_attribute(variant))
                .expression_attribute_values(
                    format!(":d{i}"),
                    AttributeValue::N(delta.to_string()),
                );
        }
        let update = update
            .update_expression(format!("ADD {}", clauses.join(", ")))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
        token: Option<String>,
    ) -> Result<(), StoreError> {
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
    async fn insert(&self, position: &Position) -> Result<(), StoreError> {
        let variants = variants(position.status, position.chain);
        let mut items = vec![self.put(position_item(position), "attribute_not_exists(PK)")?];
        for v in &variants {
            items.push(self.put(
                list_key(v, &position.owner, &position.id),
                "attribute_not_exists(PK)",
            )?);
        }
        items.push(self.count_update(&position.owner, &variants, &[])?);
        self.transact(items, Some(position.id.clone())).await
    }

    async fn get(&self, owner: &str, id: &str) -> Result<Option<Position>, StoreError> {
        self.metrics.request();
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(position_key(owner, id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        if let Some(item) = output.item() {
            self.metrics.items(
                &self.metrics.position_items,
                std::slice::from_ref(item),
                true,
            );
        }
        output.item().map(position_from).transpose()
    }

    /// The counter for `total`, the list entries up to the page's end, then full items for the
    /// page only. The first page reads counter and entries concurrently; deeper pages read the
    /// counter first so an offset past the end reads no entries at all.
    async fn list(
        &self,
        owner: &str,
        filter: Filter,
        page: PageRequest,
    ) -> Result<Page, StoreError> {
        let variant = variant(filter);
        let pk = list_pk(&variant, owner);
        let end = page.offset.saturating_add(u64::from(page.limit));
        let (total, ids) = if page.offset == 0 {
            tokio::try_join!(self.count(owner, &variant), self.list_ids(pk, end))?
        } else {
            let total = self.count(owner, &variant).await?;
            let ids = if page.offset < total {
                self.list_ids(pk, end.min(total)).await?
            } else {
                Vec::new()
            };
            (total, ids)
        };
        let skip = usize::try_from(page.offset)
            .unwrap_or(usize::MAX)
            .min(ids.len());
        let items = self.fetch_positions(owner, &ids[skip..]).await?;
        Ok(Page { items, total })
    }

    async fn open_positions(&self, owner: &str) -> Result<Vec<Position>, StoreError> {
        let (active, pending) = tokio::try_join!(
            self.list_ids(
                list_pk(
                    &variant(Filter {
                        status: Some(Status::Active),
                        chain: None
                    }),
                    owner
                ),
                u64::MAX
            ),
            self.list_ids(
                list_pk(
                    &variant(Filter {
                        status: Some(Status::Pending),
                        chain: None
                    }),
                    owner
                ),
                u64::MAX
            ),
        )?;
        let ids: Vec<String> = active.into_iter().chain(pending).collect();
        self.fetch_positions(owner, &ids).await
    }

    /// One transaction: the status (conditioned on `from`), the status list entries moved,
    /// and the status counters adjusted.
    async fn set_status(
        &self,
        owner: &str,
        id: &str,
        from: Status,
        to: Status,
    ) -> Result<(), StoreError> {
        let position = self.get(owner, id).await?.ok_or(StoreError::Conflict)?;
        if position.status != from || from == to {
            return Err(StoreError::Conflict);
        }
        let old = variants(from, position.chain);
        let new = variants(to, position.chain);
        // Index 0 ("all") and 2 (chain only) do not depend on the status.
        let (old_moved, new_moved) = (
            [old[1].clone(), old[3].clone()],
            [new[1].clone(), new[3].clone()],
        );
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(position_key(owner, id)))
            .update_expression("SET #s = :to")
            .condition_expression("#s = :from")
            .expression_attribute_names("#s", "status")
            .expression_attribute_values(":to", s(to.as_str()))
            .expression_attribute_values(":from", s(from.as_str()))
            .build()
            .map_err(build_error)?;
        let mut items = vec![TransactWriteItem::builder().update(update).build()];
        for v in &old_moved {
            items.push(self.delete(list_key(v, owner, id))?);
        }
        for v in &new_moved {
            items.push(self.put(list_key(v, owner, id), "attribute_not_exists(PK)")?);
        }
        items.push(self.count_update(owner, &new_moved, &old_moved)?);
        self.transact(items, None).await
    }
}

/// The catalog from the table, cached in the container for [`CATALOG_TTL`].
pub struct DynamoDbMarket {
    store: DynamoDbStore,
    ttl: Duration,
    cached: Mutex<Option<(Instant, Arc<Catalog>)>>,
}

impl DynamoDbMarket {
    pub fn new(store: DynamoDbStore, ttl: Duration) -> Self {
        DynamoDbMarket {
            store,
            ttl,
            cached: Mutex::new(None),
        }
    }
}

#[async_trait]
impl Market for DynamoDbMarket {
    async fn catalog(&self) -> Result<Arc<Catalog>, StoreError> {
        let mut cached = self.cached.lock().await;
        if let Some((loaded, catalog)) = cached.as_ref() {
            if loaded.elapsed() < self.ttl {
                return Ok(catalog.clone());
            }
        }
        let catalog = Arc::new(self.store.load_catalog().await?);
        *cached = Some((Instant::now(), catalog.clone()));
        Ok(catalog)
    }
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
