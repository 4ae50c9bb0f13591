//! The route table (`shared::Endpoint`) is the one place routes are written: the template's
//! functions and their HTTP API events, the function crates and the sample events must agree
//! with it.

use shared::Endpoint;
use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// `(binary, method, path)` of every `HttpApi` event in `template.yaml`, read line by line: each
/// function's `Binary:` comes before its events' `Method:` and `Path:`.
fn template_routes() -> BTreeSet<(String, String, String)> {
    let text = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    let mut routes = BTreeSet::new();
    let (mut binary, mut method) = (None::<String>, None::<String>);
    for line in text.lines().map(str::trim) {
        let value = |key: &str| line.strip_prefix(key).map(|v| v.trim().to_string());
        if let Some(name) = value("Binary:") {
            binary = Some(name);
        } else if let Some(m) = value("Method:") {
            method = Some(m);
        } else if let Some(path) = value("Path:") {
            let binary = binary.clone().expect("a Path: after a function's Binary:");
            let method = method.take().expect("Method: before Path:");
            routes.insert((binary, method, path));
        }
    }
    routes
}

fn table_routes() -> BTreeSet<(String, String, String)> {
    Endpoint::ALL
        .iter()
        .map(|e| {
            (
                e.function_name().to_string(),
                e.method().to_string(),
                e.path().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_template_routes_exactly_the_route_table() {
    assert_eq!(template_routes(), table_routes());
}

#[test]
fn every_endpoint_has_its_function_crate_and_sample_events() {
    let events = test_support::events::event_manifest();
    for endpoint in Endpoint::ALL {
        let name = endpoint.function_name();
        let manifest = root().join("functions").join(name).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest)
            .unwrap_or_else(|_| panic!("{} is missing", manifest.display()));
        assert!(text.contains(&format!("name = \"{name}\"")), "{name}");
        let main = std::fs::read_to_string(root().join("functions").join(name).join("src/main.rs"))
            .unwrap();
        // The sync function serves its route and the schedule from its own entry point.
        let runs_it = if endpoint == Endpoint::SyncMarkets {
            main.contains("shared::chain::lambda::run()")
        } else {
            main.contains(&format!("Endpoint::{endpoint:?}"))
        };
        assert!(runs_it, "{name} runs its own endpoint");
        let statuses: Vec<u16> = events
            .expected
            .iter()
            .filter(|(file, _)| file.starts_with(&format!("{name}-")))
            .map(|(_, status)| *status)
            .collect();
        // The actions on a wallet position answer 2xx only where a chain runs their
        // transactions first (decision 55): the devnet tests them; here, their refusals.
        let chain_only = [
            Endpoint::CollectFees,
            Endpoint::HarvestRewards,
            Endpoint::StakePosition,
            Endpoint::IncreaseLiquidity,
            Endpoint::DecreaseLiquidity,
            Endpoint::RebalancePosition,
        ];
        let answers = if endpoint == Endpoint::RouteFallback {
            [404, 405].iter().all(|s| statuses.contains(s))
        } else if chain_only.contains(&endpoint) {
            [400, 404, 409].iter().all(|s| statuses.contains(s))
        } else {
            statuses.iter().any(|s| (200..300).contains(s))
        };
        assert!(answers, "events/ has the {name} events it answers");
        assert!(
            statuses.contains(&401),
            "events/ has a {name} event without claims"
        );
    }
}

fn template() -> String {
    std::fs::read_to_string(root().join("template.yaml")).unwrap()
}

#[test]
fn unrouted_requests_reach_the_fallback_behind_the_authorizer() {
    let text = template();
    let routes = template_routes();
    assert!(routes.contains(&(
        "route-fallback".to_string(),
        "ANY".to_string(),
        "$default".to_string()
    )));
    // One default authorizer for every route, `$default` included; no route opts out.
    assert!(text.contains("DefaultAuthorizer: JwtAuthorizer"));
    assert!(!text.contains("Authorizer: NONE"));
}

#[test]
fn cors_is_configured_from_its_parameter_as_local_api_answers() {
    let text = template();
    assert!(text.contains("  CorsAllowedOrigins:\n    Type: CommaDelimitedList"));
    for line in [
        "AllowOrigins: !Ref CorsAllowedOrigins",
        "AllowMethods: [GET, POST, PUT, PATCH, DELETE]",
        "AllowHeaders: [Authorization, Content-Type, Idempotency-Key]",
        "ExposeHeaders: [Location, Retry-After, Idempotent-Replayed]",
        "MaxAge: 600",
    ] {
        assert!(text.contains(line), "{line}");
    }
}

#[test]
fn every_function_and_the_api_and_table_have_alarms() {
    let text = template();
    assert!(text.contains("  AlarmTopicArn:\n    Type: String"));
    for endpoint in Endpoint::ALL {
        let resource: String = endpoint
            .function_name()
            .split('-')
            .map(|w| w[..1].to_uppercase() + &w[1..])
            .collect();
        for metric in ["Errors", "Throttles"] {
            let alarm = format!("  {resource}{metric}Alarm:\n    Type: AWS::CloudWatch::Alarm");
            assert!(text.contains(&alarm), "{alarm}");
        }
    }
    for alarm in ["Api5xxAlarm", "TableThrottlesAlarm"] {
        assert!(text.contains(&format!("  {alarm}:\n    Type: AWS::CloudWatch::Alarm")));
    }
    let alarms = text.matches("Type: AWS::CloudWatch::Alarm").count();
    let notified = text
        .matches("AlarmActions: !If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]")
        .count();
    assert_eq!(alarms, notified, "every alarm notifies the optional topic");
}

/// Every block `!If` of the template has its three arguments: condition, then, else. (A missing
/// else passes `cfn-lint` and `sam validate` but stops `sam build`.)
#[test]
fn every_condition_in_the_template_has_its_three_arguments() {
    let text = template();
    let lines: Vec<&str> = text.lines().collect();
    let indent = |line: &str| line.len() - line.trim_start().len();
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.trim() != "- !If" && !line.trim_end().ends_with(": !If") {
            continue;
        }
        let own = indent(line);
        let mut arguments = 0;
        let mut argument_indent = None;
        for next in &lines[i + 1..] {
            let trimmed = next.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if indent(next) <= own {
                break;
            }
            let at = *argument_indent.get_or_insert(indent(next));
            if indent(next) == at && trimmed.starts_with("- ") {
                arguments += 1;
            }
        }
        assert_eq!(arguments, 3, "the !If at template.yaml line {}", i + 1);
        checked += 1;
    }
    assert!(checked > 10, "found {checked} block conditions");
}
