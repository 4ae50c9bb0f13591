//! `decrease-liquidity`: takes a share of a wallet position's liquidity out to its wallet (decision 56), behind API Gateway's JWT
//! authorizer, on DynamoDB; the transactions are run on the chain before they are answered.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::chain::lambda::serve_reading_chains(shared::Endpoint::DecreaseLiquidity).await
}
