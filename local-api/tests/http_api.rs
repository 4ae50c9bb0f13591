//! Black-box tests: start the `local-api` binary on a free port and speak HTTP to it.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use local_api::auth::JwtSettings;
use serde_json::{json, Value};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

struct Server {
    base: String,
    _child: Child,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
}

struct Reply {
    status: u16,
    headers: hyper::HeaderMap,
    json: Value,
}

/// The settings the server runs with: the documented defaults.
fn jwt() -> JwtSettings {
    JwtSettings {
        secret: "local-dev-secret".into(),
        issuer: "local-dev".into(),
        audience: "positions-api".into(),
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

impl Server {
    async fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_local-api"))
            .args(["--addr", "127.0.0.1:0"])
            .env_remove("LOCAL_JWT_SECRET")
            .env_remove("LOCAL_JWT_ISSUER")
            .env_remove("LOCAL_JWT_AUDIENCE")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("local-api starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines
            .next_line()
            .await
            .unwrap()
            .expect("local-api prints its address");
        let base = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .expect("the first line names the address")
            .to_string();
        let curl = lines.next_line().await.unwrap().unwrap();
        assert!(
            curl.contains("curl") && curl.contains("Authorization: Bearer "),
            "{curl}"
        );
        let client = Client::builder(TokioExecutor::new()).build_http();
        Server {
            base,
            _child: child,
            client,
        }
    }

    async fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::copy_from_slice(body)))
            .unwrap();
        let response = self
            .client
            .request(request)
            .await
            .expect("the server answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let json =
            serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("non-JSON body: {bytes:?}"));
        Reply {
            status,
            headers,
            json,
        }
    }

    async fn get(&self, path: &str, token: &str) -> Reply {
        let auth = format!("Bearer {token}");
        self.send("GET", path, &[("authorization", &auth)], b"")
            .await
    }

    async fn post(&self, path: &str, token: &str, body: &str) -> Reply {
        let auth = format!("Bearer {token}");
        self.send(
            "POST",
            path,
            &[
                ("authorization", &auth),
                ("content-type", "application/json"),
            ],
            body.as_bytes(),
        )
        .await
    }
}

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
    let server = Server::start().await;
    let s = jwt();
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
        ..jwt()
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
    for (method, path) in [
        ("GET", "/positions"),
        ("POST", "/positions"),
        ("GET", "/portfolio"),
        ("GET", "/pools"),
        ("GET", "/positions/01JD8Z6C6XK4W5S7R9T2V3M1QA"),
    ] {
        let missing = server
            .send(
                method,
                path,
                &[("content-type", "application/json")],
                create_body().as_bytes(),
            )
            .await;
        assert_eq!(missing.status, 401, "{method} {path} without a header");
        assert_eq!(
            missing.json,
            json!({"message": "Unauthorized", "statusCode": 401})
        );
        for token in &tokens {
            let auth = format!("Bearer {token}");
            let reply = server
                .send(
                    method,
                    path,
                    &[
                        ("authorization", &auth),
                        ("content-type", "application/json"),
                    ],
                    create_body().as_bytes(),
                )
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
                .send(method, path, &[("authorization", &basic)], b"")
                .await
                .status,
            401
        );
    }
    let token = s.sign(&good);
    assert_eq!(
        server.get("/positions", &token).await.json["total"],
        0,
        "nothing was created"
    );
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405() {
    let server = Server::start().await;
    let token = jwt().issue("alice", 300);
    let reply = server.get("/nowhere", &token).await;
    assert_eq!(
        (reply.status, reply.json["statusCode"].as_u64()),
        (404, Some(404))
    );
    let auth = format!("Bearer {token}");
    let reply = server
        .send("DELETE", "/positions", &[("authorization", &auth)], b"")
        .await;
    assert_eq!(
        (reply.status, reply.json["statusCode"].as_u64()),
        (405, Some(405))
    );
    assert_eq!(reply.headers["allow"], "GET, POST");
    let reply = server
        .send("PUT", "/portfolio", &[("authorization", &auth)], b"")
        .await;
    assert_eq!(reply.status, 405);
}

#[tokio::test]
async fn create_read_list_and_portfolio_over_http() {
    let server = Server::start().await;
    let alice = jwt().issue("alice", 300);
    let bob = jwt().issue("bob", 300);
    let created = server.post("/positions", &alice, &create_body()).await;
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
    let read = server.get(&format!("/positions/{id}"), &alice).await;
    assert_eq!((read.status, &read.json), (200, &created.json));
    assert_eq!(
        server.get(&format!("/positions/{id}"), &bob).await.status,
        404
    );
    let list = server
        .get("/positions?chain=arbitrum&status=active&limit=1", &alice)
        .await;
    assert_eq!(list.json["total"], 1);
    assert_eq!(list.json["data"][0]["id"], id);
    let bad = server.get("/positions?limit=0", &alice).await;
    assert_eq!(bad.status, 400);
    assert!(bad.json["message"].as_str().unwrap().contains("limit"));
    let portfolio = server.get("/portfolio", &alice).await;
    assert_eq!(portfolio.json["positions"], 1);
    assert_eq!(server.get("/portfolio", &bob).await.json["positions"], 0);
    assert_eq!(server.get("/pools", &bob).await.json["total"], 10);
}

#[tokio::test]
async fn oversized_and_non_json_bodies() {
    let server = Server::start().await;
    let token = jwt().issue("alice", 300);
    let auth = format!("Bearer {token}");
    let post = |content_type: &'static str, body: Vec<u8>| {
        let (server, auth) = (&server, auth.clone());
        async move {
            let headers = [
                ("authorization", auth.as_str()),
                ("content-type", content_type),
            ];
            server.send("POST", "/positions", &headers, &body).await
        }
    };
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(70 * 1024));
    let reply = post("application/json", big.into_bytes()).await;
    assert_eq!(
        (reply.status, reply.json["statusCode"].as_u64()),
        (413, Some(413))
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
    assert_eq!(server.get("/positions", &token).await.json["total"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_creates_for_one_user() {
    let server = std::sync::Arc::new(Server::start().await);
    let token = jwt().issue("burst", 300);
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (server, token) = (server.clone(), token.clone());
            tokio::spawn(async move {
                server
                    .post("/positions", &token, &create_body())
                    .await
                    .status
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), 201);
    }
    let list = server.get("/positions?limit=100", &token).await;
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
    let claims = jwt()
        .authorize(Some(&format!("Bearer {token}")))
        .expect("valid with the defaults");
    assert_eq!(claims["sub"], "carol");
    let server = Server::start().await;
    assert_eq!(server.get("/positions", &token).await.status, 200);
}
