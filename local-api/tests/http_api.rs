//! Black-box tests: start the `local-api` binary on a free port and speak HTTP to it.

use lambda_http::http::{Method, StatusCode};
use local_api::auth::JwtSettings;
use serde_json::{json, Value};
use test_support::local_api::LocalApi;

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A `local-api` with the default settings.
async fn start() -> LocalApi {
    LocalApi::start(env!("CARGO_BIN_EXE_local-api"), &[]).await
}

/// A position on the arbitrum WETH/USDC pool, spelled in lower case.
fn create_body() -> String {
    json!({
        "chain": "arbitrum", "protocol": "uniswap-v3",
        "pool": "0xc6962004f452be9203591991d15f6b388e09e8d0",
        "amountA": "0.5", "amountB": "1500", "priceLower": 2800.5, "priceUpper": 3200
    })
    .to_string()
}

#[tokio::test]
async fn bad_credentials_get_401_everywhere() {
    let server = start().await;
    let s = JwtSettings::local_default();
    let good =
        json!({"sub": "alice", "iss": "local-dev", "aud": "positions-api", "exp": now() + 300});
    let with = |k: &str, v: Value| {
        let mut c = good.clone();
        c[k] = v;
        s.sign(&c)
    };
    let mut no_exp = good.clone();
    no_exp.as_object_mut().unwrap().remove("exp");
    let mut no_sub = good.clone();
    no_sub.as_object_mut().unwrap().remove("sub");
    let foreign = JwtSettings {
        secret: "another-secret".into(),
        ..JwtSettings::local_default()
    };
    let tokens = [
        with("exp", json!(now() - 5)),
        with("nbf", json!(now() + 300)),
        with("iss", json!("someone-else")),
        with("aud", json!("another-api")),
        s.sign(&no_exp),
        s.sign(&no_sub),
        foreign.sign(&good),
        "garbage".to_string(),
        String::new(),
    ];
    let json_body = [("content-type", "application/json")];
    for (method, path) in [
        (Method::GET, "/positions"),
        (Method::POST, "/positions"),
        (Method::GET, "/portfolio"),
        (Method::GET, "/pools"),
        (Method::GET, "/positions/01JD8Z6C6XK4W5S7R9T2V3M1QA"),
    ] {
        let missing = server
            .client(None)
            .send(method.clone(), path, &json_body, create_body().as_bytes())
            .await;
        assert_eq!(missing.status, 401, "{method} {path} without a header");
        assert_eq!(
            missing.json,
            json!({"message": "Unauthorized", "statusCode": 401})
        );
        for token in &tokens {
            let reply = server
                .client(Some(token))
                .send(method.clone(), path, &json_body, create_body().as_bytes())
                .await;
            assert_eq!(reply.status, 401, "{method} {path} {token}");
            assert_eq!(
                reply.json,
                json!({"message": "Unauthorized", "statusCode": 401})
            );
            assert_eq!(reply.headers["content-type"], "application/json");
        }
        let basic = format!("Basic {}", s.sign(&good));
        assert_eq!(
            server
                .client(None)
                .send(method.clone(), path, &[("authorization", &basic)], b"")
                .await
                .status,
            401
        );
    }
    let token = s.sign(&good);
    assert_eq!(
        server.client(Some(&token)).total().await,
        0,
        "nothing was created"
    );
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405() {
    let server = start().await;
    let token = JwtSettings::local_default().issue("alice", 300);
    let alice = server.client(Some(&token));
    let reply = alice.send(Method::GET, "/nowhere", &[], b"").await;
    assert_eq!(
        (reply.status, reply.json["statusCode"].as_u64()),
        (StatusCode::NOT_FOUND, Some(404))
    );
    let reply = alice.send(Method::DELETE, "/positions", &[], b"").await;
    assert_eq!(
        (reply.status, reply.json["statusCode"].as_u64()),
        (StatusCode::METHOD_NOT_ALLOWED, Some(405))
    );
    assert_eq!(reply.headers["allow"], "GET, POST");
    let reply = alice.send(Method::PUT, "/portfolio", &[], b"").await;
    assert_eq!(reply.status, 405);
}

#[tokio::test]
async fn create_read_list_and_portfolio_over_http() {
    let server = start().await;
    let (alice, bob) = (
        JwtSettings::local_default().issue("alice", 300),
        JwtSettings::local_default().issue("bob", 300),
    );
    let (alice, bob) = (server.client(Some(&alice)), server.client(Some(&bob)));
    let created = alice.create(&create_body()).await;
    assert_eq!(created.status, 201, "{}", created.json);
    let id = created.json["id"].as_str().unwrap();
    assert_eq!(
        created.headers["location"],
        format!("/positions/{id}").as_str()
    );
    assert_eq!(
        created.json["pool"],
        "0xC6962004f452bE9203591991D15f6b388e09E8D0"
    );
    let read = alice.get(id).await;
    assert_eq!((read.status, &read.json), (StatusCode::OK, &created.json));
    assert_eq!(bob.get(id).await.status, 404);
    let list = alice.list("chain=arbitrum&status=active&limit=1").await;
    assert_eq!(list.json["total"], 1);
    assert_eq!(list.json["data"][0]["id"], id);
    let bad = alice.list("limit=0").await;
    assert_eq!(bad.status, 400);
    assert!(bad.json["message"].as_str().unwrap().contains("limit"));
    let portfolio = alice.portfolio().await;
    assert_eq!(portfolio.json["positions"], 1);
    assert_eq!(bob.portfolio().await.json["positions"], 0);
    assert_eq!(bob.pools().await.json["total"], 12);
}

#[tokio::test]
async fn oversized_and_non_json_bodies() {
    let server = start().await;
    let token = JwtSettings::local_default().issue("alice", 300);
    let alice = server.client(Some(&token));
    let post = |content_type: &'static str, body: Vec<u8>| {
        let alice = alice.clone();
        async move {
            let headers = [("content-type", content_type)];
            alice
                .send(Method::POST, "/positions", &headers, &body)
                .await
        }
    };
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(70 * 1024));
    let reply = post("application/json", big.into_bytes()).await;
    assert_eq!(
        (reply.status, reply.json["statusCode"].as_u64()),
        (StatusCode::PAYLOAD_TOO_LARGE, Some(413))
    );
    assert_eq!(
        post("text/plain", create_body().into_bytes()).await.status,
        415
    );
    assert_eq!(
        post("application/json", b"\xff\xfe{".to_vec()).await.status,
        400
    );
    assert_eq!(post("application/json", Vec::new()).await.status, 400);
    assert_eq!(alice.total().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_creates_for_one_user() {
    let server = start().await;
    let burst = server.client(Some(&JwtSettings::local_default().issue("burst", 300)));
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let burst = burst.clone();
            tokio::spawn(async move { burst.create(&create_body()).await.status })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::CREATED);
    }
    let list = burst.list("limit=100").await;
    assert_eq!(list.json["total"], 50);
    let ids: std::collections::HashSet<&str> = list.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 50);
}

#[tokio::test]
async fn the_token_command_prints_a_working_token() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_local-api"))
        .args(["token", "--sub", "carol"])
        .env_remove("LOCAL_JWT_SECRET")
        .output()
        .unwrap();
    assert!(output.status.success());
    let token = String::from_utf8(output.stdout).unwrap().trim().to_string();
    let claims = JwtSettings::local_default()
        .authorize(Some(&format!("Bearer {token}")))
        .expect("valid with the defaults")
        .claims;
    assert_eq!(claims["sub"], "carol");
    let server = start().await;
    assert_eq!(server.client(Some(&token)).list("").await.status, 200);
}
