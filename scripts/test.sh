#!/usr/bin/env bash
# Runs every test of the project on a machine with only Rust and Python 3 installed:
# installs the pinned test tools into .venv, starts moto's DynamoDB-API server on a free
# loopback port, runs the whole cargo test suite against it, and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/dynamodb-server.sh

cargo test --workspace --all-targets "$@"
