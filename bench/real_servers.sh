#!/usr/bin/env bash
# aiperf-rs and the Python AIPerf 0.13 side by side against real OpenAI-compatible servers
# that run on this machine's CPU: llama.cpp's llama-server and Hugging Face
# `transformers serve`, each serving a tiny random Qwen3 with the real Qwen3 tokenizer
# (../shared/realservers). Both tools get identical flags; the table shows what each saw.
# A benchmark, not part of CI: the servers take about 15 minutes and 6 GB to set up.
#
#   bash bench/real_servers.sh --setup          # once: build/download the servers and install
#                                               # the Python AIPerf into a throw-away venv
#   bash bench/real_servers.sh [REQUESTS] [CONCURRENCY]    # default 30 and 4
#
# AIPERF_REAL_SERVERS="llama-server" limits the servers; AIPERF_PY_VENV moves the venv;
# AIPERF_REALSERVERS_DIR points at another copy of the server scripts; AIPERF_BENCH_KEEP=1
# keeps every run's artifacts and console output.
set -euo pipefail
cd "$(dirname "$0")/.."

SETUP=0
if [ "${1:-}" = "--setup" ]; then
    SETUP=1
    shift
fi
REQUESTS=${1:-30}
CONCURRENCY=${2:-4}
SERVERS=${AIPERF_REAL_SERVERS:-"llama-server transformers"}
REALSERVERS=${AIPERF_REALSERVERS_DIR:-../shared/realservers}
QWEN3=$(cd ../shared/tokenizers/qwen3 && pwd)
VENV=${AIPERF_PY_VENV:-/tmp/aiperf-py-venv}

if [ "$SETUP" = 1 ]; then
    for server in $SERVERS; do
        bash "$REALSERVERS/$server.sh" setup
    done
    if [ ! -x "$VENV/bin/aiperf" ]; then
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q aiperf==0.13.0
    fi
    exit 0
fi
if [ ! -x "$VENV/bin/aiperf" ]; then
    echo "the Python AIPerf is not installed in $VENV: run 'bash bench/real_servers.sh --setup'" >&2
    exit 1
fi

cargo build --release -q -p aiperf-cli
AIPERF=$(pwd)/target/release/aiperf

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
    if [ -n "${AIPERF_BENCH_KEEP:-}" ]; then echo "runs kept in $WORK/runs" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# Both tools load the real Qwen3 tokenizer by name from a Hugging Face cache made here
# (the Python tool rejects a plain directory path as an invalid repository id), offline.
export HF_HOME="$WORK/hf" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
TOKENIZER=local/qwen3
snapshot="$HF_HOME/hub/models--local--qwen3/snapshots/0000000000000000000000000000000000000000"
mkdir -p "$snapshot" "$HF_HOME/hub/models--local--qwen3/refs"
cp "$QWEN3/tokenizer.json" "$QWEN3/tokenizer_config.json" "$snapshot/"
echo '{"model_type": "qwen3"}' >"$snapshot/config.json" # transformers' AutoTokenizer wants it
printf %s 0000000000000000000000000000000000000000 >"$HF_HOME/hub/models--local--qwen3/refs/main"

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# run_both SERVER CASE ARGS…: the same `aiperf profile` with both tools, artifacts in
# $WORK/SERVER/CASE/{py,rs}.
run_both() {
    local server=$1 case=$2
    shift 2
    local dir="$WORK/runs/$server/$case"
    mkdir -p "$dir"
    local common=(profile -m "$MODEL" --url "$URL" --tokenizer "$TOKENIZER"
        --concurrency "$CONCURRENCY" --request-count "$REQUESTS" --isl 64 --osl 32
        --random-seed 42 --ui-type none --no-gpu-telemetry "$@")
    echo "   $server $case" >&2
    "$VENV/bin/aiperf" "${common[@]}" --artifact-dir "$dir/py" >"$dir/py.out" 2>&1 || true
    "$AIPERF" "${common[@]}" --artifact-dir "$dir/rs" >"$dir/rs.out" 2>&1 || true
}

