//! `coldstart [--runs N] BINARY...`: for each binary, the median time from process start to its
//! first `GET /2018-06-01/runtime/invocation/next` against a fake Runtime API on loopback, its
//! ratio to the first binary (the baseline), and its size on disk.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One start: spawn the binary pointed at a fresh fake Runtime API, wait for its first poll.
fn time_to_first_poll(binary: &str) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let api = listener.local_addr().unwrap().to_string();
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
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let (stream, _) = listener.accept().expect("the runtime connects");
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .expect("a request line");
    let elapsed = started.elapsed();
    assert!(
        line.contains("/runtime/invocation/next"),
        "unexpected first request: {line}"
    );
    let _ = child.kill();
    let _ = child.wait();
    elapsed
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = 51;
    if args.first().map(String::as_str) == Some("--runs") {
        runs = args[1].parse().expect("--runs takes a number");
        args.drain(..2);
    }
    assert!(
        !args.is_empty(),
        "usage: coldstart [--runs N] BASELINE BINARY..."
    );
    let mut baseline = None;
    println!("| binary | median init (ms) | ratio to baseline | size (bytes) |");
    println!("|---|---:|---:|---:|");
    for binary in &args {
        // One warm-up start so the page cache holds the binary, as on a warm Lambda host.
        time_to_first_poll(binary);
        let samples = (0..runs).map(|_| time_to_first_poll(binary)).collect();
        let median = median(samples);
        let base = *baseline.get_or_insert(median);
        let size = std::fs::metadata(binary).map(|m| m.len()).unwrap_or(0);
        let name = std::path::Path::new(binary)
            .file_name()
            .unwrap()
            .to_string_lossy();
        println!(
            "| {name} | {:.2} | {:.2} | {size} |",
            median.as_secs_f64() * 1e3,
            median.as_secs_f64() / base.as_secs_f64()
        );
    }
}
