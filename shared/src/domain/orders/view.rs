//! How a position shows its order: an open's wallet, token, deadline and transactions; a
//! requested close's times and its transaction.

use crate::domain::model::{
    calls_of, format_time, ActionView, ChainOrder, ClosingView, OrderKind, OrderView,
    PositionEntry, Source, Status, TransactionRequest,
};

impl ChainOrder {
    /// The transactions to send now: while a Permit2 batch waits for its signature, all but the
    /// last (which spends it, answered again once the signature is given).
    pub fn sendable(&self) -> &[TransactionRequest] {
        let waiting = usize::from(self.permit.is_some());
        &self.transactions[..self.transactions.len().saturating_sub(waiting)]
    }

    /// The EIP-712 typed data of the Permit2 batch waiting for the wallet's signature.
    pub fn permit_to_sign(&self) -> Option<serde_json::Value> {
        let chain_id = self.transactions.first()?.chain_id;
        Some(self.permit.as_ref()?.typed_data(chain_id))
    }
}

/// A position opened on chain as the API shows it: its valued view with the order's wallet,
/// hash and (while it waits) transactions, and the liquidity the mint will create.
pub fn with_open_order(entry: PositionEntry, order: &ChainOrder, liquidity: u128) -> PositionEntry {
    let mut view = match entry {
        PositionEntry::Valued(view) => view,
        PositionEntry::Unvalued(mut unvalued) => {
            unvalued.source = Source::Wallet;
            return PositionEntry::Unvalued(unvalued);
        }
        other => return other,
    };
    view.source = Source::Wallet;
    let waiting = view.status == Status::Pending;
    if waiting {
        view.liquidity = Some(liquidity.to_string());
    }
    view.order = Some(OrderView {
        wallet: order.wallet.clone(),
        token_id: None,
        expires_at: format_time(&order.expires_at),
        transaction_hash: order.hash.clone(),
        transactions: waiting.then(|| order.sendable().to_vec()),
        calls: waiting.then(|| calls_of(order.sendable())),
        permit: waiting.then(|| order.permit_to_sign()).flatten(),
        moved_from: order.moved.clone(),
    });
    PositionEntry::Valued(view)
}

/// A close requested through the API while it waits for the chain.
pub fn closing_view(order: &ChainOrder) -> Option<ClosingView> {
    (order.kind == OrderKind::Close).then(|| ClosingView {
        requested_at: format_time(&order.requested_at),
        expires_at: format_time(&order.expires_at),
        transaction_hash: order.hash.clone(),
    })
}

/// An action (collect, harvest, increase, decrease, a move) requested through the API while it
/// waits for the chain.
pub fn action_view(order: &ChainOrder) -> Option<ActionView> {
    matches!(
        order.kind,
        OrderKind::Collect
            | OrderKind::Harvest
            | OrderKind::Increase
            | OrderKind::Decrease
            | OrderKind::Rebalance
    )
    .then(|| ActionView {
        kind: order.kind,
        requested_at: format_time(&order.requested_at),
        expires_at: format_time(&order.expires_at),
        transaction_hash: order.hash.clone(),
    })
}
