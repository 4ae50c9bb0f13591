//! Runs an answer's transactions before the API gives them (decision 55): each with
//! `eth_call` and `eth_estimateGas` from the wallet at the chain's latest block, all in one
//! batch. An approval earlier in the answer is not mined yet, so the runs after it are given
//! the allowance it grants as a state override of the token's storage; where a token keeps its
//! allowances is found once per answer by asking the token itself (`allowance` under an
//! override of each place it may be, in one batch); a Permit2 approval's allowance is put where
//! Permit2 keeps it. What an earlier transaction pays the wallet (a move's withdrawal before
//! its zap) is credited to the wallet's balance the same way (`credited`). Costs 2 requests (3
//! with an ERC-20 approval, 4 with a credit): the head, [the storage probes,] the runs.

use super::evm::hex_data;
use super::rpc::{RpcClient, RpcError};
use crate::domain::model::TransactionRequest;
use crate::domain::orders::simulation::{
    explained, grants_before, in_sequence, revert_reason, unhex, Credit, Grant, Simulated,
    SimulationError,
};
use alloy_primitives::{keccak256, B256, U256};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// How many of the first storage slots may hold the allowance mapping (OpenZeppelin 3 and 4
/// put it at 1, most tokens well below 16).
const PLAIN_SLOTS: u64 = 16;

/// OpenZeppelin 5's namespaced ERC-20 storage (ERC-7201 `openzeppelin.storage.ERC20`): its
/// allowance mapping is the second field.
const OZ5_ERC20: &str = "0x52c63247e1f47db19d5ce0460030c497f067ca4cebf71ba98eeadabe20bace01";

/// The value the probe writes: a token answering it keeps its allowances at that place.
const MARKER: u64 = 0x5eed_a110_0a11;

/// `allowance(address,address)`.
const ALLOWANCE: [u8; 4] = [0xdd, 0x62, 0xed, 0x3e];
/// `balanceOf(address)`.
const BALANCE_OF: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];

type GrantKey = (String, String, String);

fn key(grant: &Grant) -> GrantKey {
    [&grant.token, &grant.owner, &grant.spender]
        .map(|a| a.to_ascii_lowercase())
        .into()
}

fn address_word(address: &str) -> Option<[u8; 32]> {
    let bytes = unhex(address).filter(|b| b.len() == 20)?;
    let mut word = [0u8; 32];
    word[12..].copy_from_slice(&bytes);
    Some(word)
}

fn hash_of(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    let mut both = [0u8; 64];
    both[..32].copy_from_slice(a);
    both[32..].copy_from_slice(b);
    keccak256(both).0
}

/// Where `allowance[owner][spender]` may live: Solidity's layout (`keccak(spender .
/// keccak(owner . slot))`) at the first slots and at OpenZeppelin 5's, Vyper's (the keys
/// hashed the other way round) at the first slots.
fn candidates(owner: &[u8; 32], spender: &[u8; 32]) -> Vec<B256> {
    let oz5: U256 = OZ5_ERC20.parse().unwrap_or_default();
    let solidity = |slot: U256| B256::from(hash_of(spender, &hash_of(owner, &slot.to_be_bytes())));
    let vyper = |slot: U256| B256::from(hash_of(&hash_of(&slot.to_be_bytes(), owner), spender));
    let plain = (0..PLAIN_SLOTS).map(U256::from);
    let mut out: Vec<B256> = plain.clone().map(solidity).collect();
    out.push(solidity(oz5));
    out.extend(plain.map(vyper));
    out
}

/// Where `balanceOf[owner]` may live: Solidity's `keccak(owner . slot)` at the first slots and
/// at OpenZeppelin 5's (the namespace's first field), Vyper's `keccak(slot . owner)`.
fn balance_candidates(owner: &[u8; 32]) -> Vec<B256> {
    let oz5: U256 = OZ5_ERC20.parse().unwrap_or_default();
    let plain = (0..PLAIN_SLOTS).map(U256::from);
    let mut out: Vec<B256> = plain
        .clone()
        .map(|slot| B256::from(hash_of(owner, &slot.to_be_bytes())))
        .collect();
    out.push(B256::from(hash_of(owner, &oz5.to_be_bytes())));
    out.extend(plain.map(|slot| B256::from(hash_of(&slot.to_be_bytes(), owner))));
    out
}

