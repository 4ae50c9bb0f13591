#!/usr/bin/env bash
# Benchmarks: one refresh of a wallet holding 10 Uniswap v3 positions on the devnet, read at one
# block (HTTP requests, JSON-RPC calls and milliseconds, five runs); then 100 wallets refreshed
# through the queue (moto's SQS, DynamoDB on moto). Prints the figures; asserts only that every
# position and wallet is read.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd devnet && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
source scripts/dynamodb-server.sh
cargo test --release -p local-api --test wallets_devnet bench_ -- --ignored --nocapture --test-threads 1
