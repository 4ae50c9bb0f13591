//! The positions API on one machine: an HTTP server that plays API Gateway's part — routing,
//! JWT checks, building the payload 2.0 event — and runs the same handlers as the Lambda binaries.

pub mod auth;
pub mod gateway;
pub mod openapi;
pub mod server;
pub mod web;
