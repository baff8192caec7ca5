#!/usr/bin/env bash
# Client CPU per request of `bench/profile.sh` section 1's run (non-streaming chat,
# concurrency 64, ISL/OSL 128, `--fast` mock) for several aiperf builds, run in the order
# given against one mock server: alternate them (before after before after …) so that
# the machine's load falls on both alike. CPU is user + system of the whole process
# (start-up included) over the requests it completed.
# Usage: bash bench/cpu_pairs.sh SECONDS LABEL=AIPERF_BINARY [LABEL=AIPERF_BINARY …]
# MOCK=path/to/aiperf-mock-server (default target/release/aiperf-mock-server).
# AIPERF_ARGS="--streaming" adds those flags to every run (streamed responses).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_RUN=$1
shift
# shellcheck source=bench/lib.sh
. bench/lib.sh
start_mock --fast
read -r -a extra_args <<<"${AIPERF_ARGS:-}"

for run in "$@"; do
    label=${run%%=*}
    binary=${run#*=}
    /usr/bin/time -f '%e %U %S' -o "$WORK/time" \
        "$binary" profile -m mock-model --url "$URL" --ui-type none --random-seed 1 \
        --artifact-dir "$WORK/run" --concurrency 64 --benchmark-duration "$SECONDS_PER_RUN" \
        --isl 128 --osl 128 "${extra_args[@]}" >"$WORK/out" 2>&1
    requests=$(python3 -c 'import json,sys;print(int(json.load(open(sys.argv[1]))["request_count"]["avg"]))' \
        "$WORK/run/profile_export_aiperf.json")
    awk -v n="$requests" -v label="$label" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
        '{printf "%-10s %7d requests, %6.0f req/s, client CPU %5.1f us per request (user %.2f s, system %.2f s), load %s\n", label, n, n / '"$SECONDS_PER_RUN"', ($2 + $3) / n * 1e6, $2, $3, load}' \
        "$WORK/time"
    rm -rf "$WORK/run"
done
