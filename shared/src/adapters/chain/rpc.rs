//! JSON-RPC 2.0 over HTTP(S): single calls and batches, with a timeout, a size cap and counts of
//! what was sent. The URL carries the provider's API key: it is never logged nor put in an
//! error, which names only the kind of failure.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::CONTENT_TYPE;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The largest answer read (Solana tick arrays are 10 kB each, base64).
const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// The most calls sent in one batch; larger batches are split (providers cap them).
pub const MAX_BATCH: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    #[error("the RPC endpoint did not answer within {0:?}")]
    Timeout(Duration),
    #[error("cannot reach the RPC endpoint")]
    Unreachable,
    #[error("the RPC endpoint answered HTTP {0}")]
    Status(u16),
    #[error("JSON-RPC error {code}: {message}")]
    Rpc {
        code: i64,
        message: String,
        /// The error's hex `data`, where it has some: a reverted call's return data.
        data: Option<String>,
    },
    #[error("malformed JSON-RPC answer: {0}")]
    Malformed(&'static str),
}

/// What one sync sent to one endpoint.
#[derive(Debug, Default)]
pub struct RpcStats {
    pub requests: AtomicU64,
    pub calls: AtomicU64,
}

pub struct RpcClient {
    endpoint: hyper::Uri,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    pub stats: RpcStats,
}

impl std::fmt::Debug for RpcClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL: it holds the API key.
        f.debug_struct("RpcClient").finish_non_exhaustive()
    }
}

impl RpcClient {
    /// An `http` or `https` URL; HTTPS trusts the Mozilla roots compiled in (`webpki-roots`).
    pub fn new(url: &str, timeout: Duration) -> Result<RpcClient, String> {
        let endpoint: hyper::Uri = url
            .parse()
            .map_err(|_| "the RPC URL is not a valid URL".to_string())?;
        if !matches!(endpoint.scheme_str(), Some("http" | "https")) || endpoint.host().is_none() {
            return Err("the RPC URL must be http:// or https:// with a host".into());
        }
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(https);
        Ok(RpcClient {
            endpoint,
            client,
            timeout,
            stats: RpcStats::default(),
        })
    }

    async fn post(&self, body: Value) -> Result<Value, RpcError> {
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let request = hyper::Request::post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|_| RpcError::Unreachable)?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|_| RpcError::Unreachable)?;
            let status = response.status();
            if !status.is_success() {
                return Err(RpcError::Status(status.as_u16()));
            }
            Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .map_err(|_| RpcError::Malformed("the answer was cut off or too large"))
        };
        let bytes = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| RpcError::Timeout(self.timeout))??;
        serde_json::from_slice(&bytes).map_err(|_| RpcError::Malformed("not JSON"))
    }

    /// One call.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.stats.calls.fetch_add(1, Ordering::Relaxed);
        let answer = self
            .post(json!({"jsonrpc": "2.0", "id": 0, "method": method, "params": params}))
            .await?;
        // An error about the request itself may carry a null id; anything else must be ours.
        let id = answer.get("id");
        let ours = id.and_then(Value::as_u64) == Some(0)
            || (id.is_some_and(Value::is_null) && answer.get("error").is_some());
        if !ours {
            return Err(RpcError::Malformed("the answer's id is not the call's"));
        }
        outcome(answer)
    }

    /// Calls sent as JSON-RPC batches of at most [`MAX_BATCH`]; answers in call order, matched
    /// by id (a batch's answers may come in any order). A batch that fails as a whole fails
    /// every call in it, and so does an answer whose ids are not exactly the batch's: one
    /// missing, repeated or unknown id and no answer of that batch is taken.
    pub async fn batch(&self, calls: &[(&str, Value)]) -> Vec<Result<Value, RpcError>> {
        let mut results = Vec::with_capacity(calls.len());
        for (chunk_index, chunk) in calls.chunks(MAX_BATCH).enumerate() {
            let first_id = chunk_index * MAX_BATCH;
            self.stats
                .calls
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
            let body: Vec<Value> = chunk
                .iter()
                .enumerate()
                .map(|(i, (method, params))| {
                    json!({"jsonrpc": "2.0", "id": first_id + i, "method": method, "params": params})
                })
                .collect();
            match self.post(Value::Array(body)).await {
                Ok(Value::Array(answers)) => match matched(answers, first_id, chunk.len()) {
                    Some(slots) => results.extend(slots.into_iter().map(outcome)),
                    None => results.extend(chunk.iter().map(|_| {
                        Err(RpcError::Malformed(
                            "the batch answer's ids are not exactly its calls' ids",
                        ))
                    })),
                },
                // A single error object (e.g. batches refused) or anything else fails the chunk.
                Ok(answer) => {
                    let error = outcome(answer)
                        .err()
                        .unwrap_or(RpcError::Malformed("a batch answered with one object"));
                    results.extend(chunk.iter().map(|_| Err(error.clone())));
                }
                Err(error) => results.extend(chunk.iter().map(|_| Err(error.clone()))),
            }
        }
        results
    }
}

/// The answers of a batch whose calls have ids `first_id..first_id + len`, in call order; `None`
/// unless each id is answered exactly once and no other id is.
fn matched(answers: Vec<Value>, first_id: usize, len: usize) -> Option<Vec<Value>> {
    if answers.len() != len {
        return None;
    }
    let mut slots: Vec<Option<Value>> = vec![None; len];
    for answer in answers {
        let slot = answer
            .get("id")
            .and_then(Value::as_u64)
            .and_then(|id| usize::try_from(id).ok()?.checked_sub(first_id))
            .filter(|i| *i < len)?;
        if slots[slot].replace(answer).is_some() {
            return None;
        }
    }
    slots.into_iter().collect()
}

/// A JSON-RPC answer's `result`, or its `error`.
fn outcome(mut answer: Value) -> Result<Value, RpcError> {
    if let Some(error) = answer.get("error").filter(|e| !e.is_null()) {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message: String = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .take(160)
            .collect();
        // A revert's data (an `Error(string)` is a few hundred hex digits); nothing else kept.
        let data = error
            .get("data")
            .and_then(Value::as_str)
            .filter(|d| d.starts_with("0x") && d.len() <= 4096)
            .map(str::to_string);
        return Err(RpcError::Rpc {
            code,
            message,
            data,
        });
    }
    match answer.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(RpcError::Malformed("neither result nor error")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(ids: &[Value]) -> Vec<Value> {
        ids.iter()
            .map(|id| json!({"jsonrpc": "2.0", "id": id, "result": id}))
            .collect()
    }

    #[test]
    fn a_batch_answer_is_taken_only_with_exactly_its_ids() {
        // Any order is fine.
        let slots = matched(answers(&[json!(101), json!(100)]), 100, 2).unwrap();
        assert_eq!(slots[0]["result"], 100);
        for ids in [
            vec![json!(100), json!(100)],             // repeated
            vec![json!(100)],                         // missing
            vec![json!(100), json!(101), json!(102)], // extra
            vec![json!(100), json!(102)],             // unknown
            vec![json!(100), json!("101")],           // another type
            vec![json!(100), json!(99)],              // before the batch
        ] {
            assert!(matched(answers(&ids), 100, 2).is_none(), "{ids:?}");
        }
    }
}
