#!/usr/bin/env bash
# Where the client's CPU goes in `bench/profile.sh` section 1 (non-streaming chat,
# concurrency 64, ISL/OSL 128, `--fast` mock): `perf record -g` on a release `aiperf`
# for the whole run, then the flat profile (`perf report --no-children`), the share of
# each thread, and the client CPU per request.
# Usage: bash bench/perf_profile.sh [SECONDS, default 10] [OUT DIR, default a temp dir]
# AIPERF=path/to/aiperf (and MOCK=path/to/aiperf-mock-server) profile other builds (e.g.
# copies of the ones before a change) without building.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_RUN=${1:-10}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"

if [ -z "${AIPERF:-}" ]; then
    cargo build --release -q -p aiperf-cli -p aiperf-mock-server
fi
AIPERF=${AIPERF:-target/release/aiperf}
MOCK=${MOCK:-target/release/aiperf-mock-server}

# shellcheck source=bench/lib.sh
. bench/lib.sh
start_mock --fast

/usr/bin/time -f '%e %U %S %M' -o "$OUT/aiperf.time" \
    perf record -g -o "$OUT/perf.data" -- \
    "$AIPERF" profile -m mock-model --url "$URL" --ui-type none --random-seed 1 \
    --artifact-dir "$OUT/run" --concurrency 64 --benchmark-duration "$SECONDS_PER_RUN" \
    --isl 128 --osl 128 >"$OUT/aiperf.out" 2>"$OUT/perf-record.log"

requests=$(python3 -c 'import json,sys;print(int(json.load(open(sys.argv[1]))["request_count"]["avg"]))' \
    "$OUT/run/profile_export_aiperf.json")
# perf's own CPU is in these seconds too; it is small next to the client's (a few %).
awk -v n="$requests" '{printf "%d requests, %.0f req/s, client CPU %.1f us per request (user %.1f s, system %.1f s)\n", n, n / '"$SECONDS_PER_RUN"', ($2 + $3) / n * 1e6, $2, $3}' \
    "$OUT/aiperf.time"

# The sending runtime runs on the main thread and the record processor on a thread of its
# own, both called `aiperf`: perf's `pid` key tells threads apart by id (the main thread's
# is the lowest).
echo "== CPU by thread (thread id:name; sending runtime = the lowest id)"
perf report -i "$OUT/perf.data" --no-children --sort pid --stdio -g none 2>/dev/null \
    | grep -E '^ +[0-9]' | head -6
echo "== functions above 1 % (self time)"
perf report -i "$OUT/perf.data" --no-children --percent-limit 1 --sort comm,dso,sym \
    --stdio -g none 2>/dev/null | grep -E '^ +[0-9]'
echo "(perf data in $OUT/perf.data)"
