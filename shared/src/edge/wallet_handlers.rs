//! The wallet routes: a challenge to sign, the link that answers it, the list, the unlink
//! ([`crate::domain::wallets`] holds what they check). Signatures and messages are never logged.

use crate::application::app::App;
use crate::application::wallet_reads::release_tracked;
use crate::domain::model::{format_time, Chain, ListView};
use crate::domain::wallets::address::canonical;
use crate::domain::wallets::challenge::{expires_at, message, new_nonce, nonce_of, Challenge};
use crate::domain::wallets::proof::verify;
use crate::domain::wallets::{LinkOutcome, LinkedWallet, WalletView, MAX_WALLETS_PER_USER};
use crate::edge::caller::{json_body, owner};
use crate::edge::error::ApiError;
use crate::edge::http::json_response;
use crate::edge::validation::json_object;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

type Reply = Result<Response<Body>, ApiError>;

/// The longest message or signature a link body may carry (ours are far shorter).
const MAX_MESSAGE_BYTES: usize = 2048;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChallengeBody {
    chain: String,
    address: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ChallengeView {
    chain: Chain,
    address: String,
    message: String,
    expires_at: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkBody {
    chain: String,
    address: String,
    message: String,
    signature: String,
}

/// The chain and the address in its canonical spelling, or a 400 saying what is wrong.
fn wallet_of(chain: &str, address: &str) -> Result<(Chain, String), ApiError> {
    let chain = Chain::from_str(chain)
        .map_err(|_| ApiError::bad_request(format!("chain must be one of: {}", Chain::names())))?;
    let address = canonical(chain, address)
        .map_err(|e| ApiError::bad_request(format!("address is not a {chain} address: {e}")))?;
    Ok((chain, address))
}

/// `POST /wallets/challenge`: a message for the wallet to sign, issued to the caller for that
/// wallet only, valid for ten minutes, answered once.
pub async fn create_challenge(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let body: ChallengeBody = json_object(json_body(request)?)?;
    let (chain, address) = wallet_of(&body.chain, &body.address)?;
    let catalog = app.market.catalog().await?;
    let chain_id = catalog.chain_id(chain);
    if chain != Chain::Solana && chain_id.is_none() {
        return Err(ApiError::bad_request(format!(
            "no protocol deployment is known on {chain}: its wallets cannot be linked"
        )));
    }
    let nonce = new_nonce().map_err(|e| ApiError::internal(e.to_string()))?;
    let now = app.clock.now();
    let issued_at = chrono::DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now);
    let text = message(&app.signing, chain, &address, chain_id, &nonce, issued_at);
    let challenge = Challenge {
        owner,
        chain,
        address: address.clone(),
        nonce,
        message: text.clone(),
        expires_at: expires_at(issued_at),
        used: false,
    };
    app.wallets.put_challenge(&challenge).await?;
    Ok(json_response(
        StatusCode::CREATED,
        &ChallengeView {
            chain,
            address,
            message: text,
            expires_at: format_time(&challenge.expires_at),
        },
    ))
}

/// `POST /wallets`: links the wallet whose signature answers the caller's challenge, then reads
/// its positions once.
pub async fn link_wallet(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let body: LinkBody = json_object(json_body(request)?)?;
    let (chain, address) = wallet_of(&body.chain, &body.address)?;
    if body.message.len() > MAX_MESSAGE_BYTES || body.signature.len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::bad_request(format!(
            "message and signature are at most {MAX_MESSAGE_BYTES} bytes each"
        )));
    }
    let not_issued = || {
        ApiError::bad_request(
            "message is not a challenge issued to you: ask POST /wallets/challenge for one",
        )
    };
    let nonce = nonce_of(&body.message).ok_or_else(not_issued)?;
    let challenge = app
        .wallets
        .challenge(&owner, nonce)
        .await?
        .ok_or_else(not_issued)?;
    if challenge.chain != chain || challenge.address != address {
        return Err(ApiError::bad_request(
            "the challenge was issued for another wallet: ask one for this wallet",
        ));
    }
    if challenge.message != body.message {
        return Err(ApiError::bad_request(
            "message differs from the challenge issued: sign the challenge exactly as issued",
        ));
    }
    let now = app.clock.now();
    if challenge.expires_at <= now {
        return Err(ApiError::bad_request(
            "the challenge expired: ask POST /wallets/challenge for a new one",
        ));
    }
    let used = || ApiError::bad_request("the challenge was already used: ask for a new one");
    if challenge.used {
        return Err(used());
    }
    verify(chain, &address, &body.message, &body.signature)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let wallet = LinkedWallet {
        owner,
        chain,
        address,
        linked_at: chrono::DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now),
        refreshed_at: None,
        positions: None,
        refresh_error: None,
        tokens: Vec::new(),
        retry: None,
    };
    match app.wallets.link(&challenge, &wallet).await? {
        LinkOutcome::Linked => {}
        LinkOutcome::ChallengeUsed => return Err(used()),
        LinkOutcome::AlreadyLinked => {
            return Err(ApiError::Conflict(
                "this wallet is already linked to you".into(),
            ))
        }
        LinkOutcome::TooMany => {
            return Err(ApiError::Conflict(format!(
                "you have linked {MAX_WALLETS_PER_USER} wallets, the most one user may: unlink \
                 one first"
            )))
        }
    }
    tracing::info!(chain = %wallet.chain, address = %wallet.address, "wallet linked");
    let wallet = app.refresh_wallet(wallet).await;
    Ok(json_response(
        StatusCode::CREATED,
        &WalletView::from(&wallet),
    ))
}

