//! `harvest-rewards`: harvests a staked wallet position's farm rewards to its wallet (decision
//! 60), behind API Gateway's JWT authorizer, on DynamoDB; the transaction is run on the chain
//! before it is answered.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::chain::lambda::serve_reading_chains(shared::Endpoint::HarvestRewards).await
}
