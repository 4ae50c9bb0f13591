//! The route table: every endpoint with its method, path and function, the one place routes
//! are written. The local router is derived from it, and tests check `template.yaml` and
//! `events/` against it.

use crate::application::app::App;
use crate::edge::action_handlers as actions;
use crate::edge::alert_handlers as alerts;
use crate::edge::chart_handlers;
use crate::edge::error::ApiError;
use crate::edge::handlers;
use crate::edge::http::request_id;
use crate::edge::order_handlers as orders;
use crate::edge::wallet_handlers as wallets;
use lambda_http::http::Method;
use lambda_http::{Body, Request, RequestExt, Response};
use std::collections::HashMap;

/// One route of the API, as API Gateway's route keys name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    ListPositions,
    GetPosition,
    /// `GET /positions/{id}/history`: the position's events, oldest first.
    PositionHistory,
    /// `GET /history/export`: the caller's wallet positions' token movements as a CSV a tax
    /// tool imports.
    ExportHistory,
    /// `GET /positions/{id}/chart`: a position's figures at the series' boundaries.
    PositionChart,
    /// `GET /portfolio/chart`: the portfolio's, summed or grouped.
    PortfolioChart,
    /// `GET /pools/{chain}/{pool}/chart`: a pool's shared series.
    PoolChart,
    CreatePosition,
    /// `POST /positions/{id}/close`: withdraws an open position and freezes its figures.
    ClosePosition,
    /// `POST /positions/{id}/collect`: a wallet position's fees and uncollected principal paid
    /// to its wallet.
    CollectFees,
    /// `POST /positions/{id}/harvest`: a staked wallet position's farm rewards paid to its
    /// wallet (decision 60).
    HarvestRewards,
    /// `POST /positions/{id}/stake`: a held wallet position sent into its deployment's farm.
    StakePosition,
    /// `POST /positions/{id}/increase`: liquidity added to a wallet position.
    IncreaseLiquidity,
    /// `POST /positions/{id}/decrease`: a share of a wallet position's liquidity taken out.
    DecreaseLiquidity,
    /// `POST /positions/{id}/rebalance`: a wallet position's liquidity moved to a new range.
    RebalancePosition,
    /// `POST /positions/{id}/transactions`: the hash of the transaction a wallet sent for a
    /// position's on-chain open or close.
    ReportTransaction,
    GetPortfolio,
    ListPools,
    /// `POST /markets/sync`: reads every pool from its chain now (the scheduled sync's work).
    SyncMarkets,
    /// `POST /wallets/challenge`: the message a wallet signs to be linked.
    CreateWalletChallenge,
    /// `POST /wallets`: links a wallet by its signature of a challenge.
    LinkWallet,
    ListWallets,
    /// `DELETE /wallets/{chain}/{address}`.
    UnlinkWallet,
    /// `GET /events`: the caller's alert events of the last 30 days, newest first (decision 61).
    ListEvents,
    /// `GET /alerts`: the caller's alert settings.
    GetAlerts,
    /// `PUT /alerts`: replaces the caller's alert settings.
    PutAlerts,
    /// `PUT /positions/{id}/alerts`: a position's own alert settings.
    PutPositionAlerts,
    /// `POST /webhooks`: registers a webhook endpoint; its secret shown once.
    CreateWebhook,
    ListWebhooks,
    GetWebhook,
    /// `PATCH /webhooks/{id}`: its url, types, description, or enabled again.
    UpdateWebhook,
    DeleteWebhook,
    /// `POST /webhooks/{id}/rotate-secret`: a new secret; the old one signs beside it a day.
    RotateWebhookSecret,
    /// `POST /webhooks/{id}/test`: a `webhook.test` event delivered to it.
    TestWebhook,
    /// `GET /webhooks/{id}/deliveries`: its attempts, newest first.
    ListWebhookDeliveries,
    /// `POST /webhooks/{id}/deliveries/{deliveryId}/redeliver`: an attempt's event sent again.
    RedeliverWebhook,
    /// API Gateway's `$default` route: every request no other route takes, answered 404 or
    /// 405 exactly as the local router answers it.
    RouteFallback,
}

