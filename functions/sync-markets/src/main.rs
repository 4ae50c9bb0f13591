//! `sync-markets`: reads every catalog pool from its chain on a schedule and on
//! `POST /markets/sync`, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::chain::lambda::run().await
}
