# Sourced by the scripts that need a DynamoDB-API server: installs the pinned Python tools into
# .venv, starts moto's server on a free loopback port, exports DYNAMODB_TEST_ENDPOINT and stops
# the server when the calling script exits. Fails loudly if the server cannot start.

venv=.venv
source scripts/venv.sh
pinned_venv "$venv" scripts/requirements.txt

dynamodb_log=$(mktemp)
dynamodb_port_file=$(mktemp)
"$venv/bin/python" scripts/dynamodb_server.py 127.0.0.1 >"$dynamodb_port_file" 2>"$dynamodb_log" &
dynamodb_pid=$!
stop_dynamodb() {
  kill "$dynamodb_pid" 2>/dev/null || true
  wait "$dynamodb_pid" 2>/dev/null || true
  rm -f "$dynamodb_log" "$dynamodb_port_file"
}
trap stop_dynamodb EXIT

for _ in $(seq 1 150); do
  [ -s "$dynamodb_port_file" ] && break
  if ! kill -0 "$dynamodb_pid" 2>/dev/null; then
    echo "the DynamoDB test server failed to start:" >&2
    cat "$dynamodb_log" >&2
    exit 1
  fi
  sleep 0.2
done
dynamodb_port=$(head -n 1 "$dynamodb_port_file")
if [ -z "$dynamodb_port" ]; then
  echo "the DynamoDB test server did not report its port:" >&2
  cat "$dynamodb_log" >&2
  exit 1
fi
export DYNAMODB_TEST_ENDPOINT="http://127.0.0.1:$dynamodb_port"
echo "moto DynamoDB server on $DYNAMODB_TEST_ENDPOINT"
