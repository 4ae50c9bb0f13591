#!/usr/bin/env bash
# Benchmark: one sync following the chain (decision 45) on the devnet and DynamoDB
# (moto): the JSON-RPC requests and calls and the writes of an idle sync with 1, 100 and 1,000
# linked wallets, then of one sync after each kind of position event. Prints the figures
# (docs/figures/follow.md); asserts that an idle sync's requests do not grow with the wallets
# and that it writes no position.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd devnet && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
source scripts/dynamodb-server.sh
cargo test -p shared --all-features --test chain bench_follow -- --ignored --nocapture --test-threads 1
