//! `get-webhook`: one of the caller's webhook endpoints (decision 61), behind API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::GetWebhook).await
}
