#!/usr/bin/env bash
# Client-compatibility check: build aiperf-mock-server, start it on a free port, and run
# openai_client.py (official `openai` Python package, in a throw-away venv) against it.
# Exit status: that of the script (0 = every check passed).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"

cargo build -q -p aiperf-mock-server
BIN="$ROOT/target/debug/aiperf-mock-server"

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

# --port 0 lets the OS pick a free port; the server prints "… listening on http://IP:PORT".
"$BIN" --port 0 --ttft 5 --itl 1 --log-level warn >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!
for _ in $(seq 1 100); do
    grep -q "listening on" "$WORK/server.out" 2>/dev/null && break
    sleep 0.05
done
URL="$(sed -n 's/.*listening on //p' "$WORK/server.out")"
if [ -z "$URL" ]; then
    echo "aiperf-mock-server did not start:" >&2
    cat "$WORK/server.err" >&2
    exit 1
fi
echo "mock server: $URL"

python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check openai

set +e
"$WORK/venv/bin/python" "$HERE/openai_client.py" "$URL/v1"
STATUS=$?
set -e
exit "$STATUS"
