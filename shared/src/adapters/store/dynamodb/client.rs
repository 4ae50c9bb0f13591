//! DynamoDB clients: TLS trust, retries and timeouts, for a Lambda, a person's tool, and local
//! DynamoDB-API servers.

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::Client;
use std::time::Duration;

fn retry() -> RetryConfig {
    RetryConfig::standard().with_max_attempts(3)
}

/// Timeouts well inside the function's 10 s: a hung connection fails fast and is retried.
fn timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(1))
        .operation_attempt_timeout(Duration::from_secs(2))
        .operation_timeout(Duration::from_secs(6))
        .build()
}

/// The CAs every AWS endpoint chains to (Amazon Trust Services).
const AWS_ROOT_CAS: &str = include_str!("../../../../data/amazon-trust-services-roots.pem");

/// HTTPS (rustls with ring) that trusts the Amazon Trust Services roots only. Parsing the
/// system's whole CA bundle at every cold start costs milliseconds; five embedded roots cost
/// microseconds, and AWS endpoints need no others.
pub fn aws_https_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
    let trust = TrustStore::empty().with_pem_certificate(AWS_ROOT_CAS.as_bytes());
    let context = TlsContext::builder()
        .with_trust_store(trust)
        .build()
        .expect("a trust store of valid certificates");
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .tls_context(context)
        .build_https()
}

/// The AWS configuration of a Lambda, built once per cold start: region and credentials from
/// the environment variables Lambda sets (`aws-config`'s environment providers: no profile
/// files, no metadata service), standard retries with 3 attempts, explicit timeouts. The sync
/// function builds its SSM client from it too.
pub async fn lambda_sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::environment::EnvironmentVariableRegionProvider::new())
        .credentials_provider(
            aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
        )
        .http_client(aws_https_client())
        .retry_config(retry())
        .timeout_config(timeouts())
        .load()
        .await
}

/// The DynamoDB client of a Lambda on `config`, with the configured endpoint override if any.
pub fn lambda_client(config: &aws_config::SdkConfig, endpoint: Option<&str>) -> Client {
    let mut builder = aws_sdk_dynamodb::config::Builder::from(config);
    if let Some(url) = endpoint {
        builder = builder.endpoint_url(url);
    }
    Client::from_conf(builder.build())
}

/// The client of a tool run by a person (`local-api seed-catalog`): the full default chain of
/// `aws-config` (profiles, SSO, environment).
pub async fn user_client() -> Client {
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(aws_https_client())
        .retry_config(retry())
        .timeout_config(timeouts())
        .load()
        .await;
    Client::new(&config)
}

/// A client for a local DynamoDB-API server (moto, DynamoDB Local): fixed region and dummy
/// credentials, the same retries, and patient timeouts because such servers are slow under load.
pub fn local_client(endpoint: &str) -> Client {
    local_client_with_timeout(endpoint, Duration::from_secs(60))
}

/// [`local_client`] with another per-attempt timeout (fault tests use short ones).
pub fn local_client_with_timeout(endpoint: &str, attempt_timeout: Duration) -> Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "local",
        ))
        .endpoint_url(endpoint)
        .http_client(aws_https_client())
        .retry_config(retry())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(5))
                .operation_attempt_timeout(attempt_timeout)
                .build(),
        )
        .build();
    Client::from_conf(config)
}
