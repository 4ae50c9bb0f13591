//! The wiring: the settings read once at start (`config`), which implementations fill the app
//! (`assemble`), logging (`telemetry`) and the Lambda entry points (`lambda`; `chain_lambda` for
//! the functions that read chains; `alerts_lambda` for those that deliver alerts).

#[cfg(feature = "webhooks")]
pub mod alerts_lambda;
pub mod assemble;
#[cfg(feature = "chain")]
pub mod chain_lambda;
pub mod config;
pub mod lambda;
pub mod telemetry;
