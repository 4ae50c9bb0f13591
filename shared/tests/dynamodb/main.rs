//! Tests that need the DynamoDB-API server the test command starts (moto): the store on a real
//! table, and its faults.

mod alert_costs;
mod deliveries;
mod fanout;
mod faults;
mod market;
mod portfolio_costs;
mod store;
