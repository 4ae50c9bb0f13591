//! `report-transaction`: records the hash of the transaction a wallet sent for a position's
//! on-chain open or close, behind API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::ReportTransaction).await
}
