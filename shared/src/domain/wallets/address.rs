//! Wallet addresses in one spelling per chain: EVM in EIP-55 checksum form (accepted in any
//! letter case), Solana the base58 of a 32-byte public key.

use crate::domain::model::Chain;
use alloy_primitives::Address;

/// The address in its canonical spelling, or why it is not one of `chain`'s.
pub fn canonical(chain: Chain, text: &str) -> Result<String, String> {
    if chain == Chain::Solana {
        return solana_key(text).map(|_| text.to_string());
    }
    evm_address(text).map(|a| a.to_checksum(None))
}

/// An EVM address: `0x` and 40 hex digits, any letter case.
pub fn evm_address(text: &str) -> Result<Address, String> {
    let digits = text
        .strip_prefix("0x")
        .filter(|d| d.len() == 40 && d.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or("an EVM address is 0x and 40 hex digits")?;
    let mut bytes = [0u8; 20];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16)
            .map_err(|_| "an EVM address is 0x and 40 hex digits")?;
    }
    Ok(Address::from(bytes))
}

/// A Solana address: the base58 of 32 bytes, in its one spelling (no leading-zero variants).
pub fn solana_key(text: &str) -> Result<[u8; 32], String> {
    let refuse = || "a Solana address is the base58 of 32 bytes".to_string();
    if text.len() > 44 {
        return Err(refuse());
    }
    let bytes = bs58::decode(text).into_vec().map_err(|_| refuse())?;
    let key: [u8; 32] = bytes.try_into().map_err(|_| refuse())?;
    if bs58::encode(key).into_string() != text {
        return Err(refuse());
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evm_addresses_in_any_case_answer_in_checksum_form() {
        // EIP-55's own example.
        let checksum = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
        for text in [
            checksum,
            &checksum.to_lowercase(),
            &checksum.to_uppercase().replace("0X", "0x"),
        ] {
            assert_eq!(canonical(Chain::Ethereum, text).unwrap(), checksum);
        }
        for bad in [
            "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0x5aAeb6053F",
            "0xzz",
            "",
        ] {
            assert!(canonical(Chain::Base, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn solana_addresses_are_32_bytes_in_base58() {
        let program = "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc";
        assert_eq!(canonical(Chain::Solana, program).unwrap(), program);
        assert!(canonical(Chain::Solana, "1111").is_err());
        assert!(canonical(Chain::Solana, "0OIl").is_err());
        assert!(canonical(Chain::Solana, &format!("1{program}")).is_err());
    }
}
