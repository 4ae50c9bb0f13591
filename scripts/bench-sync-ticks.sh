#!/usr/bin/env bash
# Benchmark: the sync of the devnet pool with 10,000 tracked ticks on DynamoDB (moto), the first
# sync and the next after a swap: RPC requests and calls, time, fee records written. Prints the
# figures; asserts only that the syncs store their states.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd devnet && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
source scripts/dynamodb-server.sh
cargo test --release -p shared --test chain ticks_bench -- --ignored --nocapture
