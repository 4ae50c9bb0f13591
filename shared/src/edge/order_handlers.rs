//! `POST /positions/{id}/transactions`: the hash of the mint, withdraw or action the wallet sent,
//! which the sync follows (`application::orders`), or the signature of the Permit2 batch the
//! order waits for (`application::permits`). The service builds and follows; the owner's
//! wallet signs.

use crate::application::app::App;
use crate::application::{orders, permits};
use crate::edge::caller::{json_body, owner, position_id};
use crate::edge::error::ApiError;
use crate::edge::handlers::{accepted_position, ok_position};
use crate::edge::idempotency::guarded;
use crate::edge::validation::{parse_report, Reported};
use lambda_http::{Body, Request, Response};

/// `POST /positions/{id}/transactions` `{"hash"}`: records the hash on the position's waiting
/// order (a later hash replaces it: wallets replace transactions to speed them up); 202.
/// `{"signature"}`: the order's last transaction answered with the signed Permit2 batch; 200.
pub async fn report_transaction(app: &App, request: &Request) -> Result<Response<Body>, ApiError> {
    let caller = owner(request)?;
    let caller = caller.as_str();
    guarded(app, request, caller, |claim| async move {
        let reported = parse_report(json_body(request)?)?;
        let id = position_id(request)?;
        Ok(match reported {
            Reported::Hash(hash) => {
                let answering = claim.as_ref().map(|c| c.answering(accepted_position));
                let answering = answering.as_deref();
                accepted_position(
                    &orders::report_transaction(app, caller, &id, &hash, answering).await?,
                )
            }
            Reported::Signature(signature) => {
                let answering = claim.as_ref().map(|c| c.answering(ok_position));
                let answering = answering.as_deref();
                ok_position(&permits::sign_permit(app, caller, &id, &signature, answering).await?)
            }
        })
    })
    .await
}
