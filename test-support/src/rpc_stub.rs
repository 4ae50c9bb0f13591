//! A loopback JSON-RPC endpoint whose answers the test decides: recorded accounts, faults.

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// What the stub does with one HTTP request (a JSON-RPC call or batch).
pub enum Reply {
    /// Answers 200 with this JSON.
    Json(Value),
    /// Answers this HTTP status with an empty body.
    Status(u16),
    /// Answers 200 with this text as it is.
    Raw(String),
    /// Never answers.
    Hang,
}

type Answer = dyn Fn(Value) -> std::pin::Pin<Box<dyn std::future::Future<Output = Reply> + Send>>
    + Send
    + Sync;

pub struct RpcStub {
    pub url: String,
    requests: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl RpcStub {
    /// Serves on a free loopback port; `answer` sees each request's parsed body.
    pub async fn start(answer: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> RpcStub {
        let answer = Arc::new(answer);
        RpcStub::serve(Arc::new(move |body: Value| {
            let reply = answer(&body);
            Box::pin(async move { reply })
        }))
        .await
    }

    /// A node in front of `upstream`: each call (alone or in a batch) is answered by
    /// `intercept` where it gives an answer (a result or an error object), else by `upstream`.
    pub async fn proxy(
        upstream: &str,
        intercept: impl Fn(&Value) -> Option<Result<Value, Value>> + Send + Sync + 'static,
    ) -> RpcStub {
        let upstream =
            Arc::new(shared::chain::RpcClient::new(upstream, Duration::from_secs(30)).unwrap());
        let intercept = Arc::new(intercept);
        RpcStub::serve(Arc::new(move |body: Value| {
            let (upstream, intercept) = (upstream.clone(), intercept.clone());
            Box::pin(async move {
                let calls = match &body {
                    Value::Array(calls) => calls.clone(),
                    call => vec![call.clone()],
                };
                let mut answers = Vec::with_capacity(calls.len());
                for call in &calls {
                    let result = match intercept(call) {
                        Some(answer) => answer,
                        None => upstream
                            .call(
                                call["method"].as_str().unwrap_or_default(),
                                call["params"].clone(),
                            )
                            .await
                            .map_err(|e| json!({"code": -32000, "message": e.to_string()})),
                    };
                    answers.push(envelope(call, result));
                }
                match body {
                    Value::Array(_) => Reply::Json(Value::Array(answers)),
                    _ => Reply::Json(answers.pop().unwrap_or(Value::Null)),
                }
            })
        }))
        .await
    }

    async fn serve(answer: Arc<Answer>) -> RpcStub {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (answer, counted) = (answer.clone(), counted.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let (answer, counted) = (answer.clone(), counted.clone());
                        async move {
                            counted.fetch_add(1, Ordering::SeqCst);
                            let body = request.into_body().collect().await?.to_bytes();
                            let parsed: Value =
                                serde_json::from_slice(&body).unwrap_or(Value::Null);
                            let (status, text) = match answer(parsed).await {
                                Reply::Json(value) => (200, value.to_string()),
                                Reply::Raw(text) => (200, text),
                                Reply::Status(status) => (status, String::new()),
                                Reply::Hang => {
                                    tokio::time::sleep(Duration::from_secs(3600)).await;
                                    (200, String::new())
                                }
                            };
                            Ok::<_, hyper::Error>(
                                Response::builder()
                                    .status(status)
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(text)))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        RpcStub {
            url,
            requests,
            task,
        }
    }

    /// HTTP requests served so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for RpcStub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Answers a call or a batch call by call: `result` gives each call's result or error object.
pub fn each_call(body: &Value, result: impl Fn(&Value) -> Result<Value, Value>) -> Reply {
    let one = |call: &Value| envelope(call, result(call));
    match body {
        Value::Array(calls) => Reply::Json(Value::Array(calls.iter().map(one).collect())),
        call => Reply::Json(one(call)),
    }
}

/// The JSON-RPC answer to `call`: its result, or its error object.
fn envelope(call: &Value, result: Result<Value, Value>) -> Value {
    match result {
        Ok(value) => json!({"jsonrpc": "2.0", "id": call["id"], "result": value}),
        Err(error) => json!({"jsonrpc": "2.0", "id": call["id"], "error": error}),
    }
}
