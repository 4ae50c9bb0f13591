//! `link-wallet`: links a wallet by its signature of a challenge and reads its positions from
//! the chain, behind API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::LinkWallet).await
}
