//! Linking wallets by signature through the handlers, on any store: every refusal the issue
//! names changes nothing, a good signature links once, and the list and unlink agree. The tests
//! act as the wallets with keys made on the spot (secp256k1 for EVM, ed25519 for Solana).

use crate::client::{Reply, TestClient};
use crate::fixtures::unique_owner;
use crate::lifecycle::ManualClock;
use alloy_primitives::{eip191_hash_message, Address};
use k256::ecdsa::SigningKey;
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use shared::wallets::MAX_WALLETS_PER_USER;
use shared::App;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// An EVM wallet the test signs for.
pub struct EvmWallet {
    key: SigningKey,
    pub address: String,
}

impl EvmWallet {
    /// The wallet of a 32-byte secret made from `seed` (any seed but 0).
    pub fn from_seed(seed: u64) -> EvmWallet {
        let mut secret = [0u8; 32];
        secret[24..].copy_from_slice(&seed.to_be_bytes());
        let key = SigningKey::from_slice(&secret).expect("a valid secret");
        let address = Address::from_public_key(key.verifying_key()).to_checksum(None);
        EvmWallet { key, address }
    }

    /// `personal_sign` of `message`: 65 bytes, v 27 or 28, in 0x-hex.
    pub fn sign(&self, message: &str) -> String {
        let (signature, recovery) = self
            .key
            .sign_prehash_recoverable(eip191_hash_message(message).as_slice())
            .expect("signs");
        let mut bytes = signature.to_bytes().to_vec();
        bytes.push(27 + recovery.to_byte());
        format!("0x{}", hex(&bytes))
    }
}

/// A Solana wallet the test signs for.
pub struct SolanaWallet {
    key: ed25519_dalek::SigningKey,
    pub address: String,
}

impl SolanaWallet {
    pub fn from_seed(seed: u8) -> SolanaWallet {
        let key = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
        let address = bs58::encode(key.verifying_key().to_bytes()).into_string();
        SolanaWallet { key, address }
    }

