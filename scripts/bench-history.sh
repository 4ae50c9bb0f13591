#!/usr/bin/env bash
# Benchmark: the backfill of a wallet position's history with 10 and with 1,000 events on the
# devnet, in memory and on DynamoDB (moto): JSON-RPC requests and calls, the history's writes,
# milliseconds. Prints the figures; asserts only that every event is stored once.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd devnet && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
source scripts/dynamodb-server.sh
cargo test -p shared --all-features --test chain bench_backfill -- --ignored --nocapture --test-threads 1
