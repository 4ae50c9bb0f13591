//! `position-chart`: a position's figures at the series' boundaries, computed at read, behind
//! API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::PositionChart).await
}
