//! The one way a webhook is sent: HTTPS (HTTP to loopback only where local-api allows it), a
//! 10-second timeout, no redirect followed (hyper follows none: a 3xx is an answer like any
//! other), and every address a host resolves to checked when it connects: a name resolving to
//! a loopback, private, link-local or metadata address is refused then, and nothing is sent.

use crate::application::alert_ports::{Sent, WebhookSender};
use crate::domain::webhooks::address::{check_address, Reach};
use crate::domain::webhooks::delivery::TIMEOUT_SECONDS;
use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Resolves a host and refuses the connection if any address is not permitted (a name that
/// also resolves to a private address is refused whole: which one a client picks is not ours
/// to guess).
#[derive(Clone)]
pub struct CheckedResolver {
    reach: Reach,
}

impl tower_service::Service<Name> for CheckedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let reach = self.reach;
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            if found.is_empty() {
                return Err(std::io::Error::other(format!("{name} resolves to nothing")));
            }
            for address in &found {
                check_address(address.ip(), reach).map_err(|refused| {
                    std::io::Error::new(std::io::ErrorKind::PermissionDenied, refused.to_string())
                })?;
            }
            Ok(found.into_iter())
        })
    }
}

pub struct HttpsSender {
    client: Client<HttpsConnector<HttpConnector<CheckedResolver>>, Full<Bytes>>,
    timeout: Duration,
}

impl HttpsSender {
    pub fn new(reach: Reach) -> Result<HttpsSender, String> {
        let mut http = HttpConnector::new_with_resolver(CheckedResolver { reach });
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_secs(TIMEOUT_SECONDS)));
        let builder = hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots();
        let https = match reach {
            Reach::PublicHttpsOnly => builder.https_only(),
            Reach::AlsoLoopbackHttp => builder.https_or_http(),
        }
        .enable_http1()
        .wrap_connector(http);
        Ok(HttpsSender {
            client: Client::builder(TokioExecutor::new()).build(https),
            timeout: Duration::from_secs(TIMEOUT_SECONDS),
        })
    }
}

#[async_trait]
impl WebhookSender for HttpsSender {
    async fn send(&self, url: &str, headers: &[(&str, String)], body: &str) -> Sent {
        let started = Instant::now();
        let mut request = hyper::Request::post(url);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let request = match request
            .header("user-agent", "positions-api-webhooks/1")
            .body(Full::new(Bytes::from(body.to_string())))
        {
            Ok(r) => r,
            Err(e) => return failed(format!("the request could not be built: {e}"), started),
        };
        match tokio::time::timeout(self.timeout, self.client.request(request)).await {
            Err(_) => failed(format!("no answer within {TIMEOUT_SECONDS} s"), started),
            Ok(Err(e)) => failed(connect_error(&e), started),
            Ok(Ok(response)) => Sent {
                status: Some(response.status().as_u16()),
                error: None,
                duration_ms: started.elapsed().as_millis() as u64,
            },
        }
    }
}

fn failed(error: String, started: Instant) -> Sent {
    Sent {
        status: None,
        error: Some(error),
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

/// The innermost cause: what the connector refused, or why it could not connect.
fn connect_error(e: &hyper_util::client::legacy::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    format!("not sent: {cause}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;
    use tower_service::Service;

    /// A name is checked when connecting: one resolving to loopback is refused then, whatever
    /// it was registered as.
    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_at_connect() {
        let mut resolver = CheckedResolver {
            reach: Reach::PublicHttpsOnly,
        };
        let refused = resolver
            .call(Name::from_str("localhost").unwrap())
            .await
            .unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(refused.to_string().contains("loopback"), "{refused}");
        let mut local = CheckedResolver {
            reach: Reach::AlsoLoopbackHttp,
        };
        let found: Vec<SocketAddr> = local
            .call(Name::from_str("localhost").unwrap())
            .await
            .unwrap()
            .collect();
        assert!(found.iter().all(|a| a.ip().is_loopback()), "{found:?}");
    }
}
