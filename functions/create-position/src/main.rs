//! `create-position`: opens a position (simulated, or on chain from a linked wallet: the
//! wallet's allowances are read from its chain) behind API Gateway's JWT authorizer, on
//! DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::chain::lambda::serve_reading_chains(shared::Endpoint::CreatePosition).await
}
