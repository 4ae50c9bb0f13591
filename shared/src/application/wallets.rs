//! The wallet use cases: a challenge to sign, the link that answers it (then the wallet's first
//! read), the list with how far each chain's events were followed, the unlink
//! ([`crate::domain::wallets`] holds what they check). Signatures and messages are never logged.

use crate::application::app::App;
use crate::application::error::{Outcome, UseCaseError};
use crate::application::wallet_reads::release_tracked;
use crate::application::watches::unwatch_all;
use crate::domain::model::{format_time, Chain, ListView};
use crate::domain::wallets::challenge::{
    expires_at, message, new_nonce, nonce_of, Challenge, CHALLENGE_LIFETIME, MAX_CHALLENGE_LIFETIME,
};
use crate::domain::wallets::proof::{evm_proof, verify, ProofError};
use crate::domain::wallets::{
    LinkOutcome, LinkedWallet, WalletKind, WalletView, MAX_WALLETS_PER_USER, MAX_WATCHED_PER_USER,
};
use serde::Serialize;

/// A challenge as issued: the message for the wallet to sign and until when it may.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChallengeView {
    pub chain: Chain,
    pub address: String,
    pub message: String,
    pub expires_at: String,
}

/// A message for the wallet (`address` in its canonical spelling) to sign, issued to `owner`
/// for that wallet only, valid for `lifetime` (ten minutes unless asked; at most a week, for
/// a multisig's owners), answered once.
pub async fn challenge(
    app: &App,
    owner: String,
    wallet: (Chain, String),
    lifetime: Option<std::time::Duration>,
) -> Outcome<ChallengeView> {
    let (chain, address) = wallet;
    let lifetime = lifetime.unwrap_or(CHALLENGE_LIFETIME);
    if lifetime.is_zero() || lifetime > MAX_CHALLENGE_LIFETIME {
        return Err(UseCaseError::bad_request(format!(
            "ttl must be 1 to {} seconds (7 days)",
            MAX_CHALLENGE_LIFETIME.as_secs()
        )));
    }
    let catalog = app.market.catalog().await?;
    let chain_id = catalog.chain_id(chain);
    if chain != Chain::Solana && chain_id.is_none() {
        return Err(UseCaseError::bad_request(format!(
            "no protocol deployment is known on {chain}: its wallets cannot be linked"
        )));
    }
    let nonce = new_nonce().map_err(|e| UseCaseError::internal(e.to_string()))?;
    let now = app.clock.now();
    let issued_at = chrono::DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now);
    let text = message(
        &app.signing,
        chain,
        &address,
        chain_id,
        &nonce,
        issued_at,
        lifetime,
    );
    let challenge = Challenge {
        owner,
        chain,
        address: address.clone(),
        nonce,
        message: text.clone(),
        expires_at: expires_at(issued_at, lifetime),
        used: false,
    };
    app.wallets.put_challenge(&challenge).await?;
    Ok(ChallengeView {
        chain,
        address,
        message: text,
        expires_at: format_time(&challenge.expires_at),
    })
}

/// What a link answers: the signed message and its signature, for the wallet `address` (in
/// its canonical spelling) on `chain`.
#[derive(Debug, Clone)]
pub struct LinkRequest {
    pub chain: Chain,
    pub address: String,
    pub message: String,
    pub signature: String,
}

