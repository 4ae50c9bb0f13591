//! `Idempotency-Key` on the two writes (`POST /positions`, `POST /positions/{id}/close`): a
//! retried request is answered with the first one's stored response instead of running twice.
//! Semantics in the README (decision 33); the store keeps the keys (`claim_key` and friends).

use crate::application::app::App;
use crate::application::keys;
use crate::domain::model::{KeyAnswer, KeyClaim, PositionEntry, StoredResponse, KEY_RETENTION};
use crate::edge::error::ApiError;
use crate::edge::http::request_id;
use lambda_http::http::{header, HeaderValue, StatusCode};
use lambda_http::{Body, Request, Response};
use sha2::{Digest, Sha256};
use std::future::Future;

pub const KEY_HEADER: &str = "idempotency-key";
/// Set on a replayed response.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";
pub const MAX_KEY_LENGTH: usize = 255;

/// A claimed key: what a guarded write needs to store its answer in its own transaction.
#[derive(Debug, Clone)]
pub struct Claim {
    owner: String,
    key: String,
    lease: String,
    at: chrono::DateTime<chrono::Utc>,
}

impl Claim {
    /// The answer completing this claim with `response`.
    pub fn answer(&self, response: &Response<Body>) -> KeyAnswer {
        KeyAnswer {
            owner: self.owner.clone(),
            key: self.key.clone(),
            lease: self.lease.clone(),
            response: stored(response),
            expires_at: self.at
                + chrono::Duration::from_std(KEY_RETENTION).unwrap_or(chrono::Duration::MAX),
        }
    }

    /// What a write keeps for this key: the position it shows, rendered by `render` as the
    /// response (the same the request gets).
    pub fn answering(
        &self,
        render: fn(&PositionEntry) -> Response<Body>,
    ) -> Box<dyn Fn(&PositionEntry) -> KeyAnswer + Send + Sync + '_> {
        Box::new(move |shown| self.answer(&render(shown)))
    }
}

/// The request's key: absent, or 1–255 printable ASCII characters (else 400).
pub fn key_of(request: &Request) -> Result<Option<String>, ApiError> {
    let mut values = request.headers().get_all(KEY_HEADER).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let invalid = || {
        ApiError::bad_request(format!(
            "Idempotency-Key must be one value of 1 to {MAX_KEY_LENGTH} printable ASCII characters"
        ))
    };
    if values.next().is_some() {
        return Err(invalid());
    }
    let bytes = value.as_bytes();
    if bytes.is_empty()
        || bytes.len() > MAX_KEY_LENGTH
        || !bytes.iter().all(|b| (0x20..0x7f).contains(b))
    {
        return Err(invalid());
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

/// What makes two requests the same request: method, path and body bytes (SHA-256, hex).
pub fn fingerprint(request: &Request) -> String {
    let mut hash = Sha256::new();
    for part in [
        request.method().as_str().as_bytes(),
        request.uri().path().as_bytes(),
        request.body().as_ref(),
    ] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn stored(response: &Response<Body>) -> StoredResponse {
    StoredResponse {
        status: response.status().as_u16(),
        body: String::from_utf8_lossy(response.body().as_ref()).into_owned(),
        location: response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    }
}

/// The stored response as first sent, marked as a replay.
pub fn replay(stored: StoredResponse) -> Response<Body> {
    let mut response = Response::new(Body::Text(stored.body));
    *response.status_mut() = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(location) = stored.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.insert(header::LOCATION, location);
    }
    headers.insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    response
}

/// Runs the write `run` under the request's idempotency key, if it has one: a replay, a 422 or
/// a 409 instead when the key says so. `run` gets the claim and must store its success answer
/// in its own write; a final client error is stored here (the same bad request stays bad); a
/// server error, or a conflict a retry may resolve ([`ApiError::is_final`]), frees the key.
pub async fn guarded<F, Fut>(
    app: &App,
    request: &Request,
    owner: &str,
    run: F,
) -> Result<Response<Body>, ApiError>
where
    F: FnOnce(Option<Claim>) -> Fut,
    Fut: Future<Output = Result<Response<Body>, ApiError>>,
{
    let as_kept = |stored: StoredResponse| async move { Ok(replay(stored)) };
    guarded_replaying(app, request, owner, run, as_kept).await
}

/// [`guarded`], a replay answered by `replayed` from the kept answer (a create whose answer
/// holds what is never kept in the clear), marked as a replay.
pub async fn guarded_replaying<F, Fut, R, RFut>(
    app: &App,
    request: &Request,
    owner: &str,
    run: F,
    replayed: R,
) -> Result<Response<Body>, ApiError>
where
    F: FnOnce(Option<Claim>) -> Fut,
    Fut: Future<Output = Result<Response<Body>, ApiError>>,
    R: FnOnce(StoredResponse) -> RFut,
    RFut: Future<Output = Result<Response<Body>, ApiError>>,
{
    let Some(key) = key_of(request)? else {
        return run(None).await;
    };
    let now = app.clock.now();
    let lease =
        match keys::claim(app, owner, &key, &fingerprint(request), now).await? {
            KeyClaim::Claimed { lease } => lease,
            KeyClaim::Answered(stored) => {
                let mut response = replayed(stored).await?;
                response
                    .headers_mut()
                    .insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
                return Ok(response);
            }
            KeyClaim::OtherRequest => return Err(ApiError::UnprocessableEntity(
                "this Idempotency-Key was used for a different request (method, path or body): \
                 use a new key for a new request"
                    .into(),
            )),
            KeyClaim::InFlight {
                retry_after_seconds,
            } => {
                return Err(ApiError::KeyInFlight {
                    retry_after_seconds,
                })
            }
        };
    let claim = Claim {
        owner: owner.to_string(),
        key,
        lease,
        at: now,
    };
    match run(Some(claim.clone())).await {
        Ok(response) => Ok(response),
        Err(error) if error.is_final() => {
            let response = error.render(&request_id(request));
            keys::keep(app, &claim.answer(&response)).await;
            Ok(response)
        }
        Err(error) => {
            keys::release(app, owner, &claim.key, &claim.lease).await;
            Err(error)
        }
    }
}
