//! A token as its ERC-20 contract describes itself: `decimals()` and a `symbol()` fit to show.

use super::evm;
use super::rpc::RpcError;
use alloy_sol_types::{sol, SolCall};
use serde_json::Value;

sol! {
    interface IErc20Symbol {
        function symbol() external view returns (string);
    }
}

use IErc20Symbol::symbolCall;

/// An ERC-20 as its contract describes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenMeta {
    /// EIP-55 checksum form.
    pub address: String,
    pub symbol: String,
    pub decimals: u8,
}

/// A `symbol()` answer: an ABI string, or the `bytes32` some early tokens answer (trailing
/// zeros trimmed); printable text only, at most 32 characters, none of them a control,
/// bidirectional or invisible formatting character (a right-to-left override shows a name
/// reversed; a zero-width space makes "USDC" look like another token's).
pub fn symbol_of(answer: Result<Value, RpcError>) -> Result<String, String> {
    let answer = answer.map_err(|e| format!("symbol: {e}"))?;
    let data = evm::hex_bytes(&answer).map_err(|e| format!("symbol: {e}"))?;
    let text = if data.len() == 32 {
        let end = data.iter().position(|b| *b == 0).unwrap_or(32);
        String::from_utf8(data[..end].to_vec()).map_err(|_| "symbol: not text".to_string())?
    } else {
        symbolCall::abi_decode_returns_validate(&data)
            .map_err(|_| "symbol: undecodable answer".to_string())?
    };
    let text = text.trim().to_string();
    if text.is_empty() || text.chars().count() > 32 || text.chars().any(hidden) {
        return Err("symbol: not a printable name of 1 to 32 characters".into());
    }
    Ok(text)
}

/// A character that is not shown as itself: controls, bidirectional marks, embeddings,
/// overrides and isolates, zero-width and invisible formatting characters, tags.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}' | '\u{E0000}'..='\u{E007F}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn word_text(text: &str) -> Value {
        let mut data = vec![0u8; 32];
        data[..text.len()].copy_from_slice(text.as_bytes());
        json!(evm::hex_data(&data))
    }

    #[test]
    fn symbols_decode_as_strings_or_bytes32_and_refuse_junk() {
        let string = symbolCall::abi_encode_returns(&"WETH".to_string());
        assert_eq!(
            symbol_of(Ok(json!(evm::hex_data(&string)))),
            Ok("WETH".into())
        );
        assert_eq!(symbol_of(Ok(word_text("MKR"))), Ok("MKR".into()));
        assert!(symbol_of(Ok(word_text(""))).is_err());
        assert!(symbol_of(Ok(json!("0x1234"))).is_err());
        assert!(symbol_of(Ok(json!(evm::hex_data(&[0xff; 32])))).is_err());
        assert!(symbol_of(Err(RpcError::Malformed("x"))).is_err());
    }
}
