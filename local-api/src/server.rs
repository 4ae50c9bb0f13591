//! The HTTP server around the gateway: accepting with backoff, API Gateway-like timeouts and
//! limits, and an error body of the API's shape even for requests too malformed to reach it.

use crate::gateway::{Gateway, HEADERS_LIMIT};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use shared::ApiError;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// How long a client may take to send a request's head, and how long an idle keep-alive
/// connection is kept.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a request head may take in memory before hyper refuses it on its own; heads above
/// the API's 10 KiB limit but below this get the API's 431/414 body.
const MAX_HEAD_BYTES: usize = 16 * 1024 * 1024;
/// Enough header lines for any head below [`MAX_HEAD_BYTES`] the gateway then judges by size.
const MAX_HEADERS: usize = 4096;
/// The first bytes looked at before hyper parses the head: enough for any valid request line.
const PEEK_BYTES: usize = 16 * 1024;
/// Backoff between failed `accept`s (descriptor exhaustion): from 10 ms, doubling, up to 1 s.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));

/// Serves `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let mut backoff = ACCEPT_BACKOFF.0;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                backoff = ACCEPT_BACKOFF.0;
                accepted
            }
            Err(error) => {
                // Out of descriptors, most likely: retrying at once would spin.
                tracing::warn!(%error, backoff_ms = backoff.as_millis() as u64, "accept failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(ACCEPT_BACKOFF.1);
                continue;
            }
        };
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let mut stream = stream;
            match first_head(&stream).await {
                Head::Parses => {}
                Head::Malformed(error) => {
                    let _ = stream.write_all(&raw_error(error)).await;
                    let _ = stream.shutdown().await;
                    return;
                }
                // Not even a whole head within the header-read timeout: close.
                Head::Stalled => return,
            }
            let service = service_fn(move |request| {
                let gateway = gateway.clone();
                async move { Ok::<_, std::convert::Infallible>(gateway.serve(request, peer).await) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES)
                .max_headers(MAX_HEADERS)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection closed with an error");
            }
        });
    }
}

/// What the first request's head looks like before hyper reads it.
enum Head {
    /// It parses, or is too long to look at here: hyper's to read.
    Parses,
    /// Its request line or headers do not parse (hyper would answer with an empty body).
    Malformed(ApiError),
    /// It did not arrive whole within the header-read timeout.
    Stalled,
}

/// Peeks at the first request's head, without consuming it, until it is whole, malformed,
/// longer than the look-ahead, or late.
async fn first_head(stream: &TcpStream) -> Head {
    let mut buffer = vec![0u8; PEEK_BYTES];
    let deadline = tokio::time::Instant::now() + HEADER_READ_TIMEOUT;
    let mut seen = 0;
    loop {
        let n = match tokio::time::timeout_at(deadline, stream.peek(&mut buffer)).await {
            Ok(Ok(n)) => n,
            Ok(Err(_)) => return Head::Parses,
            Err(_) => return Head::Stalled,
        };
        // A request line longer than API Gateway takes: answered here, since hyper refuses very
        // long ones itself with an empty body.
        let line_end = buffer[..n].windows(2).position(|w| w == b"\r\n");
        if line_end.unwrap_or(n) > HEADERS_LIMIT {
            return Head::Malformed(ApiError::UriTooLong {
                limit: HEADERS_LIMIT,
            });
        }
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buffer[..n]) {
            Err(httparse::Error::TooManyHeaders) | Ok(httparse::Status::Complete(_)) => {
                return Head::Parses
            }
            Err(error) => {
                return Head::Malformed(ApiError::bad_request(format!(
                    "malformed request: {error}"
                )))
            }
            // A head that fills the look-ahead, or a closed connection, is hyper's to judge.
            Ok(httparse::Status::Partial) if n == buffer.len() || n == 0 => return Head::Parses,
            Ok(httparse::Status::Partial) if n == seen => {
                if tokio::time::Instant::now() >= deadline {
                    return Head::Stalled;
                }
                // Nothing new yet: wait for more bytes without spinning.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok(httparse::Status::Partial) => seen = n,
        }
    }
}

/// A whole HTTP/1.1 response carrying the API's error body, for a connection hyper never saw.
fn raw_error(error: ApiError) -> Vec<u8> {
    let response = error.render(&ulid::Ulid::new().to_string());
    let status = response.status();
    let body = response.body().as_ref().to_vec();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}
