#!/usr/bin/env bash
# The DynamoDB cost benchmark: 10,000 positions for one user on moto's server, then the reads
# of list pages and of the portfolio, counted by the store.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/dynamodb-server.sh

DYNAMODB_ENDPOINT="$DYNAMODB_TEST_ENDPOINT" cargo run --release --quiet -p shared --example dynamodb_cost
