#!/usr/bin/env bash
# Inclusive shares of the request path's parts in `bench/profile.sh` section 1's run
# (non-streaming chat, concurrency 64, ISL/OSL 128, `--fast` mock) for several aiperf
# builds, run in the order given against one mock server (alternate them: before after
# before after …). Each run is recorded with `perf record --call-graph dwarf` (the release
# build has no frame pointers; unwinding from the stack copies finds the callers), and a
# sample counts for every part whose function is on its stack, so the shares are of all
# the client's samples and do not add up. Shares are what a loaded machine distorts least:
# the CPU time per request moves with the load, a function's share of it much less.
# Usage: bash bench/perf_shares.sh SECONDS LABEL=AIPERF_BINARY [LABEL=AIPERF_BINARY …]
# MOCK=path/to/aiperf-mock-server (default target/release/aiperf-mock-server).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_RUN=$1
shift
# shellcheck source=bench/lib.sh
. bench/lib.sh
start_mock --fast

for run in "$@"; do
    label=${run%%=*}
    binary=${run#*=}
    perf record --call-graph dwarf,16384 -F 2999 -o "$WORK/perf.data" -- \
        "$binary" profile -m mock-model --url "$URL" --ui-type none --random-seed 1 \
        --artifact-dir "$WORK/run" --concurrency 64 --benchmark-duration "$SECONDS_PER_RUN" \
        --isl 128 --osl 128 >"$WORK/out" 2>"$WORK/perf-record.log"
    requests=$(python3 -c 'import json,sys;print(int(json.load(open(sys.argv[1]))["request_count"]["avg"]))' \
        "$WORK/run/profile_export_aiperf.json")
    perf script -i "$WORK/perf.data" --no-inline -F comm,tid,ip,sym 2>/dev/null >"$WORK/script.txt"
    echo "== $label: $requests requests, load $(cut -d' ' -f1 /proc/loadavg)"
    PYTHONPATH=bench python3 - "$WORK/script.txt" <<'EOF'
import collections, re, sys

from perf_samples import samples

# (part, pattern matched against any frame of a sample's stack)
PARTS = [
    ("chat body (ChatEndpoint::build)", r"ChatEndpoint as aiperf_core::endpoint::Endpoint>::build"),
    ("send_turn (build, send, hand-over)", r"send_turn::\{\{closure\}\}"),
    ("HTTP/1.1 exchange (HttpTransport::exchange_http1)", r"HttpTransport::exchange_http1"),
    ("request head (h1::request_head)", r"h1::request_head"),
    ("response head (h1 take_head)", r"h1::ResponseReader::take_head"),
    ("writev (request write, loopback delivery)", r"__GI___writev"),
    ("recvmsg (kernel-stamped reads)", r"__libc_recvmsg"),
    ("record processor: MetricsSink::process", r"MetricsSink::process"),
    ("parse_exchange", r"response::parse_exchange"),
    ("Usage::field", r"endpoint::Usage::field"),
    ("UsageTokens::of", r"UsageTokens::of"),
    ("JSONL line", r"JsonlWriter as .*write_rec"),
    ("Parquet row", r"ParquetWriter as .*>::write"),
    ("distributions (Distribution, WeightedDistribution push)", r"Distribution::push"),
    ("timeline sweep", r"Timeline::sweep_before"),
    ("serde_json format_escaped_str", r"format_escaped_str"),
    ("memmove", r"memmove"),
]
total, counts, threads = 0, collections.Counter(), collections.Counter()
for _, tid, frames in samples(sys.argv[1]):
    total += 1
    threads[tid] += 1
    stack = "\n".join(frames)
    for part, pattern in PARTS:
        if re.search(pattern, stack):
            counts[part] += 1
busy = sorted((t for t in threads if threads[t] >= total / 100), key=int)
print(f"{total} samples; threads above 1 %, by id (sending runtime = the lowest):",
      ", ".join(f"{t} {100 * threads[t] / total:.1f} %" for t in busy))
for part, _ in PARTS:
    print(f"  {100 * counts[part] / total:5.2f} %  {part}")
EOF
    rm -rf "$WORK/run" "$WORK/perf.data"
done