impl Endpoint {
    pub const ALL: [Endpoint; 37] = [
        Endpoint::ListPositions,
        Endpoint::GetPosition,
        Endpoint::PositionHistory,
        Endpoint::ExportHistory,
        Endpoint::PositionChart,
        Endpoint::PortfolioChart,
        Endpoint::PoolChart,
        Endpoint::CreatePosition,
        Endpoint::ClosePosition,
        Endpoint::CollectFees,
        Endpoint::HarvestRewards,
        Endpoint::StakePosition,
        Endpoint::IncreaseLiquidity,
        Endpoint::DecreaseLiquidity,
        Endpoint::RebalancePosition,
        Endpoint::ReportTransaction,
        Endpoint::GetPortfolio,
        Endpoint::ListPools,
        Endpoint::SyncMarkets,
        Endpoint::CreateWalletChallenge,
        Endpoint::LinkWallet,
        Endpoint::ListWallets,
        Endpoint::UnlinkWallet,
        Endpoint::ListEvents,
        Endpoint::GetAlerts,
        Endpoint::PutAlerts,
        Endpoint::PutPositionAlerts,
        Endpoint::CreateWebhook,
        Endpoint::ListWebhooks,
        Endpoint::GetWebhook,
        Endpoint::UpdateWebhook,
        Endpoint::DeleteWebhook,
        Endpoint::RotateWebhookSecret,
        Endpoint::TestWebhook,
        Endpoint::ListWebhookDeliveries,
        Endpoint::RedeliverWebhook,
        Endpoint::RouteFallback,
    ];

