# Shared by the bench scripts; source it from the repository root. Gives a scratch
# directory WORK, removed on exit, and start_mock: a mock server on a free port, stopped
# on exit or when the next one starts. MOCK names the mock server binary (default: the
# release build).

WORK=$(mktemp -d)
MOCK_PID=""
cleanup() { [ -n "$MOCK_PID" ] && kill "$MOCK_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# start_mock ARGS…: a fresh mock server on a free port; sets PORT and URL.
start_mock() {
    [ -n "$MOCK_PID" ] && kill "$MOCK_PID" 2>/dev/null && wait "$MOCK_PID" 2>/dev/null || true
    PORT=$(free_port)
    URL="http://127.0.0.1:$PORT"
    "${MOCK:-target/release/aiperf-mock-server}" --port "$PORT" --random-seed 1 "$@" \
        >"$WORK/mock.log" 2>&1 &
    MOCK_PID=$!
    for _ in $(seq 100); do
        curl -sf "$URL/health" >/dev/null && return 0
        sleep 0.05
    done
    echo "the mock server did not start" >&2
    cat "$WORK/mock.log" >&2
    exit 1
}
