//! The transactions the API answers for a linked wallet to sign (an open's approvals and mint,
//! a close's withdraw, an action's), with what their run on the chain said of them.

use serde::{Deserialize, Serialize};

/// A transaction for the owner's wallet to sign and send as given: the API never signs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TransactionRequest {
    /// `approve`, `mint`, `withdraw` (a close), `collect`, `increase` or `decrease`.
    pub kind: String,
    pub chain_id: u64,
    /// The linked wallet that signs it.
    pub from: String,
    /// A token (`approve`) or the deployment's position manager.
    pub to: String,
    /// 0x-hex calldata.
    pub data: String,
    /// Wei sent with it, a decimal string.
    pub value: String,
    /// The gas limit to send it with: the simulation's estimate plus a margin (decision
    /// 55), a decimal string; `null` on an order built before transactions were simulated.
    #[serde(default)]
    pub gas: Option<String>,
    /// The tokens it moves as the simulation ran it: paid by the wallet for a mint, paid to
    /// it for a withdraw; `null` for an approval.
    #[serde(default)]
    pub expected: Option<ExpectedAmounts>,
}

/// Token amounts a transaction moves, in the API's orientation: whole tokens, exact.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectedAmounts {
    pub token_a: String,
    pub token_b: String,
    /// A collect's payment told apart by the history's rule (principal first): the
    /// uncollected principal it pays, and the rest, fees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<AmountPair>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fees: Option<AmountPair>,
    /// A range move's: what its withdrawal paid out, what the new range's mint took, and what
    /// stays in the wallet (also `tokenA`/`tokenB`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<AmountPair>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deposited: Option<AmountPair>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leftover: Option<AmountPair>,
    /// A zap's (issue 63): the swap to the range's ratio it starts with (`null` where the
    /// offer fitted as it was); `tokenA`/`tokenB` are then what it takes from the wallet,
    /// `deposited` what the mint takes and `leftover` what the router sends back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap: Option<ExpectedSwap>,
    /// A zap's: the liquidity its mint or increase makes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liquidity: Option<String>,
    /// What a Slipstream gauge pays in it (a harvest, an unstake): the reward token and its
    /// amount as the run paid it. Rewards stream every second: sent later, it pays at least
    /// this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<ExpectedReward>,
}

/// A reward a transaction pays, as its run paid it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectedReward {
    pub token: RewardToken,
    /// Whole tokens.
    pub amount: String,
}

/// The token a reward is paid in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RewardToken {
    pub symbol: String,
    pub address: String,
    pub decimals: u8,
}

/// A zap's swap on the position's own pool, as its run did it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectedSwap {
    /// `tokenA` or `tokenB`: the token sold.
    pub sell: String,
    /// Whole tokens of the token sold.
    pub amount_in: String,
    /// Whole tokens of the other token, as the run paid them.
    pub amount_out: String,
    /// The least the swap may pay (`slippageBps` below the quote): it reverts below it.
    pub amount_out_minimum: String,
    /// The execution price against the pool's price before the swap (its fee set aside), in
    /// percent.
    pub price_impact_percent: String,
    /// How far the swap moves the pool's price, in percent.
    pub price_move_percent: String,
}

/// Two token amounts in the API's orientation: whole tokens, exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AmountPair {
    pub token_a: String,
    pub token_b: String,
}

/// One call of the batch a contract wallet (a Safe, a smart account) sends at once: the shape
/// EIP-5792's `wallet_sendCalls` takes (`value` in 0x-hex wei).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Call {
    pub to: String,
    pub value: String,
    pub data: String,
}

/// `transactions` as one ordered batch of calls (approvals first, as they are answered).
pub fn calls_of(transactions: &[TransactionRequest]) -> Vec<Call> {
    transactions
        .iter()
        .map(|t| Call {
            to: t.to.clone(),
            value: t
                .value
                .parse::<alloy_primitives::U256>()
                .map_or_else(|_| t.value.clone(), |v| format!("{v:#x}")),
            data: t.data.clone(),
        })
        .collect()
}

/// A Permit2 `PermitBatch` for the wallet to sign (the `"permit": "signature"` path, decision
/// 67): per ERC-20 the amount the PositionManager may take, until when, at the allowance's
/// nonce; for `spender`, valid until `sigDeadline`. The transaction that spends it waits, last,
/// for the signature: it is then answered as `multicall([permitBatch, …])`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermitBatch {
    pub details: Vec<PermitDetails>,
    pub spender: String,
    pub sig_deadline: u64,
}

/// One token of a [`PermitBatch`]: `amount` a decimal `uint160`, `expiration` and `nonce`
/// `uint48`s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermitDetails {
    pub token: String,
    pub amount: String,
    pub expiration: u64,
    pub nonce: u64,
}

/// Permit2, at its canonical address on every chain.
pub const PERMIT2: &str = "0x000000000022D473030F116dDEE9F6B43aC78BA3";

impl PermitBatch {
    /// The EIP-712 typed data a wallet signs (`eth_signTypedData_v4`): Permit2's domain (its
    /// name, the chain's id, its address; no version) and the batch.
    pub fn typed_data(&self, chain_id: u64) -> serde_json::Value {
        let field = |name: &str, kind: &str| serde_json::json!({"name": name, "type": kind});
        let details: Vec<_> = self
            .details
            .iter()
            .map(|d| {
                serde_json::json!({
                    "token": d.token, "amount": d.amount,
                    "expiration": d.expiration.to_string(), "nonce": d.nonce.to_string(),
                })
            })
            .collect();
        serde_json::json!({
            "types": {
                "EIP712Domain": [
                    field("name", "string"),
                    field("chainId", "uint256"),
                    field("verifyingContract", "address"),
                ],
                "PermitBatch": [
                    field("details", "PermitDetails[]"),
                    field("spender", "address"),
                    field("sigDeadline", "uint256"),
                ],
                "PermitDetails": [
                    field("token", "address"),
                    field("amount", "uint160"),
                    field("expiration", "uint48"),
                    field("nonce", "uint48"),
                ],
            },
            "primaryType": "PermitBatch",
            "domain": {"name": "Permit2", "chainId": chain_id, "verifyingContract": PERMIT2},
            "message": {
                "details": details,
                "spender": self.spender,
                "sigDeadline": self.sig_deadline.to_string(),
            },
        })
    }
}