    /// The function (and binary) that serves this endpoint.
    pub fn function_name(self) -> &'static str {
        match self {
            Endpoint::ListPositions => "list-positions",
            Endpoint::GetPosition => "get-position",
            Endpoint::PositionHistory => "position-history",
            Endpoint::ExportHistory => "export-history",
            Endpoint::PositionChart => "position-chart",
            Endpoint::PortfolioChart => "portfolio-chart",
            Endpoint::PoolChart => "pool-chart",
            Endpoint::CreatePosition => "create-position",
            Endpoint::ClosePosition => "close-position",
            Endpoint::CollectFees => "collect-fees",
            Endpoint::HarvestRewards => "harvest-rewards",
            Endpoint::StakePosition => "stake-position",
            Endpoint::IncreaseLiquidity => "increase-liquidity",
            Endpoint::DecreaseLiquidity => "decrease-liquidity",
            Endpoint::RebalancePosition => "rebalance-position",
            Endpoint::ReportTransaction => "report-transaction",
            Endpoint::GetPortfolio => "get-portfolio",
            Endpoint::ListPools => "list-pools",
            Endpoint::SyncMarkets => "sync-markets",
            Endpoint::CreateWalletChallenge => "create-wallet-challenge",
            Endpoint::LinkWallet => "link-wallet",
            Endpoint::ListWallets => "list-wallets",
            Endpoint::UnlinkWallet => "unlink-wallet",
            Endpoint::ListEvents => "list-events",
            Endpoint::GetAlerts => "get-alerts",
            Endpoint::PutAlerts => "put-alerts",
            Endpoint::PutPositionAlerts => "put-position-alerts",
            Endpoint::CreateWebhook => "create-webhook",
            Endpoint::ListWebhooks => "list-webhooks",
            Endpoint::GetWebhook => "get-webhook",
            Endpoint::UpdateWebhook => "update-webhook",
            Endpoint::DeleteWebhook => "delete-webhook",
            Endpoint::RotateWebhookSecret => "rotate-webhook-secret",
            Endpoint::TestWebhook => "test-webhook",
            Endpoint::ListWebhookDeliveries => "list-webhook-deliveries",
            Endpoint::RedeliverWebhook => "redeliver-webhook",
            Endpoint::RouteFallback => "route-fallback",
        }
    }

    /// The method; `ANY` for the fallback, as API Gateway writes it.
    pub fn method(self) -> Method {
        match self {
            Endpoint::CreatePosition
            | Endpoint::ClosePosition
            | Endpoint::CollectFees
            | Endpoint::HarvestRewards
            | Endpoint::StakePosition
            | Endpoint::IncreaseLiquidity
            | Endpoint::DecreaseLiquidity
            | Endpoint::RebalancePosition
            | Endpoint::ReportTransaction
            | Endpoint::SyncMarkets
            | Endpoint::CreateWalletChallenge
            | Endpoint::LinkWallet
            | Endpoint::CreateWebhook
            | Endpoint::RotateWebhookSecret
            | Endpoint::TestWebhook
            | Endpoint::RedeliverWebhook => Method::POST,
            Endpoint::UnlinkWallet | Endpoint::DeleteWebhook => Method::DELETE,
            Endpoint::PutAlerts | Endpoint::PutPositionAlerts => Method::PUT,
            Endpoint::UpdateWebhook => Method::PATCH,
            Endpoint::RouteFallback => Method::from_bytes(b"ANY").unwrap_or_default(),
            _ => Method::GET,
        }
    }

    /// The path template, with `{id}` for the path parameter.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::ListPositions | Endpoint::CreatePosition => "/positions",
            Endpoint::GetPosition => "/positions/{id}",
            Endpoint::PositionHistory => "/positions/{id}/history",
            Endpoint::ExportHistory => "/history/export",
            Endpoint::PositionChart => "/positions/{id}/chart",
            Endpoint::PortfolioChart => "/portfolio/chart",
            Endpoint::PoolChart => "/pools/{chain}/{pool}/chart",
            Endpoint::ClosePosition => "/positions/{id}/close",
            Endpoint::CollectFees => "/positions/{id}/collect",
            Endpoint::HarvestRewards => "/positions/{id}/harvest",
            Endpoint::StakePosition => "/positions/{id}/stake",
            Endpoint::IncreaseLiquidity => "/positions/{id}/increase",
            Endpoint::DecreaseLiquidity => "/positions/{id}/decrease",
            Endpoint::RebalancePosition => "/positions/{id}/rebalance",
            Endpoint::ReportTransaction => "/positions/{id}/transactions",
            Endpoint::GetPortfolio => "/portfolio",
            Endpoint::ListPools => "/pools",
            Endpoint::SyncMarkets => "/markets/sync",
            Endpoint::CreateWalletChallenge => "/wallets/challenge",
            Endpoint::LinkWallet | Endpoint::ListWallets => "/wallets",
            Endpoint::UnlinkWallet => "/wallets/{chain}/{address}",
            Endpoint::ListEvents => "/events",
            Endpoint::GetAlerts | Endpoint::PutAlerts => "/alerts",
            Endpoint::PutPositionAlerts => "/positions/{id}/alerts",
            Endpoint::CreateWebhook | Endpoint::ListWebhooks => "/webhooks",
            Endpoint::GetWebhook | Endpoint::UpdateWebhook | Endpoint::DeleteWebhook => {
                "/webhooks/{id}"
            }
            Endpoint::RotateWebhookSecret => "/webhooks/{id}/rotate-secret",
            Endpoint::TestWebhook => "/webhooks/{id}/test",
            Endpoint::ListWebhookDeliveries => "/webhooks/{id}/deliveries",
            Endpoint::RedeliverWebhook => "/webhooks/{id}/deliveries/{deliveryId}/redeliver",
            Endpoint::RouteFallback => "$default",
        }
    }

    /// Whether the endpoint reads or writes the table (the fallback serves no resource).
    pub fn uses_table(self) -> bool {
        self != Endpoint::RouteFallback
    }

    /// The OAuth scopes the authorizer requires (`AuthorizationScopes`); the handler checks
    /// them too, so local-api and the Lambda agree.
    pub fn scopes(self) -> &'static [&'static str] {
        match self {
            Endpoint::SyncMarkets => &[handlers::SYNC_SCOPE],
            _ => &[],
        }
    }

    /// API Gateway's route key, e.g. `GET /positions/{id}`, or `$default`.
    pub fn route_key(self) -> String {
        match self {
            Endpoint::RouteFallback => self.path().to_string(),
            _ => format!("{} {}", self.method(), self.path()),
        }
    }

    /// Runs the endpoint's handler; every failure becomes its error response here, the one
    /// place a server fault's cause is logged.
    pub async fn handle(self, app: &App, request: Request) -> Response<Body> {
        let result = match self {
            Endpoint::ListPositions => handlers::list_positions(app, &request).await,
            Endpoint::GetPosition => handlers::get_position(app, &request).await,
            Endpoint::PositionHistory => handlers::position_history(app, &request).await,
            Endpoint::ExportHistory => handlers::export_history(app, &request).await,
            Endpoint::PositionChart => chart_handlers::position_chart(app, &request).await,
            Endpoint::PortfolioChart => chart_handlers::portfolio_chart(app, &request).await,
            Endpoint::PoolChart => chart_handlers::pool_chart(app, &request).await,
            Endpoint::CreatePosition => handlers::create_position(app, &request).await,
            Endpoint::ClosePosition => handlers::close_position(app, &request).await,
            Endpoint::CollectFees => actions::collect(app, &request).await,
            Endpoint::HarvestRewards => actions::harvest(app, &request).await,
            Endpoint::StakePosition => actions::stake(app, &request).await,
            Endpoint::IncreaseLiquidity => actions::increase(app, &request).await,
            Endpoint::DecreaseLiquidity => actions::decrease(app, &request).await,
            Endpoint::RebalancePosition => actions::rebalance(app, &request).await,
            Endpoint::ReportTransaction => orders::report_transaction(app, &request).await,
            Endpoint::GetPortfolio => handlers::get_portfolio(app, &request).await,
            Endpoint::ListPools => handlers::list_pools(app, &request).await,
            Endpoint::SyncMarkets => handlers::sync_markets(app, &request).await,
            Endpoint::CreateWalletChallenge => wallets::create_challenge(app, &request).await,
            Endpoint::LinkWallet => wallets::link_wallet(app, &request).await,
            Endpoint::ListWallets => wallets::list_wallets(app, &request).await,
            Endpoint::UnlinkWallet => wallets::unlink_wallet(app, &request).await,
            Endpoint::ListEvents => alerts::list_events(app, &request).await,
            Endpoint::GetAlerts => alerts::get_alerts(app, &request).await,
            Endpoint::PutAlerts => alerts::put_alerts(app, &request).await,
            Endpoint::PutPositionAlerts => alerts::put_position_alerts(app, &request).await,
            Endpoint::CreateWebhook => alerts::create_webhook(app, &request).await,
            Endpoint::ListWebhooks => alerts::list_webhooks(app, &request).await,
            Endpoint::GetWebhook => alerts::get_webhook(app, &request).await,
            Endpoint::UpdateWebhook => alerts::update_webhook(app, &request).await,
            Endpoint::DeleteWebhook => alerts::delete_webhook(app, &request).await,
            Endpoint::RotateWebhookSecret => alerts::rotate_webhook_secret(app, &request).await,
            Endpoint::TestWebhook => alerts::test_webhook(app, &request).await,
            Endpoint::ListWebhookDeliveries => alerts::list_webhook_deliveries(app, &request).await,
            Endpoint::RedeliverWebhook => alerts::redeliver_webhook(app, &request).await,
            Endpoint::RouteFallback => fallback(&request),
        };
        result.unwrap_or_else(|error| error.render(&request_id(&request)))
    }
}

