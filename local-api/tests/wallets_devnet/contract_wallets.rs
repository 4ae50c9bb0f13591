//! Contract wallets (issue 51): Safes of the real Safe 1.4.1 contracts (npm artifacts, deployed
//! by the test only) link by their owners' signatures of the Safe message of the challenge,
//! checked by the chain (ERC-1271, one deployless `eth_call` of `SignatureCheck.sol`); a Safe
//! not deployed yet links by the ERC-6492-wrapped signature and stays undeployed; what does not
//! prove the Safe is refused and links nothing; an EOA links as before.

use super::*;
use test_support::on_both_stores;
use test_support::wallets::challenge;

/// A Safe of `owners` needing `threshold` of them, deployed or only addressed: what
/// `safe-create` printed.
async fn safe(devnet: &Devnet, owners: &[&str], threshold: u32, salt: u32, deploy: bool) -> Value {
    let owners = owners.join(",");
    let (threshold, salt) = (threshold.to_string(), salt.to_string());
    let deploy = deploy.to_string();
    let args = [
        "--owners",
        &owners,
        "--threshold",
        &threshold,
        "--salt",
        &salt,
        "--deploy",
        &deploy,
    ];
    devnet.run("safe-create", &args).await
}

/// The owners' signature of the Safe message of `message` (`extra`: `--chain-id`, `--wrap`).
async fn safe_signature(
    devnet: &Devnet,
    safe: &str,
    message: &str,
    signers: &[&str],
    extra: &[&str],
) -> String {
    let signers = signers.join(",");
    let mut args = vec!["--safe", safe, "--message", message, "--signers", &signers];
    args.extend_from_slice(extra);
    text(&devnet.run("safe-sign", &args).await["signature"])
}

async fn link(
    client: &test_support::client::TestClient,
    address: &str,
    message: &str,
    signature: &str,
) -> test_support::client::Reply {
    test_support::wallets::link(client, "ethereum", address, message, signature).await
}

async fn linked(client: &test_support::client::TestClient) -> Vec<Value> {
    let reply = client.send(Method::GET, "/wallets", &[], b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json["data"].as_array().unwrap().clone()
}

async fn safes_link_by_their_owners_signatures(store: &[&str]) {
    let devnet = Devnet::up(3000).await;
    // The service sends what solc builds of its source, byte for byte.
    let built = devnet.run("signature-check-bytecode", &[]).await;
    let sent = include_str!("../../../shared/contracts/signature_check.hex");
    assert_eq!(text(&built["bytecode"]), sent.trim());

    let server = world::local_api(&devnet, &devnet.rpc, store).await;
    let alice = world::user(&server, "alice").await;
    let mut owners = Vec::new();
    for i in 2..=5 {
        owners.push(devnet.account(i).await);
    }
    let (a, b, c, stranger) = (
        owners[0].as_str(),
        owners[1].as_str(),
        owners[2].as_str(),
        owners[3].as_str(),
    );

    // A 1-of-1 Safe holding a position: linked by its owner's signature, its position listed.
    let single = safe(&devnet, &[a], 1, 1, true).await;
    let single = text(&single["safe"]);
    let range = devnet.range_around(600).await;
    let token = mint(&devnet, &single, range, None).await;
    let message = challenge(&alice, "ethereum", &single).await;
    let signature = safe_signature(&devnet, &single, &message, &[a], &[]).await;
    let reply = link(&alice, &single, &message, &signature).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(reply.json["kind"], "contract");
    assert_eq!(reply.json["positions"], 1, "{}", reply.json);
    let listed = alice.list("source=wallet&limit=10").await;
    assert_eq!(text(&listed.json["data"][0]["tokenId"]), token);

    // A 2-of-3 Safe: one owner, a stranger, another chain's signature and a plain
    // personal_sign are refused, nothing linked; two owners link it.
    let multisig = text(&safe(&devnet, &[a, b, c], 2, 2, true).await["safe"]);
    let message = challenge(&alice, "ethereum", &multisig).await;
    let personal = text(
        &devnet
            .run("sign", &["--account", a, "--message", &message])
            .await["signature"],
    );
    let refused = [
        safe_signature(&devnet, &multisig, &message, &[a], &[]).await,
        safe_signature(&devnet, &multisig, &message, &[a, stranger], &[]).await,
        safe_signature(&devnet, &multisig, &message, &[a, b], &["--chain-id", "5"]).await,
        personal,
    ];
    for signature in &refused {
        let reply = link(&alice, &multisig, &message, signature).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
        assert!(
            reply
                .text()
                .contains("signature not valid for this address"),
            "{}",
            reply.text()
        );
    }
    assert_eq!(linked(&alice).await.len(), 1);
    let signature = safe_signature(&devnet, &multisig, &message, &[c, a], &[]).await;
    let reply = link(&alice, &multisig, &message, &signature).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(reply.json["kind"], "contract");

    // A Safe not deployed yet (a week to sign it in): its ERC-6492 signature links it, and it
    // stays undeployed.
    let pending = safe(&devnet, &[b], 1, 3, false).await;
    let address = text(&pending["safe"]);
    let week = json!({"chain": "ethereum", "address": address, "ttl": 604800});
    let reply = post(&alice, "/wallets/challenge", &week).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let message = text(&reply.json["message"]);
    let calldata = text(&pending["factoryCalldata"]);
    let wrap = ["--wrap", "true", "--factory-calldata", calldata.as_str()];
    let signature = safe_signature(&devnet, &address, &message, &[b], &wrap).await;
    assert!(signature.len() > 1000 && signature.ends_with(&"6492".repeat(16)));
    let reply = link(&alice, &address, &message, &signature).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(reply.json["kind"], "contract");
    let code = devnet.rpc("eth_getCode", json!([address, "latest"])).await;
    assert_eq!(code, "0x", "the check deploys nothing");
    let too_long = json!({"chain": "ethereum", "address": stranger, "ttl": 604801});
    let reply = post(&alice, "/wallets/challenge", &too_long).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());

    // An EOA links as before, offline.
    devnet.link_account(&alice, stranger).await;
    let wallets = linked(&alice).await;
    let kinds: Vec<(String, String)> = wallets
        .iter()
        .map(|w| (text(&w["address"]).to_lowercase(), text(&w["kind"])))
        .collect();
    assert_eq!(wallets.len(), 4, "{kinds:?}");
    assert!(
        kinds.contains(&(stranger.to_lowercase(), "eoa".into())),
        "{kinds:?}"
    );
    assert_eq!(kinds.iter().filter(|(_, k)| k == "contract").count(), 3);
}

on_both_stores!(safes => safes_link_by_their_owners_signatures);
