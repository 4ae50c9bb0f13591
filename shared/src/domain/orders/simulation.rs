//! Every transaction the API answers has been run first, from the wallet, on the chain's latest
//! block (decision 55): what the run says of each. An approval earlier in the same
//! answer is not mined yet, so the runs after it see the allowance it grants as a state
//! override (`grants_before`); a run that reverts stops the answer with its decoded reason
//! (`revert_reason`); a run that passes gives the transaction its gas and the amounts it moves
//! (`annotate`).

use super::answers::{amount_pair, multicall_answers, small_word, two_words, word};
use super::zap::{zap_expected, ZapTerms};
use crate::domain::catalog::Pool;
use crate::domain::json::plain_exact;
use crate::domain::math::price::base_units_to_decimal;
use crate::domain::math::U256;
use crate::domain::model::{
    AmountPair, ExpectedAmounts, ExpectedReward, HeldToken, RewardToken, TransactionRequest,
};
use alloy_primitives::keccak256;

/// The margin added to a gas estimate (Uniswap's interface adds the same): an estimate is
/// exact for the state it ran on, and the block it is mined in differs a little (ticks
/// crossed, storage first written).
pub const GAS_MARGIN_PERCENT: u64 = 20;

/// A run's gas with the margin: the gas limit a transaction is answered with.
fn with_margin(gas: u64) -> u64 {
    gas.saturating_mul(100 + GAS_MARGIN_PERCENT) / 100
}

/// The kind of the manager's `approve(gauge, tokenId)` before a Slipstream stake: an NFT's
/// approval, no ERC-20 allowance to stand in for.
pub const GAUGE_APPROVE: &str = "approve-gauge";

/// Whether an answer's transactions must be run as one sequence (`eth_simulateV1`): a later
/// one needs what an earlier one does beyond an ERC-20 allowance or a payment a state override
/// stands in for (a Slipstream gauge's withdrawal before the manager's calls, an NFT's approval
/// before the gauge's deposit), or a Slipstream gauge pays in it: what it paid is read from the
/// run's logs (its `ClaimRewards`), as `getReward(tokenId)` answers nothing.
pub fn in_sequence(transactions: &[TransactionRequest]) -> bool {
    let get_reward = &keccak256("getReward(uint256)")[..4];
    let gauge_pays = transactions
        .iter()
        .any(|t| t.kind == "unstake" || unhex(&t.data).is_some_and(|d| d.starts_with(get_reward)));
    gauge_pays || transactions.iter().any(|t| t.kind == GAUGE_APPROVE)
}

/// What one run of a transaction answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simulated {
    /// `eth_estimateGas`, without the margin.
    pub gas: u64,
    /// `eth_call`'s return data.
    pub returned: Vec<u8>,
    /// A sequence's run (`eth_simulateV1`): the reward a Slipstream gauge paid in it (its
    /// `ClaimRewards`), base units; `None` where none was paid or the run cannot say.
    pub reward: Option<U256>,
}

/// Why the transactions were not answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimulationError {
    /// The chain would revert it: the wallet is not sent something that fails.
    #[error("the {kind} would revert on the chain's latest block: {reason}")]
    Reverted { kind: String, reason: String },
    /// The run could not be made (the node unreachable, or unable to run it as asked).
    #[error("{0}")]
    Unavailable(String),
}

/// An allowance an `approve` in the answer grants once mined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The contract keeping it (the token; Permit2 for a Permit2 allowance).
    pub token: String,
    pub owner: String,
    pub spender: String,
    /// The word stored (Permit2's packs the amount and its expiration).
    pub amount: U256,
    /// Where it is stored, where its layout says so (Permit2's `allowance[owner][token]
    /// [spender]` at slot 1); a token's is found by probing.
    pub slot: Option<[u8; 32]>,
}

