//! A wallet's positions on the chain's v3 deployments read from the chain, all at one block
//! (`confirmations` behind the head, every call at the block's hash): per position manager, and
//! per farm its positions are staked in (`staking`), `balanceOf`, then `tokenOfOwnerByIndex` for
//! every index, `positions(tokenId)` for every token, the factory's `getPool` and the tokens'
//! `decimals()`/`symbol()`, then each pool's `slot0`, fee growth globals and the ticks of its
//! positions' bounds, once per pool. Five JSON-RPC batches whatever the count (six with staked
//! positions, two or three more where Slipstream's gauges are asked; more only past the batch
//! size). Amounts are what the liquidity holds at that state rounded down, as a withdrawal pays;
//! fees exactly what `collect` would pay there (none for a position in a Slipstream gauge).

use super::enumeration::token_ids;
pub use super::enumeration::{owners_of, MAX_POSITIONS_PER_MANAGER};
use super::evm::{self, call, decoded, Block, Layout};
use super::rpc::RpcClient;
pub use super::slipstream::GaugedPool;
use super::slipstream::{self, staked_in_gauges};
use super::staking::{self, StakedRead};
use super::tokens::symbol_of;
pub use super::tokens::TokenMeta;
use super::trust::plausible_range;
use crate::domain::catalog::Deployment;
use crate::domain::holdings::held_at;
use crate::domain::market::PoolState;
use crate::domain::math::{Curve, U256};
use crate::domain::model::Protocol;
use alloy_primitives::Address;
use alloy_sol_types::{sol, SolCall};
use serde_json::{json, Value};
use std::collections::BTreeMap;

sol! {
    interface IPositionManager {
        function balanceOf(address owner) external view returns (uint256);
        function ownerOf(uint256 tokenId) external view returns (address);
        function tokenOfOwnerByIndex(address owner, uint256 index) external view returns (uint256);
        function positions(uint256 tokenId) external view returns (
            uint96 nonce,
            address operator,
            address token0,
            address token1,
            uint24 fee,
            int24 tickLower,
            int24 tickUpper,
            uint128 liquidity,
            uint256 feeGrowthInside0LastX128,
            uint256 feeGrowthInside1LastX128,
            uint128 tokensOwed0,
            uint128 tokensOwed1
        );
    }
    interface IFactory {
        function getPool(address tokenA, address tokenB, uint24 fee) external view returns (address);
    }
    interface IPoolSpacing {
        function tickSpacing() external view returns (int24);
    }
    interface IErc20Metadata {
        function decimals() external view returns (uint8);
        function symbol() external view returns (string);
    }
}

use IErc20Metadata::{decimalsCall, symbolCall};
use IFactory::getPoolCall;
use IPoolSpacing::tickSpacingCall;
use IPositionManager::positionsCall;

/// One position of the wallet as the chain holds it at the read's block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainPosition {
    pub protocol: Protocol,
    /// The position manager (EIP-55).
    pub manager: String,
    pub token_id: U256,
    /// The pool (EIP-55), from the factory.
    pub pool: String,
    pub fee: u32,
    pub token0: TokenMeta,
    pub token1: TokenMeta,
    pub tick_lower: i32,
    pub tick_upper: i32,
    /// The pool's tick spacing, as it answers `tickSpacing()`.
    pub tick_spacing: i32,
    pub liquidity: u128,
    /// Base units of token0 and token1 the liquidity holds at the pool's state, rounded down.
    pub amounts: [U256; 2],
    /// Base units `collect` would pay at that state (tokens owed and fees since the last poke).
    pub fees: [u128; 2],
    /// `feeGrowthInside{0,1}LastX128` and `tokensOwed{0,1}` as `positions(tokenId)` answers.
    pub fee_growth_inside_last: [U256; 2],
    pub tokens_owed: [u128; 2],
    /// The pool's state at the block (its bound ticks in `ticks`).
    pub state: PoolState,
    /// Staked by the wallet in its deployment's farm: the farm holds the NFT.
    pub staked: Option<StakedRead>,
    /// Uniswap v4: its pool's hook contract, where it has one.
    pub hooks: Option<String>,
}

