//! `refresh-wallets`: reads the linked wallets the scheduled sync queued (SQS batches), on
//! DynamoDB, reporting the wallets that failed for the queue to retry.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::chain::lambda::refresh_wallets().await
}
