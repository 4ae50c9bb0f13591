//! The wallet routes: a challenge to sign, the link that answers it, the list, the unlink, each
//! read from its request and carried out by `application::wallets`. Signatures and messages are
//! never logged.

use crate::application::app::App;
use crate::application::wallets::{self, LinkRequest};
use crate::domain::model::Chain;
use crate::domain::wallets::address::canonical;
use crate::edge::caller::{json_body, owner};
use crate::edge::error::ApiError;
use crate::edge::http::json_response;
use crate::edge::validation::json_object;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Deserialize;
use std::str::FromStr;

type Reply = Result<Response<Body>, ApiError>;

/// The longest message a link body may carry (ours are far shorter).
const MAX_MESSAGE_BYTES: usize = 2048;

/// The longest signature a link body may carry: 0x and 16,384 hex digits (a contract wallet's,
/// wrapped for ERC-6492, runs to a few thousand).
const MAX_SIGNATURE_CHARS: usize = 2 + 16_384;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChallengeBody {
    chain: String,
    address: String,
    /// Seconds the challenge may be answered in (600 unless asked).
    ttl: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkBody {
    chain: String,
    address: String,
    message: Option<String>,
    signature: Option<String>,
    /// `true`: watched without a signature (no message nor signature then).
    watch: Option<bool>,
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
/// wallet only, valid for ten minutes (or `ttl` seconds, up to a week), answered once.
pub async fn create_challenge(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let body: ChallengeBody = json_object(json_body(request)?)?;
    let (chain, address) = wallet_of(&body.chain, &body.address)?;
    let lifetime = body.ttl.map(std::time::Duration::from_secs);
    let issued = wallets::challenge(app, owner, (chain, address), lifetime).await?;
    Ok(json_response(StatusCode::CREATED, &issued))
}

/// `POST /wallets`: links the wallet whose signature answers the caller's challenge (or, with
/// `watch: true` and no signature, watches the address), then reads its positions once.
pub async fn link_wallet(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    let body: LinkBody = json_object(json_body(request)?)?;
    let (chain, address) = wallet_of(&body.chain, &body.address)?;
    let wallet = match (body.watch, body.message, body.signature) {
        (Some(true), None, None) => wallets::watch(app, owner, chain, address).await?,
        (Some(true), _, _) => {
            return Err(ApiError::bad_request(
                "a watched address takes no message nor signature: send watch alone, or link \
                 it by its signature without watch",
            ))
        }
        (_, Some(message), Some(signature)) => {
            if message.len() > MAX_MESSAGE_BYTES || signature.len() > MAX_SIGNATURE_CHARS {
                return Err(ApiError::bad_request(format!(
                    "message is at most {MAX_MESSAGE_BYTES} bytes and signature \
                     {MAX_SIGNATURE_CHARS} characters"
                )));
            }
            let asked = LinkRequest {
                chain,
                address,
                message,
                signature,
            };
            wallets::link(app, owner, asked).await?
        }
        _ => {
            return Err(ApiError::bad_request(
                "message and signature are required to link a wallet (or watch: true to watch \
                 an address without them)",
            ))
        }
    };
    Ok(json_response(StatusCode::CREATED, &wallet))
}

/// `GET /wallets`: the caller's linked wallets.
pub async fn list_wallets(app: &App, request: &Request) -> Reply {
    let owner = owner(request)?;
    Ok(json_response(
        StatusCode::OK,
        &wallets::list(app, &owner).await?,
    ))
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
    wallets::unlink(app, &owner, chain, &address).await?;
    Ok(Response::builder()
        .status(StatusCode::NO_CONTENT)
        .body(Body::Empty)
        .unwrap_or_default())
}