    pub fn sign(&self, message: &str) -> String {
        use ed25519_dalek::Signer;
        bs58::encode(self.key.sign(message.as_bytes()).to_bytes()).into_string()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub async fn post(client: &TestClient, path: &str, body: &Value) -> Reply {
    client
        .send(
            Method::POST,
            path,
            &[("content-type", "application/json")],
            body.to_string().as_bytes(),
        )
        .await
}

/// A challenge for the wallet, checked 201; its message.
pub async fn challenge(client: &TestClient, chain: &str, address: &str) -> String {
    let reply = post(
        client,
        "/wallets/challenge",
        &json!({"chain": chain, "address": address}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    reply.json["message"].as_str().unwrap().to_string()
}

pub async fn link(
    client: &TestClient,
    chain: &str,
    address: &str,
    message: &str,
    signature: &str,
) -> Reply {
    post(
        client,
        "/wallets",
        &json!({"chain": chain, "address": address, "message": message, "signature": signature}),
    )
    .await
}

/// Links the EVM wallet on `chain`, checked 201; the Wallet answered.
pub async fn link_evm(client: &TestClient, chain: &str, wallet: &EvmWallet) -> Value {
    let message = challenge(client, chain, &wallet.address.to_lowercase()).await;
    let reply = link(
        client,
        chain,
        &wallet.address,
        &message,
        &wallet.sign(&message),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    reply.json
}

async fn wallets(client: &TestClient) -> Value {
    let reply = client.send(Method::GET, "/wallets", &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json
}

fn refused(reply: &Reply, status: StatusCode, says: &str) {
    assert_eq!(reply.status, status, "{}", reply.text());
    let message = reply.json["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{message:?} says {says:?}");
    assert_eq!(reply.json["statusCode"], status.as_u16());
}

/// The whole linking contract on `app`'s stores (its clock is replaced by a manual one).
pub async fn wallets_link_by_signature(app: &App) {
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let app = App {
        clock: clock.clone(),
        ..app.clone()
    };
    let alice = TestClient::in_process(&app, Some(&unique_owner("alice")));
    let bob = TestClient::in_process(&app, Some(&unique_owner("bob")));
    let wallet = EvmWallet::from_seed(11);
    let other = EvmWallet::from_seed(12);

    // The challenge: EIP-4361 for the chain's id, the address in checksum form.
    let reply = post(
        &alice,
        "/wallets/challenge",
        &json!({"chain": "base", "address": wallet.address.to_lowercase()}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(reply.json["address"], wallet.address.as_str());
    let message = reply.json["message"].as_str().unwrap().to_string();
    assert!(message.contains(&format!("\n{}\n", wallet.address)));
    assert!(message.contains("\nChain ID: 8453\n"), "{message}");
    for bad in [
        json!({"chain": "base", "address": "0x12"}),
        json!({"chain": "polygon", "address": wallet.address}),
        json!({"chain": "base"}),
        json!({"chain": "base", "address": wallet.address, "extra": 1}),
    ] {
        refused(
            &post(&alice, "/wallets/challenge", &bad).await,
            StatusCode::BAD_REQUEST,
            "",
        );
    }

    // Every refusal, nothing stored.
    let good = wallet.sign(&message);
    refused(
        &link(
            &alice,
            "base",
            &wallet.address,
            &message,
            &other.sign(&message),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "not made by this wallet",
    );
    let edited = message.replace("Version: 1", "Version: 2");
    refused(
        &link(
            &alice,
            "base",
            &wallet.address,
            &edited,
            &wallet.sign(&edited),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "differs from the challenge",
    );
    for malformed in ["0x1234", "not hex", &good[..good.len() - 2]] {
        refused(
            &link(&alice, "base", &wallet.address, &message, malformed).await,
            StatusCode::BAD_REQUEST,
            "signature is malformed",
        );
    }
    refused(
        &link(&bob, "base", &wallet.address, &message, &good).await,
        StatusCode::BAD_REQUEST,
        "not a challenge issued to you",
    );
    refused(
        &link(
            &alice,
            "base",
            &other.address,
            &message,
            &other.sign(&message),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "issued for another wallet",
    );
    refused(
        &link(&alice, "arbitrum", &wallet.address, &message, &good).await,
        StatusCode::BAD_REQUEST,
        "issued for another wallet",
    );
    assert_eq!(wallets(&alice).await["total"], 0);

    // Expired after ten minutes.
    clock.advance(Duration::from_secs(601));
    refused(
        &link(&alice, "base", &wallet.address, &message, &good).await,
        StatusCode::BAD_REQUEST,
        "expired",
    );
    assert_eq!(wallets(&alice).await["total"], 0);

    // A good signature of a fresh challenge links, once.
    let message = challenge(&alice, "base", &wallet.address).await;
    let good = wallet.sign(&message);
    let reply = link(
        &alice,
        "base",
        &wallet.address.to_lowercase(),
        &message,
        &good,
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(reply.json["chain"], "base");
    assert_eq!(reply.json["address"], wallet.address.as_str());
    assert!(reply.json["linkedAt"].is_string());
    refused(
        &link(&alice, "base", &wallet.address, &message, &good).await,
        StatusCode::BAD_REQUEST,
        "already used",
    );
    let again = challenge(&alice, "base", &wallet.address).await;
    refused(
        &link(
            &alice,
            "base",
            &wallet.address,
            &again,
            &wallet.sign(&again),
        )
        .await,
        StatusCode::CONFLICT,
        "already linked",
    );
    // Another user may link the same wallet: each proves it for themselves.
    link_evm(&bob, "base", &wallet).await;

    // Solana: ed25519 over the message's bytes, base58.
    let sol = SolanaWallet::from_seed(5);
    let message = challenge(&alice, "solana", &sol.address).await;
    assert!(message.contains("with your Solana account:"), "{message}");
    assert!(!message.contains("Chain ID"));
    refused(
        &link(
            &alice,
            "solana",
            &sol.address,
            &message,
            &SolanaWallet::from_seed(6).sign(&message),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "not made by this wallet",
    );
    let reply = link(
        &alice,
        "solana",
        &sol.address,
        &message,
        &sol.sign(&message),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());

    // The list, then the cap.
    let listed = wallets(&alice).await;
    assert_eq!(listed["total"], 2);
    for seed in 100..(100 + MAX_WALLETS_PER_USER as u64 - 2) {
        link_evm(&alice, "ethereum", &EvmWallet::from_seed(seed)).await;
    }
    let extra = EvmWallet::from_seed(99);
    let message = challenge(&alice, "ethereum", &extra.address).await;
    refused(
        &link(
            &alice,
            "ethereum",
            &extra.address,
            &message,
            &extra.sign(&message),
        )
        .await,
        StatusCode::CONFLICT,
        &MAX_WALLETS_PER_USER.to_string(),
    );
    assert_eq!(wallets(&alice).await["total"], MAX_WALLETS_PER_USER as u64);

    // Unlink: 204, then 404; the address in any case names the wallet.
    let path = format!("/wallets/base/{}", wallet.address.to_lowercase());
    let reply = alice.send(Method::DELETE, &path, &[], b"").await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", reply.text());
    assert!(reply.body.is_empty());
    let reply = alice.send(Method::DELETE, &path, &[], b"").await;
    refused(&reply, StatusCode::NOT_FOUND, "not linked");
    let reply = alice
        .send(Method::DELETE, "/wallets/base/0x12", &[], b"")
        .await;
    refused(&reply, StatusCode::NOT_FOUND, "not linked");
    assert_eq!(
        wallets(&alice).await["total"],
        MAX_WALLETS_PER_USER as u64 - 1
    );
    // Below the cap again: the extra wallet links.
    let reply = link(
        &alice,
        "ethereum",
        &extra.address,
        &message,
        &extra.sign(&message),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(wallets(&bob).await["total"], 1);
}

/// A wallet reader standing in for a chain: answers what the test sets (positions, or why the
/// chain could not be read), storing reads through `holdings::record` as the real one does.
pub struct ScriptedChain {
    pub app: App,
    pub height: std::sync::Mutex<u64>,
    pub answer: std::sync::Mutex<Result<Vec<shared::holdings::ReadPosition>, String>>,
    /// What a wallet holds where it differs from `answer`, by its address.
    pub by_wallet: std::sync::Mutex<HashMap<String, Vec<shared::holdings::ReadPosition>>>,
}

impl ScriptedChain {
    /// A chain whose every wallet answers `answer` at `height`.
    pub fn answering(
        app: &App,
        height: u64,
        answer: Result<Vec<shared::holdings::ReadPosition>, String>,
    ) -> ScriptedChain {
        ScriptedChain {
            app: app.clone(),
            height: std::sync::Mutex::new(height),
            answer: std::sync::Mutex::new(answer),
            by_wallet: std::sync::Mutex::new(HashMap::new()),
        }
    }
}

#[async_trait::async_trait]
impl shared::app::WalletRefresh for ScriptedChain {
    async fn refresh(
        &self,
        wallet: &shared::wallets::LinkedWallet,
    ) -> Result<shared::app::Refreshed, String> {
        let answer = match self.by_wallet.lock().unwrap().get(&wallet.address) {
            Some(read) => Ok(read.clone()),
            None => self.answer.lock().unwrap().clone(),
        };
        let height = *self.height.lock().unwrap();
        let catalog = self.app.market.catalog().await.map_err(|e| e.to_string())?;
        let stored = self
            .app
            .store
            .holdings(&wallet.owner, wallet.chain, &wallet.address)
            .await
            .map_err(|e| e.to_string())?;
        shared::holdings::record(
            (
                self.app.store.as_ref(),
                self.app.market.as_ref(),
                &self.app.alerts,
            ),
            &catalog,
            wallet,
            (height, answer?),
            stored,
            self.app.clock.now(),
        )
        .await
        .map(shared::app::Refreshed::from)
        .map_err(|e| e.to_string())
    }
}

/// A position on the catalog's ETH/USDC pool as a read finds it.
pub fn read_position(token: &str, liquidity: u128, fee0: u64) -> shared::holdings::ReadPosition {
    use shared::math::U256;
    use shared::model::HeldToken;
    let held = |symbol: &str, address: &str, decimals: u8| HeldToken {
        symbol: symbol.into(),
        address: address.into(),
        decimals,
    };
    shared::holdings::ReadPosition {
        protocol: shared::model::Protocol::UniswapV3,
        pool: crate::bodies::ETH_USDC.into(),
        manager: "0xC36442b4a4522E871399CD717aBDD847Ab11FE88".into(),
        token: token.into(),
        tokens: [
            held("USDC", "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", 6),
            held("WETH", "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2", 18),
        ],
        fee_tier: 500,
        tick_spacing: 10,
        tick_lower: 194_700,
        tick_upper: 198_060,
        liquidity,
        amounts: [
            U256::from(3_000_000_000u64),
            U256::from(10u64).pow(U256::from(18)),
        ],
        fees: [U256::from(fee0), U256::ZERO],
        sqrt_price: U256::from(1u8) << 100,
        tick: 196_000,
        staked: None,
        hooks: None,
        fee_state: None,
    }
}

/// Reads of a linked wallet on `app`'s stores: a failed read leaves the last good one (and says
/// why), an older read writes nothing, a position read twice keeps its id, withdrawn and
/// transferred ones close, and the portfolio and lists follow.
pub async fn wallet_reads_never_go_back(app: &App) {
    let owner = unique_owner("holder");
    let mut app = app.clone();
    let chain = Arc::new(ScriptedChain::answering(
        &app,
        100,
        Err("the RPC endpoint timed out".into()),
    ));
    app.wallet_refresh = Some(chain.clone());
    let client = TestClient::in_process(&app, Some(&owner));
    let wallet = EvmWallet::from_seed(77);

    // The chain cannot be read at the link: linked all the same, the reason said.
    let linked = link_evm(&client, "ethereum", &wallet).await;
    assert_eq!(linked["positions"], Value::Null, "{linked}");
    assert_eq!(linked["refreshedAt"], Value::Null, "{linked}");
    assert!(linked["refreshError"]
        .as_str()
        .unwrap()
        .contains("timed out"));
    assert_eq!(client.list("source=wallet").await.json["total"], 0);

    // A good read: two positions.
    *chain.answer.lock().unwrap() = Ok(vec![
        read_position("1", 5_000, 7),
        read_position("2", 9_000, 0),
    ]);
    let report = app.reconcile_all().await.unwrap();
    assert!(report.refreshed >= 1, "{report:?}");
    let listed = client.list("source=wallet").await.json;
    assert_eq!(listed["total"], 2, "{listed}");
    let ids: Vec<Value> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].clone())
        .collect();
    let first = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["tokenId"] == "1")
        .unwrap()
        .clone();
    assert_eq!(
        first["tokenB"]["symbol"], "USDC",
        "tokenA is the base asset, WETH"
    );
    // No history read yet (no chain here): what collect would pay cannot be told apart into
    // fees and uncollected principal, so no fee figure is shown rather than a wrong one.
    assert_eq!(first["tokenB"]["feesEarned"], Value::Null, "{first}");
    assert_eq!(first["historyComplete"], false, "{first}");
    assert_eq!(first["pnlUsd"], Value::Null, "{first}");
    assert_eq!(first["readHeight"], 100);
    assert_eq!(first["status"], "active");
    // Closing one through the API builds its withdraw only at a fresh pool state (this
    // catalog is a snapshot): 503, and nothing changes.
    let reply = client.close(first["id"].as_str().unwrap()).await;
    refused(&reply, StatusCode::SERVICE_UNAVAILABLE, "stale");
    assert!(reply.headers.contains_key("retry-after"));

    // A failed read: the last good one stays, the reason is recorded.
    *chain.height.lock().unwrap() = 101;
    *chain.answer.lock().unwrap() = Err("eth_call: undecodable answer".into());
    let report = app.reconcile_all().await.unwrap();
    assert!(
        report
            .failed
            .iter()
            .any(|f| f.reason.contains("undecodable")),
        "{report:?}"
    );
    let wallets = client.send(Method::GET, "/wallets", &[], b"").await.json;
    assert_eq!(wallets["data"][0]["positions"], 2, "{wallets}");
    assert!(wallets["data"][0]["refreshError"]
        .as_str()
        .unwrap()
        .contains("undecodable"));
    assert_eq!(
        client.list("source=wallet").await.json["data"],
        listed["data"]
    );

    // An older read (a slower refresh) writes nothing.
    *chain.height.lock().unwrap() = 99;
    *chain.answer.lock().unwrap() = Ok(vec![read_position("1", 1, 999)]);
    app.reconcile_all().await.unwrap();
    assert_eq!(
        client.list("source=wallet").await.json["data"],
        listed["data"]
    );

    // A later read that changed nothing writes nothing: the stored read stays the one at 100.
    *chain.height.lock().unwrap() = 101;
    *chain.answer.lock().unwrap() = Ok(vec![
        read_position("1", 5_000, 7),
        read_position("2", 9_000, 0),
    ]);
    app.reconcile_all().await.unwrap();
    assert_eq!(
        client.list("source=wallet").await.json["data"],
        listed["data"]
    );

    // Later: one withdrawn (fees left), the other gone from the wallet; ids stay.
    *chain.height.lock().unwrap() = 102;
    *chain.answer.lock().unwrap() = Ok(vec![read_position("1", 0, 11)]);
    app.reconcile_all().await.unwrap();
    app.reconcile_all().await.unwrap();
    let now = client.list("source=wallet").await.json;
    assert_eq!(now["total"], 2, "{now}");
    let now_ids: Vec<Value> = now["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].clone())
        .collect();
    assert_eq!(now_ids, ids);
    for view in now["data"].as_array().unwrap() {
        assert_eq!(view["status"], "closed", "{view}");
        let reason = if view["tokenId"] == "1" {
            "withdrawn"
        } else {
            "transferred"
        };
        assert_eq!(view["closeReason"], reason, "{view}");
    }
    let withdrawn = now["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["tokenId"] == "1")
        .unwrap();
    // Withdrawn whole and not collected: what collect pays is mostly principal; without its
    // history nothing of it is shown as fees.
    assert_eq!(
        withdrawn["tokenB"]["feesEarned"],
        Value::Null,
        "{withdrawn}"
    );
    assert_eq!(withdrawn["historyComplete"], false, "{withdrawn}");
    assert_eq!(withdrawn["readHeight"], 102);
    let closed = client
        .list("source=wallet&status=closed&chain=ethereum")
        .await
        .json;
    assert_eq!(closed["total"], 2, "{closed}");
    assert_eq!(client.list("source=simulated").await.json["total"], 0);
    assert_eq!(client.list("status=active").await.json["total"], 0);
    assert_eq!(client.portfolio().await.json["positions"], 0);
}

/// Unlinking a wallet takes every position of it out of the lists, counts and portfolio, with
/// few positions (in the wallet's own transaction on DynamoDB) and with more than fit in one.
pub async fn unlinking_removes_the_wallets_positions(app: &App) {
    for held in [3usize, 12] {
        let owner = unique_owner("unlinker");
        let mut app = app.clone();
        let reads = (0..held)
            .map(|i| read_position(&(100 + i).to_string(), 1_000, 1))
            .collect();
        app.wallet_refresh = Some(Arc::new(ScriptedChain::answering(&app, 7, Ok(reads))));
        let client = TestClient::in_process(&app, Some(&owner));
        let wallet = EvmWallet::from_seed(900 + held as u64);
        let linked = link_evm(&client, "ethereum", &wallet).await;
        assert_eq!(linked["positions"], held, "{linked}");
        assert_eq!(client.list("").await.json["total"], held);
        let path = format!("/wallets/ethereum/{}", wallet.address);
        let reply = client.send(Method::DELETE, &path, &[], b"").await;
        assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", reply.text());
        for query in [
            "",
            "source=wallet",
            "status=active",
            "chain=ethereum&status=active",
        ] {
            let listed = client.list(query).await.json;
            assert_eq!(listed["total"], 0, "{query}: {listed}");
            assert_eq!(listed["data"], json!([]), "{query}");
        }
        assert_eq!(client.portfolio().await.json["positions"], 0);
        assert_eq!(wallets(&client).await["total"], 0);
    }
}

/// A position moved between two wallets of one owner keeps its id, first value and figures and
/// shows the wallet holding it, whichever wallet is read first; it is never closed while one of
/// the owner's wallets holds it, and the portfolio counts it once.
pub async fn positions_follow_their_owners_wallets(app: &App) {
    let owner = unique_owner("mover");
    let mut app = app.clone();
    let chain = Arc::new(ScriptedChain::answering(&app, 50, Ok(Vec::new())));
    app.wallet_refresh = Some(chain.clone());
    let client = TestClient::in_process(&app, Some(&owner));
    let (a, b) = (EvmWallet::from_seed(601), EvmWallet::from_seed(602));
    let hold = |holder: &EvmWallet, height: u64| {
        *chain.height.lock().unwrap() = height;
        let mut by_wallet = chain.by_wallet.lock().unwrap();
        by_wallet.clear();
        by_wallet.insert(holder.address.clone(), vec![read_position("7", 4_000, 3)]);
    };
    hold(&a, 50);
    link_evm(&client, "ethereum", &a).await;
    link_evm(&client, "ethereum", &b).await;
    let listed = client.list("source=wallet").await.json;
    assert_eq!(listed["total"], 1, "{listed}");
    let id = listed["data"][0]["id"].clone();
    let first_cost = listed["data"][0]["costBasisUsd"].clone();
    assert_eq!(listed["data"][0]["wallet"], a.address.as_str());

    let linked = app.wallets.linked().await.unwrap();
    let mine = |w: &EvmWallet| {
        linked
            .iter()
            .find(|l| l.owner == owner && l.address == w.address)
            .cloned()
            .unwrap()
    };
    // To B, the wallet it left read first (closed as transferred), then B (it moves back in);
    // back to A, the wallet it joins read first (it moves), then B (nothing of it left there).
    for (to, first, then, height) in [(&b, &a, &b, 51), (&a, &a, &b, 52)] {
        hold(to, height);
        for wallet in [first, then] {
            let refreshed = app.refresh_wallet(mine(wallet)).await;
            assert_eq!(refreshed.refresh_error, None, "{refreshed:?}");
        }
        let listed = client.list("source=wallet").await.json;
        assert_eq!(listed["total"], 1, "{listed}");
        let view = &listed["data"][0];
        assert_eq!(view["id"], id, "{view}");
        assert_eq!(view["status"], "active", "{view}");
        assert_eq!(view["wallet"], to.address.as_str(), "{view}");
        assert_eq!(view["readHeight"], height, "{view}");
        assert_eq!(view["costBasisUsd"], first_cost, "{view}");
        let active = client.list("source=wallet&status=active").await.json;
        assert_eq!(active["total"], 1, "{active}");
        let closed = client.list("status=closed").await.json;
        assert_eq!(closed["total"], 0, "{closed}");
        let portfolio = client.send(Method::GET, "/portfolio", &[], b"").await.json;
        assert_eq!(portfolio["positions"], 1, "{portfolio}");
        let got = client
            .send(
                Method::GET,
                &format!("/positions/{}", id.as_str().unwrap()),
                &[],
                b"",
            )
            .await;
        assert_eq!(got.json["wallet"], to.address.as_str(), "{}", got.json);
    }
    // Out of the owner's wallets: closed as transferred.
    *chain.height.lock().unwrap() = 53;
    chain.by_wallet.lock().unwrap().clear();
    for wallet in [&a, &b] {
        app.refresh_wallet(mine(wallet)).await;
    }
    let closed = client.list("source=wallet&status=closed").await.json;
    assert_eq!(closed["total"], 1, "{closed}");
    assert_eq!(closed["data"][0]["closeReason"], "transferred", "{closed}");
}

/// An open wallet position's bounds are among its pool's tracked ticks (the sync reads their fee
/// growth: it is valued at read, decision 57) while it is open, and leave them when it
/// goes: transferred away, or its wallet unlinked. A reconciliation counts what it corrected.
pub async fn wallet_positions_track_their_bounds_while_open(app: &App) {
    let owner = unique_owner("tracker");
    let mut app = app.clone();
    let mut held = read_position("31", 5_000, 7);
    (held.tick_lower, held.tick_upper) = (194_710, 198_050);
    held.fee_state = Some(shared::model::FeeState {
        fee_growth_inside_last: ["0".into(), "0".into()],
        tokens_owed: ["7".into(), "0".into()],
    });
    let chain = Arc::new(ScriptedChain::answering(&app, 100, Ok(vec![held.clone()])));
    app.wallet_refresh = Some(chain.clone());
    let client = TestClient::in_process(&app, Some(&owner));
    let wallet = EvmWallet::from_seed(91);
    let tracked = || async {
        let catalog = app.market.catalog().await.unwrap();
        let pool = catalog
            .find(
                shared::model::Chain::Ethereum,
                shared::model::Protocol::UniswapV3,
                crate::bodies::ETH_USDC,
            )
            .unwrap();
        // Used by a position (a released one lingers until the series passes it).
        [194_710, 198_050]
            .map(|t| pool.tracked_ticks.contains(&t) && !pool.lingering.contains_key(&t))
    };
    assert_eq!(tracked().await, [false, false]);
    link_evm(&client, "ethereum", &wallet).await;
    assert_eq!(tracked().await, [true, true]);
    // Read again unchanged: nothing to correct.
    let report = app.reconcile_all().await.unwrap();
    assert_eq!(report.corrected, 0, "{report:?}");

    // Gone from the wallet (the events missed its transfer): the reconciliation closes it,
    // counts the correction, and its bounds are no longer tracked.
    *chain.height.lock().unwrap() = 101;
    *chain.answer.lock().unwrap() = Ok(Vec::new());
    let report = app.reconcile_all().await.unwrap();
    assert_eq!(report.corrected, 1, "{report:?}");
    assert_eq!(tracked().await, [false, false]);

    // Back, then its wallet unlinked: tracked, then released.
    *chain.height.lock().unwrap() = 102;
    *chain.answer.lock().unwrap() = Ok(vec![held]);
    app.reconcile_all().await.unwrap();
    assert_eq!(tracked().await, [true, true]);
    let path = format!("/wallets/ethereum/{}", wallet.address);
    let reply = client.send(Method::DELETE, &path, &[], b"").await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", reply.text());
    assert_eq!(tracked().await, [false, false]);
}