for server in $SERVERS; do
    case $server in
        llama-server) MODEL=tiny-qwen3 ;;
        transformers) MODEL=tiny/qwen3-random ;;
        *) echo "unknown server $server" >&2; exit 2 ;;
    esac
    PORT=$(free_port)
    URL="http://127.0.0.1:$PORT"
    echo "== $server on $URL" >&2
    SERVER_PID=$(bash "$REALSERVERS/$server.sh" start "$PORT")
    greedy=(--extra-inputs temperature:0)
    run_both "$server" chat-stream --endpoint-type chat --streaming "${greedy[@]}"
    run_both "$server" chat "${greedy[@]}" --endpoint-type chat
    run_both "$server" completions-stream --endpoint-type completions --streaming "${greedy[@]}"
    run_both "$server" completions --endpoint-type completions "${greedy[@]}"
    run_both "$server" chat-stream-server-tokens --endpoint-type chat --streaming \
        --use-server-token-count "${greedy[@]}"
    # Exact output lengths: llama-server honours ignore_eos; transformers serve rejects
    # every field outside the OpenAI schema (422), so it has no such case.
    if [ "$server" = llama-server ]; then
        run_both "$server" chat-stream-ignore-eos --endpoint-type chat --streaming \
            --extra-inputs ignore_eos:true "${greedy[@]}"
    fi
    kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
done

python3 - "$WORK/runs" "$REQUESTS" <<'EOF'
import csv, json, pathlib, sys

work, requests = pathlib.Path(sys.argv[1]), int(sys.argv[2])

def summary(run):
    path = run / "profile_export_aiperf.json"
    return json.loads(path.read_text()) if path.exists() else None

def stat(s, tag, key="avg"):
    value = (s or {}).get(tag, {}).get(key) if isinstance((s or {}).get(tag), dict) else None
    return "-" if value is None else f"{value:.1f}"

def errors(s):
    if s is None:
        return "no summary written"
    found = s.get("error_summary") or []
    if not found:
        return ""
    first = found[0]["error_details"]
    text = f'{first.get("code")} {first.get("message", "")}'.strip()
    return (text[:60] + "…") if len(text) > 60 else text

def ok(s):
    if s is None:
        return "-"
    good = (s.get("request_count") or {}).get("avg") or 0
    bad = (s.get("error_request_count") or {}).get("avg") or 0
    return f"{int(good)}/{int(good + bad)}"

def server_metric_names(run):
    path = run / "server_metrics_export.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    names = set()
    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if ":" in key or key.endswith(("_total", "_seconds")):
                    names.add(key)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
    walk(data)
    return names

header = ("server", "case", "tool", "ok/sent", "TTFT avg", "TTFT p99", "ITL avg",
          "OSL avg", "req/s", "retries", "first error")
rows = []
for server in sorted(p for p in work.iterdir() if p.is_dir()):
    for case in sorted(p for p in server.iterdir() if p.is_dir()):
        for tool, label in (("py", "Python"), ("rs", "aiperf-rs")):
            s = summary(case / tool)
            rows.append((server.name, case.name, label, ok(s),
                         stat(s, "time_to_first_token"), stat(s, "time_to_first_token", "p99"),
                         stat(s, "inter_token_latency"), stat(s, "output_sequence_length"),
                         stat(s, "request_throughput"),
                         str((s or {}).get("connection_retries", "-")), errors(s)))
widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
for row in [header] + rows:
    print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())

print()
print("server metrics (names in server_metrics_export.json):")
for server in sorted(p for p in work.iterdir() if p.is_dir()):
    case = server / "chat-stream"
    py, rs = server_metric_names(case / "py"), server_metric_names(case / "rs")
    if py is None and rs is None:
        print(f"  {server.name}: neither tool wrote server metrics")
        continue
    py, rs = py or set(), rs or set()
    print(f"  {server.name}: Python {len(py)}, aiperf-rs {len(rs)}, shared {len(py & rs)}")
    if py - rs:
        print(f"    only Python: {sorted(py - rs)}")
    if rs - py:
        print(f"    only aiperf-rs: {sorted(rs - py)}")
EOF
