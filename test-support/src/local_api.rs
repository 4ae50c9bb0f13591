//! A running `local-api` binary for black-box tests, and raw HTTP/1.1 over a socket for the
//! requests a well-behaved client would never send.

use crate::client::TestClient;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// A `local-api` serving on a free loopback port, killed when dropped.
pub struct LocalApi {
    pub base: String,
    pub addr: String,
    child: Child,
}

impl LocalApi {
    /// Starts `binary` (the test's `CARGO_BIN_EXE_local-api`) with `args` after `--addr`, with
    /// the documented JWT defaults; waits for its address line and its sample curl line.
    pub async fn start(binary: &str, args: &[&str]) -> LocalApi {
        LocalApi::start_with(Command::new(binary), args).await
    }

    /// [`LocalApi::start`] with a prepared command (e.g. run under `sh -c "ulimit ..."`).
    pub async fn start_with(mut command: Command, args: &[&str]) -> LocalApi {
        let mut child = command
            .args(["--addr", "127.0.0.1:0"])
            .args(args)
            .env_remove("LOCAL_JWT_SECRET")
            .env_remove("LOCAL_JWT_ISSUER")
            .env_remove("LOCAL_JWT_AUDIENCE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("local-api starts");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        // A server that never gets to listen (a chain that never answers its first sync) fails
        // the test with the reason, never hangs it.
        let deadline = crate::devnet::COMMAND_DEADLINE;
        let first = tokio::time::timeout(deadline, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("local-api did not print its address within {deadline:?}"))
            .expect("stdout reads")
            .expect("local-api prints its address");
        let base = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .expect("the first line names the address")
            .to_string();
        let curl = tokio::time::timeout(deadline, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("local-api did not print its sample within {deadline:?}"))
            .expect("stdout reads")
            .unwrap_or_default();
        assert!(
            curl.contains("curl") && curl.contains("Authorization: Bearer "),
            "{curl}"
        );
        let addr = base.trim_start_matches("http://").to_string();
        LocalApi { base, addr, child }
    }

    /// A client sending `Authorization: Bearer token` (none without a token).
    pub fn client(&self, token: Option<&str>) -> TestClient {
        TestClient::over_http(&self.base, token)
    }

    /// The server's log so far is read by stopping it: its stderr lines.
    pub async fn stop_and_read_log(mut self) -> Vec<String> {
        let _ = self.child.start_kill();
        let mut text = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = stderr.read_to_string(&mut text).await;
        }
        text.lines().map(str::to_string).collect()
    }

    /// Sends `bytes` as they are and reads the reply until the server closes the connection or
    /// `wait` passes.
    pub async fn raw(&self, bytes: &[u8], wait: Duration) -> RawReply {
        let mut stream = TcpStream::connect(&self.addr).await.expect("connects");
        // The server may answer and close before every byte is written.
        let _ = stream.write_all(bytes).await;
        read_reply(&mut stream, wait).await
    }
}

/// A response read off a socket.
#[derive(Debug, Clone)]
pub struct RawReply {
    /// 0 when nothing came back.
    pub status: u16,
    /// The head's header lines, lowercased names.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Whether the server closed the connection within the wait.
    pub closed: bool,
}

impl RawReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Reads one response (by `content-length`) or until close, for at most `wait`.
pub async fn read_reply(stream: &mut TcpStream, wait: Duration) -> RawReply {
    let mut data = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + wait;
    let mut closed = false;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                closed = true;
                break;
            }
            Ok(Ok(n)) => data.extend_from_slice(&chunk[..n]),
            Err(_) => break,
        }
        if let Some(reply) = parse(&data, false) {
            if reply.body.len() >= content_length(&reply) {
                return reply;
            }
        }
    }
    parse(&data, closed).unwrap_or(RawReply {
        status: 0,
        headers: Vec::new(),
        body: String::new(),
        closed,
    })
}

fn content_length(reply: &RawReply) -> usize {
    reply
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX)
}

fn parse(data: &[u8], closed: bool) -> Option<RawReply> {
    let text = String::from_utf8_lossy(data);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    Some(RawReply {
        status,
        headers,
        body: body.to_string(),
        closed,
    })
}

/// How long tests wait for an answer that should come at once.
pub const PROMPT: Duration = Duration::from_secs(5);
