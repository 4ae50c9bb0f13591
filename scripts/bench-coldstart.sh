#!/usr/bin/env bash
# Cold-start benchmark: the median time from process start to the first Runtime API poll of each
# function's release binary and of a bare lambda_runtime "hello" binary (same profile), with
# their ratio and sizes. Arm64 sizes come from `sam build` output when present.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-101}

cargo build --release --quiet -p coldstart -p list-positions -p get-position -p create-position -p get-portfolio -p list-pools
bin=target/release
"$bin/coldstart" --runs "$runs" --events events "$bin/hello-lambda" "$bin/list-positions" "$bin/get-position" \
  "$bin/create-position" "$bin/get-portfolio" "$bin/list-pools"

if ls .aws-sam/build/*Function/bootstrap >/dev/null 2>&1; then
  echo
  echo "| arm64 bootstrap (sam build) | bytes |"
  echo "|---|---:|"
  for f in .aws-sam/build/*Function/bootstrap; do
    echo "| $(basename "$(dirname "$f")") | $(stat -c %s "$f") |"
  done
fi
