//! The OpenAPI document: its routes are the route table's, every operation is named for client
//! generators, the create response links to get and close, every `$ref` resolves, and local-api
//! serves it without a token with the catalog's pools in the create body's schema. (Its validity against the
//! OpenAPI 3.1 meta-schema and the schemathesis run: scripts/fuzz.sh, in the test command.)

use lambda_http::http::{Method, StatusCode};
use local_api::openapi::document;
use serde_json::Value;
use shared::catalog::Catalog;
use shared::Endpoint;
use std::collections::BTreeSet;
use test_support::local_api::LocalApi;

const BIN: &str = env!("CARGO_BIN_EXE_local-api");

fn operations(document: &Value) -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            routes.insert((method.to_uppercase(), path.clone()));
        }
    }
    routes
}

#[test]
fn the_documents_routes_are_the_route_table() {
    let document = document().unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let mut table: BTreeSet<(String, String)> = Endpoint::ALL
        .iter()
        .filter(|e| **e != Endpoint::RouteFallback)
        .map(|e| (e.method().to_string(), e.path().to_string()))
        .collect();
    // Served by local-api itself, outside the route table.
    table.insert(("GET".into(), local_api::openapi::PATH.into()));
    assert_eq!(operations(&document), table);
}

#[test]
fn operations_are_named_and_the_create_response_links_to_get_and_close() {
    let document = document().unwrap();
    let mut names = BTreeSet::new();
    for item in document["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            let name = operation["operationId"].as_str().expect("an operationId");
            assert!(names.insert(name.to_string()), "{name} twice");
        }
    }
    let links = &document["paths"]["/positions"]["post"]["responses"]["201"]["links"];
    let targets: BTreeSet<&str> = links
        .as_object()
        .unwrap()
        .values()
        .map(|l| l["operationId"].as_str().unwrap())
        .collect();
    assert_eq!(targets, BTreeSet::from(["getPosition", "closePosition"]));
    for link in links.as_object().unwrap().values() {
        assert_eq!(link["parameters"]["id"], "$response.body#/id");
        assert!(names.contains(link["operationId"].as_str().unwrap()));
    }
}

/// Every `$ref` names a part of the document (a schema lost in an edit fails here, before the
/// fuzzing's meta-schema check).
#[test]
fn every_reference_resolves() {
    fn refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    found.push(target);
                }
                map.values().for_each(|v| refs(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }
    let document = document().unwrap();
    let mut found = Vec::new();
    refs(&document, &mut found);
    assert!(found.len() > 100, "{}", found.len());
    for target in found {
        let pointer = target.strip_prefix('#').expect("a local reference");
        assert!(document.pointer(pointer).is_some(), "{target} resolves");
    }
    // And each schema is an object or a named type, never a stray description's.
    for (name, schema) in document["components"]["schemas"].as_object().unwrap() {
        let shaped = ["type", "$ref", "oneOf", "anyOf", "allOf", "enum"];
        assert!(shaped.iter().any(|k| schema.get(k).is_some()), "{name}");
    }
}

#[tokio::test]
async fn local_api_serves_the_document_without_a_token() {
    let server = LocalApi::start(BIN, &[]).await;
    let anonymous = server.client(None);
    let reply = anonymous.send(Method::GET, "/openapi.json", &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.headers["content-type"], "application/json");
    let served = reply.json;
    assert_eq!(operations(&served), operations(&document().unwrap()));
    // The create body: one alternative per catalog pool, naming it.
    let alternatives = served["components"]["schemas"]["CreatePositionRequest"]["oneOf"]
        .as_array()
        .unwrap();
    let catalog = Catalog::embedded();
    assert_eq!(alternatives.len(), catalog.pools.len());
    for (alternative, pool) in alternatives.iter().zip(&catalog.pools) {
        assert_eq!(
            alternative["properties"]["chain"]["const"],
            pool.chain.as_str()
        );
        // serde_json reads doubles to within one unit in the last place.
        let close = |value: &Value, want: f64| {
            let got = value.as_f64().unwrap();
            assert!((got - want).abs() <= want.abs() * 1e-15, "{got} vs {want}");
        };
        let (low, high) = pool.price_bounds();
        close(&alternative["properties"]["priceLower"]["minimum"], low);
        close(&alternative["properties"]["priceUpper"]["maximum"], high);
    }
    let post = anonymous
        .send(Method::POST, "/openapi.json", &[], b"")
        .await;
    assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(post.headers["allow"], "GET");
    assert_eq!(post.json["statusCode"], 405);
}
