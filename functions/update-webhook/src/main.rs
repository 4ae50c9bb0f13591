//! `update-webhook`: changes a webhook endpoint, or enables it again (decision 61), behind API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::UpdateWebhook).await
}