/// Everything one wallet holds on one chain, at one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletHoldings {
    pub block: Block,
    pub positions: Vec<ChainPosition>,
    /// Positions the wallet holds past [`MAX_POSITIONS_PER_MANAGER`], not read.
    pub not_read: u64,
    /// Positions whose pool or tokens cannot be read (anyone can mint a position to any wallet,
    /// on any token), each with why: left out of this read, never failing the wallet's.
    pub unread: Vec<Unread>,
    /// Deployments that could not be read (a contract reverting, a wrong address, an endpoint's
    /// error for one contract): none of their positions is in this read, and their stored ones
    /// keep their last read; the other deployments' stand.
    pub failed: Vec<FailedDeployment>,
}

/// A deployment a wallet's read could not take, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedDeployment {
    pub protocol: Protocol,
    /// Its position manager (EIP-55): the positions it keeps at their last read.
    pub manager: String,
    /// The contract that failed (EIP-55): the manager, its farm or its factory.
    pub contract: String,
    pub reason: String,
}

/// A position of the wallet a read could not take, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// The position manager (EIP-55).
    pub manager: String,
    pub token_id: U256,
    pub reason: String,
}

fn checksum(address: Address) -> String {
    address.to_checksum(None)
}

fn parse_address(text: &str) -> Result<Address, String> {
    crate::domain::wallets::address::evm_address(text).map_err(|e| format!("{text}: {e}"))
}

/// A token's terms as `positions(tokenId)` answers them: its tokens (lower-case hex), fee,
/// ticks and liquidity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionTerms {
    pub tokens: [String; 2],
    pub fee: u32,
    pub ticks: (i32, i32),
    pub liquidity: u128,
}

/// What `positions(tokenId)` says a token of `manager` is at the block `at` (EIP-1898): the
/// terms an on-chain open's mint must match.
pub async fn position_terms(
    rpc: &RpcClient,
    manager: &str,
    token_id: U256,
    at: Value,
) -> Result<PositionTerms, String> {
    let data = positionsCall {
        tokenId: alloy_primitives::U256::from_limbs(*token_id.as_limbs()),
    }
    .abi_encode();
    let request = json!([{"to": manager, "data": evm::hex_data(&data)}, at]);
    let answer = rpc.call("eth_call", request).await;
    let p = decoded::<positionsCall>(answer, 12, "positions")?;
    let hex = |a: Address| format!("{a:#x}");
    Ok(PositionTerms {
        tokens: [hex(p.token0), hex(p.token1)],
        fee: p.fee.to::<u32>(),
        ticks: (p.tickLower.as_i32(), p.tickUpper.as_i32()),
        liquidity: p.liquidity,
    })
}

/// The deployments of a read that failed, by manager: the first failure of each, with the
/// contract that failed.
#[derive(Default)]
struct Failures(BTreeMap<Address, (Address, String)>);

impl Failures {
    fn fail(&mut self, manager: Address, contract: Address, reason: String) {
        tracing::warn!(manager = %checksum(manager), contract = %checksum(contract), %reason, "a deployment of a wallet's read failed");
        self.0.entry(manager).or_insert((contract, reason));
    }

    fn has(&self, manager: &Address) -> bool {
        self.0.contains_key(manager)
    }
}

