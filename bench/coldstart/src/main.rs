//! `coldstart [--runs N] [--events DIR] BINARY...`: for each binary, against a fake Runtime API
//! on loopback, the median time from process start to its first
//! `GET /2018-06-01/runtime/invocation/next` (init), and from the answer to that poll (an
//! invocation: `DIR/{binary}-success.json` or `-default.json` when one exists, else its first
//! sample event by name, else `{}`) to the function's
//! `/response` (the first invocation); the init's ratio to the first binary (the baseline); the
//! size on disk. The functions' table is a fake DynamoDB on loopback answering every read with
//! nothing (and every other AWS call with `{}`: the queues and the key the stack gives them), so
//! a first invocation times the function's own first-request work (endpoint resolution,
//! signing, the catalog's first read), not a network. No chain's RPC parameter is set: the
//! functions that read chains start as they do where no chain is configured.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

/// An HTTP/1.1 request: its request line, headers (lower-case names) and body.
type HttpRequest = (String, Vec<(String, String)>, Vec<u8>);

/// One HTTP/1.1 request on `reader`.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<HttpRequest> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((line.trim_end().to_string(), headers, body))
}

fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// A fake DynamoDB: every read finds nothing.
fn fake_dynamodb() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().expect("a stream");
                let mut reader = BufReader::new(stream);
                while let Some((_, headers, _)) = read_request(&mut reader) {
                    let target = headers
                        .iter()
                        .find(|(n, _)| n == "x-amz-target")
                        .map(|(_, v)| v.as_str())
                        .unwrap_or_default();
                    let body: &[u8] = if target.ends_with(".Query") {
                        br#"{"Items":[],"Count":0,"ScannedCount":0}"#
                    } else {
                        b"{}"
                    };
                    let json = [("content-type", "application/x-amz-json-1.0")];
                    respond(&mut writer, "200 OK", &json, body);
                }
            });
        }
    });
    format!("http://{address}")
}

/// What the fake Runtime API saw, and when.
enum Seen {
    FirstPoll(Instant),
    Response(Instant),
}

/// Serves one connection of the Runtime API: the first poll gets `event`, a response is
/// acknowledged, later polls are left waiting.
fn runtime_connection(stream: TcpStream, event: &[u8], seen: &Sender<Seen>) {
    let mut writer = stream.try_clone().expect("a stream");
    let mut reader = BufReader::new(stream);
    while let Some((line, _, _)) = read_request(&mut reader) {
        let now = Instant::now();
        if line.contains("/runtime/invocation/next") {
            if seen.send(Seen::FirstPoll(now)).is_err() {
                return;
            }
            let headers = [
                ("content-type", "application/json"),
                ("lambda-runtime-aws-request-id", "coldstart-1"),
                ("lambda-runtime-deadline-ms", "4102444800000"),
                (
                    "lambda-runtime-invoked-function-arn",
                    "arn:aws:lambda:us-east-1:000000000000:function:coldstart",
                ),
            ];
            respond(&mut writer, "200 OK", &headers, event);
        } else if line.contains("/response") || line.contains("/error") {
            let _ = seen.send(Seen::Response(now));
            respond(&mut writer, "202 Accepted", &[], b"{}");
        } else {
            respond(&mut writer, "404 Not Found", &[], b"{}");
        }
    }
}

