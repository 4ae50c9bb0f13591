//! `pool-chart`: a pool's shared series (its state and USD prices at each boundary), behind
//! API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::PoolChart).await
}
