#!/usr/bin/env bash
# Speed benchmark of aiperf-mock-server: how many requests/s and tokens/s it serves in --fast
# mode (no simulated latency), so we know it is never the bottleneck of a benchmark.
#
#   bench/mock_server.sh            # 10 s per scenario, 64 connections, 2 load threads
#   DURATION=5 CONNECTIONS=128 bench/mock_server.sh
#
# Uses wrk (installed with apt-get when missing), or oha when that is on PATH instead.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION="${DURATION:-10}"
CONNECTIONS="${CONNECTIONS:-64}"
THREADS="${THREADS:-2}"
MAX_TOKENS=128
PACED_CONNECTIONS="${PACED_CONNECTIONS:-512}"

echo "== building aiperf-mock-server (release)"
cargo build --release -q -p aiperf-mock-server
BIN="target/release/aiperf-mock-server"

TOOL=""
if command -v wrk >/dev/null; then
    TOOL=wrk
elif command -v oha >/dev/null; then
    TOOL=oha
else
    echo "== installing wrk"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null
    $SUDO apt-get install -y -qq wrk >/dev/null
    TOOL=wrk
fi

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    local status=$?
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT

# Starts the server with the given flags on a free port (--port 0: it prints the bound address).
start_server() {
    "$BIN" --port 0 --log-level warn "$@" >"$WORK/server.out" 2>"$WORK/server.err" &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        grep -q "listening on" "$WORK/server.out" 2>/dev/null && break
        sleep 0.05
    done
    URL="$(sed -n 's/.*listening on //p' "$WORK/server.out")"
    [ -n "$URL" ] || { echo "server did not start:"; cat "$WORK/server.err"; exit 1; }
}
stop_server() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

start_server --fast
echo "== server at $URL (pid $SERVER_PID), $TOOL, ${DURATION}s per scenario, $CONNECTIONS connections"

NONSTREAM='{"model":"mock-model","messages":[{"role":"user","content":"Hello, how are you today?"}],"max_tokens":16}'
STREAM="{\"model\":\"mock-model\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello, how are you today?\"}],\"max_tokens\":$MAX_TOKENS,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"

# Prints requests/s of one scenario.
run_load() {
    local body="$1" name="$2" out="$WORK/$2.txt"
    if [ "$TOOL" = wrk ]; then
        cat >"$WORK/$name.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$body'
LUA
        wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s "$WORK/$name.lua" "$URL/v1/chat/completions" >"$out"
        grep -q "Non-2xx" "$out" && { echo "errors in $name:"; cat "$out"; exit 1; }
        awk '/Requests\/sec/ {print $2}' "$out"
    else
        oha --no-tui -z "${DURATION}s" -c "$CONNECTIONS" -m POST -H "Content-Type: application/json" \
            -d "$body" "$URL/v1/chat/completions" >"$out"
        awk '/Requests\/sec/ {print $2}' "$out"
    fi
}

# sanity: one streamed request has MAX_TOKENS content events
EVENTS=$(curl -sN "$URL/v1/chat/completions" -H 'Content-Type: application/json' -d "$STREAM" | grep -c '"content":" ')
[ "$EVENTS" -eq "$MAX_TOKENS" ] || { echo "expected $MAX_TOKENS content events, got $EVENTS"; exit 1; }

echo "== non-streaming chat (max_tokens 16)"
NS_RPS=$(run_load "$NONSTREAM" nonstream)
echo "== streaming chat (max_tokens $MAX_TOKENS, 1 token per SSE event)"
S_RPS=$(run_load "$STREAM" stream)
S_TPS=$(awk -v r="$S_RPS" -v n="$MAX_TOKENS" 'BEGIN {printf "%.0f", r * n}')

echo "== paced streaming chat (--ttft 20 --itl 5, max_tokens $MAX_TOKENS, $PACED_CONNECTIONS connections)"
curl -s "$URL/metrics" | grep -E '^aiperf_mock_(connections_accepted_total|tokens_generated_total) ' >"$WORK/fast_metrics.txt"
stop_server
start_server --ttft 20 --itl 5
CONNECTIONS="$PACED_CONNECTIONS"
P_RPS=$(run_load "$STREAM" paced)
P_IDEAL=$(awk -v c="$PACED_CONNECTIONS" -v n="$MAX_TOKENS" 'BEGIN {printf "%.1f", c / ((20 + (n - 1) * 5) / 1000)}')
P_TPS=$(awk -v r="$P_RPS" -v n="$MAX_TOKENS" 'BEGIN {printf "%.0f", r * n}')
P_LAT=$(awk '/Latency/ {print $2; exit}' "$WORK/paced.txt" 2>/dev/null || true)

CPU="$(nproc) cores, $(awk -F: '/model name/ {gsub(/^ /, "", $2); print $2; exit}' /proc/cpuinfo)"
echo
echo "machine:                 $CPU (load generator and server share it)"
echo "non-streaming chat:      $NS_RPS requests/s"
echo "streaming chat:          $S_RPS requests/s"
echo "streaming tokens:        $S_TPS tokens/s (= requests/s x $MAX_TOKENS)"
echo "paced streaming:         $P_RPS requests/s of an ideal $P_IDEAL (each request lasts 20 + $((MAX_TOKENS - 1)) x 5 ms = $((20 + (MAX_TOKENS - 1) * 5)) ms), $P_TPS tokens/s, one SSE event per token; mean latency ${P_LAT:-n/a}"
cat "$WORK/fast_metrics.txt"
