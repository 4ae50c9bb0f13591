//! The scheduled wallet refresh through a real queue API (moto's SQS, on the same server as the
//! table): one message per linked wallet, sent ten a request; a batch refreshed with exactly its
//! failing wallet reported for the queue to retry.

use serde_json::{json, Value};
use shared::app::{Refreshed, WalletRefresh, WholeRead};
use shared::chain::fanout::{enqueue, refresh_batch, RefreshMessage};
use shared::market::Freshness;
use shared::model::Chain;
use shared::store::WalletStore;
use shared::wallets::challenge::Challenge;
use shared::wallets::{LinkOutcome, LinkedWallet};
use shared::App;
use std::sync::Arc;
use std::time::Duration;
use test_support::dynamodb::dynamodb_store;
use test_support::fixtures::unique_owner;
use test_support::wallets::EvmWallet;

/// Links `wallet` to `owner` in the store as a good signature would.
async fn linked(store: &dyn WalletStore, owner: &str, address: &str) -> LinkedWallet {
    let now = chrono::Utc::now();
    let challenge = Challenge {
        owner: owner.into(),
        chain: Chain::Base,
        address: address.into(),
        nonce: ulid::Ulid::new().to_string(),
        message: "m".into(),
        expires_at: now + chrono::Duration::minutes(10),
        used: false,
    };
    store.put_challenge(&challenge).await.unwrap();
    let wallet = LinkedWallet::new(
        owner.into(),
        (Chain::Base, address.into()),
        now,
        shared::wallets::WalletKind::Eoa,
    );
    assert_eq!(
        store.link(&challenge, &wallet).await.unwrap(),
        LinkOutcome::Linked
    );
    wallet
}

/// Reads every wallet but one, whose chain "times out".
struct FailingFor(String);

#[async_trait::async_trait]
impl WalletRefresh for FailingFor {
    async fn refresh(&self, wallet: &LinkedWallet) -> Result<Refreshed, String> {
        if wallet.address == self.0 {
            Err("the RPC endpoint timed out".into())
        } else {
            Ok(Refreshed::from(shared::holdings::Recorded {
                held: 3,
                changed: Vec::new(),
            }))
        }
    }
}

#[tokio::test]
async fn the_scheduled_refresh_queues_each_wallet_and_reports_the_failing_one() {
    let (sqs, queue) = test_support::dynamodb::sqs_queue("wallets").await;
    let mut app = App::on_dynamodb(dynamodb_store().await, Duration::ZERO, Freshness::Snapshot);
    let mut ours = Vec::new();
    for user in 0..3 {
        let owner = unique_owner(&format!("fan{user}"));
        for seed in 0..8 {
            let wallet = EvmWallet::from_seed(1000 + user * 10 + seed);
            ours.push(linked(app.wallets.as_ref(), &owner, &wallet.address).await);
        }
    }
    let all: Vec<(String, String)> = app
        .wallets
        .linked()
        .await
        .unwrap()
        .into_iter()
        .map(|w| (w.owner, w.address))
        .collect();
    for wallet in &ours {
        let id = (wallet.owner.clone(), wallet.address.clone());
        assert!(all.contains(&id), "the registry lists every linked wallet");
    }
    // One message per wallet, ten a request.
    assert_eq!(
        enqueue(&sqs, &queue, &ours, WholeRead::Reconcile)
            .await
            .unwrap(),
        24
    );
    let mut received = Vec::new();
    while received.len() < 24 {
        let batch = sqs
            .receive_message()
            .queue_url(&queue)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap();
        let messages = batch.messages();
        assert!(
            !messages.is_empty(),
            "only {} of 24 messages arrived",
            received.len()
        );
        received.extend(messages.iter().cloned());
    }
    let mut bodies: Vec<RefreshMessage> = received
        .iter()
        .map(|m| serde_json::from_str(m.body().unwrap()).unwrap())
        .collect();
    bodies.sort_by(|a, b| a.address.cmp(&b.address));
    let mut expected: Vec<RefreshMessage> = ours
        .iter()
        .map(|w| RefreshMessage {
            owner: w.owner.clone(),
            chain: w.chain,
            address: w.address.clone(),
            reconcile: true,
        })
        .collect();
    expected.sort_by(|a, b| a.address.cmp(&b.address));
    assert_eq!(bodies, expected);

    // A batch of ten, one of whose wallets fails: exactly that message is reported.
    let failing = received[3].clone();
    let failing_address: RefreshMessage = serde_json::from_str(failing.body().unwrap()).unwrap();
    app.wallet_refresh = Some(Arc::new(FailingFor(failing_address.address.clone())));
    let records: Vec<Value> = received[..10]
        .iter()
        .map(|m| json!({"messageId": m.message_id(), "receiptHandle": m.receipt_handle(), "body": m.body(), "eventSource": "aws:sqs"}))
        .collect();
    let answer = refresh_batch(&app, &json!({"Records": records})).await;
    assert_eq!(
        answer,
        json!({"batchItemFailures": [{"itemIdentifier": failing.message_id()}]})
    );
    // The others were read: their counts are stored; the failing one keeps none, with why.
    let owners: std::collections::BTreeSet<String> = ours.iter().map(|w| w.owner.clone()).collect();
    let mut refreshed = 0;
    for owner in owners {
        for wallet in app.wallets.wallets(&owner).await.unwrap() {
            if wallet.address == failing_address.address {
                assert!(wallet
                    .refresh_error
                    .as_deref()
                    .unwrap()
                    .contains("timed out"));
                assert_eq!(wallet.positions, None);
            } else if wallet.positions == Some(3) {
                refreshed += 1;
            }
        }
    }
    assert_eq!(refreshed, 9);
    // A body that is not a refresh message is reported, never a panic.
    let answer = refresh_batch(
        &app,
        &json!({"Records": [{"messageId": "x", "body": "{}"}]}),
    )
    .await;
    assert_eq!(answer["batchItemFailures"][0]["itemIdentifier"], "x");
}

