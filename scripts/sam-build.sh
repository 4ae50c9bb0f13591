#!/usr/bin/env bash
# `sam build` of the stack: the eight functions as arm64 `bootstrap` binaries (cargo-lambda
# cross-compiling with zig), then checks that each is an AArch64 executable under 8 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sam-tools.sh

sam build --template template.yaml --build-dir .aws-sam/build
python3 - <<'PY'
import pathlib, sys
functions = ["ListPositions", "GetPosition", "CreatePosition", "ClosePosition", "GetPortfolio", "ListPools", "RouteFallback", "SyncMarkets"]
limit = 8 * 1024 * 1024
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
        print(f"{path} is {size} bytes, over 8 MB", file=sys.stderr)
        failed = True
sys.exit(1 if failed else 0)
PY