/// Tokens an earlier transaction of the answer pays the wallet (a move's withdrawal before the
/// zap that spends them): the runs from `from` on see them in its balance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credit {
    pub from: usize,
    pub token: String,
    pub owner: String,
    pub amount: U256,
}

const APPROVE: [u8; 4] = [0x09, 0x5e, 0xa7, 0xb3];
/// `Permit2.approve(address,address,uint160,uint48)`.
const PERMIT2_APPROVE: [u8; 4] = [0x87, 0x51, 0x7c, 0x45];

/// `keccak256(key . slot)`: a mapping's entry.
fn entry(key: &[u8], slot: &[u8; 32]) -> [u8; 32] {
    let mut word = [0u8; 32];
    word[32 - key.len()..].copy_from_slice(key);
    keccak256([word.as_slice(), slot.as_slice()].concat()).0
}

/// The allowance a `Permit2.approve(token, spender, amount, expiration)` grants its caller:
/// the packed word `amount | expiration << 160` (nonce 0: an allowance's transfer reads no
/// nonce) at `allowance[owner][token][spender]`.
fn permit2_grant(transaction: &TransactionRequest, data: &[u8]) -> Option<Grant> {
    let address = |at: usize| data.get(at + 12..at + 32);
    let owner = unhex(&transaction.from).filter(|o| o.len() == 20)?;
    let (token, spender) = (address(4)?, address(36)?);
    let slot = entry(
        spender,
        &entry(token, &entry(&owner, &U256::from(1u8).to_be_bytes())),
    );
    let amount = word(data, 68)? & ((U256::from(1u8) << 160) - U256::from(1u8));
    let expiration = word(data, 100)? & ((U256::from(1u8) << 48) - U256::from(1u8));
    Some(Grant {
        token: transaction.to.clone(),
        owner: transaction.from.clone(),
        spender: format!("0x{}", hex_digits(spender)),
        amount: amount | (expiration << 160),
        slot: Some(slot),
    })
}
const ERROR_STRING: [u8; 4] = [0x08, 0xc3, 0x79, 0xa0];
const PANIC: [u8; 4] = [0x4e, 0x48, 0x7b, 0x71];