/// `GET /wallets`: the caller's linked wallets.
pub async fn list_wallets(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let wallets = app.wallets.wallets(&owner).await?;
    // Each EVM chain's scan progress once (a user holds at most 20 wallets on 5 chains).
    let mut scans = std::collections::BTreeMap::new();
    for chain in wallets.iter().map(|w| w.chain) {
        if chain != Chain::Solana && !scans.contains_key(&chain) {
            scans.insert(chain, app.wallets.scan_progress(chain).await?);
        }
    }
    let data: Vec<WalletView> = wallets
        .iter()
        .map(|w| WalletView::from(w).followed(scans.get(&w.chain).and_then(Option::as_ref)))
        .collect();
    let total = data.len() as u64;
    Ok(json_response(StatusCode::OK, &ListView { data, total }))
}

/// `DELETE /wallets/{chain}/{address}`: unlinks one of the caller's wallets; 404 when it is not
/// linked (an address in any letter case names the same EVM wallet).
pub async fn unlink_wallet(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let not_linked = || ApiError::NotFound("wallet not linked".into());
    let parameters = request.path_parameters_ref().ok_or_else(not_linked)?;
    let (chain, address) = match (parameters.first("chain"), parameters.first("address")) {
        (Some(chain), Some(address)) => wallet_of(chain, address).map_err(|_| not_linked())?,
        _ => return Err(not_linked()),
    };
    // Its open positions' bounds leave their pools' tracked ticks once they are gone.
    let held = app.store.holdings(&owner, chain, &address).await?;
    if !app.wallets.unlink(&owner, chain, &address).await? {
        return Err(not_linked());
    }
    // Where the wallet store keeps no positions (memory), they go after the wallet; on
    // DynamoDB they went in its unlink's transaction and none are left.
    let removed = app.store.remove_holdings(&owner, chain, &address).await?;
    if held
        .iter()
        .any(|p| p.holding.as_ref().is_some_and(|h| h.tracked))
    {
        let catalog = app.market.catalog().await?;
        release_tracked(app.market.as_ref(), &catalog, &held).await;
    }
    tracing::info!(%chain, %address, removed, "wallet unlinked");
    Ok(Response::builder()
        .status(StatusCode::NO_CONTENT)
        .body(Body::Empty)
        .unwrap_or_default())
}
