#!/usr/bin/env bash
# The same benchmark with the Python AIPerf 0.13 and with aiperf-rs, against one mock
# server (ours: TTFT 20 ms, ITL 5 ms), so their numbers and files can be compared side by
# side. Installs the Python AIPerf into a throw-away venv (about 2 minutes, 1.2 GB).
# Usage: bash bench/compare_python.sh [requests, default 1000] [concurrency, default 64]
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS=${1:-1000}
CONCURRENCY=${2:-64}
VENV=${AIPERF_PY_VENV:-/tmp/aiperf-py-venv}

cargo build --release -q -p aiperf-cli -p aiperf-mock-server
if [ ! -x "$VENV/bin/aiperf" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q aiperf==0.13.0
fi

# shellcheck source=bench/lib.sh
. bench/lib.sh

# The Python AIPerf's builtin tokenizer downloads o200k_base on first use; give it the
# copy that ships inside the tiktoken-rs crate instead (the name is tiktoken's cache key).
TIKTOKEN_CACHE_DIR=$WORK/tiktoken
mkdir "$TIKTOKEN_CACHE_DIR"
export TIKTOKEN_CACHE_DIR
ranks=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -path '*tiktoken-rs*' -name o200k_base.tiktoken | head -n 1)
cp "$ranks" "$TIKTOKEN_CACHE_DIR/fb374d419588a4632f3f557e76b4b70aebbca790"

# Identical flags for both tools.
common=(profile -m mock-model --tokenizer builtin --endpoint-type chat --streaming
        --concurrency "$CONCURRENCY" --request-count "$REQUESTS" --isl 128 --osl 128
        --random-seed 42 --ui-type none)

start_mock --ttft 20 --itl 5
/usr/bin/time -f '%e %U %S %M' -o "$WORK/py.time" \
    "$VENV/bin/aiperf" "${common[@]}" --url "http://127.0.0.1:$PORT" \
    --no-server-metrics --no-gpu-telemetry --artifact-dir "$WORK/py" >"$WORK/py.out" 2>&1
start_mock --ttft 20 --itl 5
/usr/bin/time -f '%e %U %S %M' -o "$WORK/rs.time" \
    target/release/aiperf "${common[@]}" --url "http://127.0.0.1:$PORT" \
    --artifact-dir "$WORK/rs" >"$WORK/rs.out" 2>&1

python3 - "$WORK" <<'EOF'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
def load(name):
    summary = json.load(open(next((work / name).rglob("profile_export_aiperf.json"))))
    wall, user, sys_, rss = open(work / f"{name}.time").read().split()
    # GNU time counts the CPU of reaped child processes too, but its peak RSS is the
    # largest single process: the Python AIPerf runs about nine.
    return summary, float(wall), float(user) + float(sys_), int(rss) / 1024
py, py_wall, py_cpu, py_rss = load("py")
rs, rs_wall, rs_cpu, rs_rss = load("rs")
rows = [("time_to_first_token", "avg"), ("time_to_first_token", "p99"),
        ("inter_token_latency", "avg"), ("request_latency", "avg"),
        ("request_throughput", "avg"), ("output_token_throughput", "avg")]
print(f"{'metric':<32}{'Python AIPerf':>16}{'aiperf-rs':>14}")
for tag, stat in rows:
    print(f"{tag + ' ' + stat:<32}{py[tag][stat]:>16.3f}{rs[tag][stat]:>14.3f}")
print(f"{'wall time (s)':<32}{py_wall:>16.1f}{rs_wall:>14.1f}")
print(f"{'client CPU (s, all processes)':<32}{py_cpu:>16.1f}{rs_cpu:>14.1f}")
print(f"{'peak RSS (MB, largest process)':<32}{py_rss:>16.0f}{rs_rss:>14.0f}")
missing = sorted(k for k in py if k not in rs and not k.startswith("http_req_"))
print("keys in the Python summary that aiperf-rs does not write (http_req_* aside):", missing or "none")
EOF
