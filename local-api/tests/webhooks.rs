//! Webhooks end to end through local-api and a receiver of the test's own on loopback
//! (decision 61): signatures as the `standardwebhooks` crate checks them, the retry schedule
//! (shortened by `--webhook-retry-scale`), a 410 that disables, a redelivery with the same id,
//! a rotation's two signatures, and every address class webhooks never reach refused with
//! nothing sent. On memory and on DynamoDB (moto).

use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;
use test_support::client::{Reply, TestClient};
use test_support::json::text;
use test_support::local_api::LocalApi;
use test_support::on_both_stores;
use test_support::wallets::post;
use test_support::webhooks::{Answer, Receiver};
use test_support::world::{local_api_binary, user};

/// Waits, where the wall clock is within `seconds` of a minute's end, for the next minute: what
/// follows, in less than `60 - seconds` seconds, falls within one minute of the rate limit's.
async fn clear_of_a_minutes_end(seconds: u64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let left = 60 - now % 60;
    if left <= seconds {
        tokio::time::sleep(Duration::from_secs(left)).await;
    }
}

async fn server(store: &[&str], loopback: bool) -> LocalApi {
    let mut args = vec!["--webhook-retry-scale", "0.001"];
    if loopback {
        args.extend(["--webhooks-http-loopback", "allow"]);
    }
    args.extend_from_slice(store);
    LocalApi::start(local_api_binary().to_str().unwrap(), &args).await
}

async fn send(client: &TestClient, method: Method, path: &str, body: Option<Value>) -> Reply {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let headers: &[(&str, &str)] = if body.is_empty() {
        &[]
    } else {
        &[("content-type", "application/json")]
    };
    client.send(method, path, headers, body.as_bytes()).await
}

/// Registers `url` (checked 201); the endpoint with its secret.
async fn register(client: &TestClient, url: &str) -> Value {
    let reply = post(client, "/webhooks", &json!({"url": url})).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert!(text(&reply.json["secret"]).starts_with("whsec_"));
    reply.json
}

async fn test_event(client: &TestClient, id: &str) -> Value {
    let reply = send(client, Method::POST, &format!("/webhooks/{id}/test"), None).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    reply.json
}