type Balances = BTreeMap<(String, String), (B256, U256)>;

/// Where each credited wallet's balance lives in its token and what it holds at the head,
/// asked of the tokens in one batch (`balanceOf` plain, then under an override of each place it
/// may be).
async fn balance_slots(
    rpc: &RpcClient,
    credits: &[Credit],
    at: &Value,
) -> Result<Balances, SimulationError> {
    let mut wanted: BTreeMap<(String, String), Vec<B256>> = BTreeMap::new();
    for credit in credits {
        let Some(owner) = address_word(&credit.owner) else {
            continue;
        };
        let key = (
            credit.token.to_ascii_lowercase(),
            credit.owner.to_ascii_lowercase(),
        );
        wanted
            .entry(key)
            .or_insert_with(|| balance_candidates(&owner));
    }
    let mut calls = Vec::new();
    for ((token, owner), places) in &wanted {
        let mut data = BALANCE_OF.to_vec();
        data.extend_from_slice(&address_word(owner).unwrap_or_default());
        let request = json!({"to": token, "data": hex_data(&data)});
        calls.push(("eth_call", json!([request, at])));
        for place in places {
            let diff = json!({ token.clone(): {"stateDiff": {place.to_string(): word_text(U256::from(MARKER))}} });
            calls.push(("eth_call", json!([request, at, diff])));
        }
    }
    let answers = rpc.batch(&calls).await;
    let mut answers = answers.into_iter();
    let as_word = |answer: Option<Result<Value, RpcError>>| match answer {
        Some(Ok(Value::String(text))) => unhex(&text)
            .filter(|b| b.len() == 32)
            .map(|b| U256::from_be_slice(&b)),
        _ => None,
    };
    let mut found = BTreeMap::new();
    for (key, places) in wanted {
        let balance = as_word(answers.next());
        let mut place = None;
        for candidate in places {
            if as_word(answers.next()) == Some(U256::from(MARKER)) {
                place = place.or(Some(candidate));
            }
        }
        let (Some(balance), Some(place)) = (balance, place) else {
            return Err(SimulationError::Unavailable(format!(
                "token {} keeps its balances where the simulation cannot credit what an earlier \
                 transaction of the answer pays: send the first one, then ask again",
                key.0
            )));
        };
        found.insert(key, (place, balance));
    }
    Ok(found)
}

/// The balances `credits` raise for the run of transaction `index`: each credited slot set to
/// what it holds at the head plus every credit paid before that run.
fn credited(
    diff: &mut Map<String, Value>,
    (credits, balances): (&[Credit], &Balances),
    index: usize,
) {
    let mut raised: BTreeMap<(String, String), U256> = BTreeMap::new();
    for credit in credits.iter().filter(|c| c.from <= index) {
        let key = (
            credit.token.to_ascii_lowercase(),
            credit.owner.to_ascii_lowercase(),
        );
        let total = raised.entry(key).or_default();
        *total = total.saturating_add(credit.amount);
    }
    for (key, amount) in raised {
        let Some((slot, balance)) = balances.get(&key) else {
            continue;
        };
        let entry = diff
            .entry(key.0.clone())
            .or_insert_with(|| json!({"stateDiff": {}}));
        if let Some(state) = entry["stateDiff"].as_object_mut() {
            state.insert(
                slot.to_string(),
                json!(word_text(balance.saturating_add(amount))),
            );
        }
    }
}

fn word_text(value: U256) -> String {
    format!("0x{}", hex_digits(&value.to_be_bytes::<32>()))
}

