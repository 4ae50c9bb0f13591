//! `export-history`: the caller's position events as a CSV a tax tool imports, behind API
//! Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::ExportHistory).await
}
