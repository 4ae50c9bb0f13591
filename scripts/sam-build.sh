#!/usr/bin/env bash
# `sam build` of the stack: every function as an arm64 `bootstrap` binary (cargo-lambda
# cross-compiling with zig), then checks that each is an AArch64 executable under
# MAX_BOOTSTRAP_BYTES (8 MiB: the release profile's fat-LTO binaries are 5.8 to 6.8 MB).
#
# The binaries are built first in one cargo-lambda run, exactly as `sam build` asks for each
# (`--release --arm64 --bin NAME`; in this workspace every such build resolves the same
# features): cargo links them side by side on every core, and `sam build` then finds each one
# fresh and only packages it, where on its own it would build them one after another.
# `--binaries-only` stops after that build (.ci/run starts it early, beside its other phases).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sam-tools.sh

binaries=$(sed -n 's/^ *Binary: *//p' template.yaml)
bins=()
for binary in $binaries; do
  bins+=(--bin "$binary")
done
start=$(date +%s)
cargo lambda build --release --arm64 "${bins[@]}"
built=$(date +%s)
if [ "${1:-}" = --binaries-only ]; then
  echo "arm64 build: $((built - start)) s"
  exit 0
fi
sam build --parallel --template template.yaml --build-dir .aws-sam/build
echo "arm64 build: $((built - start)) s; sam build after it: $(($(date +%s) - built)) s"
MAX_BOOTSTRAP_BYTES=${MAX_BOOTSTRAP_BYTES:-8388608} python3 - <<'PY'
import os, pathlib, re, sys
template = pathlib.Path("template.yaml").read_text()
functions = re.findall(r"^  (\w+)Function:\n    Type: AWS::Serverless::Function", template, re.M)
limit = int(os.environ["MAX_BOOTSTRAP_BYTES"])
failed = False
print("| function | arm64 bootstrap (bytes) |")
print("|---|---:|")
for name in functions:
    path = pathlib.Path(".aws-sam/build") / f"{name}Function" / "bootstrap"
    if not path.exists():
        print(f"missing: {path}", file=sys.stderr)
        failed = True
        continue
    head = path.read_bytes()[:20]
    machine = int.from_bytes(head[18:20], "little")
    size = path.stat().st_size
    print(f"| {name} | {size} |")
    if head[:4] != b"\x7fELF" or machine != 0xB7:
        print(f"{path} is not an AArch64 ELF executable", file=sys.stderr)
        failed = True
    if size >= limit:
        print(f"{path} is {size} bytes, over {limit}", file=sys.stderr)
        failed = True
sys.exit(1 if failed else 0)
PY