fn hex_digits(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn overrides(grants: &[Grant], slots: &BTreeMap<GrantKey, B256>) -> Map<String, Value> {
    let mut by_token: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for grant in grants {
        let slot = match grant.slot {
            Some(exact) => Some(B256::from(exact)),
            None => slots.get(&key(grant)).copied(),
        };
        if let Some(slot) = slot {
            by_token
                .entry(grant.token.to_ascii_lowercase())
                .or_default()
                .insert(slot.to_string(), json!(word_text(grant.amount)));
        }
    }
    by_token
        .into_iter()
        .map(|(token, diff)| (token, json!({ "stateDiff": diff })))
        .collect()
}

fn unavailable(error: &RpcError) -> SimulationError {
    SimulationError::Unavailable(format!(
        "the transactions could not be simulated on the chain ({error}): retry"
    ))
}

/// Why a run failed, if the chain says it reverts: the revert data's reason, or the node's
/// words where it sends no data.
pub(super) fn reverted(error: &RpcError) -> Option<String> {
    let RpcError::Rpc {
        code,
        message,
        data,
    } = error
    else {
        return None;
    };
    let from_data = data
        .as_deref()
        .and_then(unhex)
        .and_then(|bytes| revert_reason(&bytes));
    if let Some(reason) = from_data {
        return Some(reason);
    }
    let lower = message.to_ascii_lowercase();
    if *code != 3 && !lower.contains("revert") {
        return None;
    }
    let said = message
        .split_once("reverted:")
        .map(|(_, rest)| rest.trim())
        .filter(|rest| !rest.is_empty());
    Some(said.map_or("a revert without a reason".into(), str::to_string))
}

/// Where each granted allowance lives in its token's storage, asked of the tokens in one batch.
async fn allowance_slots(
    rpc: &RpcClient,
    grants: &[Grant],
    at: &Value,
) -> Result<BTreeMap<GrantKey, B256>, SimulationError> {
    let mut wanted: BTreeMap<GrantKey, Vec<B256>> = BTreeMap::new();
    // Permit2's allowances are where its layout puts them: nothing to probe.
    for grant in grants.iter().filter(|g| g.slot.is_none()) {
        let (Some(owner), Some(spender)) =
            (address_word(&grant.owner), address_word(&grant.spender))
        else {
            continue;
        };
        wanted
            .entry(key(grant))
            .or_insert_with(|| candidates(&owner, &spender));
    }
    if wanted.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut calls = Vec::new();
    for ((token, owner, spender), places) in &wanted {
        let mut data = ALLOWANCE.to_vec();
        for address in [owner, spender] {
            data.extend_from_slice(&address_word(address).unwrap_or_default());
        }
        let request = json!({"to": token, "data": hex_data(&data)});
        for place in places {
            let diff = json!({ token.clone(): {"stateDiff": {place.to_string(): word_text(U256::from(MARKER))}} });
            calls.push(("eth_call", json!([request, at, diff])));
        }
    }
    let answers = rpc.batch(&calls).await;
    let mut answers = answers.into_iter();
    let mut found = BTreeMap::new();
    for (grant, places) in wanted {
        let mut place = None;
        for candidate in places {
            match answers.next() {
                Some(Ok(Value::String(text))) => {
                    let value = unhex(&text).filter(|b| b.len() == 32);
                    if value.is_some_and(|v| U256::from_be_slice(&v) == U256::from(MARKER)) {
                        place = place.or(Some(candidate));
                    }
                }
                Some(Err(e)) if reverted(&e).is_none() => {
                    return Err(SimulationError::Unavailable(format!(
                        "the chain's node cannot simulate with the allowance an approval \
                         before it grants (state overrides: {e}): approve the token from your \
                         wallet first, then ask again"
                    )))
                }
                _ => {}
            }
        }
        let Some(place) = place else {
            return Err(SimulationError::Unavailable(format!(
                "token {} keeps its allowances where the simulation cannot stand in for an \
                 approval not yet mined: approve it from your wallet first, then ask again",
                grant.0
            )));
        };
        found.insert(grant, place);
    }
    Ok(found)
}

fn quantity(answer: &Value) -> Option<u64> {
    u64::from_str_radix(answer.as_str()?.strip_prefix("0x")?, 16).ok()
}

/// Runs `transactions` in order on the chain's latest block (decision 55), each seeing what
/// `credits` pay the wallet before it; as one sequence where a later one needs more of an
/// earlier one than an override stands in for ([`in_sequence`]).
pub async fn simulate(
    rpc: &RpcClient,
    transactions: &[TransactionRequest],
    credits: &[Credit],
) -> Result<Vec<Simulated>, SimulationError> {
    if in_sequence(transactions) {
        return simulate_sequence(rpc, transactions).await;
    }
    let head = rpc
        .call("eth_blockNumber", json!([]))
        .await
        .map_err(|e| unavailable(&e))?;
    if quantity(&head).is_none() {
        return Err(SimulationError::Unavailable(
            "the chain's node answered no head block: retry".into(),
        ));
    }
    let before = grants_before(transactions);
    let slots = allowance_slots(rpc, &before.concat(), &head).await?;
    let balances = if credits.is_empty() {
        Balances::new()
    } else {
        balance_slots(rpc, credits, &head).await?
    };
    let mut calls = Vec::with_capacity(2 * transactions.len());
    for (index, (transaction, granted)) in transactions.iter().zip(&before).enumerate() {
        let value: u128 = transaction.value.parse().unwrap_or(0);
        let request = json!({
            "from": transaction.from,
            "to": transaction.to,
            "data": transaction.data,
            "value": format!("0x{value:x}"),
        });
        let mut diff = overrides(granted, &slots);
        credited(&mut diff, (credits, &balances), index);
        let params = if diff.is_empty() {
            json!([request, head])
        } else {
            json!([request, head, diff])
        };
        calls.push(("eth_call", params.clone()));
        calls.push(("eth_estimateGas", params));
    }
    let answers = rpc.batch(&calls).await;
    let mut runs = Vec::with_capacity(transactions.len());
    for (transaction, pair) in transactions.iter().zip(answers.chunks(2)) {
        let refused = |e: &RpcError| match reverted(e) {
            Some(reason) => SimulationError::Reverted {
                kind: transaction.kind.clone(),
                reason: explained(&reason),
            },
            None => unavailable(e),
        };
        let returned = match &pair[0] {
            Ok(Value::String(text)) => unhex(text),
            Ok(_) => None,
            Err(e) => return Err(refused(e)),
        };
        let gas = match &pair[1] {
            Ok(answer) => quantity(answer),
            Err(e) => return Err(refused(e)),
        };
        let (Some(returned), Some(gas)) = (returned, gas) else {
            return Err(SimulationError::Unavailable(
                "the chain's node answered a simulation that is not hex: retry".into(),
            ));
        };
        runs.push(Simulated {
            gas,
            returned,
            reward: None,
        });
    }
    Ok(runs)
}

/// What a gas estimate adds to a sequence run's gas used: `eth_estimateGas` asks for the gas a
/// call needs to start (refunds come after, and a call passes on at most 63/64 of what is
/// left), more than it uses; a quarter covers both.
const SEQUENCE_GAS_PERCENT: u64 = 125;

/// `ClaimRewards(address,uint256)`: a Slipstream gauge's payment of a position's AERO.
fn claim_rewards_topic() -> String {
    format!(
        "0x{}",
        hex_digits(keccak256("ClaimRewards(address,uint256)").as_slice())
    )
}

/// `transactions` run as one sequence on the latest block (`eth_simulateV1`: each sees what the
/// ones before it did, an NFT's approval or a gauge's withdrawal included), no validation of
/// balances for gas. One request. A run's gas is its gas used with [`SEQUENCE_GAS_PERCENT`];
/// what a gauge paid in it (`ClaimRewards` to the wallet) its reward.
async fn simulate_sequence(
    rpc: &RpcClient,
    transactions: &[TransactionRequest],
) -> Result<Vec<Simulated>, SimulationError> {
    let calls: Vec<Value> = transactions
        .iter()
        .map(|t| {
            let value: u128 = t.value.parse().unwrap_or(0);
            json!({"from": t.from, "to": t.to, "data": t.data, "value": format!("0x{value:x}")})
        })
        .collect();
    let asked = json!([{"blockStateCalls": [{"calls": calls}], "validation": false}, "latest"]);
    let answer = rpc
        .call("eth_simulateV1", asked)
        .await
        .map_err(|e| unavailable(&e))?;
    let malformed = || {
        SimulationError::Unavailable(
            "the chain's node answered a malformed simulation: retry".into(),
        )
    };
    let runs = answer
        .get(0)
        .and_then(|block| block.get("calls"))
        .and_then(Value::as_array)
        .filter(|runs| runs.len() == transactions.len())
        .ok_or_else(malformed)?;
    let claim = claim_rewards_topic();
    let mut simulated = Vec::with_capacity(runs.len());
    for (transaction, run) in transactions.iter().zip(runs) {
        let returned = run
            .get("returnData")
            .and_then(Value::as_str)
            .and_then(unhex)
            .ok_or_else(malformed)?;
        if run.get("status").and_then(Value::as_str) != Some("0x1") {
            let reason = revert_reason(&returned)
                .or_else(|| {
                    let message = run.get("error")?.get("message")?.as_str()?;
                    Some(message.to_string())
                })
                .unwrap_or_else(|| "a revert without a reason".into());
            return Err(SimulationError::Reverted {
                kind: transaction.kind.clone(),
                reason: explained(&reason),
            });
        }
        let gas = run
            .get("gasUsed")
            .and_then(quantity)
            .ok_or_else(malformed)?;
        let wallet = address_word(&transaction.from).map(|w| format!("0x{}", hex_digits(&w)));
        let reward = run
            .get("logs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|log| {
                let topics = log.get("topics").and_then(Value::as_array);
                let topic = |i: usize| {
                    topics
                        .and_then(|t| t.get(i)?.as_str())
                        .map(str::to_ascii_lowercase)
                };
                topic(0).as_deref() == Some(claim.as_str()) && topic(1) == wallet
            })
            .filter_map(|log| unhex(log.get("data")?.as_str()?))
            .filter(|data| data.len() == 32)
            .map(|data| U256::from_be_slice(&data))
            .reduce(|a, b| a + b);
        simulated.push(Simulated {
            gas: gas.saturating_mul(SEQUENCE_GAS_PERCENT) / 100,
            returned,
            reward,
        });
    }
    Ok(simulated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_places_include_openzeppelins_allowances() {
        // OpenZeppelin 3/4's `_allowances` is slot 1: keccak(spender . keccak(owner . 1)).
        let owner = address_word("0x70997970C51812dc3A010C7d01b50e0d17dc79C8").unwrap();
        let spender = address_word("0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9").unwrap();
        let inner = keccak256([owner.as_slice(), &U256::from(1).to_be_bytes::<32>()].concat());
        let outer = keccak256([spender.as_slice(), inner.as_slice()].concat());
        let places = candidates(&owner, &spender);
        assert_eq!(places[1], outer);
        assert_eq!(places.len() as u64, 2 * PLAIN_SLOTS + 1);
    }

    #[test]
    fn reverts_are_told_from_failures() {
        let rpc = |code, message: &str, data: Option<&str>| RpcError::Rpc {
            code,
            message: message.into(),
            data: data.map(str::to_string),
        };
        // Error("STF"): the offset, the length, the text padded to a word.
        let stf = format!("0x08c379a0{:064x}{:064x}{:0<64}", 32, 3, "535446");
        assert_eq!(
            reverted(&rpc(3, "execution reverted", Some(&stf))).as_deref(),
            Some("STF")
        );
        assert_eq!(
            reverted(&rpc(
                -32000,
                "execution reverted: Price slippage check",
                None
            ))
            .as_deref(),
            Some("Price slippage check")
        );
        assert_eq!(
            reverted(&rpc(3, "execution reverted", None)).as_deref(),
            Some("a revert without a reason")
        );
        assert_eq!(reverted(&rpc(-32602, "invalid argument 2", None)), None);
        assert_eq!(reverted(&RpcError::Unreachable), None);
    }
}
