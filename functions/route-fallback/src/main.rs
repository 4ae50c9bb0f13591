//! `route-fallback`: API Gateway's `$default` route, answering 404/405 as local-api does.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(shared::Endpoint::RouteFallback).await
}
