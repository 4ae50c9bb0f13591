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
        assert!(
            main.contains(&format!("Endpoint::{endpoint:?}")),
            "{name} runs its own endpoint"
        );
        let statuses: Vec<u16> = events
            .expected
            .iter()
            .filter(|(file, _)| file.starts_with(&format!("{name}-")))
            .map(|(_, status)| *status)
            .collect();
        assert!(
            statuses.iter().any(|s| (200..300).contains(s)),
            "events/ has a successful {name} event"
        );
        assert!(
            statuses.contains(&401),
            "events/ has a {name} event without claims"
        );
    }
}
