//! What the store reads, counted by the store itself for the cost benchmark (DynamoDB-compatible
//! test servers do not report real consumed capacity). Off unless asked for: a Lambda pays
//! nothing for it.

use super::keys::Item;
use aws_sdk_dynamodb::types::AttributeValue;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Counts of reads, as DynamoDB would bill them.
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

    pub(super) fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Records items read by one request; `per_item` units as `GetItem`/`BatchGetItem` bill,
    /// else summed as a `Query` bills.
    pub(super) fn items(&self, counter: &AtomicU64, items: &[Item], per_item: bool) {
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
                    AttributeValue::B(b) => b.as_ref().len() as u64,
                    _ => 8,
                }
        })
        .sum()
}

/// Which counter a read adds to.
#[derive(Debug, Clone, Copy)]
pub(super) enum ReadKind {
    PositionItems,
    ListKeys,
    CounterItems,
}

/// The store's handle on the metrics: nothing at all unless enabled.
#[derive(Debug, Clone, Default)]
pub(super) struct Meter(pub(super) Option<Arc<ReadMetrics>>);

impl Meter {
    pub(super) fn request(&self) {
        if let Some(metrics) = &self.0 {
            metrics.request();
        }
    }

    /// Records items read by one request; `per_item` as `GetItem`/`BatchGetItem` bill, else
    /// summed as a `Query` bills.
    pub(super) fn items(&self, kind: ReadKind, items: &[Item], per_item: bool) {
        if let Some(metrics) = &self.0 {
            let counter = match kind {
                ReadKind::PositionItems => &metrics.position_items,
                ReadKind::ListKeys => &metrics.list_keys,
                ReadKind::CounterItems => &metrics.counter_items,
            };
            metrics.items(counter, items, per_item);
        }
    }
}
