//! `portfolio-chart`: the portfolio's value, PnL, fees and net deposits at the series'
//! boundaries, summed or grouped, behind API Gateway's JWT authorizer, on DynamoDB.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::PortfolioChart).await
}
