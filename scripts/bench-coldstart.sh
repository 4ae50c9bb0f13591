#!/usr/bin/env bash
# Cold-start benchmark of every function: the median time from process start to the first
# Runtime API poll of each function's release binary and of a bare lambda_runtime "hello" binary
# (same profile), their ratio, the median first invocation and the sizes, all binaries in one
# interleaved run (`bench/coldstart`). Writes the table into docs/figures/coldstart.md between
# its markers (WRITE=0 only prints it). Arm64 sizes come from `sam build` output when present.
#
# RUNS (default 101) starts each. The release profile is the deploy's (fat LTO, one codegen
# unit): building every function takes a while on two cores; CARGO_PROFILE_RELEASE_LTO=false
# CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 measures the CI build's binaries instead (say so).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-101}
write=${WRITE:-1}

functions=$(ls functions | sort)
packages=(-p coldstart)
for f in $functions; do
  [ -f "functions/$f/Cargo.toml" ] && packages+=(-p "$f")
done
cargo build --release --quiet "${packages[@]}"
bin=target/release
binaries=("$bin/hello-lambda")
for f in $functions; do
  [ -x "$bin/$f" ] && binaries+=("$bin/$f")
done
table=$(mktemp)
trap 'rm -f "$table"' EXIT
"$bin/coldstart" --runs "$runs" --events events "${binaries[@]}" | tee "$table"

if [ "$write" = 1 ]; then
  python3 - "$table" "$runs" <<'PY'
import pathlib, re, sys
table = pathlib.Path(sys.argv[1]).read_text().strip()
doc = pathlib.Path("docs/figures/coldstart.md")
text = doc.read_text()
start, end = "<!-- coldstart table: scripts/bench-coldstart.sh writes it -->", "<!-- end of the coldstart table -->"
block = f"{start}\n`RUNS={sys.argv[2]} scripts/bench-coldstart.sh`:\n\n{table}\n{end}"
if start in text:
    text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
doc.write_text(text)
PY
fi

if ls .aws-sam/build/*Function/bootstrap >/dev/null 2>&1; then
  echo
  echo "| arm64 bootstrap (sam build) | bytes |"
  echo "|---|---:|"
  for f in .aws-sam/build/*Function/bootstrap; do
    echo "| $(basename "$(dirname "$f")") | $(stat -c %s "$f") |"
  done
fi
