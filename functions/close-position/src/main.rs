//! `close-position`: closes a position behind API Gateway's JWT authorizer, on DynamoDB; a
//! wallet position's withdraw is run on its chain before it is answered.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::chain::lambda::serve_reading_chains(shared::Endpoint::ClosePosition).await
}
