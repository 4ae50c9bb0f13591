//! The devnet world every devnet test file starts from: anvil with the real contracts
//! ([`Devnet`]), local-api serving its catalog and reading its chain (directly or through a
//! proxy) in memory or on DynamoDB (moto), a user and an operator to call it, and a sync on
//! request. A test file describes only its scenario; [`on_both_stores!`](crate::on_both_stores)
//! runs a scenario in memory and on DynamoDB.

use crate::client::TestClient;
use crate::devnet::Devnet;
use crate::local_api::LocalApi;
use lambda_http::http::{Method, StatusCode};
use serde_json::Value;
use std::path::PathBuf;

/// The local-api binary cargo built beside the test running (`target/<profile>/local-api`, what
/// a local-api test's `CARGO_BIN_EXE_local-api` names).
pub fn local_api_binary() -> PathBuf {
    let test = std::env::current_exe().expect("the test's own path");
    let binary = test
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("local-api"))
        .expect("target/<profile>/deps/<test>");
    assert!(
        binary.exists(),
        "{} is missing: run the tests with cargo test --workspace",
        binary.display()
    );
    binary
}

/// local-api on the devnet: its catalog, its chain read at `rpc` (the devnet's own URL, or a
/// proxy's in front of it), as [`local_api_on`] serves them.
pub async fn local_api(devnet: &Devnet, rpc: &str, extra: &[&str]) -> LocalApi {
    local_api_on(&devnet.catalog, rpc, extra).await
}

/// local-api serving the catalog file `catalog` and reading its ethereum from `rpc` at the head
/// (a devnet mines a block per transaction), syncing only when asked; `extra` adds arguments
/// (a store, a log range).
pub async fn local_api_on(catalog: &std::path::Path, rpc: &str, extra: &[&str]) -> LocalApi {
    let rpc = format!("ethereum={rpc}");
    let mut args = vec![
        "--catalog",
        catalog.to_str().unwrap(),
        "--rpc",
        &rpc,
        "--sync-interval",
        "3600",
        "--confirmations",
        "0",
    ];
    args.extend_from_slice(extra);
    LocalApi::start(local_api_binary().to_str().unwrap(), &args).await
}

/// A token for `sub`, valid for an hour, with `scope` if any, as `local-api token` issues it.
pub async fn token(sub: &str, scope: Option<&str>) -> String {
    let mut command = tokio::process::Command::new(local_api_binary());
    command.args(["token", "--sub", sub, "--ttl", "3600"]);
    if let Some(scope) = scope {
        command.args(["--scope", scope]);
    }
    // It prints and exits at once: seconds, never a hang.
    let run = command.kill_on_drop(true).output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(10), run)
        .await
        .expect("local-api token answers within 10 s")
        .expect("local-api token runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// A user of `server`, by name.
pub async fn user(server: &LocalApi, name: &str) -> TestClient {
    server.client(Some(&token(name, None).await))
}

/// An operator of `server`: a token with the `markets:sync` scope.
pub async fn operator(server: &LocalApi) -> TestClient {
    server.client(Some(&token("ops", Some("markets:sync")).await))
}

/// `POST /markets/sync` as `ops` (checked 200); the report.
pub async fn sync(ops: &TestClient) -> Value {
    let reply = ops.send(Method::POST, "/markets/sync", &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json
}

/// local-api's arguments for a fresh table on the test's DynamoDB server, named after `name`.
pub fn dynamodb_args(name: &str) -> Vec<String> {
    let table = format!("{}-{}", name.replace('_', "-"), ulid::Ulid::new()).to_lowercase();
    vec![
        "--dynamodb-endpoint".into(),
        crate::dynamodb::dynamodb_endpoint(),
        "--table".into(),
        table,
    ]
}

/// Two tests of `scenario` (an `async fn(&[&str])` of the calling file taking local-api's store
/// arguments):
/// `NAME::in_memory` and `NAME::on_dynamodb` (a fresh table on the test's DynamoDB server).
#[macro_export]
macro_rules! on_both_stores {
    ($name:ident => $scenario:ident) => {
        mod $name {
            #[tokio::test]
            async fn in_memory() {
                super::$scenario(&[]).await;
            }

            #[tokio::test]
            async fn on_dynamodb() {
                let args = $crate::world::dynamodb_args(stringify!($name));
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                super::$scenario(&args).await;
            }
        }
    };
}

/// A devnet, one of anvil's accounts funded with both tokens (`wallet`, no allowance given),
/// and local-api on it
/// with a user (`alice`) and an operator: where the on-chain order tests start.
pub struct WalletWorld {
    pub devnet: Devnet,
    pub server: LocalApi,
    pub alice: TestClient,
    pub ops: TestClient,
    pub wallet: String,
}

impl WalletWorld {
    /// The world on a new devnet (price 3000), local-api on `store_args`; the wallet not linked.
    pub async fn start(store_args: &[&str]) -> WalletWorld {
        let devnet = Devnet::up(3000).await;
        // Funded, nothing approved: an open answers its approvals.
        let wallet = devnet.account(1).await;
        devnet.run("fund", &["--account", &wallet]).await;
        let server = local_api(&devnet, &devnet.rpc, store_args).await;
        let alice = user(&server, "alice").await;
        let ops = operator(&server).await;
        WalletWorld {
            devnet,
            server,
            alice,
            ops,
            wallet,
        }
    }

    /// A sync now; its report.
    pub async fn sync(&self) -> Value {
        sync(&self.ops).await
    }

    /// `alice`'s position `id` (checked 200).
    pub async fn get(&self, id: &str) -> Value {
        let reply = self.alice.get(id).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        reply.json
    }
}

/// `struct NAME(WalletWorld)` dereferencing to the [`WalletWorld`]: a test file's own world,
/// whose inherent methods are that file's steps on the shared one.
#[macro_export]
macro_rules! wallet_world {
    ($name:ident) => {
        struct $name($crate::world::WalletWorld);

        impl std::ops::Deref for $name {
            type Target = $crate::world::WalletWorld;
            fn deref(&self) -> &$crate::world::WalletWorld {
                &self.0
            }
        }
    };
}
