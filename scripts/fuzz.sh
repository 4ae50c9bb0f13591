#!/usr/bin/env bash
# Generated-case testing of the contract: validates openapi.yaml and the document local-api
# serves (openapi-spec-validator), then runs schemathesis against local-api (the embedded
# in-memory default) with a valid token: every phase, stateful included, the checks listed in
# scripts/fuzz/schemathesis.toml, for FUZZ_SECONDS (sized by time, not count: fuzzing and
# stateful testing repeat until the budget is spent) and at least MIN_REQUESTS requests; prints
# how many it made.
# Any failure fails the run. Uses target/debug/local-api (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

MIN_REQUESTS=${MIN_REQUESTS:-10000}
FUZZ_SECONDS=${FUZZ_SECONDS:-350}
MAX_EXAMPLES=${MAX_EXAMPLES:-100}

venv=.venv-fuzz
source scripts/venv.sh
pinned_venv "$venv" scripts/requirements-fuzz.txt

bin=target/debug/local-api
[ -x "$bin" ] || cargo build --quiet -p local-api

work=$(mktemp -d)
"$bin" --addr 127.0.0.1:0 >"$work/local-api.log" 2>&1 &
api_pid=$!
stop_api() {
  kill "$api_pid" 2>/dev/null || true
  wait "$api_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap stop_api EXIT
base=""
for _ in $(seq 1 100); do
  base=$(sed -n 's/^local-api listening on \(http:[^ ]*\).*/\1/p' "$work/local-api.log")
  [ -n "$base" ] && break
  sleep 0.1
done
if [ -z "$base" ]; then
  echo "local-api did not start:" >&2
  cat "$work/local-api.log" >&2
  exit 1
fi

echo "== OpenAPI document: openapi.yaml and the served $base/openapi.json"
"$venv/bin/openapi-spec-validator" openapi.yaml
"$venv/bin/python" -c 'import sys, urllib.request; open(sys.argv[2], "wb").write(urllib.request.urlopen(sys.argv[1]).read())' \
  "$base/openapi.json" "$work/served.json"
"$venv/bin/openapi-spec-validator" "$work/served.json"

echo "== schemathesis against local-api ($FUZZ_SECONDS s; $MAX_EXAMPLES examples per operation and phase a round)"
FUZZ_TOKEN=$("$bin" token --sub fuzzer --scope markets:sync --ttl 3600)
export FUZZ_TOKEN
# One worker: CPython 3.11's ast.parse is not thread-safe, and schemathesis's coverage phase
# parses in its worker threads.
SCHEMATHESIS_HOOKS=hooks PYTHONPATH=scripts/fuzz "$venv/bin/st" --config-file scripts/fuzz/schemathesis.toml \
  run "$base/openapi.json" --max-examples "$MAX_EXAMPLES" --max-time "$FUZZ_SECONDS" --no-color \
  --report har --report-har-path "$work/requests.har"
requests=$("$venv/bin/python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["log"]["entries"]))' "$work/requests.har")
echo "schemathesis made $requests requests"
if [ "$requests" -lt "$MIN_REQUESTS" ]; then
  echo "fewer than $MIN_REQUESTS requests: raise FUZZ_SECONDS" >&2
  exit 1
fi
