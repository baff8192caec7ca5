#!/usr/bin/env bash
# Resident memory of `aiperf profile` while STREAMS streaming requests all wait for their
# first token (mock TTFT 8 s): what each open stream costs before any response byte,
# without the backlog a behind client builds once tokens flow (which makes the peak of
# `bench/profile.sh` section 8 vary by ±50 MB from run to run). RSS is read from /proc
# AT seconds after the start, then the run is stopped; a fresh mock server serves each run.
# Several builds, run in the order given: alternate them (before after before after …).
# Usage: bash bench/streams_waiting.sh STREAMS AT LABEL=AIPERF_BINARY [LABEL=AIPERF_BINARY …]
# MOCK=path/to/aiperf-mock-server (default target/release/aiperf-mock-server).
set -euo pipefail
cd "$(dirname "$0")/.."

STREAMS=$1
AT=$2
shift 2
# shellcheck source=bench/lib.sh
. bench/lib.sh

for run in "$@"; do
    label=${run%%=*}
    binary=${run#*=}
    start_mock --ttft 8000 --itl 10
    "$binary" profile -m mock-model --url "$URL" --ui-type none --random-seed 1 \
        --artifact-dir "$WORK/run" --streaming --concurrency "$STREAMS" --request-count "$STREAMS" \
        --isl 128 --osl 128 >"$WORK/out" 2>&1 &
    pid=$!
    sleep "$AT"
    rss_mb=$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")
    descriptors=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    rm -rf "$WORK/run"
    echo "$label: RSS $rss_mb MB with $descriptors descriptors open after $AT s, load $(cut -d' ' -f1 /proc/loadavg)"
done
