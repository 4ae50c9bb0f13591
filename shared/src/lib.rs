//! The positions API's logic, independent of AWS: models, validation, the concentrated-liquidity
//! math, valuation, the stores, and the HTTP handlers that every Lambda binary and the local
//! server run. `docs/architecture.md` maps the modules and what each may use.

pub mod app;
pub mod calldata;
pub mod caller;
pub mod catalog;
#[cfg(feature = "chain")]
pub mod chain;
pub mod clock;
pub mod config;
pub mod error;
pub mod event;
pub mod fee_ticks;
pub mod figures;
pub mod handlers;
pub mod holdings;
pub mod http;
pub mod idempotency;
pub mod json;
pub mod lambda;
pub mod lifecycle;
pub mod limits;
pub mod market;
pub mod math;
pub mod model;
pub mod order_handlers;
pub mod orders;
pub mod portfolio;
pub mod routes;
pub mod store;
pub mod telemetry;
pub mod validation;
pub mod valuation;
pub mod wallet_handlers;
pub mod wallets;

pub use app::App;
pub use clock::{Clock, SystemClock};
pub use error::ApiError;
pub use routes::Endpoint;
