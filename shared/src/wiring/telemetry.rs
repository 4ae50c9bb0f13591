//! Structured JSON logs that CloudWatch Logs Insights can query. Each line carries the current
//! span, which the Lambda runtime opens per invocation with the request id.

use tracing_subscriber::EnvFilter;

/// Lambda: logs to stdout, which the runtime ships to CloudWatch, at `level` (an `EnvFilter`
/// directive such as `info` or `shared=debug`).
pub fn init(level: &str) {
    init_with(level, std::io::stdout);
}

/// Logs to `writer` (the local server keeps stdout for its own messages).
pub fn init_with<W>(level: &str, writer: W)
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_new(level).unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_writer(writer)
        .json()
        .with_env_filter(filter)
        .with_current_span(true)
        .with_span_list(false)
        .with_target(false)
        .without_time()
        .try_init();
}
