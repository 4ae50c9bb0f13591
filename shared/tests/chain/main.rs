//! The chain readers and the sync on real parts: Orca Whirlpools from recorded accounts served
//! by a loopback JSON-RPC stub, Uniswap v3 on the devnet (anvil with the real contracts), and
//! the faults an RPC endpoint can show.

mod evm;
mod evm_wallets;
mod faults;
mod follow_bench;
mod history;
mod history_bench;
mod orca_wallets;
mod series;
mod slipstream;
mod solana;
mod support;
mod ticks_bench;
mod zap;
