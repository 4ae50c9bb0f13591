//! The message a wallet signs to be linked: EIP-4361 (Sign-In with Ethereum) on the EVM chains,
//! the same layout "with your Solana account" on Solana (as Sign-In With Solana writes it).

use crate::domain::model::{format_time, Chain};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// How long a challenge may be answered unless its request asks for longer.
pub const CHALLENGE_LIFETIME: Duration = Duration::from_secs(600);

/// The longest life a challenge may ask for: a multisig's owners sign one after another.
pub const MAX_CHALLENGE_LIFETIME: Duration = Duration::from_secs(604_800);

/// Random bits in a nonce (EIP-4361 asks for at least 64).
const NONCE_BYTES: usize = 16;

/// Who asks for the signature: the site the user signs in to and its URI (configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningDomain {
    pub domain: String,
    pub uri: String,
}

impl Default for SigningDomain {
    /// local-api's default: the address it listens on by default.
    fn default() -> Self {
        SigningDomain {
            domain: "localhost:3000".into(),
            uri: "http://localhost:3000".into(),
        }
    }
}

/// A challenge issued to one user for one wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub owner: String,
    pub chain: Chain,
    /// Canonical spelling ([`super::address::canonical`]).
    pub address: String,
    pub nonce: String,
    pub message: String,
    pub expires_at: DateTime<Utc>,
    /// Answered already: a challenge links once.
    pub used: bool,
}

/// A fresh nonce: 128 random bits in hex (alphanumeric, as EIP-4361 requires).
pub fn new_nonce() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; NONCE_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The challenge's text. `chain_id` is the EVM chain's id (none on Solana).
pub fn message(
    signing: &SigningDomain,
    chain: Chain,
    address: &str,
    chain_id: Option<u64>,
    nonce: &str,
    issued_at: DateTime<Utc>,
    lifetime: Duration,
) -> String {
    let account = if chain == Chain::Solana {
        "Solana"
    } else {
        "Ethereum"
    };
    let chain_line = chain_id.map_or(String::new(), |id| format!("Chain ID: {id}\n"));
    format!(
        "{domain} wants you to sign in with your {account} account:\n{address}\n\n\
         Link this {chain} wallet to your account so that its liquidity positions are read into \
         your portfolio. Signing moves no funds and authorizes no transaction.\n\n\
         URI: {uri}\nVersion: 1\n{chain_line}Nonce: {nonce}\nIssued At: {issued}\n\
         Expiration Time: {expires}",
        domain = signing.domain,
        uri = signing.uri,
        issued = format_time(&issued_at),
        expires = format_time(&expires_at(issued_at, lifetime)),
    )
}

/// When a challenge issued at `issued_at` to live `lifetime` expires.
pub fn expires_at(issued_at: DateTime<Utc>, lifetime: Duration) -> DateTime<Utc> {
    issued_at + chrono::Duration::from_std(lifetime).unwrap_or(chrono::Duration::MAX)
}

/// The nonce a message names, if it names one (its `Nonce:` line).
pub fn nonce_of(message: &str) -> Option<&str> {
    message
        .lines()
        .find_map(|line| line.strip_prefix("Nonce: "))
        .filter(|n| !n.is_empty() && n.len() <= 64 && n.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evm_message_follows_eip_4361() {
        let at = DateTime::parse_from_rfc3339("2026-11-23T17:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let signing = SigningDomain {
            domain: "app.example".into(),
            uri: "https://app.example/login".into(),
        };
        let address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
        let text = message(
            &signing,
            Chain::Base,
            address,
            Some(8453),
            "ab12",
            at,
            CHALLENGE_LIFETIME,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "app.example wants you to sign in with your Ethereum account:"
        );
        assert_eq!(lines[1], address);
        assert_eq!(lines[2], "");
        assert!(lines[3].starts_with("Link this base wallet"));
        assert_eq!(
            &lines[4..],
            [
                "",
                "URI: https://app.example/login",
                "Version: 1",
                "Chain ID: 8453",
                "Nonce: ab12",
                "Issued At: 2026-11-23T17:00:00.000Z",
                "Expiration Time: 2026-11-23T17:10:00.000Z",
            ]
        );
        assert_eq!(nonce_of(&text), Some("ab12"));
        let solana = message(
            &signing,
            Chain::Solana,
            "So1",
            None,
            "n",
            at,
            CHALLENGE_LIFETIME,
        );
        assert!(
            solana.starts_with("app.example wants you to sign in with your Solana account:\nSo1\n")
        );
        assert!(!solana.contains("Chain ID"));
        let week = message(
            &signing,
            Chain::Base,
            address,
            None,
            "n",
            at,
            MAX_CHALLENGE_LIFETIME,
        );
        assert!(
            week.ends_with("Expiration Time: 2026-11-30T17:00:00.000Z"),
            "{week}"
        );
    }

    #[test]
    fn nonces_are_128_random_bits() {
        let (a, b) = (new_nonce().unwrap(), new_nonce().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    }
}
