//! `collect-fees`: collects a wallet position's fees and uncollected principal to its wallet (decision 56), behind API Gateway's JWT
//! authorizer, on DynamoDB; the transactions are run on the chain before they are answered.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::chain::lambda::serve_reading_chains(shared::Endpoint::CollectFees).await
}
