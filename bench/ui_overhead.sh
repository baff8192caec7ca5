#!/usr/bin/env bash
# What the live dashboard costs the benchmark: the same streaming run with `--ui-type none`
# and with `--ui-type dashboard` on a pseudo-terminal (util-linux `script`), alternating,
# against one mock server in its own process (by default TTFT 20 ms, ITL 5 ms), so that the client's
# CPU time is the client's alone.
# Usage: bash bench/ui_overhead.sh [runs per UI, default 3] [requests, default 3000]
# MOCK_ARGS replaces the mock's timing, e.g. MOCK_ARGS=--fast for a run
# that the client's CPU limits.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-3}
REQUESTS=${2:-3000}

cargo build --release -q -p aiperf-cli -p aiperf-mock-server

# shellcheck source=bench/lib.sh
. bench/lib.sh
# Word splitting intended: MOCK_ARGS holds several flags.
# shellcheck disable=SC2086
start_mock ${MOCK_ARGS:---ttft 20 --itl 5}

# One line: it becomes part of the command `script` runs. Both UIs run on the terminal.
common="profile -m mock-model --tokenizer builtin --url http://127.0.0.1:$PORT --streaming"
common+=" --concurrency 64 --request-count $REQUESTS --isl 128 --osl 64 --random-seed 42"
for run in $(seq "$RUNS"); do
    for ui in none dashboard; do
        out="$WORK/$ui-$run"
        # `time` inside the terminal measures aiperf alone, not `script`.
        cmd="stty cols 120 rows 40; /usr/bin/time -f '%e %U %S' -o $out.time"
        cmd+=" $PWD/target/release/aiperf $common --ui-type $ui --artifact-dir $out"
        script -qefc "$cmd" /dev/null </dev/null >"$out.screen" 2>&1
    done
done

python3 - "$WORK" "$RUNS" <<'PY'
import json, sys, pathlib, statistics
work, runs = pathlib.Path(sys.argv[1]), int(sys.argv[2])
print(f"{'ui':<10} {'run':>3} {'req/s':>8} {'TTFT p50 ms':>12} {'TTFT p99 ms':>12} {'wall s':>7} {'CPU s':>6}")
rows = {}
for ui in ("none", "dashboard"):
    for run in range(1, runs + 1):
        summary = json.load(open(work / f"{ui}-{run}" / "profile_export_aiperf.json"))
        wall, user, sys_ = map(float, open(work / f"{ui}-{run}.time").read().split()[-3:])
        row = (summary["request_throughput"]["avg"], summary["time_to_first_token"]["p50"],
               summary["time_to_first_token"]["p99"], wall, user + sys_)
        rows.setdefault(ui, []).append(row)
        print(f"{ui:<10} {run:>3} {row[0]:>8.1f} {row[1]:>12.3f} {row[2]:>12.3f} {row[3]:>7.2f} {row[4]:>6.2f}")
for ui, values in rows.items():
    med = [statistics.median(column) for column in zip(*values)]
    print(f"{ui:<10} med {med[0]:>8.1f} {med[1]:>12.3f} {med[2]:>12.3f} {med[3]:>7.2f} {med[4]:>6.2f}")
PY
