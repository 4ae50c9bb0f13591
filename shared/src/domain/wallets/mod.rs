//! Wallets linked by signature: the challenge a wallet signs ([`challenge`]), the proof that it
//! did ([`proof`]), addresses in one spelling ([`address`]), a linked wallet. The routes are in
//! `wallet_handlers`.

pub mod address;
pub mod challenge;
pub mod proof;
pub mod retry;

use crate::domain::model::{format_time, Chain, Protocol};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The most wallets one user may link.
pub const MAX_WALLETS_PER_USER: usize = 20;

/// The most addresses one user may watch (apart from those linked).
pub const MAX_WATCHED_PER_USER: usize = 20;

named_enum!(
    /// How a wallet is the user's: an EOA's key signed its challenge (`personal_sign`), a
    /// contract wallet's chain said it signed (ERC-1271, ERC-6492: linked on that chain only),
    /// or it is only watched (no signature: read like the others, never acted from).
    WalletKind {
        Eoa => "eoa",
        Contract => "contract",
        Watched => "watched",
    }
);

/// A wallet linked to a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedWallet {
    pub owner: String,
    pub chain: Chain,
    /// Canonical spelling ([`address::canonical`]).
    pub address: String,
    pub linked_at: DateTime<Utc>,
    /// When its positions were last read from the chain; `None` until the first good read.
    pub refreshed_at: Option<DateTime<Utc>>,
    /// How many positions the last good read found; `None` until the first.
    pub positions: Option<u64>,
    /// Why the last read failed, if it did (the last good read stays).
    pub refresh_error: Option<String>,
    /// The positions its last good read found, as `{manager}#{token}`: whose events the chain
    /// scan follows (decision 45). Kept on the wallet's registry entry.
    pub tokens: Vec<String>,
    /// Its last read, or a position's history, stopped part way: when the syncs retry it.
    pub retry: Option<retry::Retry>,
    /// The deployments its last good read could not take (their positions keep their last
    /// read), one entry each.
    pub deployment_errors: Vec<DeploymentError>,
    pub kind: WalletKind,
}

impl LinkedWallet {
    /// `wallet` (chain, canonical address) just linked or watched by `owner` at `at` (to the
    /// millisecond, as it is stored): nothing read yet.
    pub fn new(
        owner: String,
        wallet: (Chain, String),
        at: DateTime<Utc>,
        kind: WalletKind,
    ) -> Self {
        let (chain, address) = wallet;
        LinkedWallet {
            owner,
            chain,
            address,
            linked_at: DateTime::from_timestamp_millis(at.timestamp_millis()).unwrap_or(at),
            refreshed_at: None,
            positions: None,
            refresh_error: None,
            tokens: Vec::new(),
            retry: None,
            deployment_errors: Vec::new(),
            kind,
        }
    }
}

/// A deployment a wallet's read could not take: its positions keep their last read, marked
/// stale, while the chain's other deployments are read as usual (decision 63).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentError {
    pub protocol: Protocol,
    /// The deployment's position manager.
    pub position_manager: String,
    /// The contract that failed: the manager, its farm or its factory.
    pub contract: String,
    pub reason: String,
}

impl DeploymentError {
    /// The failure in one line, as the wallet's `refreshError`, its positions' `readError` and
    /// its retry say it.
    pub fn describe(&self) -> String {
        format!(
            "{} at {} could not be read ({}: {})",
            self.protocol, self.position_manager, self.contract, self.reason
        )
    }
}

/// How far a chain's position-manager events were followed (decision 45): the last
/// block scanned, by number and hash (a later scan that finds another block there saw a
/// reorg), when, and the wallets events touched in the last blocks (read again when a reorg
/// replaces their blocks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanProgress {
    pub chain: Chain,
    pub through: u64,
    pub hash: String,
    pub scanned_at: DateTime<Utc>,
    pub recent: Vec<Touch>,
}

/// A wallet an event touched, at its block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Touch {
    pub block: u64,
    pub owner: String,
    pub address: String,
}

/// What the link of a wallet came to in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkOutcome {
    Linked,
    /// The challenge was answered meanwhile (single use).
    ChallengeUsed,
    AlreadyLinked,
    /// The user holds [`MAX_WALLETS_PER_USER`] wallets already.
    TooMany,
}

/// A wallet as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletView {
    pub chain: Chain,
    pub address: String,
    pub kind: WalletKind,
    /// Watched without a signature: its positions are read, never acted on from here.
    pub watch: bool,
    pub linked_at: String,
    pub refreshed_at: Option<String>,
    pub positions: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_error: Option<String>,
    /// EVM: when its chain's events were last followed (the chain's scan, decision 45):
    /// its positions are as the chain held them through then; absent before a first scan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub followed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub followed_through_block: Option<u64>,
    /// Its read stopped part way and is retried by the syncs: since when, how often, when next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryView>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deployment_errors: Vec<DeploymentError>,
}

/// A wallet's [`retry::Retry`] as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryView {
    pub attempts: u32,
    pub since: String,
    pub next_at: String,
    pub reason: String,
}

impl WalletView {
    /// The view with its chain's scan progress.
    pub fn followed(self, scan: Option<&ScanProgress>) -> WalletView {
        WalletView {
            followed_at: scan.map(|s| format_time(&s.scanned_at)),
            followed_through_block: scan.map(|s| s.through),
            ..self
        }
    }
}

impl From<&LinkedWallet> for WalletView {
    fn from(w: &LinkedWallet) -> Self {
        WalletView {
            chain: w.chain,
            address: w.address.clone(),
            kind: w.kind,
            watch: w.kind == WalletKind::Watched,
            linked_at: format_time(&w.linked_at),
            refreshed_at: w.refreshed_at.as_ref().map(format_time),
            positions: w.positions,
            refresh_error: w.refresh_error.clone(),
            followed_at: None,
            followed_through_block: None,
            retry: w.retry.as_ref().map(|r| RetryView {
                attempts: r.attempts,
                since: format_time(&r.since),
                next_at: format_time(&r.next_at),
                reason: r.reason.clone(),
            }),
            deployment_errors: w.deployment_errors.clone(),
        }
    }
}