/// Links the wallet whose signature answers `owner`'s challenge, then reads its positions once.
pub async fn link(app: &App, owner: String, asked: LinkRequest) -> Outcome<WalletView> {
    let LinkRequest {
        chain,
        address,
        message,
        signature,
    } = asked;
    let not_issued = || {
        UseCaseError::bad_request(
            "message is not a challenge issued to you: ask POST /wallets/challenge for one",
        )
    };
    let nonce = nonce_of(&message).ok_or_else(not_issued)?;
    let challenge = app
        .wallets
        .challenge(&owner, nonce)
        .await?
        .ok_or_else(not_issued)?;
    if challenge.chain != chain || challenge.address != address {
        return Err(UseCaseError::bad_request(
            "the challenge was issued for another wallet: ask one for this wallet",
        ));
    }
    if challenge.message != message {
        return Err(UseCaseError::bad_request(
            "message differs from the challenge issued: sign the challenge exactly as issued",
        ));
    }
    let now = app.clock.now();
    if challenge.expires_at <= now {
        return Err(UseCaseError::bad_request(
            "the challenge expired: ask POST /wallets/challenge for a new one",
        ));
    }
    let used = || UseCaseError::bad_request("the challenge was already used: ask for a new one");
    if challenge.used {
        return Err(used());
    }
    let kind = prove(app, chain, &address, &message, &signature).await?;
    let wallet = LinkedWallet::new(owner, (chain, address), now, kind);
    match app.wallets.link(&challenge, &wallet).await? {
        LinkOutcome::Linked => {}
        LinkOutcome::ChallengeUsed => return Err(used()),
        LinkOutcome::AlreadyLinked => {
            // Watched already: linked in place, its positions, ids and reads kept.
            return match promote(app, &challenge, &wallet).await? {
                Some(promoted) => Ok(promoted),
                None => Err(UseCaseError::Conflict(
                    "this wallet is already linked to you".into(),
                )),
            };
        }
        LinkOutcome::TooMany => return Err(too_many()),
    }
    tracing::info!(chain = %wallet.chain, address = %wallet.address, "wallet linked");
    let wallet = app.refresh_wallet(wallet).await;
    Ok(WalletView::from(&wallet))
}

/// Links in place the watched wallet that `wallet` (just proven) is: its kind set, nothing
/// read again; `None` when the owner's wallet there is not a watched one.
async fn promote(
    app: &App,
    challenge: &Challenge,
    wallet: &LinkedWallet,
) -> Outcome<Option<WalletView>> {
    let held = app.wallets.wallets(&wallet.owner).await?;
    let Some(watched) = held.into_iter().find(|w| {
        w.chain == wallet.chain && w.address == wallet.address && w.kind == WalletKind::Watched
    }) else {
        return Ok(None);
    };
    let linked = LinkedWallet {
        kind: wallet.kind,
        ..watched
    };
    match app.wallets.promote(challenge, &linked).await? {
        LinkOutcome::Linked => {
            tracing::info!(chain = %linked.chain, address = %linked.address, "watched wallet linked");
            Ok(Some(WalletView::from(&linked)))
        }
        LinkOutcome::ChallengeUsed => Err(UseCaseError::bad_request(
            "the challenge was already used: ask for a new one",
        )),
        LinkOutcome::TooMany => Err(too_many()),
        LinkOutcome::AlreadyLinked => Ok(None),
    }
}

fn too_many() -> UseCaseError {
    UseCaseError::Conflict(format!(
        "you have linked {MAX_WALLETS_PER_USER} wallets, the most one user may: unlink one first"
    ))
}

/// Watches `address` on `chain` for `owner` without a signature (the chain is public): its
/// positions read, listed, valued, followed and alerted on as a linked wallet's, never acted
/// on from here; then reads them once.
pub async fn watch(app: &App, owner: String, chain: Chain, address: String) -> Outcome<WalletView> {
    let catalog = app.market.catalog().await?;
    if chain != Chain::Solana && catalog.chain_id(chain).is_none() {
        return Err(UseCaseError::bad_request(format!(
            "no protocol deployment is known on {chain}: its wallets cannot be watched"
        )));
    }
    let wallet = LinkedWallet::new(
        owner,
        (chain, address),
        app.clock.now(),
        WalletKind::Watched,
    );
    match app.wallets.watch(&wallet).await? {
        LinkOutcome::Linked => {}
        LinkOutcome::AlreadyLinked | LinkOutcome::ChallengeUsed => {
            return Err(UseCaseError::Conflict(
                "this wallet is already linked to you or watched".into(),
            ))
        }
        LinkOutcome::TooMany => {
            return Err(UseCaseError::bad_request(format!(
                "you watch {MAX_WATCHED_PER_USER} addresses, the most one user may: stop \
                 watching one first (DELETE /wallets/{{chain}}/{{address}})"
            )))
        }
    }
    tracing::info!(chain = %wallet.chain, address = %wallet.address, "wallet watched");
    let wallet = app.refresh_wallet(wallet).await;
    Ok(WalletView::from(&wallet))
}

