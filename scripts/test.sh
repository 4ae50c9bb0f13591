#!/usr/bin/env bash
# Runs every test of the project on a machine with only Rust and Python 3 installed:
# - installs the pinned Python tools into .venv (moto) and .venv-sam (SAM CLI, cfn-lint);
# - lints template.yaml with `sam validate --lint` and `cfn-lint`;
# - builds the tests and every binary once (dev profile, the features the tests use): the
#   functions' binaries run under the Lambda Runtime Interface Emulator, local-api under the
#   fuzzing; `cargo test` then reuses them (a function's `main.rs` only wires: its binary is
#   built `test = false`, `bench = false`, no empty test binary of each);
# - installs the devnet's pinned npm packages (anvil, the Uniswap v3 contracts and SDK) into
#   devnet/node_modules, on which the chain tests deploy real pools;
# - installs Debian's chromium when missing, and playwright-core into web/tests/node_modules:
#   the page's tests drive it;
# - starts moto's DynamoDB-API server on a free loopback port, runs the whole cargo test suite
#   against it, and stops the server;
# - meanwhile validates the OpenAPI document and runs schemathesis against local-api
#   (scripts/fuzz.sh, installing its pinned tools into .venv-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/phases.sh
phase "python tools (SAM CLI, cfn-lint)"
source scripts/sam-tools.sh

phase "template checks"
sam validate --lint --template template.yaml --region us-east-1
cfn-lint template.yaml

phase "build: the tests and every binary (dev profile)"
cargo build --workspace --bins --tests
export LAMBDA_BIN_DIR="$PWD/target/debug"

# `npm ci` of a folder's pinned packages, unless this lock file's install is there already.
npm_ci() {
  [ "$1/node_modules/.package-lock.json" -nt "$1/package-lock.json" ] \
    || (cd "$1" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
}

phase "devnet packages"
npm_ci devnet
npm_ci devnet/slipstream

phase "the page's browser: Debian's chromium, and playwright-core"
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get install -y --no-install-recommends chromium >/dev/null \
    || { $sudo apt-get update -qq && $sudo apt-get install -y --no-install-recommends chromium >/dev/null; }
fi
chromium --version
npm_ci web/tests

phase "tests (cargo test beside scripts/fuzz.sh)"
source scripts/dynamodb-server.sh
# The contract's generated-case run (scripts/fuzz.sh) beside the suite: it needs only local-api,
# and the suite spends much of its time waiting on anvil and moto.
fuzz_log=$(mktemp)
scripts/fuzz.sh >"$fuzz_log" 2>&1 &
fuzz_pid=$!
tests_status=0
cargo test --workspace --tests --benches "$@" || tests_status=$?
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
phase ""
echo "== generated-case testing (scripts/fuzz.sh)"
cat "$fuzz_log"
rm -f "$fuzz_log"
if [ "$tests_status" -ne 0 ] || [ "$fuzz_status" -ne 0 ]; then
  echo "tests exited $tests_status, scripts/fuzz.sh exited $fuzz_status" >&2
  exit 1
fi
