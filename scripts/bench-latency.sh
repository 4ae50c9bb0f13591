#!/usr/bin/env bash
# Warm-latency benchmark: 1,000 requests per route through the handlers against moto's
# DynamoDB server, p50 and p99 of wall time, the request's own CPU and its wait on DynamoDB.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/dynamodb-server.sh

DYNAMODB_ENDPOINT="$DYNAMODB_TEST_ENDPOINT" cargo run --release --quiet -p shared --example warm_latency
