//! The `"permit": "signature"` path of a Uniswap v4 open or add (decision 67): Permit2's
//! allowances to the PositionManager given by one signed `PermitBatch` instead of a
//! `Permit2.approve` transaction per token. The answer keeps the ERC-20 approvals of Permit2
//! (a token's own allowance, which no signature gives) and the `modifyLiquidities` last, which
//! waits for the signature; the signature then makes it `multicall([permitBatch, …])`.

use super::simulation::unhex;
use super::v4::Permit2Allowance;
use crate::domain::calldata::{self, CalldataError, PERMIT2};
use crate::domain::math::U256;
use crate::domain::model::{PermitBatch, PermitDetails, TransactionRequest};

/// The details a `Permit2.approve(token, spender, amount, expiration)` transaction grants.
fn details_of(transaction: &TransactionRequest) -> Option<(String, U256, u64)> {
    let data = unhex(&transaction.data)?;
    let word = |at: usize| data.get(at..at + 32).map(U256::from_be_slice);
    let token = calldata::hex(data.get(16..36)?);
    let expiration = u64::try_from(word(100)?).ok()?;
    Some((token, word(68)?, expiration))
}

/// The simulated transactions of an open or an add with their `Permit2.approve`s taken out
/// into a `PermitBatch` for `spender`, valid until `sig_deadline`, each token at its
/// allowance's nonce (`tokens` in protocol order, as `allowances`); unchanged, with no batch,
/// where no Permit2 approval was needed.
pub fn to_signature(
    transactions: Vec<TransactionRequest>,
    (tokens, allowances): ([&str; 2], &[Permit2Allowance; 2]),
    spender: &str,
    sig_deadline: u64,
) -> (Vec<TransactionRequest>, Option<PermitBatch>) {
    let mut kept = Vec::with_capacity(transactions.len());
    let mut details = Vec::new();
    for transaction in transactions {
        let granted = transaction
            .to
            .eq_ignore_ascii_case(PERMIT2)
            .then(|| details_of(&transaction))
            .flatten();
        let Some((token, amount, expiration)) = granted else {
            kept.push(transaction);
            continue;
        };
        let nonce = (0..2)
            .find(|i| tokens[*i].eq_ignore_ascii_case(&token))
            .map_or(0, |i| allowances[i].nonce);
        details.push(PermitDetails {
            token,
            amount: amount.to_string(),
            expiration,
            nonce,
        });
    }
    let batch = (!details.is_empty()).then(|| PermitBatch {
        details,
        spender: spender.into(),
        sig_deadline,
    });
    (kept, batch)
}

/// The transactions with the last one (the `modifyLiquidities` the batch waits for) as
/// `multicall([permitBatch(owner, batch, signature), it])`, its gas to be simulated again.
pub fn signed(
    mut transactions: Vec<TransactionRequest>,
    batch: &PermitBatch,
    owner: &str,
    signature: &[u8],
) -> Result<Vec<TransactionRequest>, CalldataError> {
    let Some(last) = transactions.last_mut() else {
        return Ok(transactions);
    };
    let call = unhex(&last.data).unwrap_or_default();
    let data = calldata::with_permit(owner, (batch, signature), &call)?;
    last.data = calldata::hex(&data);
    last.gas = None;
    Ok(transactions)
}

#[cfg(test)]
mod tests {
    use super::*;

    const USDC: &str = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
    const MANAGER: &str = "0xbD216513d74C8cf14cf4747E6AaA6420FF64ee9e";
    const WALLET: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

    fn transaction(kind: &str, to: &str, data: Vec<u8>) -> TransactionRequest {
        TransactionRequest {
            kind: kind.into(),
            chain_id: 1,
            from: WALLET.into(),
            to: to.into(),
            data: calldata::hex(&data),
            value: "0".into(),
            gas: Some("50000".into()),
            expected: None,
        }
    }

    #[test]
    fn permit2_approvals_become_the_batch_and_the_rest_stays_in_order() {
        let amount = U256::from(3_000_000_000u64);
        let approve = calldata::approve(PERMIT2, amount).unwrap();
        let permit2 = calldata::permit2_approve(USDC, MANAGER, amount, 1_800_000_000).unwrap();
        let transactions = vec![
            transaction("approve", USDC, approve),
            transaction("approve", PERMIT2, permit2),
            transaction("mint", MANAGER, vec![0xdd, 0x46, 0x50, 0x8f]),
        ];
        let held = Permit2Allowance {
            to_permit2: U256::ZERO,
            amount: U256::ZERO,
            expiration: 0,
            nonce: 7,
        };
        let allowances = [held.clone(), held];
        let tokens = ["0x0000000000000000000000000000000000000000", USDC];
        let (kept, batch) = to_signature(
            transactions.clone(),
            (tokens, &allowances),
            MANAGER,
            1_800_000_000,
        );
        let batch = batch.unwrap();
        assert_eq!(kept, vec![transactions[0].clone(), transactions[2].clone()]);
        assert_eq!(batch.details.len(), 1);
        let details = &batch.details[0];
        assert!(details.token.eq_ignore_ascii_case(USDC), "{details:?}");
        assert_eq!(
            (details.amount.as_str(), details.expiration, details.nonce),
            ("3000000000", 1_800_000_000, 7)
        );
        // Nothing to permit: unchanged.
        let (same, none) = to_signature(kept.clone(), (tokens, &allowances), MANAGER, 1);
        assert_eq!((same, none), (kept.clone(), None));
        // Signed: the last one is the multicall, the approval untouched.
        let signed = signed(kept.clone(), &batch, WALLET, &[1u8; 65]).unwrap();
        assert_eq!(signed[0], kept[0]);
        assert!(
            signed[1].data.starts_with("0xac9650d8"),
            "{}",
            signed[1].data
        );
        assert_eq!(signed[1].gas, None);
    }
}
