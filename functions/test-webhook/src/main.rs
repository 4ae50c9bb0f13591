//! `test-webhook`: a `webhook.test` event queued to an endpoint (decision 61), behind API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::TestWebhook).await
}
