//! `POST /positions/{id}/transactions`: the hash of the mint, withdraw or action the wallet sent,
//! which the sync follows (`application::orders`). The service builds and follows; the owner's
//! wallet signs.

use crate::application::app::App;
use crate::application::orders;
use crate::edge::caller::{json_body, owner, position_id};
use crate::edge::error::ApiError;
use crate::edge::handlers::accepted_position;
use crate::edge::idempotency::guarded;
use crate::edge::validation::parse_transaction_hash;
use lambda_http::{Body, Request, Response};

/// `POST /positions/{id}/transactions` `{"hash"}`: records the hash on the position's waiting
/// order (a later hash replaces it: wallets replace transactions to speed them up); 202.
pub async fn report_transaction(app: &App, request: &Request) -> Result<Response<Body>, ApiError> {
    let caller = owner(request)?;
    let caller = caller.as_str();
    guarded(app, request, caller, |claim| async move {
        let hash = parse_transaction_hash(json_body(request)?)?;
        let id = position_id(request)?;
        let answering = claim.as_ref().map(|c| c.answering(accepted_position));
        let shown =
            orders::report_transaction(app, caller, &id, &hash, answering.as_deref()).await?;
        Ok(accepted_position(&shown))
    })
    .await
}