/// A matched route: the endpoint and its path parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub endpoint: Endpoint,
    pub path_parameters: HashMap<String, String>,
}

/// Matches a method and path against the table: unknown path → 404, known path with another
/// method → 405 naming the methods it has. A trailing slash is ignored.
pub fn route(method: &Method, path: &str) -> Result<Route, ApiError> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let mut allowed: Vec<Method> = Vec::new();
    for endpoint in Endpoint::ALL {
        if endpoint == Endpoint::RouteFallback {
            continue;
        }
        let Some(path_parameters) = match_template(endpoint.path(), &segments) else {
            continue;
        };
        if endpoint.method() == method {
            return Ok(Route {
                endpoint,
                path_parameters,
            });
        }
        if !allowed.contains(&endpoint.method()) {
            allowed.push(endpoint.method());
        }
    }
    if allowed.is_empty() {
        return Err(ApiError::NotFound("Not Found".into()));
    }
    let allow: Vec<&str> = allowed.iter().map(Method::as_str).collect();
    Err(ApiError::MethodNotAllowed {
        allow: allow.join(", "),
    })
}

/// The `$default` route: behind the authorizer like every route (claims missing → 401), then
/// the local router's answer for a method and path no route takes (404, or 405 with `Allow`).
/// A request that does match a route never reaches it in API Gateway; should one arrive, it is
/// a 404 too: this function serves no resource.
fn fallback(request: &Request) -> Result<Response<Body>, ApiError> {
    crate::edge::caller::owner(request)?;
    route(request.method(), request.raw_http_path())?;
    Err(ApiError::NotFound("Not Found".into()))
}