/// A sync reads the registry's version (one item) and the whole registry only when it moved
/// (issue 37): a second store on the same table (another Lambda container) sees each change
/// the first makes (a link, a read that changed a wallet's tokens or its retry, an unlink),
/// and a store keeps what it read while nothing changed (an entry written behind the version's
/// back is not seen until the next change).
#[tokio::test]
async fn the_registry_is_read_again_only_when_its_version_moved() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use shared::store::DynamoDbStore;
    use shared::wallets::retry::Retry;
    let a = dynamodb_store().await;
    let b = DynamoDbStore::new(a.client().clone(), a.table());
    assert!(a.linked().await.unwrap().is_empty());
    let owner = unique_owner("registry");
    let wallet = linked(&b, &owner, &EvmWallet::from_seed(901).address).await;
    let seen = a.linked().await.unwrap();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].tokens.is_empty());

    let read = |tokens: &[&str], retry: Option<Retry>| LinkedWallet {
        refreshed_at: Some(chrono::Utc::now()),
        positions: Some(tokens.len() as u64),
        tokens: tokens.iter().map(|t| t.to_string()).collect(),
        retry,
        ..wallet.clone()
    };
    b.record_refresh(&read(&["0xm#1"], None)).await.unwrap();
    assert_eq!(a.linked().await.unwrap()[0].tokens, ["0xm#1"]);

    // The same tokens again move nothing: an entry put behind the version's back stays unseen.
    b.record_refresh(&read(&["0xm#1"], None)).await.unwrap();
    let text = |v: &str| AttributeValue::S(v.into());
    a.client()
        .put_item()
        .table_name(a.table())
        .item("PK", text("WALLETS"))
        .item("SK", text("base#0xbehind#someone"))
        .item("owner", text("someone"))
        .item("chain", text("base"))
        .item("address", text("0xbehind"))
        .item("linkedAt", text("2026-11-27T00:00:00.000Z"))
        .send()
        .await
        .unwrap();
    assert_eq!(a.linked().await.unwrap().len(), 1, "read from what it kept");

    // A retry is a change: read again, with the entry put meanwhile.
    let retry = Retry::after(None, "outage".into(), chrono::Utc::now());
    b.record_refresh(&read(&["0xm#1"], Some(retry.clone())))
        .await
        .unwrap();
    let seen = a.linked().await.unwrap();
    assert_eq!(seen.len(), 2);
    let mine = seen.iter().find(|w| w.owner == owner).unwrap();
    assert_eq!(mine.retry.as_ref(), Some(&retry));

    b.unlink(&owner, Chain::Base, &wallet.address)
        .await
        .unwrap();
    let seen = a.linked().await.unwrap();
    assert!(seen.iter().all(|w| w.owner != owner), "{seen:?}");
}
