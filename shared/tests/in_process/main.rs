//! Tests that need nothing running: the handlers in process, the sample events, the in-memory
//! store's contract, the route table against the template and events, and the module map.

mod alerts;
mod architecture;
mod catalog;
mod close;
mod docs;
mod events;
mod handlers;
mod orders;
mod portfolio;
mod routes;
mod store_memory;
mod use_cases;
mod valuation;