async fn deliveries(client: &TestClient, id: &str, n: usize) -> Vec<Value> {
    let path = format!("/webhooks/{id}/deliveries?limit=100");
    for _ in 0..300 {
        let reply = send(client, Method::GET, &path, None).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let log = reply.json["data"].as_array().unwrap().clone();
        if log.len() >= n {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fewer than {n} attempts logged");
}

async fn retries_disabling_and_redelivery(store: &[&str]) {
    let receiver = Receiver::start(vec![Answer::Status(500), Answer::Status(503)]).await;
    let server = server(store, true).await;
    let alice = user(&server, "alice").await;
    let hook = register(&alice, &receiver.url).await;
    let (id, secret) = (text(&hook["id"]), text(&hook["secret"]));

    // Fails twice, then 200: three attempts, in order, the same event each time, signed.
    let event = test_event(&alice, &id).await;
    let got = receiver.wait_for(3).await;
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|r| r.id() == text(&event["id"])));
    assert!(got.iter().all(|r| r.signed_by(&secret)), "{got:?}");
    assert_eq!(got[0].json()["type"], "webhook.test");
    let log = deliveries(&alice, &id, 3).await;
    let statuses: Vec<Value> = log.iter().rev().map(|d| d["statusCode"].clone()).collect();
    assert_eq!(statuses, [json!(500), json!(503), json!(200)], "{log:?}");
    let attempts: Vec<Value> = log.iter().rev().map(|d| d["attempt"].clone()).collect();
    assert_eq!(attempts, [json!(1), json!(2), json!(3)]);
    assert_eq!(log[0]["delivered"], true);

    // Redelivered: the same id again.
    let path = format!(
        "/webhooks/{id}/deliveries/{}/redeliver",
        text(&log[0]["id"])
    );
    let reply = send(&alice, Method::POST, &path, None).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    let got = receiver.wait_for(4).await;
    assert_eq!(got[3].id(), text(&event["id"]));

    // Another user sees none of it.
    let bob = user(&server, "bob").await;
    let reply = send(&bob, Method::GET, &format!("/webhooks/{id}"), None).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let reply = send(&bob, Method::POST, &path, None).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);

    // A 410 disables the endpoint at once; nothing more is sent until it is enabled again.
    receiver.answer(vec![Answer::Status(410)]);
    test_event(&alice, &id).await;
    receiver.wait_for(5).await;
    let mut view = Value::Null;
    for _ in 0..100 {
        view = send(&alice, Method::GET, &format!("/webhooks/{id}"), None)
            .await
            .json;
        if view["enabled"] == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(view["enabled"], false, "{view}");
    assert!(text(&view["disabledReason"]).contains("410"), "{view}");
    // Disabled: a test or a redelivery is refused with the reason, nothing sent.
    let path_test = format!("/webhooks/{id}/test");
    let reply = send(&alice, Method::POST, &path_test, None).await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.text());
    assert!(reply.text().contains("disabled"), "{}", reply.text());
    let reply = send(&alice, Method::POST, &path, None).await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.text());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        receiver.got().len(),
        5,
        "nothing is sent to a disabled endpoint"
    );
    let reply = send(
        &alice,
        Method::PATCH,
        &format!("/webhooks/{id}"),
        Some(json!({"enabled": true})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json["enabled"], true);
    assert_eq!(reply.json["disabledReason"], Value::Null);
    test_event(&alice, &id).await;
    receiver.wait_for(6).await;

    // Secrets are shown once: never in a read or a list.
    let listed = send(&alice, Method::GET, "/webhooks", None).await.json;
    assert!(!listed.to_string().contains("whsec_"), "{listed}");
    let reply = send(&alice, Method::DELETE, &format!("/webhooks/{id}"), None).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let reply = send(&alice, Method::GET, &format!("/webhooks/{id}"), None).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

on_both_stores!(retries_a_410_and_redelivery => retries_disabling_and_redelivery);

/// Tests have their own limit: ten a minute per endpoint, 429 past it (with when to retry),
/// another endpoint's untouched; they never take the events' hourly allowance.
async fn tests_have_their_own_limit(store: &[&str]) {
    let receiver = Receiver::start(Vec::new()).await;
    let server = server(store, true).await;
    let alice = user(&server, "alice").await;
    let (one, two) = (
        text(&register(&alice, &receiver.url).await["id"]),
        text(&register(&alice, &receiver.url).await["id"]),
    );
    // The eleven tests in one minute: begun at least 20 seconds before it ends (they take a
    // second or two).
    clear_of_a_minutes_end(20).await;
    for _ in 0..10 {
        test_event(&alice, &one).await;
    }
    let path = format!("/webhooks/{one}/test");
    let reply = send(&alice, Method::POST, &path, None).await;
    assert_eq!(
        reply.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        reply.text()
    );
    assert_eq!(reply.json["statusCode"], 429, "{}", reply.text());
    let wait: u64 = reply.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    test_event(&alice, &two).await;
}

on_both_stores!(tests_limited => tests_have_their_own_limit);

/// A create replayed under its Idempotency-Key answers the same 201, secret included, to the
/// same caller; once its endpoint is deleted, 409 (never an id that is gone).
async fn a_replayed_create_is_the_same_answer(store: &[&str]) {
    let server = server(store, false).await;
    let alice = user(&server, "alice").await;
    let body = json!({"url": "https://hooks.example.com/positions"}).to_string();
    let headers = [
        ("content-type", "application/json"),
        ("idempotency-key", "create-webhook-replayed-0001"),
    ];
    let create = || alice.send(Method::POST, "/webhooks", &headers, body.as_bytes());
    let first = create().await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    let again = create().await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text());
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.json["id"], first.json["id"]);
    assert_eq!(
        again.json["secret"],
        first.json["secret"],
        "{}",
        again.text()
    );
    let id = text(&first.json["id"]);
    let reply = send(&alice, Method::DELETE, &format!("/webhooks/{id}"), None).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let gone = create().await;
    gone.assert_refused(StatusCode::CONFLICT, "deleted");
    let listed = send(&alice, Method::GET, "/webhooks", None).await;
    assert_eq!(listed.json["total"], 0, "{}", listed.text());
}

on_both_stores!(replayed_create => a_replayed_create_is_the_same_answer);

