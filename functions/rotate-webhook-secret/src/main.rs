//! `rotate-webhook-secret`: a webhook endpoint's new secret (KMS), the old one signing beside it a day (decision 61), behind API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::RotateWebhookSecret).await
}
