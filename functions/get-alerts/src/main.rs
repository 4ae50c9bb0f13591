//! `get-alerts`: the caller's alert settings (decision 61), behind API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::GetAlerts).await
}
