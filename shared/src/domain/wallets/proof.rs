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

/// ERC-6492's magic suffix: the signature of a contract wallet not deployed yet, wrapped with
/// the factory call that deploys it.
pub const ERC6492_SUFFIX: [u8; 32] = [
    0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92,
    0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92,
];

/// The longest EVM signature a link takes, in bytes: a multisig's, wrapped for a wallet not
/// deployed yet, runs to a few thousand hex digits.
pub const MAX_EVM_SIGNATURE_BYTES: usize = 8192;

/// What a contract wallet's link asks its chain (ERC-1271, ERC-6492): whether the wallet
/// signed `hash`, the EIP-191 hash of the message (as an EOA signs it), with `signature`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractProof {
    pub hash: [u8; 32],
    pub signature: Vec<u8>,
}

/// How an EVM wallet's signature is proven: `None` when a key's signature recovers to the
/// address (offline, as ever); otherwise what the chain is asked (a signature that is wrapped by
/// ERC-6492, is not 65 bytes, or recovers to another address may be a contract wallet's).
pub fn evm_proof(
    address: &str,
    message: &str,
    signature: &str,
) -> Result<Option<ContractProof>, ProofError> {
    let bytes = hex_bytes(signature)
        .filter(|b| !b.is_empty() && b.len() <= MAX_EVM_SIGNATURE_BYTES)
        .ok_or(ProofError::Malformed(
            "an EVM signature is 0x and an even number of hex digits, at most 16,384",
        ))?;
    if !bytes.ends_with(&ERC6492_SUFFIX)
        && verify(Chain::Ethereum, address, message, signature).is_ok()
    {
        return Ok(None);
    }
    Ok(Some(ContractProof {
        hash: alloy_primitives::eip191_hash_message(message.as_bytes()).0,
        signature: bytes,
    }))
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
    fn a_signature_that_is_no_keys_is_asked_of_the_chain() {
        let (key, address) = evm_wallet(7);
        let (_, safe) = evm_wallet(9);
        let signed = evm_sign(&key, "hello");
        assert_eq!(evm_proof(&address, "hello", &signed), Ok(None));
        let hash = eip191_hash_message("hello").0;
        let asked = evm_proof(&safe, "hello", &signed).unwrap().unwrap();
        assert_eq!((asked.hash, asked.signature.len()), (hash, 65));
        // Wrapped for an undeployed wallet: asked, whatever the inner signature recovers to.
        let wrapped = format!("{signed}{}", "6492".repeat(16));
        let asked = evm_proof(&address, "hello", &wrapped).unwrap().unwrap();
        assert!(asked.signature.ends_with(&ERC6492_SUFFIX));
        let multisig = format!("0x{}", "ab".repeat(MAX_EVM_SIGNATURE_BYTES));
        assert_eq!(
            evm_proof(&safe, "hello", &multisig)
                .unwrap()
                .unwrap()
                .signature
                .len(),
            8192
        );
        let longer = format!("{multisig}ab");
        for bad in [
            "0x",
            "nothex",
            &signed[2..],
            &signed[..signed.len() - 1],
            &longer,
        ] {
            assert!(
                matches!(
                    evm_proof(&safe, "hello", bad),
                    Err(ProofError::Malformed(_))
                ),
                "{bad:.20}"
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
