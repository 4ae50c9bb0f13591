//! A Permit2 batch signed by the wallet (decision 67, `"permit": "signature"`): the order's
//! last transaction, which waited for it, becomes `multicall([permitBatch, modifyLiquidities])`
//! and is run on the chain's latest block again before it is answered (the batch's signature
//! is checked there, by Permit2 itself); a run that reverts is 409 and changes nothing.

use crate::application::app::App;
use crate::application::error::{Outcome, UseCaseError};
use crate::application::keys::{keep_shown, Answering};
use crate::application::orders::{acting_from, order_chain, position_pool, runs, waiting_order};
use crate::application::ports::StoreError;
use crate::domain::holdings::entry;
use crate::domain::model::{ChainOrder, Position, PositionEntry};
use crate::domain::orders::permit::signed;
use crate::domain::orders::simulation::regassed;

/// Answers the caller's position `id`'s waiting order with `signature`, the wallet's of the
/// Permit2 batch the order showed: its last transaction with the batch, simulated again.
pub async fn sign_permit(
    app: &App,
    owner: &str,
    id: &str,
    signature: &[u8],
    answering: Answering<'_>,
) -> Outcome<PositionEntry> {
    for _ in 0..3 {
        let (position, catalog) = app.own_position(owner, id).await?;
        let now = app.clock.now();
        let waiting = waiting_order(&position, now).filter(|o| o.permit.is_some());
        let (Some(order), Some(batch)) = (waiting, waiting.and_then(|o| o.permit.as_ref())) else {
            return Err(UseCaseError::Conflict(
                "the position has no Permit2 batch waiting for a signature (one is answered \
                 with \"permit\": \"signature\" on a Uniswap v4 open or add, until its deadline)"
                    .into(),
            ));
        };
        acting_from(app, &position).await?;
        let pool = position_pool(&catalog, &position)?;
        let chain = order_chain(app, pool.chain)?;
        let transactions = order.transactions.clone();
        let signed = signed(transactions, batch, &order.wallet, signature)
            .map_err(UseCaseError::internal)?;
        let ran = runs(chain, pool, &signed, &[]).await?;
        let transactions = regassed(signed, &ran).map_err(UseCaseError::MarketStale)?;
        let answered = Position {
            order: Some(Box::new(ChainOrder {
                transactions,
                permit: None,
                ..order.clone()
            })),
            ..position.clone()
        };
        match app.store.set_order(&answered, Some(order)).await {
            Err(StoreError::Conflict) => continue,
            result => result?,
        }
        let shown = entry(&answered, &catalog, now)?;
        keep_shown(app, answering, &shown).await;
        tracing::info!(position = %id, "the signed Permit2 batch answered");
        return Ok(shown);
    }
    Err(UseCaseError::Contended(
        "the position changed while the signature was being answered: retry".into(),
    ))
}
