//! The devnet (`devnet/devnet.mjs`): anvil with the real Uniswap v3 contracts, for tests that
//! compare the service with the protocol itself. Needs `devnet/node_modules`, which the test
//! command installs; missing is a failure, never a skip.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The argument that points a devnet command at PancakeSwap's contracts instead of Uniswap's.
pub const PANCAKE: &[&str] = &["--protocol", "pancakeswap-v3"];

/// How long one devnet command may take (each waits for its receipts for at most 30 s).
pub const COMMAND_DEADLINE: std::time::Duration = std::time::Duration::from_secs(90);

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../devnet/devnet.mjs")
}

/// A running devnet: one Uniswap v3 WETH/USDC pool (18 decimals both) with wide liquidity.
pub struct Devnet {
    /// The chain's JSON-RPC URL.
    pub rpc: String,
    /// A catalog file (the format of `shared/data/pools.json`) with the devnet's pool.
    pub catalog: PathBuf,
    /// The deployment: addresses of the pool, tokens, position manager and router.
    pub state: Value,
    state_file: PathBuf,
    child: Child,
    /// The `up` process's command channel (`up --serve true`): one command at a time.
    served: tokio::sync::Mutex<Served>,
}

struct Served {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Devnet {
    /// Starts anvil and deploys (about ten seconds); `price` is USDC per WETH. A deployment
    /// that fails (seen rarely on a loaded machine: a transaction reverting) is started again,
    /// up to three times.
    pub async fn up(price: u64) -> Devnet {
        Devnet::up_with(price, &[]).await
    }

    /// The devnet with PancakeSwap v3 and MasterChefV3 beside Uniswap (`up --pancake true`):
    /// a second position manager on the same tokens, its pool in the catalog, its farm the
    /// deployment's `staking`; `state["pancake"]` has its addresses.
    pub async fn with_pancake(price: u64) -> Devnet {
        Devnet::up_with(price, &["--pancake", "true"]).await
    }

    /// The devnet with Uniswap v4 beside v3 (`up --v4 true`, `devnet/v4.mjs`): its pool
    /// manager, position manager and state view, an ETH/USDC and a USDC/WETH pool in the
    /// catalog; `state["v4"]` has their addresses, ids and ticks.
    pub async fn with_v4(price: u64) -> Devnet {
        Devnet::up_with(price, &["--v4", "true"]).await
    }

    /// The devnet with its clock started at unix time `since` (anvil's genesis there): blocks
    /// can then be placed at chosen past times (`mine_at`), as charts of the past need.
    pub async fn since(price: u64, since: i64) -> Devnet {
        Devnet::up_with(price, &["--since", &since.to_string()]).await
    }

    /// [`Devnet::with_pancake`] with its clock started at unix time `since` ([`Devnet::since`]).
    pub async fn pancake_since(price: u64, since: i64) -> Devnet {
        let since = since.to_string();
        Devnet::up_with(price, &["--pancake", "true", "--since", &since]).await
    }

    /// Mines the next block at unix time `time` (after the latest block's).
    pub async fn mine_at(&self, time: i64) {
        self.rpc("evm_setNextBlockTimestamp", json!([time])).await;
        self.rpc("evm_mine", json!([])).await;
    }

    /// The next transaction's block at unix time `time`.
    pub async fn next_block_at(&self, time: i64) {
        self.rpc("evm_setNextBlockTimestamp", json!([time])).await;
    }

    async fn up_with(price: u64, extra: &[&str]) -> Devnet {
        for attempt in 1..=3 {
            if let Some(devnet) = Devnet::try_up(price, extra).await {
                return devnet;
            }
            eprintln!("devnet: deployment {attempt} failed, starting again");
        }
        panic!("the devnet did not start (run `npm ci` in devnet/)");
    }

