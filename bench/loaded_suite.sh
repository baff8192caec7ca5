#!/usr/bin/env bash
# The whole test suite (the README's test command) while a CPU hog keeps every core busy:
# users run `cargo test` on busy laptops and shared CI runners, so no test may depend on an
# idle machine. Uses stress-ng (Debian: apt-get install stress-ng) when it is installed,
# else one shell busy-loop per core.
# Usage: bash bench/loaded_suite.sh [EXTRA CARGO TEST ARGS]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${AIPERF_TEST_TOKENIZER_DIR:-}" ] && [ -d ../shared/tokenizers ]; then
    export AIPERF_TEST_TOKENIZER_DIR="$(cd ../shared/tokenizers && pwd)"
fi

cores=$(nproc)
# Build first, unloaded: the point is tests on a busy machine, not a slow compile.
cargo test --workspace --no-run "$@" >/dev/null 2>&1

hogs=()
if command -v stress-ng >/dev/null 2>&1; then
    stress-ng --cpu "$cores" --timeout 0 --quiet &
    hogs+=($!)
    hog="stress-ng --cpu $cores"
else
    for _ in $(seq "$cores"); do
        (while :; do :; done) &
        hogs+=($!)
    done
    hog="$cores shell busy-loops"
fi
trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT
sleep 2

log=$(mktemp)
start=$(date +%s)
status=0
cargo test --workspace "$@" >"$log" 2>&1 || status=$?
elapsed=$(( $(date +%s) - start ))
load=$(cut -d' ' -f1 /proc/loadavg)

passed=$(grep -Eo '[0-9]+ passed' "$log" | awk '{s += $1} END {print s + 0}')
failed=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s += $1} END {print s + 0}')
echo "loaded suite: $hog on $cores cores, load average $load at the end"
echo "  $passed passed, $failed failed, ${elapsed} s, cargo test exit $status"
if [ "$status" -ne 0 ]; then
    grep -E '^(test .* FAILED|failures:|---- )' "$log" | head -40
fi
rm -f "$log"
exit "$status"
