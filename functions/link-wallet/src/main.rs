//! `link-wallet`: links a wallet by its signature of a challenge and reads its positions from
//! the chain, behind API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::chain::lambda::serve_reading_chains(shared::Endpoint::LinkWallet).await
}
