//! Checking that a wallet signed a message: EVM `personal_sign` (EIP-191) recovered with
//! secp256k1 to the wallet's address, Solana ed25519 verified with the address as the key.
//! The service only verifies: it never holds a key and never signs.

use super::address::{evm_address, solana_key};
use crate::domain::model::Chain;
use alloy_primitives::Signature;

/// Why a signature does not prove the wallet; the text is the client's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("signature is malformed: {0}")]
    Malformed(&'static str),
    #[error("signature was not made by this wallet")]
    OtherSigner,
}

/// Checks that `address` (canonical spelling) signed `message` with `signature` as `chain`'s
/// wallets sign: 65 bytes in 0x-hex on EVM, 64 bytes in base58 on Solana.
pub fn verify(
    chain: Chain,
    address: &str,
    message: &str,
    signature: &str,
) -> Result<(), ProofError> {
    if chain == Chain::Solana {
        return verify_solana(address, message, signature);
    }
    let bytes = hex_bytes(signature)
        .filter(|b| b.len() == 65)
        .ok_or(ProofError::Malformed(
            "an EVM signature is 0x and 130 hex digits (65 bytes)",
        ))?;
    // Only the recovery bytes `personal_sign` answers: an EIP-155 `v` (35 and above) belongs to
    // a transaction's signature, never to a message's, though a lenient parser would take it.
    let bad_v = ProofError::Malformed("its recovery byte is not 0, 1, 27 or 28");
    if !matches!(bytes[64], 0 | 1 | 27 | 28) {
        return Err(bad_v);
    }
    let signature = Signature::from_raw(&bytes).map_err(|_| bad_v)?;
    let signer = signature
        .recover_address_from_msg(message.as_bytes())
        .map_err(|_| ProofError::Malformed("it is not a point on secp256k1"))?;
    let wallet = evm_address(address).map_err(|_| ProofError::OtherSigner)?;
    if signer != wallet {
        return Err(ProofError::OtherSigner);
    }
    Ok(())
}

fn verify_solana(address: &str, message: &str, signature: &str) -> Result<(), ProofError> {
    let malformed = ProofError::Malformed("a Solana signature is the base58 of 64 bytes");
    let bytes: [u8; 64] = (signature.len() <= 90)
        .then(|| bs58::decode(signature).into_vec().ok())
        .flatten()
        .and_then(|b| b.try_into().ok())
        .ok_or(malformed)?;
    let key = solana_key(address).map_err(|_| ProofError::OtherSigner)?;
    let key = ed25519_dalek::VerifyingKey::from_bytes(&key).map_err(|_| ProofError::OtherSigner)?;
    key.verify_strict(
        message.as_bytes(),
        &ed25519_dalek::Signature::from_bytes(&bytes),
    )
    .map_err(|_| ProofError::OtherSigner)
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    let digits = text.strip_prefix("0x")?;
    if digits.len() % 2 != 0 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{eip191_hash_message, Address};
    use k256::ecdsa::SigningKey;

    fn evm_sign(key: &SigningKey, message: &str) -> String {
        let (signature, recovery) = key
            .sign_prehash_recoverable(eip191_hash_message(message).as_slice())
            .unwrap();
        let mut bytes = signature.to_bytes().to_vec();
        bytes.push(27 + recovery.to_byte());
        format!(
            "0x{}",
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    }

    fn evm_wallet(seed: u8) -> (SigningKey, String) {
        let key = SigningKey::from_slice(&[seed; 32]).unwrap();
        let address = Address::from_public_key(key.verifying_key()).to_checksum(None);
        (key, address)
    }

    #[test]
    fn evm_signatures_recover_to_their_wallet_only() {
        let (key, address) = evm_wallet(7);
        let (_, other) = evm_wallet(8);
        let signed = evm_sign(&key, "hello");
        assert_eq!(verify(Chain::Ethereum, &address, "hello", &signed), Ok(()));
        assert_eq!(
            verify(Chain::Ethereum, &other, "hello", &signed),
            Err(ProofError::OtherSigner)
        );
        assert_eq!(
            verify(Chain::Ethereum, &address, "hello!", &signed),
            Err(ProofError::OtherSigner)
        );
        for bad in [&signed[..signed.len() - 2], "0x", "nothex", &signed[2..]] {
            assert!(matches!(
                verify(Chain::Ethereum, &address, "hello", bad),
                Err(ProofError::Malformed(_))
            ));
        }
        let bad_v = format!("{}05", &signed[..signed.len() - 2]);
        assert!(matches!(
            verify(Chain::Ethereum, &address, "hello", &bad_v),
            Err(ProofError::Malformed(_))
        ));
        // The same signature with its parity as 0/1 verifies; as an EIP-155 `v` (35 + 2 x
        // chain id + parity, e.g. 37/38 on chain 1) it is refused, whatever it recovers to.
        let parity = u8::from_str_radix(&signed[signed.len() - 2..], 16).unwrap() - 27;
        let raw = |v: u32| format!("{}{v:02x}", &signed[..signed.len() - 2]);
        assert_eq!(
            verify(Chain::Ethereum, &address, "hello", &raw(u32::from(parity))),
            Ok(())
        );
        for v in [35, 36, 37 + u32::from(parity), 38, 0xff] {
            assert_eq!(
                verify(Chain::Ethereum, &address, "hello", &raw(v)),
                Err(ProofError::Malformed(
                    "its recovery byte is not 0, 1, 27 or 28"
                )),
                "v = {v}"
            );
        }
    }

    #[test]
    fn solana_signatures_verify_with_the_address_as_key() {
        use ed25519_dalek::Signer;
        let key = ed25519_dalek::SigningKey::from_bytes(&[3; 32]);
        let address = bs58::encode(key.verifying_key().to_bytes()).into_string();
        let other = bs58::encode(
            ed25519_dalek::SigningKey::from_bytes(&[4; 32])
                .verifying_key()
                .to_bytes(),
        )
        .into_string();
        let signed = bs58::encode(key.sign(b"hello").to_bytes()).into_string();
        assert_eq!(verify(Chain::Solana, &address, "hello", &signed), Ok(()));
        assert_eq!(
            verify(Chain::Solana, &other, "hello", &signed),
            Err(ProofError::OtherSigner)
        );
        assert_eq!(
            verify(Chain::Solana, &address, "hellO", &signed),
            Err(ProofError::OtherSigner)
        );
        assert!(matches!(
            verify(Chain::Solana, &address, "hello", "0x00"),
            Err(ProofError::Malformed(_))
        ));
    }
}
