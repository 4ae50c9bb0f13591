//! Watched addresses through the handlers, for any store (memory and DynamoDB): counted apart
//! from linked wallets, at most `MAX_WATCHED_PER_USER` (400 past it), never twice, one less when
//! one is no longer watched.

use crate::client::TestClient;
use crate::fixtures::unique_owner;
use crate::wallets::{link_evm, post, EvmWallet};
use lambda_http::http::{Method, StatusCode};
use serde_json::json;
use shared::wallets::MAX_WATCHED_PER_USER;
use shared::App;

pub async fn watched_addresses_are_counted_apart(app: &App) {
    let alice = TestClient::in_process(app, Some(&unique_owner("alice")));
    let watch = |seed: u64| json!({"chain": "base", "address": EvmWallet::from_seed(900 + seed).address, "watch": true});
    for seed in 0..MAX_WATCHED_PER_USER as u64 {
        let reply = post(&alice, "/wallets", &watch(seed)).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
        assert_eq!(reply.json["watch"], true);
    }
    let past = post(&alice, "/wallets", &watch(99)).await;
    assert_eq!(past.status, StatusCode::BAD_REQUEST, "{}", past.text());
    let twice = post(&alice, "/wallets", &watch(0)).await;
    assert_eq!(twice.status, StatusCode::CONFLICT, "{}", twice.text());
    // A wallet linked by signature is not a watched one: it still links.
    let linked = link_evm(&alice, "base", &EvmWallet::from_seed(950)).await;
    assert_eq!(
        (&linked["kind"], &linked["watch"]),
        (&json!("eoa"), &json!(false))
    );
    // One no longer watched makes room for another.
    let first = EvmWallet::from_seed(900).address;
    let path = format!("/wallets/base/{first}");
    let gone = alice.send(Method::DELETE, &path, &[], b"").await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.text());
    let reply = post(&alice, "/wallets", &watch(99)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let listed = alice.send(Method::GET, "/wallets", &[], b"").await;
    assert_eq!(
        listed.json["total"],
        MAX_WATCHED_PER_USER + 1,
        "{}",
        listed.text()
    );
}