/// The path parameters if `segments` fit the template (`{name}` takes one non-empty segment).
fn match_template(template: &str, segments: &[&str]) -> Option<HashMap<String, String>> {
    let parts: Vec<&str> = template.split('/').skip(1).collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut parameters = HashMap::new();
    for (part, segment) in parts.iter().zip(segments) {
        match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Some(name) if !segment.is_empty() => {
                parameters.insert(name.to_string(), percent_decode(segment));
            }
            Some(_) => return None,
            None if part == segment => {}
            None => return None,
        }
    }
    Some(parameters)
}

/// Decodes `%XX` escapes in a path segment (as API Gateway does for path parameters).
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_is_reached_by_its_own_method_and_path() {
        for endpoint in Endpoint::ALL {
            if endpoint == Endpoint::RouteFallback {
                // Reached only by what no route takes.
                assert!(route(&Method::GET, "/nowhere").is_err());
                continue;
            }
            let path = endpoint
                .path()
                .replace("/webhooks/{id}", "/webhooks/wh_01JD8Z6C6XK4W5S7R9T2V3M1QA")
                .replace("{id}", "01JD8Z6C6XK4W5S7R9T2V3M1QA")
                .replace("{deliveryId}", "dlv_01JD8Z6C6XK4W5S7R9T2V3M1QA")
                .replace("{chain}", "base")
                .replace("{address}", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed");
            let got = route(&endpoint.method(), &path).unwrap();
            assert_eq!(got.endpoint, endpoint);
        }
    }

    #[test]
    fn routes_match_methods_and_paths() {
        let ok = |m: Method, p: &str| route(&m, p).map(|r| r.endpoint).ok();
        assert_eq!(ok(Method::GET, "/positions"), Some(Endpoint::ListPositions));
        assert_eq!(
            ok(Method::POST, "/positions"),
            Some(Endpoint::CreatePosition)
        );
        assert_eq!(
            ok(Method::GET, "/positions/"),
            Some(Endpoint::ListPositions)
        );
        assert_eq!(ok(Method::GET, "/portfolio"), Some(Endpoint::GetPortfolio));
        assert_eq!(ok(Method::GET, "/pools"), Some(Endpoint::ListPools));
        let got = route(&Method::GET, "/positions/abc%20d").unwrap();
        assert_eq!(got.endpoint, Endpoint::GetPosition);
        assert_eq!(got.path_parameters["id"], "abc d");
        assert!(matches!(
            route(&Method::DELETE, "/positions"),
            Err(ApiError::MethodNotAllowed { allow }) if allow == "GET, POST"
        ));
        assert!(matches!(
            route(&Method::POST, "/portfolio"),
            Err(ApiError::MethodNotAllowed { allow }) if allow == "GET"
        ));
        assert!(matches!(
            route(&Method::GET, "/"),
            Err(ApiError::NotFound(_))
        ));
        assert!(matches!(
            route(&Method::GET, "/positions/a/b"),
            Err(ApiError::NotFound(_))
        ));
        assert!(matches!(
            route(&Method::GET, "/nope"),
            Err(ApiError::NotFound(_))
        ));
    }
}
