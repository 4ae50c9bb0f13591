//! The wiring: the settings read once at start (`config`), which implementations fill the app
//! (`assemble`), logging (`telemetry`) and the Lambda entry points (`lambda`; `chain_lambda` for
//! the functions that read chains).

pub mod assemble;
#[cfg(feature = "chain")]
pub mod chain_lambda;
pub mod config;
pub mod lambda;
pub mod telemetry;
