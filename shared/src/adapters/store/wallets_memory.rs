//! Linked wallets and their challenges in memory, beside the memory store's positions.

use crate::application::ports::StoreError;
use crate::application::ports::{StoreResult, WalletStore};
use crate::domain::model::Chain;
use crate::domain::wallets::challenge::Challenge;
use crate::domain::wallets::{
    LinkOutcome, LinkedWallet, ScanProgress, WalletKind, MAX_WALLETS_PER_USER, MAX_WATCHED_PER_USER,
};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};

/// The in-memory [`WalletStore`]: the embedded default's and the handlers' test double.
#[derive(Default)]
pub struct MemoryWallets {
    book: std::sync::RwLock<WalletBook>,
}

#[derive(Default)]
struct WalletBook {
    /// Challenges by (owner, nonce).
    challenges: HashMap<(String, String), Challenge>,
    /// Wallets per owner by (chain, address).
    wallets: HashMap<String, BTreeMap<(Chain, String), LinkedWallet>>,
    scans: HashMap<Chain, ScanProgress>,
}

#[async_trait]
impl WalletStore for MemoryWallets {
    async fn put_challenge(&self, challenge: &Challenge) -> StoreResult<()> {
        let mut book = self.book.write().unwrap_or_else(|e| e.into_inner());
        book.challenges.insert(
            (challenge.owner.clone(), challenge.nonce.clone()),
            challenge.clone(),
        );
        Ok(())
    }

    async fn challenge(&self, owner: &str, nonce: &str) -> StoreResult<Option<Challenge>> {
        let book = self.book.read().unwrap_or_else(|e| e.into_inner());
        Ok(book
            .challenges
            .get(&(owner.to_string(), nonce.to_string()))
            .cloned())
    }

    async fn link(&self, challenge: &Challenge, wallet: &LinkedWallet) -> StoreResult<LinkOutcome> {
        let mut book = self.book.write().unwrap_or_else(|e| e.into_inner());
        let key = (challenge.owner.clone(), challenge.nonce.clone());
        if book.challenges.get(&key).is_none_or(|c| c.used) {
            return Ok(LinkOutcome::ChallengeUsed);
        }
        let held = book.wallets.entry(wallet.owner.clone()).or_default();
        let id = (wallet.chain, wallet.address.clone());
        if held.contains_key(&id) {
            return Ok(LinkOutcome::AlreadyLinked);
        }
        if held
            .values()
            .filter(|w| w.kind != WalletKind::Watched)
            .count()
            >= MAX_WALLETS_PER_USER
        {
            return Ok(LinkOutcome::TooMany);
        }
        held.insert(id, wallet.clone());
        if let Some(c) = book.challenges.get_mut(&key) {
            c.used = true;
        }
        Ok(LinkOutcome::Linked)
    }

    async fn watch(&self, wallet: &LinkedWallet) -> StoreResult<LinkOutcome> {
        let mut book = self.book.write().unwrap_or_else(|e| e.into_inner());
        let held = book.wallets.entry(wallet.owner.clone()).or_default();
        let id = (wallet.chain, wallet.address.clone());
        if held.contains_key(&id) {
            return Ok(LinkOutcome::AlreadyLinked);
        }
        let watched = held.values().filter(|w| w.kind == WalletKind::Watched);
        if watched.count() >= MAX_WATCHED_PER_USER {
            return Ok(LinkOutcome::TooMany);
        }
        held.insert(id, wallet.clone());
        Ok(LinkOutcome::Linked)
    }

    async fn promote(
        &self,
        challenge: &Challenge,
        wallet: &LinkedWallet,
    ) -> StoreResult<LinkOutcome> {
        let mut book = self.book.write().unwrap_or_else(|e| e.into_inner());
        let key = (challenge.owner.clone(), challenge.nonce.clone());
        if book.challenges.get(&key).is_none_or(|c| c.used) {
            return Ok(LinkOutcome::ChallengeUsed);
        }
        let held = book.wallets.entry(wallet.owner.clone()).or_default();
        let linked = held.values().filter(|w| w.kind != WalletKind::Watched);
        if linked.count() >= MAX_WALLETS_PER_USER {
            return Ok(LinkOutcome::TooMany);
        }
        let id = (wallet.chain, wallet.address.clone());
        match held.get_mut(&id) {
            Some(stored) if stored.kind == WalletKind::Watched => stored.kind = wallet.kind,
            _ => return Ok(LinkOutcome::AlreadyLinked),
        }
        if let Some(c) = book.challenges.get_mut(&key) {
            c.used = true;
        }
        Ok(LinkOutcome::Linked)
    }

    async fn wallets(&self, owner: &str) -> StoreResult<Vec<LinkedWallet>> {
        let book = self.book.read().unwrap_or_else(|e| e.into_inner());
        Ok(book
            .wallets
            .get(owner)
            .map(|held| held.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn linked(&self) -> StoreResult<Vec<LinkedWallet>> {
        let book = self.book.read().unwrap_or_else(|e| e.into_inner());
        Ok(book
            .wallets
            .values()
            .flat_map(|held| held.values().cloned())
            .collect())
    }

    async fn record_refresh(&self, wallet: &LinkedWallet) -> StoreResult<()> {
        let mut book = self.book.write().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = book
            .wallets
            .get_mut(&wallet.owner)
            .and_then(|held| held.get_mut(&(wallet.chain, wallet.address.clone())))
        {
            // A failed read (no count) keeps the last good one.
            if wallet.positions.is_some() {
                held.refreshed_at = wallet.refreshed_at;
                held.positions = wallet.positions;
                held.tokens.clone_from(&wallet.tokens);
            }
            held.refresh_error.clone_from(&wallet.refresh_error);
            held.retry.clone_from(&wallet.retry);
            held.deployment_errors.clone_from(&wallet.deployment_errors);
        }
        Ok(())
    }

    async fn scan_progress(&self, chain: Chain) -> StoreResult<Option<ScanProgress>> {
        let book = self.book.read().unwrap_or_else(|e| e.into_inner());
        Ok(book.scans.get(&chain).cloned())
    }

    async fn save_scan_progress(
        &self,
        previous: Option<&ScanProgress>,
        progress: &ScanProgress,
    ) -> StoreResult<()> {
        let mut book = self.book.write().unwrap_or_else(|e| e.into_inner());
        if book.scans.get(&progress.chain) != previous {
            return Err(StoreError::Conflict);
        }
        book.scans.insert(progress.chain, progress.clone());
        Ok(())
    }

    async fn unlink(&self, owner: &str, chain: Chain, address: &str) -> StoreResult<bool> {
        let mut book = self.book.write().unwrap_or_else(|e| e.into_inner());
        Ok(book
            .wallets
            .get_mut(owner)
            .and_then(|held| held.remove(&(chain, address.to_string())))
            .is_some())
    }
}
