#!/usr/bin/env bash
# One benchmark as 4 shard processes on loopback against one mock server, started at one
# instant and merged, next to the same benchmark run by one process; then the merge of
# 4 large shards. Prints one line per figure; bench/README.md records a run.
# Usage: bash bench/scale_out.sh [records per shard for the merge, default 250000]
#        BENCH_BIN=target/release bash bench/scale_out.sh   (binaries already built)
set -euo pipefail
cd "$(dirname "$0")/.."

PER_SHARD=${1:-250000}
SHARDS=4

# BENCH_BIN=DIR uses the binaries already built there instead of building them.
if [[ -z "${BENCH_BIN:-}" ]]; then
    cargo build --release -q -p aiperf-cli -p aiperf-mock-server
    BENCH_BIN=target/release
fi
AIPERF=$BENCH_BIN/aiperf
MOCK=$BENCH_BIN/aiperf-mock-server

# shellcheck source=bench/lib.sh
. bench/lib.sh

# shards NAME BENCHMARK-ARGS…: SHARDS processes of one benchmark from one instant 2 s
# ahead, then their merge into $WORK/NAME/merged (time and peak RSS in NAME/merge.time).
shards() {
    local name=$1
    shift
    local at
    at=$(python3 -c 'import time;print(f"{time.time()+2:.3f}")')
    local pids=()
    for k in $(seq 0 $((SHARDS - 1))); do
        "$AIPERF" profile -m mock-model --url "$URL" --ui-type none --random-seed 1 \
            --tokenizer builtin --shard "$k/$SHARDS" --start-at "$at" \
            --artifact-dir "$WORK/$name/shard-$k" "$@" >"$WORK/$name-shard-$k.out" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    /usr/bin/time -f '%e %M' -o "$WORK/$name/merge.time" \
        "$AIPERF" merge "$WORK/$name"/shard-* -o "$WORK/$name/merged" >"$WORK/$name/merge.out"
}

# 1. Distributions: streaming, mock TTFT 20 ms / ITL 5 ms, one process against 4 shards.
BENCH="--streaming --concurrency 64 --request-count 4000 --isl 128 --osl 32 \
    --no-server-metrics --no-gpu-telemetry"
start_mock --ttft 20 --itl 5
# shellcheck disable=SC2086
"$AIPERF" profile -m mock-model --url "$URL" --ui-type none --random-seed 1 \
    --tokenizer builtin --artifact-dir "$WORK/one" $BENCH >"$WORK/one.out" 2>&1
# shellcheck disable=SC2086
shards four $BENCH
python3 - "$WORK" "$SHARDS" <<'EOF'
import json, sys, pathlib
work, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
one = json.load(open(work / "one/profile_export_aiperf.json"))
merged = json.load(open(work / "four/merged/profile_export_aiperf.json"))
shard0 = json.load(open(work / "four/shard-0/profile_export_aiperf.json"))
same_inputs = all(
    (work / f"four/shard-{k}/inputs.json").read_bytes() == (work / "one/inputs.json").read_bytes()
    for k in range(n))
print(f"requests: one process {one['request_count']['avg']:.0f}, merged shards "
      f"{merged['request_count']['avg']:.0f}; inputs.json identical: {same_inputs}")
for tag in ("time_to_first_token", "inter_token_latency", "request_latency"):
    a, b = one[tag], merged[tag]
    print(f"{tag}: one process avg {a['avg']:.3f} p50 {a['p50']:.3f} p99 {a['p99']:.3f} ms; "
          f"merged avg {b['avg']:.3f} p50 {b['p50']:.3f} p99 {b['p99']:.3f} ms")
rate = lambda s: s["request_throughput"]["avg"]
print(f"offered load: merged {rate(merged):.1f} req/s = {rate(merged) / rate(shard0):.2f} x "
      f"shard 0's {rate(shard0):.1f}; one process {rate(one):.1f} req/s")
EOF
read -r secs rss <"$WORK/four/merge.time"
echo "merge of 4 x 1,000 streaming records: ${secs} s, peak RSS $((rss / 1024)) MB"

# 2. The merge at scale: 4 shards of PER_SHARD non-streaming records each.
start_mock --fast
shards big --concurrency 64 --request-count $((PER_SHARD * SHARDS)) --isl 32 --osl 8 \
    --no-server-metrics --no-gpu-telemetry
read -r secs rss <"$WORK/big/merge.time"
records=$(wc -l <"$WORK/big/merged/profile_export.jsonl")
bytes=$(du -sb "$WORK/big/merged" | cut -f1)
echo "merge of $SHARDS x $PER_SHARD records: ${secs} s, peak RSS $((rss / 1024)) MB, \
$records records, merged directory $((bytes / 1024 / 1024)) MB"
