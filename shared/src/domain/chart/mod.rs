//! The book over time (decision 66): a series of points per pool, shared by every user, each
//! the pool's state and its tokens' USD prices at the last confirmed block at or before a UTC
//! boundary (every 5 minutes, hour and day: `series`); a position's figures at a boundary
//! computed at read from its events and that point (`position`); the portfolio's as their sums
//! (`sums`); and how the API shows them (`views`).

mod position;
mod series;
mod sums;
mod views;

pub use position::{
    simulated_point, wallet_point, HandedAt, PointFigures, SimulatedSubject, WalletSubject,
};
pub use series::*;
pub use sums::{changes, group_points, sum_whole, Change, GroupBy, PortfolioPoint};
pub use views::*;
