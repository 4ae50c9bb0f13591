//! `POST /positions/{id}/close` through the handlers on the in-memory store: the withdrawal
//! rounded down and frozen, every error status, one winner among concurrent closes, and the
//! portfolio's realized and unrealized totals; a close racing the sync's activation or another
//! close answers what really happened.

use async_trait::async_trait;
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use lambda_http::http::{Method, StatusCode};
use serde_json::{json, Value};
use shared::math::U256;
use shared::model::{
    Chain, Closing, Filter, KeyAnswer, KeyClaim, Page, PageRequest, Position, Protocol, Realized,
    Status, TokenPair,
};
use shared::store::{MemoryStore, PositionStore, StoreResult};
use shared::App;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use test_support::client::TestClient;
use test_support::fixtures::position;

fn dec(value: &Value) -> BigDecimal {
    BigDecimal::from_str(&value.to_string().replace('"', "")).unwrap()
}

#[tokio::test]
async fn a_close_withdraws_rounded_down_and_freezes_the_figures() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, Some("alice"));
    let kept = alice.open(json!({})).await;
    let closing = alice.open(json!({"amountA": "2", "amountB": "5000"})).await;
    let id = closing["id"].as_str().unwrap();
    let open = alice.get(id).await.json;

    let reply = alice.close(id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let closed = reply.json;
    assert_eq!(closed["status"], "closed");
    assert_eq!(closed["inRange"], Value::Null);
    assert_eq!(closed["stale"], Value::Null);
    let at = closed["closedAt"].as_str().unwrap();
    assert!(
        at.ends_with('Z') && at.len() == "2026-11-22T06:30:00.000Z".len(),
        "{at}"
    );
    // A burn pays rounded down, a read shows rounded up: at most one unit apart.
    for token in ["tokenA", "tokenB"] {
        let (read, paid) = (dec(&open[token]["amount"]), dec(&closed[token]["amount"]));
        assert!(paid <= read, "{token}: {paid} > {read}");
        assert!(
            &read - &paid <= BigDecimal::from_str("0.000001").unwrap(),
            "{token}"
        );
    }
    // Realized PnL: withdrawn value + fees − cost basis.
    let value = dec(&closed["tokenA"]["valueUsd"]) + dec(&closed["tokenB"]["valueUsd"]);
    assert_eq!(
        dec(&closed["valueUsd"]),
        value + dec(&closed["feesEarnedUsd"])
    );
    assert!(
        (dec(&closed["pnlUsd"]) - (dec(&closed["valueUsd"]) - dec(&closed["costBasisUsd"]))).abs()
            <= BigDecimal::from_str("0.01").unwrap()
    );
    // Reads return the frozen figures.
    assert_eq!(alice.get(id).await.json, closed);

    // Lists per status, before and after.
    assert_eq!(alice.list("status=closed").await.json["total"], 1);
    assert_eq!(alice.list("status=active").await.json["total"], 1);
    assert_eq!(alice.list("status=closed").await.json["data"][0], closed);
    assert_eq!(alice.total().await, 2);

    // The portfolio: the open position unrealized, the closed one realized.
    let portfolio = alice.portfolio().await.json;
    assert_eq!(portfolio["positions"], 1);
    assert_eq!(portfolio["realizedPnlUsd"], closed["pnlUsd"]);
    assert_eq!(portfolio["unrealizedPnlUsd"], kept["pnlUsd"]);
    assert_eq!(
        dec(&portfolio["totalPnlUsd"]),
        dec(&closed["pnlUsd"]) + dec(&kept["pnlUsd"])
    );
    assert_eq!(portfolio["totalValueUsd"], kept["valueUsd"]);
}

