//! The positions API's logic, independent of AWS: models, validation, the concentrated-liquidity
//! math, valuation, the stores, and the HTTP handlers that every Lambda binary and the local
//! server run.

pub mod app;
pub mod catalog;
pub mod error;
pub mod event;
pub mod handlers;
pub mod http;
pub mod json;
pub mod lambda;
pub mod math;
pub mod model;
pub mod portfolio;
pub mod store;
pub mod telemetry;
pub mod validation;
pub mod valuation;

pub use app::{App, Clock, SystemClock};
pub use error::ApiError;
pub use http::Endpoint;