/// The 0x-hex text as bytes, `None` where it is not hex.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    let digits = text.strip_prefix("0x")?;
    if digits.len() % 2 != 0 {
        return None;
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(digits.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The allowance an `approve(spender, amount)` transaction grants; `None` for any other.
pub fn grant_of(transaction: &TransactionRequest) -> Option<Grant> {
    let data = unhex(&transaction.data)?;
    if data.len() == 132 && data[..4] == PERMIT2_APPROVE {
        return permit2_grant(transaction, &data);
    }
    if data.len() != 68 || data[..4] != APPROVE {
        return None;
    }
    let spender = format!("0x{}", hex_digits(&data[16..36]));
    Some(Grant {
        token: transaction.to.clone(),
        owner: transaction.from.clone(),
        spender,
        amount: U256::from_be_slice(&data[36..68]),
        slot: None,
    })
}

fn hex_digits(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// For each transaction, the allowances the approvals before it in the answer grant (the last
/// per token, owner and spender: an `approve(0)` reset followed by the `approve` of the amount
/// leaves the amount, and the second `approve` itself runs at allowance 0).
pub fn grants_before(transactions: &[TransactionRequest]) -> Vec<Vec<Grant>> {
    let mut granted: Vec<Grant> = Vec::new();
    let mut before = Vec::with_capacity(transactions.len());
    for transaction in transactions {
        before.push(granted.clone());
        if let Some(grant) = grant_of(transaction) {
            let same = |g: &Grant| {
                g.token.eq_ignore_ascii_case(&grant.token)
                    && g.owner.eq_ignore_ascii_case(&grant.owner)
                    && g.spender.eq_ignore_ascii_case(&grant.spender)
                    && g.slot == grant.slot
            };
            granted.retain(|g| !same(g));
            granted.push(grant);
        }
    }
    before
}

/// Why a run reverted, from its return data: an `Error(string)`'s text, a `Panic(uint256)`'s
/// code, a custom error's selector; `None` for a revert without data.
pub fn revert_reason(data: &[u8]) -> Option<String> {
    let (selector, body) = (data.get(..4)?, &data[4..]);
    if selector == ERROR_STRING {
        let text = (|| {
            let start = small_word(body, 0)?;
            let len = small_word(body, start)?;
            let bytes = body.get(start + 32..(start + 32).checked_add(len)?)?;
            String::from_utf8(bytes.to_vec()).ok()
        })();
        return Some(text.unwrap_or_else(|| "an error whose text cannot be read".into()));
    }
    if selector == PANIC {
        let code = word(body, 0).map_or("?".into(), |c| format!("0x{c:x}"));
        return Some(format!("a panic of the contract (code {code})"));
    }
    Some(format!("a custom error 0x{}", hex_digits(selector)))
}

/// A revert reason with what it means for the wallet, where the protocol's short codes say
/// little.
pub fn explained(reason: &str) -> String {
    let meaning = match reason {
        "STF" => "a token transfer from the wallet failed: its balance or its allowance is too low",
        "Price slippage check" => "the price moved past the slippage allowed",
        "Transaction too old" => "the deadline has passed",
        "Not approved" => "the wallet no longer owns the position nor is approved for it",
        "Invalid token ID" => "the position no longer exists",
        _ => return reason.to_string(),
    };
    format!("{reason} ({meaning})")
}

/// The amounts (token0, token1) a run of `kind` moved, from its return data: a mint's
/// `(tokenId, liquidity, amount0, amount1)`, an increase's `(liquidity, amount0, amount1)`, a
/// collect's `(amount0, amount1)`, a withdraw's or decrease's `multicall` answer whose second
/// element is the `collect`'s `(amount0, amount1)` (a third, through a farm, the unstake's
/// reward), a range move's leftover (what its collect
/// paid beyond what its mint took); `None` for an approval.
pub fn moved(kind: &str, returned: &[u8]) -> Result<Option<[U256; 2]>, String> {
    let bad = || format!("the {kind}'s simulation answered data that is not the manager's");
    match kind {
        // An approval or a stake moves no token of the pool; a harvest pays the farm's reward
        // token.
        "approve" | "harvest" | "stake" | "unstake" | GAUGE_APPROVE => Ok(None),
        "mint" if returned.len() == 128 => Ok(Some(
            [word(returned, 64), word(returned, 96)].map(Option::unwrap),
        )),
        // increaseLiquidity: (liquidity, amount0, amount1); collect: (amount0, amount1).
        "increase" if returned.len() == 96 => Ok(Some(
            [word(returned, 32), word(returned, 64)].map(Option::unwrap),
        )),
        "collect" if returned.len() == 64 => Ok(Some(
            [word(returned, 0), word(returned, 32)].map(Option::unwrap),
        )),
        // A staked position's close through its farm answers a third element: the unstake's
        // reward (decision 60).
        "withdraw" | "decrease" => match multicall_answers(returned).as_deref() {
            Some([_, collect]) => two_words(collect).map(Some).ok_or_else(bad),
            Some([_, collect, reward]) if reward.len() == 32 => {
                two_words(collect).map(Some).ok_or_else(bad)
            }
            _ => Err(bad()),
        },
        "rebalance" => {
            let (withdrawn, deposited) = rebalance_parts(returned).ok_or_else(bad)?;
            Ok(Some(
                [0, 1].map(|t| withdrawn[t].saturating_sub(deposited[t])),
            ))
        }
        _ => Err(bad()),
    }
}

/// A range move's answer: what its collect paid out and what its mint took (token0, token1).
pub fn rebalance_parts(returned: &[u8]) -> Option<([U256; 2], [U256; 2])> {
    match multicall_answers(returned)?.as_slice() {
        [_, collect, mint] if mint.len() == 128 => {
            Some((two_words(collect)?, two_words(&mint[64..])?))
        }
        _ => None,
    }
}

/// What the builder knows of what the transactions pay, beside their runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Known<'a> {
    /// A collect's uncollected principal (its history's, where complete): told apart from fees.
    pub principal_owed: Option<[U256; 2]>,
    /// What a transaction whose run answers nothing moves (protocol order): Uniswap v4's
    /// `modifyLiquidities`, from the exact math at the state it was built at; what it pays the
    /// wallet, what an add takes.
    pub paid: Option<[U256; 2]>,
    /// The fees a Uniswap v4 add pays out in the same transaction, netted with what it takes.
    pub fees_paid: Option<[U256; 2]>,
    /// A Uniswap v4 range move's withdrawal and deposit (its `paid` is the leftover).
    pub parts: Option<([U256; 2], [U256; 2])>,
    /// A zap's terms: its run's answer says the rest.
    pub zap: Option<ZapTerms>,
    /// The reward token a Slipstream gauge pays the position in (its unstake, its harvest).
    pub reward_token: Option<&'a HeldToken>,
}

/// The transactions with their runs' gas (plus the margin), their `expected` as built: a
/// Uniswap v4 transaction signed after it was first answered (its Permit2 batch), run again.
pub fn regassed(
    transactions: Vec<TransactionRequest>,
    runs: &[Simulated],
) -> Result<Vec<TransactionRequest>, String> {
    if runs.len() != transactions.len() {
        return Err("the simulation answered another number of runs".into());
    }
    Ok(transactions
        .into_iter()
        .zip(runs)
        .map(|(transaction, run)| TransactionRequest {
            gas: Some(with_margin(run.gas).to_string()),
            ..transaction
        })
        .collect())
}

/// The transactions with their runs' gas (plus the margin) and the amounts they move, in the
/// API's orientation and whole tokens. A collect's payment is told apart where the position's
/// uncollected principal (`known`, protocol order) is known: principal first, the rest fees.
pub fn annotate(
    pool: &Pool,
    transactions: Vec<TransactionRequest>,
    runs: &[Simulated],
    known: Known<'_>,
) -> Result<Vec<TransactionRequest>, String> {
    let principal_owed = known.principal_owed;
    if runs.len() != transactions.len() {
        return Err("the simulation answered another number of runs".into());
    }
    let pair = |amounts: [U256; 2]| amount_pair(pool, amounts);
    transactions
        .into_iter()
        .zip(runs)
        .map(|(transaction, run)| {
            if let Some(zap) = known.zap.filter(|_| transaction.kind == "zap") {
                return Ok(TransactionRequest {
                    gas: Some(with_margin(run.gas).to_string()),
                    expected: Some(zap_expected(pool, &zap, &run.returned)?),
                    ..transaction
                });
            }
            let moved = match known.paid {
                Some(paid) if run.returned.is_empty() && transaction.kind != "approve" => {
                    Some(paid)
                }
                _ => moved(&transaction.kind, &run.returned)?,
            };
            let expected = moved.map(|paid| {
                let AmountPair { token_a, token_b } = pair(paid);
                let split = principal_owed.filter(|_| transaction.kind == "collect");
                let principal = split.map(|owed| [0, 1].map(|t| paid[t].min(owed[t])));
                let moved = (transaction.kind == "rebalance")
                    .then(|| rebalance_parts(&run.returned).or(known.parts))
                    .flatten();
                let fees = principal.map(|p| [0, 1].map(|t| paid[t] - p[t]));
                ExpectedAmounts {
                    token_a,
                    token_b,
                    principal: principal.map(pair),
                    fees: fees.or(known.fees_paid).map(pair),
                    withdrawn: moved.map(|(w, _)| pair(w)),
                    deposited: moved.map(|(_, d)| pair(d)),
                    leftover: moved.map(|_| pair(paid)),
                    ..ExpectedAmounts::default()
                }
            });
            let reward = run.reward.zip(known.reward_token).map(|(amount, token)| {
                let amount = plain_exact(&base_units_to_decimal(amount, token.decimals));
                let token = RewardToken {
                    symbol: token.symbol.clone(),
                    address: token.address.clone(),
                    decimals: token.decimals,
                };
                ExpectedReward { token, amount }
            });
            let expected = match (expected, reward) {
                (Some(expected), reward) => Some(ExpectedAmounts { reward, ..expected }),
                (None, Some(reward)) => Some(ExpectedAmounts {
                    token_a: "0".into(),
                    token_b: "0".into(),
                    reward: Some(reward),
                    ..ExpectedAmounts::default()
                }),
                (None, None) => None,
            };
            Ok(TransactionRequest {
                gas: Some(with_margin(run.gas).to_string()),
                expected,
                ..transaction
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permit2_approval_grants_at_its_allowance_slot() {
        let sig = keccak256("approve(address,address,uint160,uint48)");
        assert_eq!(sig[..4], PERMIT2_APPROVE);
        let owner = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
        let token = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
        let spender = "0xa51c1fc2f0d1a1b8494ed1fe312d7c3a78ed91c0";
        let data = calldata::permit2_approve(token, spender, U256::from(5u8), 77).unwrap();
        let transaction = TransactionRequest {
            kind: "approve".into(),
            chain_id: 1,
            from: owner.into(),
            to: calldata::PERMIT2.into(),
            data: calldata::hex(&data),
            value: "0".into(),
            gas: None,
            expected: None,
        };
        let grant = grant_of(&transaction).unwrap();
        assert_eq!(grant.amount, U256::from(5u8) | (U256::from(77u8) << 160));
        // allowance[owner][token][spender], the mapping at slot 1.
        let word = |a: &str| {
            let mut w = [0u8; 32];
            w[12..].copy_from_slice(&unhex(a).unwrap());
            w
        };
        let h1 = keccak256([word(owner), U256::from(1u8).to_be_bytes()].concat());
        let h2 = keccak256([word(token).as_slice(), h1.as_slice()].concat());
        let h3 = keccak256([word(spender).as_slice(), h2.as_slice()].concat());
        assert_eq!(grant.slot, Some(h3.0));
        assert_eq!(grant.spender, spender);
    }
    use crate::domain::calldata;

    fn approve(token: &str, amount: u64) -> TransactionRequest {
        let data = calldata::approve(
            "0x00000000000000000000000000000000000000aa",
            U256::from(amount),
        );
        TransactionRequest {
            kind: "approve".into(),
            chain_id: 1,
            from: "0x00000000000000000000000000000000000000bb".into(),
            to: token.into(),
            data: calldata::hex(&data.unwrap()),
            value: "0".into(),
            gas: None,
            expected: None,
        }
    }

    fn words(values: &[u64]) -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| U256::from(*v).to_be_bytes::<32>())
            .collect()
    }

    #[test]
    fn each_run_sees_the_allowances_the_approvals_before_it_grant() {
        let mint = TransactionRequest {
            kind: "mint".into(),
            data: "0x88316456".into(),
            ..approve("0xmanager", 0)
        };
        let answer = [
            approve("0xT0", 0),
            approve("0xT0", 5),
            approve("0xT1", 7),
            mint,
        ];
        let before = grants_before(&answer);
        assert!(before[0].is_empty());
        assert_eq!(
            before[1][0].amount,
            U256::ZERO,
            "the approve of 5 runs at 0"
        );
        let last: Vec<_> = before[3]
            .iter()
            .map(|g| (g.token.as_str(), g.amount))
            .collect();
        assert_eq!(last, [("0xT0", U256::from(5)), ("0xT1", U256::from(7))]);
        assert_eq!(
            before[3][0].spender,
            "0x00000000000000000000000000000000000000aa"
        );
        assert_eq!(grant_of(&answer[3]), None);
    }

    #[test]
    fn the_amounts_a_run_moved_come_from_its_return_data() {
        // mint: (tokenId, liquidity, amount0, amount1).
        let mint = words(&[9, 1_000, 30, 40]);
        assert_eq!(moved("mint", &mint), Ok(Some([30, 40].map(U256::from))));
        assert!(moved("mint", &mint[..96]).is_err());
        // withdraw: multicall's bytes[] of decreaseLiquidity's (5, 6) and collect's (7, 8).
        let mut multicall = words(&[32, 2, 64, 160, 64, 5, 6, 64, 7, 8]);
        assert_eq!(
            moved("withdraw", &multicall),
            Ok(Some([7, 8].map(U256::from)))
        );
        multicall.truncate(9 * 32);
        assert!(moved("withdraw", &multicall).is_err());
        assert_eq!(moved("approve", &words(&[1])), Ok(None));
        // rebalance: decrease (5, 6), collect (70, 80), mint (id, liquidity, 30, 80): the
        // leftover is what the collect paid beyond what the mint took.
        let rebalance = words(&[32, 3, 96, 192, 288, 64, 5, 6, 64, 70, 80, 128, 9, 1, 30, 80]);
        let parts = rebalance_parts(&rebalance).unwrap();
        assert_eq!(parts, ([70, 80].map(U256::from), [30, 80].map(U256::from)));
        assert_eq!(
            moved("rebalance", &rebalance),
            Ok(Some([40, 0].map(U256::from)))
        );
    }

    #[test]
    fn a_slipstream_gauge_in_an_answer_runs_it_as_one_sequence() {
        let of = |kind: &str, data: Vec<u8>| TransactionRequest {
            kind: kind.into(),
            data: calldata::hex(&data),
            ..approve("0x00000000000000000000000000000000000000cc", 1)
        };
        let (id, wallet) = (
            U256::from(9u8),
            "0x00000000000000000000000000000000000000bb",
        );
        let gauge = |kind: &str, function| of(kind, calldata::gauge(function, id));
        let collect = of("collect", calldata::collect(id, wallet).unwrap());
        let nft = calldata::approve_position(wallet, id).unwrap();
        let sequences = [
            vec![gauge("harvest", calldata::GaugeCall::GetReward)],
            vec![
                gauge("unstake", calldata::GaugeCall::Withdraw),
                collect.clone(),
            ],
            vec![
                of(GAUGE_APPROVE, nft),
                gauge("stake", calldata::GaugeCall::Deposit),
            ],
        ];
        for transactions in sequences {
            assert!(in_sequence(&transactions), "{transactions:?}");
        }
        // MasterChefV3's harvest and a plain collect run as before (overrides, estimates).
        let farm_harvest = of("harvest", calldata::harvest(id, wallet).unwrap());
        assert!(!in_sequence(&[farm_harvest]));
        let approval = approve("0x00000000000000000000000000000000000000cc", 5);
        assert!(!in_sequence(&[approval, collect]));
    }

    #[test]
    fn revert_reasons_are_decoded_and_explained() {
        let mut stf = vec![0x08, 0xc3, 0x79, 0xa0];
        stf.extend(words(&[32, 3]));
        stf.extend(b"STF");
        stf.extend([0u8; 29]);
        let reason = revert_reason(&stf).unwrap();
        assert_eq!(reason, "STF");
        assert!(explained(&reason).contains("balance or its allowance"));
        let mut panic = vec![0x4e, 0x48, 0x7b, 0x71];
        panic.extend(words(&[0x11]));
        assert_eq!(
            revert_reason(&panic).unwrap(),
            "a panic of the contract (code 0x11)"
        );
        assert_eq!(
            revert_reason(&[0xde, 0xad, 0xbe, 0xef]).unwrap(),
            "a custom error 0xdeadbeef"
        );
        assert_eq!(revert_reason(&[]), None);
        assert_eq!(explained("something else"), "something else");
    }
}
