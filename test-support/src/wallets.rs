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
