#!/usr/bin/env bash
# Runs every test of the project on a machine with only Rust and Python 3 installed:
# installs the pinned test tools into .venv, starts moto's DynamoDB-API server on a free
# loopback port, runs the whole cargo test suite against it, and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/requirements.txt

log=$(mktemp)
port_file=$(mktemp)
"$venv/bin/python" scripts/dynamodb_server.py 127.0.0.1 >"$port_file" 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -f "$log" "$port_file"' EXIT

for _ in $(seq 1 100); do
  [ -s "$port_file" ] && break
  if ! kill -0 "$server" 2>/dev/null; then
    echo "test.sh: the DynamoDB test server failed to start:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.2
done
port=$(head -n 1 "$port_file")
if [ -z "$port" ]; then
  echo "test.sh: the DynamoDB test server did not report its port" >&2
  cat "$log" >&2
  exit 1
fi
export DYNAMODB_TEST_ENDPOINT="http://127.0.0.1:$port"
echo "test.sh: moto DynamoDB server on $DYNAMODB_TEST_ENDPOINT"

cargo test --workspace --all-targets "$@"
