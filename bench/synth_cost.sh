#!/usr/bin/env bash
# What a default-sized synthetic run costs (one conversation per request, made as the run
# goes, and inputs.json written from them), for two aiperf builds in alternating rounds
# against one `--fast` mock: non-streaming, concurrency 64, OSL 8, at ISL 32 and 550.
# Per run: client CPU per request (user + sys of the whole process over the requests
# sent), peak RSS, requests/s of the run, wall time; then whether both builds wrote the
# same inputs.json. The *after* build also runs with a fixed pool of 1,000 entries, the
# cost a default run is compared with.
# Usage: BEFORE=/path/to/aiperf [AFTER=target/release/aiperf] [MOCK=…mock-server] \
#        bash bench/synth_cost.sh [REQUESTS, default 100000] [ROUNDS, default 2]
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS=${1:-100000}
ROUNDS=${2:-2}
BEFORE=${BEFORE:?BEFORE must name the aiperf binary to compare with}
AFTER=${AFTER:-target/release/aiperf}

# shellcheck source=bench/lib.sh
. bench/lib.sh

# run BINARY NAME ARGS…: one run under /usr/bin/time into $WORK/NAME, then its line.
run() {
    local binary=$1 name=$2
    shift 2
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/$name.time" \
        "$binary" profile -m mock-model --url "$URL" --ui-type none --random-seed 1 \
        --artifact-dir "$WORK/$name" --concurrency 64 --osl 8 --request-count "$REQUESTS" \
        "$@" >"$WORK/$name.out" 2>&1
    python3 - "$WORK/$name" <<'EOF'
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
wall, user, system, rss_kb = open(f"{d}.time").read().split()
s = json.load(open(d / "profile_export_aiperf.json"))
requests = s["request_count"]["avg"]
cpu_us = (float(user) + float(system)) / requests * 1e6
print(f"{d.name:22} {cpu_us:6.1f} us CPU per request ({user} user + {system} sys s), "
      f"peak RSS {int(rss_kb) / 1024:4.0f} MB, {s['request_throughput']['avg']:7.0f} req/s, "
      f"{requests:.0f} requests in {wall} s")
EOF
}

start_mock --fast
for isl in 32 550; do
    echo "== ISL $isl, $REQUESTS requests, $ROUNDS rounds (before, after, after with 1,000 entries)"
    for round in $(seq "$ROUNDS"); do
        run "$BEFORE" "before_isl${isl}_$round" --isl "$isl"
        run "$AFTER" "after_isl${isl}_$round" --isl "$isl"
        run "$AFTER" "pool_isl${isl}_$round" --isl "$isl" --num-dataset-entries 1000
    done
    if cmp -s "$WORK/before_isl${isl}_1/inputs.json" "$WORK/after_isl${isl}_1/inputs.json"; then
        echo "inputs.json: identical ($(stat -c %s "$WORK/after_isl${isl}_1/inputs.json") bytes)"
    else
        echo "inputs.json: DIFFERENT"
    fi
done
