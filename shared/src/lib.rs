//! The positions API's logic, independent of AWS, in five layers, each using only those below it:
//!
//! - [`wiring`]: settings, the app's assembly, logging, the Lambda entry points;
//! - [`edge`]: the API: events, HTTP, callers, validation, idempotency, errors, handlers, routes;
//! - [`adapters`]: what talks to the outside: the stores (memory, DynamoDB) and the chains;
//! - [`application`]: the use cases over the ports the adapters implement;
//! - [`domain`]: the protocols' math, the model, figures and valuation, with no I/O at all.
//!
//! `docs/architecture.md` maps the layers and their modules, and what each may use. Inside the
//! crate every path names its layer (`crate::domain::model`); the names below are the crate's
//! public ones, as the functions, local-api and the tests call them.

pub mod adapters;
pub mod application;
pub mod domain;
pub mod edge;
pub mod wiring;

pub use application::app;
pub use domain::{
    calldata, catalog, chart, clock, export, fee_ticks, figures, history, json, limits, market,
    math, model, orders, portfolio, pricing, valuation, wallets,
};
pub use edge::{
    caller, error, event, handlers, http, idempotency, order_handlers, routes, validation,
    wallet_handlers,
};
pub use wiring::{config, lambda, telemetry};

pub use adapters::store;

/// The life cycle: its figures (`domain::lifecycle`) and their settling over the store
/// (`application::settling`).
pub mod lifecycle {
    pub use crate::application::settling::*;
    pub use crate::domain::lifecycle::*;
}

/// Wallet positions: how a read is shown (`domain::holdings`) and stored
/// (`application::wallet_reads`).
pub mod holdings {
    pub use crate::application::wallet_reads::*;
    pub use crate::domain::holdings::*;
}

/// The chains' readers (`adapters::chain`) and the entry points of the functions that read them
/// (`wiring::chain_lambda`).
#[cfg(feature = "chain")]
pub mod chain {
    pub use crate::adapters::chain::*;
    pub use crate::wiring::chain_lambda as lambda;
}

/// Alerts and their webhooks (decision 61): the domain's events and endpoints, the use cases,
/// and, with feature `webhooks`, the adapters that deliver them and the delivery function.
pub mod alerts {
    #[cfg(feature = "webhooks")]
    pub use crate::adapters::webhooks as delivery;
    pub use crate::application::alert_ports::*;
    pub use crate::application::alerts::*;
    pub use crate::application::watches::*;
    pub use crate::application::webhooks as use_cases;
    pub use crate::domain::alerts::*;
    pub use crate::domain::webhooks;
    #[cfg(feature = "webhooks")]
    pub use crate::wiring::alerts_lambda as lambda;
}

pub use app::App;
pub use clock::{Clock, SystemClock};
pub use error::ApiError;
pub use routes::Endpoint;