async fn rotation_signs_with_both_secrets(store: &[&str]) {
    let receiver = Receiver::start(Vec::new()).await;
    let server = server(store, true).await;
    let alice = user(&server, "alice").await;
    let hook = register(&alice, &receiver.url).await;
    let (id, old) = (text(&hook["id"]), text(&hook["secret"]));
    let path = format!("/webhooks/{id}/rotate-secret");
    let reply = send(&alice, Method::POST, &path, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let new = text(&reply.json["secret"]);
    assert_ne!(new, old);
    test_event(&alice, &id).await;
    let got = receiver.wait_for(1).await;
    let signatures = got[0].header("webhook-signature");
    assert_eq!(signatures.split(' ').count(), 2, "{signatures}");
    // Each secret's own signature is there: a receiver holding either accepts it.
    assert!(got[0].signed_by(&new) && got[0].signed_by(&old));
}

on_both_stores!(rotation => rotation_signs_with_both_secrets);

/// Without the loopback flag (as deployed): every address class webhooks never reach is
/// refused at registration when written as an address, and at connect time when a name
/// resolves to it; a redirect is never followed. Nothing reaches the receiver.
#[tokio::test]
async fn no_webhook_reaches_our_network() {
    let receiver = Receiver::start(Vec::new()).await;
    let server = server(&[], false).await;
    let alice = user(&server, "alice").await;
    let port = receiver.port;
    for url in [
        format!("http://127.0.0.1:{port}/hook"),
        format!("https://127.0.0.1:{port}/hook"),
        format!("https://2130706433:{port}/hook"),
        format!("https://[::1]:{port}/hook"),
        format!("https://[::ffff:127.0.0.1]:{port}/hook"),
        "https://10.1.2.3/hook".into(),
        "https://172.16.0.1/hook".into(),
        "https://192.168.0.1/hook".into(),
        "https://169.254.169.254/latest/meta-data/".into(),
        "https://[fe80::1]/hook".into(),
        "https://[fd00::1]/hook".into(),
        "https://0.0.0.0/hook".into(),
        "https://224.0.0.1/hook".into(),
        "https://user:pw@example.com/hook".into(),
        // This machine by name, however spelled (a name resolving to loopback otherwise is
        // refused when connecting: `CheckedResolver`'s own test).
        format!("https://localhost:{port}/hook"),
        format!("https://LOCALHOST:{port}/hook"),
        format!("https://localhost.:{port}/hook"),
        // Issue 49's: special-purpose blocks and IPv6 forms of refused IPv4 addresses.
        format!("https://[64:ff9b::7f00:1]:{port}/hook"),
        "https://[64:ff9b::a9fe:a9fe]/hook".into(),
        "https://[2002:a00:1::]/hook".into(),
        "https://[::ffff:0:7f00:1]/hook".into(),
        "https://[fec0::1]/hook".into(),
        "https://[2001:db8::1]/hook".into(),
        "https://[2001::1]/hook".into(),
        "https://198.18.0.1/hook".into(),
        "https://192.0.0.8/hook".into(),
        "https://203.0.113.9/hook".into(),
    ] {
        let reply = post(&alice, "/webhooks", &json!({"url": url})).await;
        reply.assert_refused(StatusCode::BAD_REQUEST, "url");
    }
    assert!(receiver.got().is_empty(), "nothing reached the receiver");
}

/// A redirect to loopback is never followed: with loopback allowed (local-api's flag), an
/// endpoint that answers 302 to another receiver gets its attempt counted as failed, and the
/// other receiver gets nothing.
#[tokio::test]
async fn a_redirect_is_never_followed() {
    let target = Receiver::start(Vec::new()).await;
    let redirecting = Receiver::start(vec![Answer::Redirect(target.url.clone())]).await;
    let server = server(&[], true).await;
    let alice = user(&server, "alice").await;
    let hook = register(&alice, &redirecting.url).await;
    let id = text(&hook["id"]);
    test_event(&alice, &id).await;
    let log = deliveries(&alice, &id, 1).await;
    let first = log.last().unwrap();
    assert_eq!(first["statusCode"], 302, "{log:?}");
    assert_eq!(first["delivered"], false);
    // Its retry (5 ms here) is answered 200 by the endpoint itself.
    redirecting.wait_for(2).await;
    assert!(target.got().is_empty(), "the redirect was not followed");
}

/// At most five endpoints per user; the sixth is refused and nothing is stored.
#[tokio::test]
async fn five_endpoints_at_most() {
    let server = server(&[], false).await;
    let alice = user(&server, "alice").await;
    for i in 0..5 {
        register(&alice, &format!("https://hooks{i}.example.com/x")).await;
    }
    let reply = post(
        &alice,
        "/webhooks",
        &json!({"url": "https://six.example.com/x"}),
    )
    .await;
    reply.assert_refused(StatusCode::CONFLICT, "at most 5");
    let listed = send(&alice, Method::GET, "/webhooks", None).await.json;
    assert_eq!(listed["total"], 5, "{listed}");
}