    async fn try_up(price: u64, extra: &[&str]) -> Option<Devnet> {
        let dir = std::env::temp_dir().join(format!("devnet-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let (catalog, state_file) = (dir.join("catalog.json"), dir.join("state.json"));
        let mut child = Command::new("node")
            .arg(script())
            .arg("up")
            .arg("--catalog-out")
            .arg(&catalog)
            .arg("--state-out")
            .arg(&state_file)
            .arg("--price")
            .arg(price.to_string())
            .args(["--serve", "true"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs devnet/devnet.mjs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // A deployment that stalls counts as failed (stopped, started again), never waited on
        // forever.
        let Ok(line) = tokio::time::timeout(COMMAND_DEADLINE, lines.next_line()).await else {
            terminate(&child);
            return None;
        };
        let line = line.ok().flatten()?;
        let state: Value = serde_json::from_str(&line).ok()?;
        let stdin = child.stdin.take()?;
        Some(Devnet {
            rpc: state["rpc"].as_str()?.to_string(),
            catalog,
            state,
            state_file,
            child,
            served: tokio::sync::Mutex::new(Served { stdin, lines }),
        })
    }

    /// Runs a devnet command (`swap`, `pool`, `mint`, `burn-quote`) with `args` in the `up`
    /// process (no node started per command); its JSON answer. A command that fails, or has not
    /// answered within [`COMMAND_DEADLINE`], fails the test, never hangs it.
    pub async fn run(&self, command: &str, args: &[&str]) -> Value {
        let mut all = vec!["--state", self.state_file.to_str().unwrap()];
        all.extend_from_slice(args);
        let line = json!({"command": command, "args": all}).to_string() + "\n";
        let mut served = self.served.lock().await;
        let asked = async {
            served.stdin.write_all(line.as_bytes()).await.ok()?;
            served.stdin.flush().await.ok()?;
            served.lines.next_line().await.ok().flatten()
        };
        let reply = tokio::time::timeout(COMMAND_DEADLINE, asked)
            .await
            .unwrap_or_else(|_| {
                panic!("devnet {command} {args:?}: no answer within {COMMAND_DEADLINE:?}")
            })
            .unwrap_or_else(|| panic!("devnet {command} {args:?}: the devnet has stopped"));
        let reply: Value = serde_json::from_str(&reply).unwrap();
        if let Some(error) = reply.get("error") {
            panic!("devnet {command} {args:?}: {error}");
        }
        reply["ok"].clone()
    }

    /// The deployment's address of `name` (`pool`, `usdc`, `weth`, `token0`, ...).
    pub fn address(&self, name: &str) -> String {
        self.state[name].as_str().unwrap().to_string()
    }

    /// The devnet's catalog with Aerodrome Slipstream (`slip`, the `slipstream` command's
    /// answer): each generation a deployment (its factory and manager) and its USDC/WETH pool,
    /// which names its manager (two deployments of one protocol), and the AERO/USDC pool that
    /// prices AERO (0.8 USDC).
    pub fn slipstream_catalog(&self, slip: &Value) -> PathBuf {
        let mut catalog: Value =
            serde_json::from_str(&std::fs::read_to_string(&self.catalog).unwrap()).unwrap();
        let uniswap = catalog["pools"][0].clone();
        let chain_id = catalog["deployments"][0]["chainId"].clone();
        let generations = slip["generations"].as_array().unwrap();
        let record = |pool: &Value, manager: &Value| {
            let mut record = uniswap.clone();
            let fields = record.as_object_mut().unwrap();
            fields.remove("feeTier");
            fields.insert("protocol".into(), json!("aerodrome-slipstream"));
            fields.insert("pool".into(), pool.clone());
            fields.insert("tickSpacing".into(), json!(100));
            fields.insert("positionManager".into(), manager.clone());
            record
        };
        for g in generations {
            catalog["deployments"].as_array_mut().unwrap().push(json!({
                "chain": "ethereum", "protocol": "aerodrome-slipstream", "chainId": chain_id,
                "factory": g["factory"], "positionManager": g["manager"], "firstBlock": 0,
            }));
            let pool = record(&g["pool"], &g["manager"]);
            catalog["pools"].as_array_mut().unwrap().push(pool);
        }
        let mut aero_pool = record(&slip["aeroPool"], &generations[0]["manager"]);
        let aero =
            json!({"symbol": "AERO", "address": slip["aero"], "decimals": 18, "priceUsd": "0.8"});
        let usdc = json!({"symbol": "USDC", "address": self.state["usdc"], "decimals": 18, "priceUsd": "1"});
        let aero_first =
            text_of(&slip["aero"]).to_lowercase() < text_of(&self.state["usdc"]).to_lowercase();
        let (token0, token1) = if aero_first {
            (aero, usdc)
        } else {
            (usdc, aero)
        };
        let base = if aero_first { "token0" } else { "token1" };
        for (key, value) in [
            ("token0", token0),
            ("token1", token1),
            ("base", json!(base)),
            ("currentPrice", json!("0.8")),
        ] {
            aero_pool[key] = value;
        }
        catalog["pools"].as_array_mut().unwrap().push(aero_pool);
        let path = self.catalog.with_file_name("catalog-slipstream.json");
        std::fs::write(&path, catalog.to_string()).unwrap();
        path
    }

    /// `account`'s balance of `token` (`usdc`, `weth` or an address), base units.
    pub async fn balance(&self, account: &str, token: &str) -> alloy_primitives::U256 {
        let read = self
            .run("allowance", &["--account", account, "--token", token])
            .await;
        let units = read["balance"].as_str().unwrap_or_default();
        units
            .parse()
            .unwrap_or_else(|_| panic!("a balance: {read}"))
    }

    /// Whether USDC is the pool's token0 (it depends on the deployed addresses).
    pub fn usdc_is_token0(&self) -> bool {
        self.address("usdc") == self.address("token0")
    }

    /// A WETH/USDC position view's `field` of each token (whole tokens) in protocol order
    /// (token0, token1), base units: tokenA is WETH (the base asset), tokenB USDC.
    pub fn protocol_order(&self, view: &Value, field: &str) -> [alloy_primitives::U256; 2] {
        let of = |token: &str| units(&view[token][field]).parse().unwrap();
        let (weth, usdc) = (of("tokenA"), of("tokenB"));
        if self.usdc_is_token0() {
            [usdc, weth]
        } else {
            [weth, usdc]
        }
    }
}

/// The Uniswap v3 SDK's answers to `cases` (`devnet/sdk.mjs`): an independent computation of
/// the calldata, desired amounts and slippage minimums the API builds.
pub async fn sdk(cases: &Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../devnet/sdk.mjs");
    let mut child = Command::new("node")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs devnet/sdk.mjs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(cases.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(COMMAND_DEADLINE, child.wait_with_output())
        .await
        .expect("sdk.mjs answers in time")
        .unwrap();
    assert!(
        output.status.success(),
        "sdk.mjs: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

impl Devnet {
    /// One JSON-RPC call to anvil.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let client =
            shared::chain::RpcClient::new(&self.rpc, std::time::Duration::from_secs(30)).unwrap();
        client
            .call(method, params)
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"))
    }

    /// Sends `transaction` (`from`, `to`, `data`, `value` as the API gave them) as the wallet
    /// does, with `eth_sendTransaction` (anvil signs for its unlocked accounts), and a gas limit
    /// of its own so that a transaction that reverts is still mined; answers its hash once
    /// mined, and the receipt.
    pub async fn send(&self, transaction: &Value) -> (String, Value) {
        let value: u128 = transaction["value"].as_str().unwrap().parse().unwrap();
        let sent = json!({
            "from": transaction["from"],
            "to": transaction["to"],
            "data": transaction["data"],
            "value": format!("0x{value:x}"),
            "gas": "0x7a1200",
        });
        let hash = self.rpc("eth_sendTransaction", json!([sent])).await;
        let hash = hash.as_str().unwrap().to_string();
        for _ in 0..600 {
            let receipt = self.rpc("eth_getTransactionReceipt", json!([hash])).await;
            if !receipt.is_null() {
                return (hash, receipt);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("no receipt for {hash}");
    }

    /// Links `account` (one of anvil's unlocked accounts, funded with both tokens) to the
    /// caller of `client`: the API's challenge, anvil's `personal_sign`, the link (checked 201).
    pub async fn link_account(&self, client: &crate::client::TestClient, account: &str) {
        let challenge = json!({"chain": "ethereum", "address": account});
        let reply = crate::wallets::post(client, "/wallets/challenge", &challenge).await;
        assert_eq!(reply.status, 201, "{}", reply.text());
        let message = reply.json["message"].as_str().unwrap().to_string();
        let signed = self
            .run("sign", &["--account", account, "--message", &message])
            .await;
        let link = json!({"chain": "ethereum", "address": account, "message": message, "signature": signed["signature"]});
        let reply = crate::wallets::post(client, "/wallets", &link).await;
        assert_eq!(reply.status, 201, "{}", reply.text());
    }

    /// Mints a position on `[range.0, range.1)` for `recipient`, the deployer paying at most
    /// `amount` base units of each token, on the catalog's pool or on `pool` (as `new-pool`
    /// printed it); its token id.
    pub async fn mint_to(
        &self,
        recipient: &str,
        range: (i32, i32),
        pool: Option<&Value>,
        amount: &str,
    ) -> String {
        let field = |name: &str| pool.map(|p| crate::json::text(&p[name]));
        let (token0, token1, fee) = (field("token0"), field("token1"), field("fee"));
        let mut extra = Vec::new();
        if let (Some(token0), Some(token1), Some(fee)) = (&token0, &token1, &fee) {
            extra.extend(["--token0", token0, "--token1", token1, "--fee", fee]);
        }
        self.mint_with(recipient, range, amount, &extra).await
    }

    /// Mints a position on `[range.0, range.1)` on the catalog's pool that `account` pays for
    /// (at most `amount` base units of each token) and holds; its token id.
    pub async fn mint_by(&self, account: &str, range: (i32, i32), amount: &str) -> String {
        self.mint_with(account, range, amount, &["--account", account])
            .await
    }

    /// [`Devnet::mint_to`] on PancakeSwap's USDC/WETH pool (a devnet [`Devnet::with_pancake`]).
    pub async fn mint_pancake_to(
        &self,
        recipient: &str,
        range: (i32, i32),
        amount: &str,
    ) -> String {
        self.mint_with(recipient, range, amount, PANCAKE).await
    }

    async fn mint_with(
        &self,
        recipient: &str,
        range: (i32, i32),
        amount: &str,
        extra: &[&str],
    ) -> String {
        let (lower, upper) = (range.0.to_string(), range.1.to_string());
        let mut args = vec![
            "--lower",
            &lower,
            "--upper",
            &upper,
            "--recipient",
            recipient,
        ];
        args.extend(["--amount0", amount, "--amount1", amount]);
        args.extend_from_slice(extra);
        let minted = self.run("mint", &args).await;
        minted["tokenId"].as_str().unwrap().to_string()
    }

    /// The range `offset` ticks either side of PancakeSwap's pool's tick, on its spacing of 50.
    pub async fn pancake_range_around(&self, offset: i32) -> (i32, i32) {
        let tick = self.run("pool", PANCAKE).await["tick"].as_i64().unwrap() as i32;
        let at = |t: i32| t.div_euclid(50) * 50;
        (at(tick - offset), at(tick + offset))
    }

    /// The address of anvil's account `index`.
    pub async fn account(&self, index: u32) -> String {
        let answer = self.run("account", &["--index", &index.to_string()]).await;
        crate::json::text(&answer["address"])
    }

    /// Anvil's account `index`, funded with both tokens and its allowances to the position
    /// manager set without bound: a wallet that acts on its own positions.
    pub async fn funded_account(&self, index: u32) -> String {
        let wallet = self.account(index).await;
        self.run("fund", &["--account", &wallet]).await;
        for token in ["usdc", "weth"] {
            let max = "1000000000000000000000000000";
            let args = ["--account", &wallet, "--token", token, "--amount", max];
            self.run("approve", &args).await;
        }
        wallet
    }

    /// Deposits one whole unit of each token (10^18 base units) into `wallet`'s position
    /// `token` (an `increaseLiquidity` it sends).
    pub async fn deposit(&self, wallet: &str, token: &str) {
        let amount = "1000000000000000000";
        let args = [
            "--account",
            wallet,
            "--token-id",
            token,
            "--amount0",
            amount,
            "--amount1",
            amount,
        ];
        self.run("increase", &args).await;
    }

    /// `from` sends its position `token` to `to` (the manager's `safeTransferFrom`).
    pub async fn transfer(&self, from: &str, token: &str, to: &str) {
        let args = ["--account", from, "--token-id", token, "--to", to];
        self.run("transfer", &args).await;
    }

    /// `account` withdraws `liquidity` of its position `token` (all of it without), leaving what
    /// it pays owed to it, uncollected.
    pub async fn withdraw(&self, account: &str, token: &str, liquidity: Option<&str>) {
        let mut args = vec!["--account", account, "--token-id", token];
        if let Some(liquidity) = liquidity {
            args.extend(["--liquidity", liquidity]);
        }
        self.run("withdraw", &args).await;
    }

    /// `account` collects everything its position `token` is owed.
    pub async fn collect(&self, account: &str, token: &str) {
        self.run("collect", &["--account", account, "--token-id", token])
            .await;
    }

    /// The range `offset` ticks either side of the pool's tick, on its spacing of 60.
    pub async fn range_around(&self, offset: i32) -> (i32, i32) {
        let tick = self.run("pool", &[]).await["tick"].as_i64().unwrap() as i32;
        let at = |t: i32| t.div_euclid(60) * 60;
        (at(tick - offset), at(tick + offset))
    }

    /// The chain's clock made the blocks' own, not the wall's: a block mined 10 seconds past the
    /// next 5-minute boundary, then each block a second after the one before. A test counting
    /// a sync's requests then sees one boundary, recorded by its first sync (decision 66: a
    /// sync that passes one also reads the pools there), and no other for 290 blocks. Answers
    /// the boundary.
    pub async fn clock_past_a_boundary(&self) -> i64 {
        let boundary = (self.block_time().await.div_euclid(300) + 1) * 300;
        self.mine_at(boundary + 10).await;
        self.rpc("anvil_setBlockTimestampInterval", json!([1]))
            .await;
        boundary
    }

    /// Panics where the latest block is past the 5-minute boundary after `boundary`.
    pub async fn assert_no_boundary_since(&self, boundary: i64) {
        let head = self.block_time().await;
        assert!(
            head < boundary + 300,
            "a boundary passed: {head} after {boundary}"
        );
    }

    /// The latest block's unix time.
    pub async fn block_time(&self) -> i64 {
        let latest = self
            .rpc("eth_getBlockByNumber", json!(["latest", false]))
            .await;
        let time = latest["timestamp"].as_str().expect("a block's time");
        i64::from_str_radix(time.trim_start_matches("0x"), 16).unwrap()
    }

    /// Moves the chain's clock on by `seconds` and mines a block there.
    pub async fn advance_time(&self, seconds: u64) {
        self.rpc("evm_increaseTime", json!([seconds])).await;
        self.rpc("evm_mine", json!([])).await;
    }
}

/// SIGTERM: the script stops anvil before it exits (SIGKILL would orphan anvil).
fn terminate(child: &Child) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status();
    }
}

impl Drop for Devnet {
    fn drop(&mut self) {
        terminate(&self.child);
    }
}

/// The event named `name` among a transaction's `events` (the devnet's `events` command).
pub fn event<'a>(events: &'a Value, name: &str) -> &'a Value {
    events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {events}"))
}

/// Whole tokens of the devnet's pool (18 decimals both) as base units.
pub fn units(whole: &Value) -> String {
    let whole = crate::json::text(whole);
    let (int, frac) = whole.split_once('.').unwrap_or((&whole, ""));
    let digits = format!("{int}{frac:0<18}");
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() {
        "0".into()
    } else {
        trimmed.into()
    }
}

impl Devnet {
    /// Swaps that pay both tokens' fees: `weth` WETH sold, then `usdc` USDC (whole tokens).
    pub async fn swap_both_ways(&self, weth: &str, usdc: &str) {
        self.run("swap", &["--sell", "weth", "--amount", weth])
            .await;
        self.run("swap", &["--sell", "usdc", "--amount", usdc])
            .await;
    }
}

fn text_of(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}