#[tokio::test]
async fn closing_twice_unknown_or_anothers_position_is_refused_and_changes_nothing() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, Some("alice"));
    let bob = TestClient::in_process(&app, Some("bob"));
    let created = alice.open(json!({})).await;
    let id = created["id"].as_str().unwrap();
    for (client, target) in [
        (&bob, id),
        (&alice, "01ARZ3NDEKTSV4RRFFQ69G5FAV"),
        (&alice, "not-an-id"),
    ] {
        let reply = client.close(target).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{target}");
        assert_eq!(
            reply.json,
            json!({"message": "position not found", "statusCode": 404})
        );
    }
    let nobody = TestClient::in_process(&app, None);
    assert_eq!(nobody.close(id).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(alice.get(id).await.json["status"], "active");

    assert_eq!(alice.close(id).await.status, StatusCode::OK);
    let again = alice.close(id).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(
        again.json,
        json!({"message": "the position is already closed", "statusCode": 409})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_twenty_concurrent_closes_exactly_one_succeeds() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, Some("alice"));
    let id = alice.open(json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let closes = (0..20).map(|_| {
        let (app, id) = (app.clone(), id.clone());
        tokio::spawn(async move {
            TestClient::in_process(&app, Some("alice"))
                .close(&id)
                .await
                .status
        })
    });
    let mut statuses = Vec::new();
    for close in closes {
        statuses.push(close.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::OK).count(), 1);
    assert!(statuses
        .iter()
        .all(|s| *s == StatusCode::OK || *s == StatusCode::CONFLICT));
    assert_eq!(alice.list("status=closed").await.json["total"], 1);
    assert_eq!(alice.list("status=active").await.json["total"], 0);
}

/// What happens to the position between a close's read and its write.
#[derive(Clone)]
enum Race {
    /// The sync activates the pending offer (stored as this active position).
    Activated(Box<Position>),
    /// Another request closes it.
    Closed,
}

/// The in-memory store, where the first close's write finds the position changed by `race`.
struct RacingStore {
    inner: MemoryStore,
    race: Mutex<Option<Race>>,
}

#[async_trait]
impl PositionStore for RacingStore {
    async fn insert_answering(&self, p: &Position, a: Option<&KeyAnswer>) -> StoreResult<()> {
        self.inner.insert_answering(p, a).await
    }
    async fn get(&self, owner: &str, id: &str) -> StoreResult<Option<Position>> {
        self.inner.get(owner, id).await
    }
    async fn list(&self, owner: &str, filter: Filter, page: PageRequest) -> StoreResult<Page> {
        self.inner.list(owner, filter, page).await
    }
    async fn open_positions(&self, owner: &str) -> StoreResult<Vec<Position>> {
        self.inner.open_positions(owner).await
    }
    async fn pending_on(&self, c: Chain, p: Protocol, pool: &str) -> StoreResult<Vec<Position>> {
        self.inner.pending_on(c, p, pool).await
    }
    async fn activate(&self, activated: &Position) -> StoreResult<()> {
        self.inner.activate(activated).await
    }
    async fn close_answering(
        &self,
        owner: &str,
        id: &str,
        from: Status,
        closing: &Closing,
        answer: Option<&KeyAnswer>,
    ) -> StoreResult<()> {
        let race = self.race.lock().unwrap().take();
        match race {
            Some(Race::Activated(active)) => self.inner.activate(&active).await?,
            Some(Race::Closed) => {
                self.inner
                    .set_status(owner, id, from, Status::Closed)
                    .await?;
            }
            None => {}
        }
        self.inner
            .close_answering(owner, id, from, closing, answer)
            .await
    }
    async fn claim_key(
        &self,
        owner: &str,
        key: &str,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> StoreResult<KeyClaim> {
        self.inner.claim_key(owner, key, fingerprint, now).await
    }
    async fn answer_key(&self, answer: &KeyAnswer) -> StoreResult<()> {
        self.inner.answer_key(answer).await
    }
    async fn release_key(&self, owner: &str, key: &str, lease: &str) -> StoreResult<()> {
        self.inner.release_key(owner, key, lease).await
    }
    async fn realized(&self, owner: &str) -> StoreResult<Realized> {
        self.inner.realized(owner).await
    }
    async fn set_status(&self, owner: &str, id: &str, from: Status, to: Status) -> StoreResult<()> {
        self.inner.set_status(owner, id, from, to).await
    }
    async fn holdings(
        &self,
        owner: &str,
        chain: Chain,
        wallet: &str,
    ) -> StoreResult<Vec<Position>> {
        self.inner.holdings(owner, chain, wallet).await
    }
    async fn holding(&self, owner: &str, chain: Chain, key: &str) -> StoreResult<Option<Position>> {
        self.inner.holding(owner, chain, key).await
    }
    async fn update_holding(&self, read: &Position, previous: &Position) -> StoreResult<()> {
        self.inner.update_holding(read, previous).await
    }
    async fn set_order(
        &self,
        position: &Position,
        previous: Option<&shared::model::ChainOrder>,
    ) -> StoreResult<()> {
        self.inner.set_order(position, previous).await
    }
    async fn set_move_order(
        &self,
        position: &Position,
        previous: Option<&shared::model::ChainOrder>,
        opening: &Position,
    ) -> StoreResult<()> {
        self.inner.set_move_order(position, previous, opening).await
    }
    async fn remove_holdings(&self, owner: &str, chain: Chain, wallet: &str) -> StoreResult<u64> {
        self.inner.remove_holdings(owner, chain, wallet).await
    }
}

/// A pending offer of alice's on the ETH/USDC pool, in a racing store.
async fn racing(race: impl FnOnce(&Position) -> Race) -> (App, Position) {
    let mut pending = position("alice", Status::Pending, Chain::Ethereum, 1_790_000_000_000);
    pending.liquidity = 0;
    pending.deposit = Some(TokenPair {
        a: U256::from(10u64.pow(18)),
        b: U256::from(3_000_000_000u64),
    });
    let store = RacingStore {
        inner: MemoryStore::new(),
        race: Mutex::new(Some(race(&pending))),
    };
    store.insert(&pending).await.unwrap();
    let app = App {
        store: Arc::new(store),
        ..App::in_memory()
    };
    (app, pending)
}

#[tokio::test]
async fn a_cancel_that_races_the_activation_closes_the_active_position() {
    let (app, pending) = racing(|p| {
        Race::Activated(Box::new(Position {
            status: Status::Active,
            liquidity: 1_000_000_000_000,
            ..p.clone()
        }))
    })
    .await;
    let alice = TestClient::in_process(&app, Some("alice"));
    let path = format!("/positions/{}/close", pending.id);
    let key = [("idempotency-key", "cancel-1")];
    let reply = alice.send(Method::POST, &path, &key, b"").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json["status"], "closed");
    assert_eq!(
        reply.json["liquidity"], "1000000000000",
        "closed as the active position it was"
    );
    assert_eq!(reply.json["closeReason"], Value::Null, "{}", reply.text());
    assert_eq!(alice.get(&pending.id).await.json, reply.json);
    let retry = alice.send(Method::POST, &path, &key, b"").await;
    assert_eq!((retry.status, retry.body), (reply.status, reply.body));
}

#[tokio::test]
async fn a_close_that_loses_to_another_close_answers_409() {
    let (app, pending) = racing(|_| Race::Closed).await;
    let alice = TestClient::in_process(&app, Some("alice"));
    let reply = alice.close(&pending.id).await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.text());
    assert_eq!(reply.json["message"], "the position is already closed");
}

