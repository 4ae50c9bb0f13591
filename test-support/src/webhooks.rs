//! A webhook receiver of the test's own on loopback: it keeps every request it gets (headers
//! and body, in order) and answers the statuses its script says (then 200), a redirect where
//! the script says so; and the Standard Webhooks check of what it got.

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl Received {
    pub fn id(&self) -> String {
        self.header("webhook-id")
    }

    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }

    /// Whether `secret` (`whsec_…`) signed it, as the `standardwebhooks` crate checks.
    pub fn signed_by(&self, secret: &str) -> bool {
        let mut headers = http::HeaderMap::new();
        for (name, value) in &self.headers {
            headers.insert(name.clone(), value.clone());
        }
        standardwebhooks::Webhook::new(secret)
            .unwrap()
            .verify(self.body.as_bytes(), &headers)
            .is_ok()
    }
}

/// What the receiver answers a request: a status, or a redirect to `location`.
#[derive(Debug, Clone)]
pub enum Answer {
    Status(u16),
    Redirect(String),
}

pub struct Receiver {
    /// `http://127.0.0.1:{port}/hook`
    pub url: String,
    pub port: u16,
    got: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<Answer>>>,
    task: JoinHandle<()>,
}

impl Receiver {
    /// Serves on a free loopback port; answers `script` in order, then 200.
    pub async fn start(script: Vec<Answer>) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let (kept, answers) = (got.clone(), script.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (kept, answers) = (kept.clone(), answers.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let (kept, answers) = (kept.clone(), answers.clone());
                        async move {
                            let headers = request.headers().clone();
                            let body = request.into_body().collect().await?.to_bytes();
                            let body = String::from_utf8_lossy(&body).into_owned();
                            kept.lock().unwrap().push(Received { headers, body });
                            let answer = answers.lock().unwrap().pop_front();
                            let mut response = Response::new(Full::new(Bytes::new()));
                            match answer.unwrap_or(Answer::Status(200)) {
                                Answer::Status(status) => {
                                    *response.status_mut() =
                                        hyper::StatusCode::from_u16(status).unwrap();
                                }
                                Answer::Redirect(location) => {
                                    *response.status_mut() = hyper::StatusCode::FOUND;
                                    response
                                        .headers_mut()
                                        .insert(hyper::header::LOCATION, location.parse().unwrap());
                                }
                            }
                            Ok::<_, hyper::Error>(response)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver {
            url: format!("http://127.0.0.1:{port}/hook"),
            port,
            got,
            script,
            task,
        }
    }

    /// Every request so far, in the order received.
    pub fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Answers `script` to the next requests (then 200).
    pub fn answer(&self, script: Vec<Answer>) {
        *self.script.lock().unwrap() = VecDeque::from(script);
    }

    /// Waits (up to 30 s) until it has got `n` requests; all it got.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        for _ in 0..600 {
            let got = self.got();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the receiver got {} of {n} requests", self.got().len());
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}
