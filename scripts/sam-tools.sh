# Sourced by scripts that need the stack tooling: installs the pinned aws-sam-cli, cfn-lint,
# cargo-lambda and ziglang into .venv-sam and puts it first on PATH (so `python3` there is the
# one with ziglang, which cargo-lambda uses for cross-compiling), and exports LAMBDA_RIE, the
# Lambda Runtime Interface Emulator shipped inside aws-sam-cli.

sam_venv=.venv-sam
source scripts/venv.sh
pinned_venv "$sam_venv" scripts/requirements-sam.txt
PATH="$PWD/$sam_venv/bin:$PATH"
export PATH
export SAM_CLI_TELEMETRY=0
LAMBDA_RIE=$("$sam_venv/bin/python" -c 'import os, samcli; print(os.path.join(os.path.dirname(samcli.__file__), "local", "rapid", "aws-lambda-rie-x86_64"))')
export LAMBDA_RIE
