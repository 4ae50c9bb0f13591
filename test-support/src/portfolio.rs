//! The portfolio is its positions: `GET /portfolio` against the sum of what `GET /positions`
//! shows for the same owner, within a cent per figure summed (each figure is rounded to the
//! cent when written).

use crate::client::TestClient;
use bigdecimal::BigDecimal;
use lambda_http::http::StatusCode;
use serde_json::Value;
use std::str::FromStr;

/// A JSON number (or `null`) as an exact decimal.
fn decimal(value: &Value) -> Option<BigDecimal> {
    value
        .as_number()
        .map(|n| BigDecimal::from_str(&n.to_string()).expect("a decimal"))
}

/// Every position of the caller, as listed (all statuses, every page).
pub async fn every_position(client: &TestClient) -> Vec<Value> {
    let mut all = Vec::new();
    loop {
        let reply = client
            .list(&format!("limit=100&offset={}", all.len()))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let page = reply.json["data"].as_array().expect("data").clone();
        let done = page.is_empty()
            || all.len() + page.len() >= reply.json["total"].as_u64().unwrap() as usize;
        all.extend(page);
        if done {
            return all;
        }
    }
}

/// `|a - b|` is at most a cent for each of `count` rounded figures.
fn assert_within_cents(a: &BigDecimal, b: &BigDecimal, count: usize, what: &str, shown: &Value) {
    let allowed = BigDecimal::from_str("0.01").unwrap() * BigDecimal::from(count.max(1) as u64);
    assert!(
        (a - b).abs() <= allowed,
        "{what}: {a} against {b} (within {allowed}): {shown}"
    );
}

/// The caller's portfolio agrees with its positions: its value is the sum of the open priced
/// positions' values, its fees the sum of their fees, the assets' and the chains' values sum to
/// its value, and the positions it leaves out are those shown without a value. The portfolio.
pub async fn assert_portfolio_is_its_positions(client: &TestClient) -> Value {
    let positions = every_position(client).await;
    let reply = client.portfolio().await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let portfolio = reply.json;
    let open: Vec<&Value> = positions
        .iter()
        .filter(|p| p["status"] != "closed")
        .collect();
    let priced: Vec<&Value> = open
        .iter()
        .copied()
        .filter(|p| p["valueUsd"].is_number())
        .collect();
    assert_eq!(portfolio["positions"], open.len(), "{portfolio}");
    let left_out = portfolio["unpricedPositions"].as_u64().unwrap()
        + portfolio["unvaluedPositions"].as_u64().unwrap();
    assert_eq!(left_out as usize, open.len() - priced.len(), "{portfolio}");
    let sum = |field: &str| -> BigDecimal {
        priced
            .iter()
            .map(|p| decimal(&p[field]).unwrap_or_default())
            .sum()
    };
    let total = decimal(&portfolio["totalValueUsd"]).unwrap();
    assert_within_cents(
        &total,
        &sum("valueUsd"),
        priced.len(),
        "totalValueUsd",
        &portfolio,
    );
    let fees = decimal(&portfolio["totalFeesEarnedUsd"]).unwrap();
    assert_within_cents(
        &fees,
        &sum("feesEarnedUsd"),
        priced.len(),
        "totalFeesEarnedUsd",
        &portfolio,
    );
    for breakdown in ["assets", "chains"] {
        let parts = portfolio[breakdown].as_array().unwrap();
        let summed: BigDecimal = parts.iter().map(|p| decimal(&p["valueUsd"]).unwrap()).sum();
        assert_within_cents(&total, &summed, parts.len(), breakdown, &portfolio);
    }
    portfolio
}
