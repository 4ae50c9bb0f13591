//! A bare `lambda_runtime` function that echoes its event: the cold-start baseline.

use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(
        |event: LambdaEvent<serde_json::Value>| async move { Ok::<_, Error>(event.payload) },
    ))
    .await
}
