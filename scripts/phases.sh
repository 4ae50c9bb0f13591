# Sourced by .ci/run and scripts/test.sh: `phase NAME` ends the running phase and starts NAME;
# `phases_table` ends the last one and prints each phase's seconds (the file named by
# $PHASES_FILE keeps them across the two scripts).
: "${PHASES_FILE:=$(mktemp)}"
export PHASES_FILE
phase_name=""
phase_start=0

phase() {
  local now
  now=$(date +%s)
  if [ -n "$phase_name" ]; then
    printf '%s\t%s\n' "$phase_name" "$((now - phase_start))" >>"$PHASES_FILE"
  fi
  phase_name="$1"
  phase_start=$now
  [ -z "$phase_name" ] || echo "== $phase_name"
}

phases_table() {
  phase ""
  echo "| phase | seconds |"
  echo "|---|---:|"
  awk -F '\t' '{ printf "| %s | %d |\n", $1, $2; total += $2 } END { printf "| total | %d |\n", total }' "$PHASES_FILE"
}
