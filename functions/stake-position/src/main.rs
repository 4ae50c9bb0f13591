//! `stake-position`: sends a held wallet position into its deployment's farm (the manager's
//! `safeTransferFrom` to MasterChefV3), behind API Gateway's JWT authorizer, on DynamoDB; the
//! transaction is run on the chain before it is answered.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::chain::lambda::serve_reading_chains(shared::Endpoint::StakePosition).await
}
