//! Whether a contract wallet signed a link's challenge, by its chain's answer (ERC-1271 and
//! ERC-6492): one deployless `eth_call` (no `to`: the init code of `shared/contracts/
//! SignatureCheck.sol` and its arguments) at the latest block, which deploys an undeployed
//! wallet through its factory inside the call only, asks a contract `isValidSignature`, and
//! recovers a key's signature. Nothing is deployed anywhere; the service only reads.

use super::evm::{hex_bytes, hex_data};
use super::rpc::{RpcClient, RpcError};
use super::simulation::reverted;
use crate::domain::wallets::proof::ContractProof;
use alloy_primitives::Address;
use alloy_sol_types::{sol, SolConstructor};
use serde_json::json;

sol! {
    contract SignatureCheck {
        constructor(address signer, bytes32 hash, bytes signature);
    }
}

/// solc 0.8.26's build of `SignatureCheck.sol` (a devnet test builds it again and compares).
const SIGNATURE_CHECK: &str = include_str!("../../../contracts/signature_check.hex");

/// Gas the check may use: a Safe's deployment through its factory and a 3-of-5 check are far
/// below it.
const CHECK_GAS: u64 = 5_000_000;

/// The check's init code with its arguments: what the `eth_call` sends.
pub fn check_call(wallet: Address, proof: &ContractProof) -> Vec<u8> {
    let code = SIGNATURE_CHECK.trim();
    let mut data: Vec<u8> = (0..code.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(code.get(i..i + 2)?, 16).ok())
        .collect();
    let arguments = SignatureCheck::constructorCall {
        signer: wallet,
        hash: proof.hash.into(),
        signature: proof.signature.clone().into(),
    };
    data.extend(arguments.abi_encode());
    data
}

/// `true` when the chain says `wallet` signed; `false` when it says not (the check answered
/// 0, reverted or halted: a malformed wrapper, a factory that fails, a wallet whose answer
/// runs the call out of its gas or memory); `Err` when the node could not answer.
pub async fn signed_by(
    rpc: &RpcClient,
    wallet: &str,
    proof: &ContractProof,
) -> Result<bool, String> {
    let wallet: Address = wallet
        .parse()
        .map_err(|_| format!("{wallet:?} is not an address"))?;
    let call =
        json!({"data": hex_data(&check_call(wallet, proof)), "gas": format!("0x{CHECK_GAS:x}")});
    match rpc.call("eth_call", json!([call, "latest"])).await {
        Ok(answer) => Ok(hex_bytes(&answer)? == [1]),
        Err(e) if reverted(&e).is_some() || halted(&e) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// Whether the node says the call itself stopped (out of its gas or memory, an invalid opcode,
/// the stack's bounds: anvil's "EVM error MemoryOOG", geth's "out of gas"): the contract's
/// failure, as a revert is, never the node's.
fn halted(error: &RpcError) -> bool {
    let RpcError::Rpc { message, .. } = error else {
        return false;
    };
    let message = message.to_ascii_lowercase();
    [
        "evm error",
        "out of gas",
        "outofgas",
        "memoryoog",
        "invalid opcode",
        "invalid jump",
        "stack underflow",
        "stack overflow",
        "stack limit",
    ]
    .iter()
    .any(|said| message.contains(said))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_is_the_built_code_then_its_arguments() {
        let proof = ContractProof {
            hash: [7; 32],
            signature: vec![1, 2, 3],
        };
        let data = check_call(Address::repeat_byte(0xab), &proof);
        let code = SIGNATURE_CHECK.trim().len() / 2;
        assert!(code > 500, "the build is there");
        // signer, hash, the offset of the bytes, their length, one padded word.
        assert_eq!(data.len(), code + 5 * 32);
        assert_eq!(&data[code + 12..code + 32], &[0xab; 20]);
        assert_eq!(&data[code + 32..code + 64], &[7; 32]);
        assert_eq!(data[code + 127], 3);
    }

    #[test]
    fn a_call_that_runs_out_of_gas_or_memory_is_the_contracts_failure() {
        let said = |code: i64, message: &str| RpcError::Rpc {
            code,
            message: message.into(),
            data: None,
        };
        for halt in [
            said(-32603, "EVM error MemoryOOG"),
            said(-32000, "out of gas"),
            said(-32003, "EVM error InvalidFEOpcode"),
        ] {
            assert!(halted(&halt), "{halt}");
        }
        for node in [
            said(-32000, "missing trie node"),
            said(-32005, "rate limited"),
            RpcError::Status(503),
            RpcError::Unreachable,
        ] {
            assert!(!halted(&node), "{node}");
        }
    }
}
