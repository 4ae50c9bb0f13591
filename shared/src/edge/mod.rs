//! The API's edge: API Gateway's events and HTTP, who calls, validation with the client's
//! messages, idempotency, the one mapping of failures to statuses (`error`), the handlers and the
//! route table.

pub mod action_handlers;
pub mod alert_handlers;
pub mod caller;
pub mod chart_handlers;
pub mod error;
pub mod event;
pub mod handlers;
pub mod http;
pub mod idempotency;
pub mod order_handlers;
pub mod routes;
pub mod validation;
pub mod wallet_handlers;
