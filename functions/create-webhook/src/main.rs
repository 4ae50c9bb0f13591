//! `create-webhook`: registers a webhook endpoint, its secret sealed by KMS and shown once (decision 61), behind API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::CreateWebhook).await
}