/// A simulated position's history reads like a wallet position's: `created` carries its
/// deposit, `activated` its time, `closed` what it paid out (principal and fees per token, at
/// the close's prices), each summing to its view's figures.
#[tokio::test]
async fn a_simulated_positions_history_says_what_moved() {
    let app = App::in_memory();
    let alice = TestClient::in_process(&app, Some("alice"));
    let created = alice.open(json!({})).await;
    let id = created["id"].as_str().unwrap();
    let history = |id: String| {
        let alice = &alice;
        async move {
            let path = format!("/positions/{id}/history");
            let reply = alice.send(Method::GET, &path, &[], b"").await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
            reply.json["data"].as_array().unwrap().clone()
        }
    };
    let events = history(id.to_string()).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["created", "activated"]);
    let (made, sized) = (&events[0], &events[1]);
    for token in ["tokenA", "tokenB"] {
        assert_eq!(made[token]["amount"], created[token]["amount"], "{made}");
    }
    assert_eq!(
        dec(&made["valueUsd"]),
        dec(&created["costBasisUsd"]),
        "{made}"
    );
    assert_eq!(made["liquidity"], created["liquidity"], "{made}");
    assert_eq!(made["time"], created["createdAt"]);
    assert_eq!(
        sized["time"], created["createdAt"],
        "sized at once: {sized}"
    );

    let reply = alice.close(id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let closed = reply.json;
    let events = history(id.to_string()).await;
    assert_eq!(events.len(), 3, "{events:?}");
    let paid = &events[2];
    assert_eq!(paid["kind"], "closed");
    assert_eq!(paid["time"], closed["closedAt"], "{paid}");
    let mut total = BigDecimal::from(0);
    for token in ["tokenA", "tokenB"] {
        let view = &closed[token];
        assert_eq!(paid[token]["principal"], view["amount"], "{paid} {closed}");
        assert_eq!(paid[token]["fees"], view["feesEarned"], "{paid} {closed}");
        let sum = dec(&view["valueUsd"]) + dec(&view["feesEarnedUsd"]);
        let shown = dec(&paid[token]["valueUsd"]);
        assert!(
            (&shown - &sum).abs() <= BigDecimal::from_str("0.01").unwrap(),
            "{paid}"
        );
        total += shown;
    }
    let value = dec(&paid["valueUsd"]);
    assert!(
        (&value - &total).abs() <= BigDecimal::from_str("0.02").unwrap(),
        "{paid}"
    );
    assert_eq!(
        paid["liquidity"],
        format!("-{}", created["liquidity"].as_str().unwrap())
    );
}