/// Reads every position `wallet` holds at the chain's v3 deployments (a factory and an
/// enumerable position manager; Uniswap v4's are `v4_wallets`'), at `block`, with those staked
/// in a farm or in the gauges of `gauged` (Slipstream's pools), each deployment
/// (its manager, its farm, its factory) judged apart: one whose contract fails is named in
/// [`WalletHoldings::failed`] with none of its positions, the others read as usual. A position
/// whose pool or tokens cannot be read is left out with the reason ([`Unread`]); a position no
/// pool could hold (a lying node) fails its deployment.
pub async fn read_wallet(
    rpc: &RpcClient,
    deployments: &[&Deployment],
    gauged: &[GaugedPool<'_>],
    wallet: &str,
    block: &Block,
) -> Result<WalletHoldings, String> {
    let wallet = parse_address(wallet)?;
    let mut factories = BTreeMap::new();
    let mut protocols = BTreeMap::new();
    // Each enumerated contract and the manager its ids are on: a farm's are staked ones.
    let mut sources = BTreeMap::new();
    for d in deployments
        .iter()
        .filter(|d| d.protocol != Protocol::UniswapV4)
    {
        let (Some(manager), Some(factory)) = (&d.position_manager, &d.factory) else {
            continue;
        };
        let manager = parse_address(manager)?;
        factories.insert(manager, parse_address(factory)?);
        protocols.insert(manager, d.protocol);
        sources.insert(manager, manager);
        if let Some(farm) = &d.staking {
            sources.insert(parse_address(farm)?, manager);
        }
    }
    let enumerated: Vec<Address> = sources.keys().copied().collect();
    let listing = token_ids(rpc, &enumerated, wallet, block).await;
    let mut failures = Failures::default();
    for (contract, reason) in listing.failed {
        failures.fail(sources[&contract], contract, reason);
    }
    let found: Vec<(Address, U256)> = listing
        .ids
        .into_iter()
        .filter(|(source, _)| !failures.has(&sources[source]))
        .collect();
    let staked: Vec<(Address, U256)> = found
        .iter()
        .filter(|(source, _)| sources[source] != *source)
        .copied()
        .collect();
    let (stakes, reward_tokens) = match staking::stakes(rpc, &staked, wallet, block).await {
        Ok(answer) => answer,
        Err(reason) => {
            for (farm, _) in &staked {
                failures.fail(sources[farm], *farm, reason.clone());
            }
            Default::default()
        }
    };
    let mut stakes: BTreeMap<(Address, U256), staking::Stake> = stakes
        .into_iter()
        .map(|((farm, id), stake)| ((sources[&farm], id), stake))
        .collect();
    // A farm's id the farm does not confirm as the wallet's is not the wallet's.
    let mut ids: Vec<(Address, U256)> = found
        .iter()
        .filter(|(source, _)| !failures.has(&sources[source]))
        .filter_map(|(source, id)| {
            let manager = sources[source];
            let confirmed = manager == *source || stakes.contains_key(&(manager, *id));
            confirmed.then_some((manager, *id))
        })
        .collect();
    let (mut reward_tokens, mut not_read) = (reward_tokens, listing.not_read);
    let slipstream: Vec<Address> = protocols
        .iter()
        .filter(|(_, p)| p.is_slipstream())
        .map(|(m, _)| *m)
        .collect();
    if !slipstream.is_empty() {
        let cap = MAX_POSITIONS_PER_MANAGER;
        match staked_in_gauges(rpc, gauged, wallet, block, cap).await {
            Ok(gauged) => {
                for ((manager, id), stake) in gauged.stakes {
                    if slipstream.contains(&manager) && !failures.has(&manager) {
                        ids.push((manager, id));
                        stakes.insert((manager, id), stake);
                    }
                }
                reward_tokens.extend(gauged.reward_tokens);
                not_read = not_read.saturating_add(gauged.not_read);
            }
            Err(reason) => {
                for manager in &slipstream {
                    failures.fail(*manager, *manager, reason.clone());
                }
            }
        }
    }

    // Each token's position, then its pool and its tokens' metadata.
    ids.retain(|(m, _)| !failures.has(m));
    let calls: Vec<_> = ids
        .iter()
        .map(|(m, id)| {
            let token_id = alloy_primitives::U256::from_limbs(*id.as_limbs());
            call(*m, positionsCall { tokenId: token_id }.abi_encode(), block)
        })
        .collect();
    let mut held = Vec::with_capacity(ids.len());
    for ((manager, id), answer) in ids.iter().zip(rpc.batch(&calls).await) {
        match decoded::<positionsCall>(answer, 12, "positions") {
            Ok(p) => held.push((*manager, *id, p)),
            Err(e) => failures.fail(*manager, *manager, e),
        }
    }
    held.retain(|(m, _, _)| !failures.has(m));
    let mut pool_keys: Vec<(Address, Address, Address, u32)> = held
        .iter()
        .map(|(m, _, p)| (factories[m], p.token0, p.token1, p.fee.to::<u32>()))
        .collect();
    pool_keys.sort_unstable();
    pool_keys.dedup();
    let mut tokens: Vec<Address> = held
        .iter()
        .flat_map(|(_, _, p)| [p.token0, p.token1])
        .chain(reward_tokens.values().copied())
        .collect();
    tokens.sort_unstable();
    tokens.dedup();
    let slipstream_factories: Vec<Address> = slipstream.iter().map(|m| factories[m]).collect();
    let mut calls: Vec<_> = pool_keys
        .iter()
        .map(|(factory, a, b, fee)| {
            let data = if slipstream_factories.contains(factory) {
                slipstream::get_pool(*a, *b, *fee)
            } else {
                let fee = alloy_sol_types::private::primitives::aliases::U24::from(*fee);
                getPoolCall {
                    tokenA: *a,
                    tokenB: *b,
                    fee,
                }
                .abi_encode()
            };
            call(*factory, data, block)
        })
        .collect();
    for token in &tokens {
        calls.push(call(*token, decimalsCall {}.abi_encode(), block));
        calls.push(call(*token, symbolCall {}.abi_encode(), block));
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    // What one position's pool or tokens fail with leaves that position out, not the wallet.
    let mut broken: BTreeMap<Address, String> = BTreeMap::new();
    let mut pools = BTreeMap::new();
    let mut no_pool = BTreeMap::new();
    for key in &pool_keys {
        let answer = answers.next().ok_or("getPool: no answer")?;
        match decoded::<getPoolCall>(answer, 1, "getPool") {
            Ok(pool) if pool == Address::ZERO => {
                let (a, b, fee) = (checksum(key.1), checksum(key.2), key.3);
                no_pool.insert(*key, format!("no pool for {a} / {b} at fee {fee}"));
            }
            Ok(pool) => {
                pools.insert(*key, pool);
            }
            // The factory failing fails the deployments it serves.
            Err(e) => {
                for (manager, factory) in &factories {
                    if *factory == key.0 {
                        failures.fail(*manager, *factory, e.clone());
                    }
                }
            }
        }
    }
    held.retain(|(m, _, _)| !failures.has(m));
    let mut metadata = BTreeMap::new();
    for token in &tokens {
        let (decimals, symbol) = (answers.next(), answers.next());
        let why = |e: String| format!("token {}: {e}", checksum(*token));
        let decimals = match decimals
            .ok_or("decimals: no answer".to_string())
            .and_then(|answer| decoded::<decimalsCall>(answer, 1, "decimals"))
        {
            Ok(decimals) => decimals,
            Err(e) => {
                broken.insert(*token, why(e));
                continue;
            }
        };
        // `symbol()` is optional in ERC-20: without a readable one, a short form of the address
        // names the token. `decimals()` is not: amounts cannot be read without it.
        let symbol = match symbol_of(symbol.ok_or("symbol: no answer".to_string())?) {
            Ok(symbol) => symbol,
            Err(reason) => {
                let address = checksum(*token);
                tracing::warn!(token = %address, %reason, "token named by its address");
                format!("{}…{}", &address[..6], &address[address.len() - 4..])
            }
        };
        metadata.insert(
            *token,
            TokenMeta {
                address: checksum(*token),
                symbol,
                decimals,
            },
        );
    }

    let mut unread = Vec::new();
    let mut leave_out = |manager: &Address, token_id: U256, reason: &str| {
        tracing::warn!(token = %token_id, %reason, "a wallet position left out of its read");
        unread.push(Unread {
            manager: checksum(*manager),
            token_id,
            reason: reason.to_string(),
        });
    };
    held.retain(|(manager, id, p)| {
        let key = (factories[manager], p.token0, p.token1, p.fee.to::<u32>());
        let reason = no_pool
            .get(&key)
            .or_else(|| broken.get(&p.token0))
            .or_else(|| broken.get(&p.token1));
        if let Some(reason) = reason {
            leave_out(manager, *id, reason);
        }
        reason.is_none()
    });

    // Each pool's state once, with the bound ticks of every position on it: one batch for all.
    let pool_of = |manager: &Address, p: &IPositionManager::positionsReturn| {
        pools[&(factories[manager], p.token0, p.token1, p.fee.to::<u32>())]
    };
    let mut bounds: BTreeMap<Address, (Layout, Vec<i32>)> = BTreeMap::new();
    for (manager, _, p) in &held {
        let layout = Layout::of(protocols[manager]);
        let (_, ticks) = bounds
            .entry(pool_of(manager, p))
            .or_insert((layout, Vec::new()));
        ticks.extend([p.tickLower.as_i32(), p.tickUpper.as_i32()]);
    }
    let mut calls = Vec::new();
    for (pool, (layout, ticks)) in &mut bounds {
        ticks.sort_unstable();
        ticks.dedup();
        calls.push(call(*pool, tickSpacingCall {}.abi_encode(), block));
        calls.extend(evm::pool_calls(checksum(*pool), ticks, block, *layout));
    }
    let mut answers = rpc.batch(&calls).await.into_iter();
    let mut states = BTreeMap::new();
    for (pool, (layout, ticks)) in &bounds {
        let why = |e: String| format!("pool {}: {e}", checksum(*pool));
        let spacing = answers
            .next()
            .ok_or("tickSpacing: no answer".to_string())
            .and_then(|answer| decoded::<tickSpacingCall>(answer, 1, "tickSpacing"));
        let own: Vec<_> = answers
            .by_ref()
            .take(layout.state_calls() + ticks.len())
            .collect();
        let state = spacing.and_then(|spacing| {
            let state = evm::decode_state(own, ticks, block, chrono::Utc::now(), *layout)?;
            Ok((spacing.as_i32(), state))
        });
        states.insert(*pool, state.map_err(why));
    }
    let mut positions = Vec::with_capacity(held.len());
    for (manager, token_id, p) in held {
        let pool = pool_of(&manager, &p);
        let (spacing, state) = match &states[&pool] {
            Ok(state) => state.clone(),
            Err(reason) => {
                leave_out(&manager, token_id, reason);
                continue;
            }
        };
        let (lower, upper) = (p.tickLower.as_i32(), p.tickUpper.as_i32());
        let read = plausible_range(Curve::UniswapV3, lower, upper, spacing)
            .map_err(|e| format!("position {token_id}: {e}"))
            .and_then(|()| position_at(manager, token_id, pool, &p, &metadata, state));
        let mut position = match read {
            Ok(position) => position,
            Err(reason) => {
                failures.fail(manager, manager, reason);
                continue;
            }
        };
        position.protocol = protocols[&manager];
        position.tick_spacing = spacing;
        if let Some(own) = &position.state.slipstream {
            // Slipstream: the pool's own fee, not the position's fifth word (its spacing).
            position.fee = own.fee;
        }
        if let Some(stake) = stakes.get(&(manager, token_id)) {
            let reward = &reward_tokens[&stake.farm];
            let Some(reward_token) = metadata.get(reward).cloned() else {
                leave_out(
                    &manager,
                    token_id,
                    &format!("reward token {}: not read", checksum(*reward)),
                );
                continue;
            };
            if position.protocol.is_slipstream() {
                // A staked Slipstream position earns no swap fees (they go to the gauge's
                // voters); the gauge collected what was owed at the deposit, and the manager's
                // fee-growth snapshot is stale meanwhile.
                position.fees = [0, 0];
            }
            position.staked = Some(StakedRead {
                farm: checksum(stake.farm),
                reward_token,
                rewards_pending: stake.rewards_pending,
            });
        }
        positions.push(position);
    }
    // A deployment that failed part way shows none of its positions: a position missing from a
    // read would close as transferred.
    let failed_manager = |m: &str| {
        failures
            .0
            .keys()
            .any(|f| checksum(*f).eq_ignore_ascii_case(m))
    };
    positions.retain(|p| !failed_manager(&p.manager));
    unread.retain(|u| !failed_manager(&u.manager));
    let failed = failures
        .0
        .into_iter()
        .map(|(manager, (contract, reason))| FailedDeployment {
            protocol: protocols[&manager],
            manager: checksum(manager),
            contract: checksum(contract),
            reason,
        })
        .collect();
    Ok(WalletHoldings {
        block: block.clone(),
        positions,
        not_read,
        unread,
        failed,
    })
}

/// The position's amounts and fees at the pool's state, as the protocol computes them.
fn position_at(
    manager: Address,
    token_id: U256,
    pool: Address,
    p: &IPositionManager::positionsReturn,
    metadata: &BTreeMap<Address, TokenMeta>,
    state: PoolState,
) -> Result<ChainPosition, String> {
    let (lower, upper) = (p.tickLower.as_i32(), p.tickUpper.as_i32());
    let last = [
        U256::from_limbs(*p.feeGrowthInside0LastX128.as_limbs()),
        U256::from_limbs(*p.feeGrowthInside1LastX128.as_limbs()),
    ];
    let owed = [p.tokensOwed0, p.tokensOwed1];
    let (amounts, earned) = held_at(&state, (lower, upper), p.liquidity, last)
        .map_err(|e| format!("position {token_id}: {e}"))?;
    let fees = [0, 1].map(|t| owed[t].wrapping_add(earned[t]));
    let token = |address: &Address| {
        metadata
            .get(address)
            .cloned()
            .ok_or_else(|| format!("token {}: not read", checksum(*address)))
    };
    Ok(ChainPosition {
        protocol: Protocol::UniswapV3,
        manager: checksum(manager),
        token_id,
        pool: checksum(pool),
        fee: p.fee.to::<u32>(),
        token0: token(&p.token0)?,
        token1: token(&p.token1)?,
        tick_lower: lower,
        tick_upper: upper,
        tick_spacing: 1,
        liquidity: p.liquidity,
        amounts,
        fees,
        fee_growth_inside_last: last,
        tokens_owed: owed,
        state,
        staked: None,
        hooks: None,
    })
}