/// How the wallet proves it signed the challenge: a key's signature offline, as ever; any other
/// EVM signature by the wallet's chain (one deployless `eth_call`: ERC-1271, and ERC-6492 for a
/// wallet not deployed yet), which links a contract wallet on that chain only. Where no chain
/// is read, only a key's signature can be checked.
async fn prove(
    app: &App,
    chain: Chain,
    address: &str,
    message: &str,
    signature: &str,
) -> Outcome<WalletKind> {
    let bad = |e: ProofError| UseCaseError::bad_request(e.to_string());
    if chain == Chain::Solana {
        verify(chain, address, message, signature).map_err(bad)?;
        return Ok(WalletKind::Eoa);
    }
    let Some(proof) = evm_proof(address, message, signature).map_err(bad)? else {
        return Ok(WalletKind::Eoa);
    };
    let Some(reader) = app.order_chain.as_ref() else {
        verify(chain, address, message, signature).map_err(bad)?;
        return Ok(WalletKind::Eoa);
    };
    match reader.signed_by(chain, address, &proof).await {
        Ok(true) => Ok(WalletKind::Contract),
        Ok(false) => Err(UseCaseError::bad_request(
            "signature not valid for this address: neither its key nor, for a contract wallet, \
             the wallet on this chain signed the challenge",
        )),
        Err(e) => {
            tracing::warn!(%chain, cause = %e, "a contract wallet's signature could not be checked");
            Err(UseCaseError::MarketStale(format!(
                "the {chain} chain could not be asked whether this wallet signed: retry"
            )))
        }
    }
}

/// `owner`'s linked wallets, each EVM one with how far its chain's events were followed.
pub async fn list(app: &App, owner: &str) -> Outcome<ListView<WalletView>> {
    let wallets = app.wallets.wallets(owner).await?;
    // Each EVM chain's scan progress once (a user holds at most 20 wallets on 5 chains).
    let mut scans = std::collections::BTreeMap::new();
    for chain in wallets.iter().map(|w| w.chain) {
        if chain != Chain::Solana && !scans.contains_key(&chain) {
            scans.insert(chain, app.wallets.scan_progress(chain).await?);
        }
    }
    let data: Vec<WalletView> = wallets
        .iter()
        .map(|w| WalletView::from(w).followed(scans.get(&w.chain).and_then(Option::as_ref)))
        .collect();
    let total = data.len() as u64;
    Ok(ListView { data, total })
}

/// Unlinks one of `owner`'s wallets with its positions; not found when it is not linked.
pub async fn unlink(app: &App, owner: &str, chain: Chain, address: &str) -> Outcome<()> {
    // Its open positions' bounds leave their pools' tracked ticks once they are gone.
    let held = app.store.holdings(owner, chain, address).await?;
    if !app.wallets.unlink(owner, chain, address).await? {
        return Err(UseCaseError::NotFound("wallet not linked".into()));
    }
    // Where the wallet store keeps no positions (memory), they go after the wallet; on
    // DynamoDB they went in its unlink's transaction and none are left.
    let removed = app.store.remove_holdings(owner, chain, address).await?;
    // Gone with the wallet: no alert of theirs is made any more (a re-link watches them anew).
    unwatch_all(&app.alerts, &held).await?;
    if held
        .iter()
        .any(|p| p.holding.as_ref().is_some_and(|h| h.tracked))
    {
        let catalog = app.market.catalog().await?;
        release_tracked(app.market.as_ref(), &catalog, &held).await;
    }
    tracing::info!(%chain, %address, removed, "wallet unlinked");
    Ok(())
}