/// One start: the time to the first poll, and from its answer to the function's response.
fn start_once(binary: &str, event: &[u8], dynamodb: &str) -> (Duration, Duration) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let api = listener.local_addr().unwrap().to_string();
    let (tx, rx) = channel();
    let event = event.to_vec();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (tx, event) = (tx.clone(), event.clone());
            std::thread::spawn(move || runtime_connection(stream, &event, &tx));
        }
    });
    let started = Instant::now();
    let mut child = Command::new(binary)
        .env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", &api)
        .env("AWS_LAMBDA_FUNCTION_NAME", "coldstart")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/coldstart")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "coldstart")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "coldstart")
        .env("AWS_SECRET_ACCESS_KEY", "coldstart")
        .env("TABLE_NAME", "coldstart")
        .env("DYNAMODB_ENDPOINT", dynamodb)
        // The stack's queues and key, every AWS service answered by the same fake.
        .env("AWS_ENDPOINT_URL", dynamodb)
        .env(
            "WEBHOOK_QUEUE_URL",
            format!("{dynamodb}/000000000000/webhooks"),
        )
        .env(
            "WALLET_QUEUE_URL",
            format!("{dynamodb}/000000000000/wallets"),
        )
        .env("WEBHOOK_KEY_ID", "alias/coldstart")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let Ok(Seen::FirstPoll(polled)) = rx.recv_timeout(Duration::from_secs(10)) else {
        panic!("{binary} never polled for an invocation");
    };
    let Ok(Seen::Response(answered)) = rx.recv_timeout(Duration::from_secs(10)) else {
        panic!("{binary} never answered its first invocation");
    };
    let _ = child.kill();
    let _ = child.wait();
    (polled - started, answered - polled)
}

/// The function's sample event from `dir`: its `-success` or `-default` one, else the first of
/// its own by name (every function has one: `events/`).
fn sample_event(dir: &std::path::Path, name: &str) -> Option<Vec<u8>> {
    let preferred = ["success", "default"]
        .iter()
        .find_map(|kind| std::fs::read(dir.join(format!("{name}-{kind}.json"))).ok());
    preferred.or_else(|| {
        let mut own: Vec<_> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| {
                f.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|rest| rest.ends_with(".json") && !rest.contains("missing-claims"))
            })
            .collect();
        own.sort();
        std::fs::read(dir.join(own.first()?)).ok()
    })
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = 51;
    let mut events = None;
    while args.first().is_some_and(|a| a.starts_with("--")) {
        match args[0].as_str() {
            "--runs" => runs = args[1].parse().expect("--runs takes a number"),
            "--events" => events = Some(std::path::PathBuf::from(&args[1])),
            other => panic!("unknown option {other}"),
        }
        args.drain(..2);
    }
    assert!(
        !args.is_empty(),
        "usage: coldstart [--runs N] [--events DIR] BASELINE BINARY..."
    );
    let dynamodb = fake_dynamodb();
    let binaries: Vec<(String, Vec<u8>)> = args
        .iter()
        .map(|binary| {
            let name = std::path::Path::new(binary)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let event = events
                .as_ref()
                .and_then(|dir| sample_event(dir, &name))
                .unwrap_or_else(|| b"{}".to_vec());
            (name, event)
        })
        .collect();
    // One warm-up start each so the page cache holds the binaries, as on a warm Lambda host;
    // then the binaries in turn, run after run, so that the machine's drift touches them alike.
    let mut samples = vec![(Vec::new(), Vec::new()); args.len()];
    for round in 0..=runs {
        for (i, binary) in args.iter().enumerate() {
            let (init, first) = start_once(binary, &binaries[i].1, &dynamodb);
            if round > 0 {
                samples[i].0.push(init);
                samples[i].1.push(first);
            }
        }
    }
    println!("| binary | median init (ms) | ratio to baseline | median first invocation (ms) | size (bytes) |");
    println!("|---|---:|---:|---:|---:|");
    let mut baseline = None;
    for ((binary, (name, _)), (inits, firsts)) in args.iter().zip(&binaries).zip(samples) {
        let (init, first) = (median(inits), median(firsts));
        let base = *baseline.get_or_insert(init);
        let size = std::fs::metadata(binary).map(|m| m.len()).unwrap_or(0);
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {size} |",
            init.as_secs_f64() * 1e3,
            init.as_secs_f64() / base.as_secs_f64(),
            first.as_secs_f64() * 1e3,
        );
    }
}
