#!/usr/bin/env bash
# Benchmark: one refresh of a wallet holding 10 Uniswap v3 positions on the devnet, read at one
# block: HTTP requests, JSON-RPC calls and milliseconds, five runs. Prints the figures; asserts
# only that the 10 positions are read.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd devnet && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
cargo test --release -p local-api --test wallets_devnet bench_wallet_refresh -- --ignored --nocapture
