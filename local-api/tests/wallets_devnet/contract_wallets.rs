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

/// What the link's one `eth_call` sends and the gas it takes (`docs/figures/contract-wallets.md`),
/// printed.
async fn check_figures(devnet: &Devnet, case: &str, wallet: &str, message: &str, signature: &str) {
    let proof = shared::wallets::proof::evm_proof(wallet, message, signature)
        .unwrap()
        .expect("a contract wallet's signature is checked by the chain");
    let data = shared::chain::signatures::check_call(wallet.parse().unwrap(), &proof);
    let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
    let gas = devnet
        .rpc("eth_estimateGas", json!([{"data": format!("0x{hex}")}]))
        .await;
    let gas = u64::from_str_radix(text(&gas).trim_start_matches("0x"), 16).unwrap();
    println!(
        "figures: link check, {case}: 1 eth_call, {} bytes sent, {gas} gas",
        data.len()
    );
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
    check_figures(&devnet, "a 1-of-1 Safe", &single, &message, &signature).await;
    let reply = link(&alice, &single, &message, &signature).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(reply.json["kind"], "contract");
    assert_eq!(reply.json["positions"], 1, "{}", reply.json);
    let listed = alice.list("source=wallet&limit=10").await;
    assert_eq!(text(&listed.json["data"][0]["tokenId"]), token);

    // Its collect is simulated from the Safe and answered as one batch of calls too, which
    // the Safe sends at once (MultiSendCallOnly, its owner's approval): it collects what the
    // answer said, to the unit.
    for (sell, amount) in [("usdc", "20000"), ("weth", "7")] {
        devnet
            .run("swap", &["--sell", sell, "--amount", amount])
            .await;
    }
    world::sync(&world::operator(&server).await).await;
    let id = text(&listed.json["data"][0]["id"]);
    let collect = post(&alice, &format!("/positions/{id}/collect"), &json!({})).await;
    assert_eq!(collect.status, StatusCode::OK, "{}", collect.text());
    let transactions = collect.json["transactions"].as_array().unwrap().clone();
    let calls = collect.json["calls"].as_array().unwrap().clone();
    assert_eq!(calls.len(), transactions.len());
    for (t, call) in transactions.iter().zip(&calls) {
        assert!(text(&t["from"]).eq_ignore_ascii_case(&single), "{t}");
        assert_eq!((&t["to"], &t["data"]), (&call["to"], &call["data"]));
    }
    let batch = json!(calls).to_string();
    let args = [
        "--safe",
        single.as_str(),
        "--signers",
        a,
        "--calls",
        batch.as_str(),
    ];
    devnet.run("safe-exec", &args).await;
    let expected = &transactions.last().unwrap()["expected"];
    let balance = |token: &'static str| {
        let (devnet, single) = (&devnet, single.clone());
        async move {
            let args = ["--account", single.as_str(), "--token", token];
            text(&devnet.run("allowance", &args).await["balance"])
        }
    };
    assert_eq!(
        balance("weth").await,
        test_support::devnet::units(&expected["tokenA"]),
        "{expected}"
    );
    assert_eq!(
        balance("usdc").await,
        test_support::devnet::units(&expected["tokenB"]),
        "{expected}"
    );
    assert_ne!(balance("usdc").await, "0", "fees were earned");

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
    // A wallet whose answer is 1.2 MB of memory (anvil: "EVM error MemoryOOG" in the
    // check): the contract's failure, a clear 400, never the endpoint's 503.
    let bloated = "0x00000000000000000000000000000000000b10a7";
    let returns_1_2_mb = "0x6212c0006000f3"; // PUSH3 1,228,800 PUSH1 0 RETURN
    devnet
        .rpc("anvil_setCode", json!([bloated, returns_1_2_mb]))
        .await;
    let asked = challenge(&alice, "ethereum", bloated).await;
    let wrapped = safe_signature(&devnet, &multisig, &asked, &[a, b], &[]).await;
    let mut refusals: Vec<(&str, &str, &String)> = refused
        .iter()
        .map(|signature| (multisig.as_str(), message.as_str(), signature))
        .collect();
    refusals.extend([
        (bloated, asked.as_str(), &refused[3]),
        (bloated, &asked, &wrapped),
    ]);
    for (address, message, signature) in refusals {
        let reply = link(&alice, address, message, signature).await;
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
    check_figures(&devnet, "a 2-of-3 Safe", &multisig, &message, &signature).await;
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
    let case = "a 1-of-1 Safe not deployed (ERC-6492)";
    check_figures(&devnet, case, &address, &message, &signature).await;
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

/// Any address watched without a signature: its position listed; acting on it (or opening from
/// it) is 403; linked by signature later, the same position keeps its id and can be acted on;
/// a watched address stops being watched as a wallet is unlinked.
async fn addresses_are_watched_without_a_signature(store: &[&str]) {
    let devnet = Devnet::up(3000).await;
    let server = world::local_api(&devnet, &devnet.rpc, store).await;
    let alice = world::user(&server, "alice").await;
    let wallet = devnet.funded_account(1).await;
    let range = devnet.range_around(600).await;
    let token = mint(&devnet, &wallet, range, None).await;

    let watch = json!({"chain": "ethereum", "address": wallet, "watch": true});
    let reply = post(&alice, "/wallets", &watch).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(
        (&reply.json["kind"], &reply.json["watch"]),
        (&json!("watched"), &json!(true))
    );
    assert_eq!(reply.json["positions"], 1, "{}", reply.json);
    let again = post(&alice, "/wallets", &watch).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.text());
    let signed_too = json!({"chain": "ethereum", "address": wallet, "watch": true, "message": "m", "signature": "0x00"});
    let reply = post(&alice, "/wallets", &signed_too).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());

    let listed = alice.list("source=wallet&limit=10").await.json;
    let position = listed["data"][0].clone();
    assert_eq!(text(&position["tokenId"]), token);
    let id = text(&position["id"]);
    let collect = post(&alice, &format!("/positions/{id}/collect"), &json!({})).await;
    assert_eq!(collect.status, StatusCode::FORBIDDEN, "{}", collect.text());
    assert!(collect
        .text()
        .contains("link this wallet by signature to act from it"));
    let close = post(&alice, &format!("/positions/{id}/close"), &json!({})).await;
    assert_eq!(close.status, StatusCode::FORBIDDEN, "{}", close.text());

    // Linked by its signature: the same position, the same id, and its actions built.
    devnet.link_account(&alice, &wallet).await;
    let wallets = linked(&alice).await;
    assert_eq!(wallets.len(), 1, "{wallets:?}");
    assert_eq!(
        (&wallets[0]["kind"], &wallets[0]["watch"]),
        (&json!("eoa"), &json!(false))
    );
    let listed = alice.list("source=wallet&limit=10").await.json;
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(text(&listed["data"][0]["id"]), id);
    let collect = post(&alice, &format!("/positions/{id}/collect"), &json!({})).await;
    assert_eq!(collect.status, StatusCode::OK, "{}", collect.text());

    // Another address watched, then no more: its positions go with it.
    let other = devnet.account(7).await;
    let watch = json!({"chain": "ethereum", "address": other, "watch": true});
    assert_eq!(
        post(&alice, "/wallets", &watch).await.status,
        StatusCode::CREATED
    );
    let path = format!("/wallets/ethereum/{other}");
    let gone = alice.send(Method::DELETE, &path, &[], b"").await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.text());
    assert_eq!(linked(&alice).await.len(), 1);
    assert_eq!(
        post(&alice, "/wallets", &watch).await.status,
        StatusCode::CREATED
    );
}

on_both_stores!(watched => addresses_are_watched_without_a_signature);
