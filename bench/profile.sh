#!/usr/bin/env bash
# Speed, accuracy and memory of `aiperf profile` against our mock server on this machine.
# Both processes share the machine's cores. Prints one line per figure; bench/README.md
# records a run. Usage: bash bench/profile.sh [seconds per timed run, default 10]
# BENCH_SECTIONS="2 3" runs only those sections; AIPERF_BENCH_PAIRS sets the rounds of 1
# (default 3), AIPERF_BENCH_MILLION the size of 6, AIPERF_BENCH_STREAMS the concurrency of
# 8. AIPERF_BENCH_BIN measures another aiperf binary (a build of an older commit, for
# before/after figures); with AIPERF_BENCH_MOCK (a mock server binary) too, nothing is
# built. Sections 9 to 12 capture loopback traffic with tcpdump (root); 11 and 12 need a
# binary with --no-socket-reader.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_RUN=${1:-10}
MILLION=${AIPERF_BENCH_MILLION:-1000000}
STREAMS=${AIPERF_BENCH_STREAMS:-10000}
PAIRS=${AIPERF_BENCH_PAIRS:-3}

AIPERF=${AIPERF_BENCH_BIN:-target/release/aiperf}
MOCK=${AIPERF_BENCH_MOCK:-target/release/aiperf-mock-server}
if [ -z "${AIPERF_BENCH_BIN:-}" ] || [ -z "${AIPERF_BENCH_MOCK:-}" ]; then
    cargo build --release -q -p aiperf-cli -p aiperf-mock-server
fi

# shellcheck source=bench/lib.sh
. bench/lib.sh

# run_aiperf NAME ARGS…: runs aiperf profile under /usr/bin/time into $WORK/NAME.
run_aiperf() {
    local name=$1
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/$name.time" \
        "$AIPERF" profile -m mock-model --url "$URL" --ui-type none --random-seed 1 \
        --artifact-dir "$WORK/$name" "$@" >"$WORK/$name.out" 2>&1
}

# json NAME PYTHON-EXPR: evaluates an expression over the run's summary `s` and records `r`.
json() {
    python3 - "$WORK/$1" "$2" <<'EOF'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
s = json.load(open(d / "profile_export_aiperf.json"))
def records():
    with open(d / "profile_export.jsonl") as f:
        for line in f:
            yield json.loads(line)
print(eval(sys.argv[2]))
EOF
}
cpu_seconds() { awk '{print $2 + $3}' "$WORK/$1.time"; }
peak_rss_mb() { awk '{printf "%.0f", $4 / 1024}' "$WORK/$1.time"; }
mock_cpu_seconds() { awk -v tick="$(getconf CLK_TCK)" '{print ($14 + $15) / tick}' "/proc/$MOCK_PID/stat"; }
mock_metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

section_1() {
    if ! command -v oha >/dev/null; then
        echo "installing oha (cargo install oha --locked)…"
        cargo install oha --locked -q
    fi
    echo "== 1. non-streaming chat, concurrency 64, ${SECONDS_PER_RUN} s (mock --fast), $PAIRS alternating rounds"
    start_mock --fast
    # The same request: aiperf's headers (accept, and ids of the same length) beside oha's
    # own user-agent and accept-encoding. Without them the mock spends less per request.
    local body request_id correlation_id round mock_before mock_ours oha_rps mock_oha
    request_id=$(python3 -c 'import uuid;print(uuid.uuid4())')
    correlation_id=$(python3 -c 'import uuid;print(uuid.uuid4())')
    : >"$WORK/rounds"
    for round in $(seq "$PAIRS"); do
        mock_before=$(mock_cpu_seconds)
        run_aiperf "nonstream$round" --concurrency 64 --benchmark-duration "$SECONDS_PER_RUN" \
            --isl 128 --osl 128
        mock_ours=$(python3 -c "print($(mock_cpu_seconds) - $mock_before)")
        body=$(python3 -c 'import json,sys;print(json.dumps(json.load(open(sys.argv[1]))["data"][0]["payloads"][0]))' \
            "$WORK/nonstream$round/inputs.json")
        mock_before=$(mock_cpu_seconds)
        oha_rps=$(/usr/bin/time -f '%e %U %S %M' -o "$WORK/oha$round.time" \
            oha --no-tui --output-format json -z "${SECONDS_PER_RUN}s" -c 64 -m POST \
            -H 'Content-Type: application/json' -H 'Accept: application/json' \
            -H "X-Request-ID: $request_id" -H "X-Correlation-ID: $correlation_id" \
            -d "$body" "$URL/v1/chat/completions" \
            | python3 -c 'import json,sys;print(json.load(sys.stdin)["summary"]["requestsPerSec"])')
        mock_oha=$(python3 -c "print($(mock_cpu_seconds) - $mock_before)")
        # The same run without the per-record files (profile_export.jsonl and .parquet):
        # what they cost is the difference between the two ratios.
        run_aiperf "summary$round" --concurrency 64 --benchmark-duration "$SECONDS_PER_RUN" \
            --isl 128 --osl 128 --export-level summary
        echo "$(json "nonstream$round" 's["request_throughput"]["avg"], s["request_count"]["avg"]')" \
            "$(cpu_seconds "nonstream$round") $mock_ours $oha_rps $(cpu_seconds "oha$round") $mock_oha" \
            "$(json "summary$round" 's["request_throughput"]["avg"], s["request_count"]["avg"]')" \
            "$(cpu_seconds "summary$round")" | tr -d '(),' >>"$WORK/rounds"
    done
    # Client and server share the cores, so a request costs the client's CPU and the
    # mock's: the CPU figures say where a ratio comes from. The medians are the figures:
    # the machine's speed drifts between runs (oha alone by a quarter within an hour).
    python3 - "$WORK/rounds" "$SECONDS_PER_RUN" <<'EOF'
import statistics, sys
seconds = float(sys.argv[2])
ratios, bare_ratios = [], []
for i, line in enumerate(open(sys.argv[1]), 1):
    rps, n, cpu, mock, oha_rps, oha_cpu, oha_mock, bare_rps, bare_n, bare_cpu = map(float, line.split())
    oha_n = oha_rps * seconds
    ratios.append(rps / oha_rps)
    bare_ratios.append(bare_rps / oha_rps)
    print(f"round {i}: aiperf {rps:.0f} req/s, oha {oha_rps:.0f} req/s, ratio {rps / oha_rps:.2f}; "
          f"--export-level summary {bare_rps:.0f} req/s, ratio {bare_rps / oha_rps:.2f}")
    print(f"  CPU per request: aiperf {cpu / n * 1e6:.1f} µs + mock {mock / n * 1e6:.1f} µs, "
          f"oha {oha_cpu / oha_n * 1e6:.1f} µs + mock {oha_mock / oha_n * 1e6:.1f} µs; "
          f"aiperf without the per-record files {bare_cpu / bare_n * 1e6:.1f} µs "
          "(aiperf's include its start-up and its files)")
print(f"median ratio to oha {statistics.median(ratios):.2f}, "
      f"with --export-level summary {statistics.median(bare_ratios):.2f}")
EOF
}

section_2() {
    echo "== 2. streaming chat, ISL 128 / OSL 128, concurrency 64, zero latency, ${SECONDS_PER_RUN} s"
    start_mock --fast
    run_aiperf stream --streaming --concurrency 64 --benchmark-duration "$SECONDS_PER_RUN" --isl 128 --osl 128
    requests=$(json stream 'int(s["request_count"]["avg"])')
    rps=$(json stream 's["request_throughput"]["avg"]')
    python3 -c "
cpu = $(cpu_seconds stream)
print(f'{$rps:.0f} req/s, {$rps * 128:.0f} content events/s, {cpu / $requests * 1000:.2f} client CPU s per 1,000 requests, peak RSS $(peak_rss_mb stream) MB')"
}

section_3() {
    echo "== 3. accuracy: mock TTFT 20 ms / ITL 5 ms, concurrency 64, streaming ISL 128 / OSL 128"
    start_mock --ttft 20 --itl 5
    run_aiperf accuracy --streaming --concurrency 64 --request-count 2000 --isl 128 --osl 128
    ttft=$(json accuracy 's["time_to_first_token"]["avg"]')
    itl=$(json accuracy 's["inter_token_latency"]["avg"]')
    truth_ttft=$(python3 -c "print(1000 * $(mock_metric aiperf_mock_time_to_first_token_seconds_sum) / $(mock_metric aiperf_mock_time_to_first_token_seconds_count))")
    truth_e2e=$(python3 -c "print(1000 * $(mock_metric aiperf_mock_request_latency_seconds_sum) / $(mock_metric aiperf_mock_request_latency_seconds_count))")
    python3 -c "
truth_itl = ($truth_e2e - $truth_ttft) / 127
print(f'TTFT reported {$ttft:.3f} ms, sent by the mock after {$truth_ttft:.3f} ms (difference {$ttft - $truth_ttft:+.3f} ms)')
print(f'ITL reported {$itl:.4f} ms, sent by the mock every {truth_itl:.4f} ms (difference {$itl - truth_itl:+.4f} ms)')
print('peak RSS $(peak_rss_mb accuracy) MB')"
}

section_4() {
    echo "== 4. --request-rate 1000 --arrival-pattern constant for ${SECONDS_PER_RUN} s (mock --fast)"
    start_mock --fast
    run_aiperf rate --request-rate 1000 --arrival-pattern constant --benchmark-duration "$SECONDS_PER_RUN" --isl 64 --osl 16
    json rate '(lambda starts, lag: "achieved send rate %.1f req/s; schedule lag p50 %.3f ms, p99 %.3f ms, max %.3f ms; %d of %d later than 1 ms" % ((len(starts) - 1) / ((max(starts) - min(starts)) / 1e9), lag["p50"], lag["p99"], lag["max"], lag["late_count"], len(starts)))([r["metadata"]["request_start_ns"] for r in records()], s["schedule_lag"])'
}

# first_request_ms NAME: process start (the shell's clock just before it) to the first
# request's send stamp, in ms; ran with run_aiperf NAME after `started` was set.
first_request_ms() {
    local first
    first=$(json "$1" 'min(r["metadata"]["request_start_ns"] for r in records())')
    python3 -c "print(f'{($first - $started) / 1e6:.0f}')"
}

# median_of_3 NAME ARGS…: runs aiperf three times, prints the median time to first request.
median_of_3() {
    local name=$1 times=()
    shift
    for run in 1 2 3; do
        started=$(date +%s%N)
        run_aiperf "$name$run" "$@"
        times+=("$(first_request_ms "$name$run")")
        rm -f "$WORK/$name$run/inputs.json" # up to 700 MB for a long trace
    done
    printf '%s\n' "${times[@]}" | sort -n | sed -n 2p
}

section_5() {
    echo "== 5. process start to first request (median of 3; goal < 500 ms)"
    start_mock --fast
    echo "1,000 synthetic prompts of ISL 550, builtin tokenizer: $(median_of_3 startup \
        --num-dataset-entries 1000 --isl 550 --osl 16 --request-count 1) ms"
    python3 bench/long_context_trace.py "$WORK/trace.jsonl" 2>"$WORK/trace.stats"
    echo "mooncake trace, $(cat "$WORK/trace.stats"): $(median_of_3 trace \
        --input-file "$WORK/trace.jsonl" --custom-dataset-type mooncake_trace \
        --request-count 1) ms, peak RSS $(peak_rss_mb trace1) MB"
    python3 bench/agentic_traces.py tracelab "$WORK/tracelab.jsonl" 2>"$WORK/tracelab.stats"
    echo "tracelab trace, $(cat "$WORK/tracelab.stats"): $(median_of_3 tracelab \
        --input-file "$WORK/tracelab.jsonl" --custom-dataset-type tracelab \
        --request-count 1) ms, peak RSS $(peak_rss_mb tracelab1) MB"
    python3 bench/agentic_traces.py weka "$WORK/weka" 2>"$WORK/weka.stats"
    echo "weka traces, $(cat "$WORK/weka.stats"): $(median_of_3 weka \
        --input-file "$WORK/weka" --custom-dataset-type weka_trace \
        --request-count 1) ms, peak RSS $(peak_rss_mb weka1) MB"
}

# first_request_s NAME: seconds from launching the run to its first request's start (the
# earliest start among the first records written, which come out in completion order).
first_request_s() {
    python3 - "$WORK/$1" "$(cat "$WORK/$1.launched")" <<'EOF'
import itertools, json, pathlib, sys
d, launched = pathlib.Path(sys.argv[1]), int(sys.argv[2])
with open(d / "profile_export.jsonl") as f:
    lines = itertools.islice(f, 1000)
    first = min(json.loads(line)["metadata"]["request_start_ns"] for line in lines)
print(f"{(first - launched) / 1e9:.2f}")
EOF
}

section_6() {
    echo "== 6. memory: $((MILLION / 10)), ${MILLION} and $((MILLION * 2)) non-streaming requests against the --fast mock, concurrency 64, one dataset entry per request (the default sizing); then ${MILLION} and $((MILLION * 2)) with 1,000 entries"
    start_mock --fast
    local shape=(--concurrency 64 --isl 32 --osl 8) run name
    for run in tenth:$((MILLION / 10)) one:$MILLION two:$((MILLION * 2)); do
        name=default_${run%%:*}
        date +%s%N >"$WORK/$name.launched"
        run_aiperf "$name" "${shape[@]}" --request-count "${run#*:}"
    done
    run_aiperf entries_one "${shape[@]}" --request-count "$MILLION" --num-dataset-entries 1000
    run_aiperf entries_two "${shape[@]}" --request-count "$((MILLION * 2))" \
        --num-dataset-entries 1000
    requests=$(json default_two 'int(s["request_count"]["avg"])')
    python3 -c "
rss = {name: int(open('$WORK/' + name + '.time').read().split()[3]) / 1024
       for name in ['default_tenth', 'default_one', 'default_two', 'entries_one', 'entries_two']}
def beyond(one, two):
    return (rss[two] - rss[one]) * 1024 * 1024 / $MILLION
print(f'one entry per request (default): peak RSS {rss[\"default_tenth\"]:.0f} / '
      f'{rss[\"default_one\"]:.0f} / {rss[\"default_two\"]:.0f} MB ($requests requests in '
      f'$(awk '{print $1}' "$WORK/default_two.time") s), '
      f'{beyond(\"default_one\", \"default_two\"):.0f} bytes per request beyond $MILLION; '
      f'first request $(first_request_s default_tenth) / $(first_request_s default_one) / '
      f'$(first_request_s default_two) s after launch')
print(f'1,000 entries: peak RSS {rss[\"entries_one\"]:.0f} / {rss[\"entries_two\"]:.0f} MB, '
      f'{beyond(\"entries_one\", \"entries_two\"):.0f} bytes per request beyond $MILLION '
      f'(exact percentiles up to 2^20 values per metric)')"
}

section_7() {
    echo "== 7. memory: 1,000 streaming requests against the embedded mock (--url mock), concurrency 64 (goal < 60 MB)"
    local saved_url=${URL:-}
    URL=mock
    run_aiperf small --streaming --concurrency 64 --request-count 1000 --isl 128 --osl 64
    run_aiperf small_server_count --streaming --concurrency 64 --request-count 1000 --isl 128 --osl 64 \
        --use-server-token-count
    URL=$saved_url
    echo "peak RSS $(peak_rss_mb small) MB; with --use-server-token-count $(peak_rss_mb small_server_count) MB"
}

section_8() {
    echo "== 8. memory: ${STREAMS} concurrent streams, mock TTFT 1 s / ITL 10 ms in its own process, ISL 128 / OSL 128 (goal < 300 MB)"
    start_mock --ttft 1000 --itl 10
    run_aiperf streams --streaming --concurrency "$STREAMS" --request-count "$STREAMS" --isl 128 --osl 128
    run_aiperf streams_tenth --streaming --concurrency "$((STREAMS / 10))" --request-count "$((STREAMS / 10))" \
        --isl 128 --osl 128
    python3 -c "
big, small = $(awk '{print $4}' "$WORK/streams.time"), $(awk '{print $4}' "$WORK/streams_tenth.time")
per_stream = (big - small) / ($STREAMS - $STREAMS // 10)
print(f'peak RSS {big / 1024:.0f} MB ({$STREAMS // 10} streams: {small / 1024:.0f} MB; {per_stream:.1f} KB per stream); request error rate $(json streams 's["request_error_rate"]["avg"]') %')"
}

# wire_run NAME CONCURRENCY REQUESTS [ARGS…]: streaming ISL 128 / OSL 32 against the running
# mock while tcpdump captures the loopback; prints our TTFT and ITL (mean, p99) next to the
# wire's (bench/pcap_truth.py: request's last packet → first content packet; first → last
# content packet over the deltas between); then TTFT again for the requests on reused
# connections only (a new connection's set-up counts in ours, as in the Python AIPerf, and
# not on the wire).
wire_run() {
    local name=$1 concurrency=$2 requests=$3 capture
    shift 3
    tcpdump -i lo -s 0 -B 131072 -w "$WORK/$name.pcap" "tcp port $PORT" 2>"$WORK/$name.tcpdump" &
    capture=$!
    sleep 1
    run_aiperf "$name" --streaming --concurrency "$concurrency" --request-count "$requests" \
        --isl 128 --osl 32 "$@"
    sleep 0.5
    kill -INT "$capture"
    wait "$capture" || true
    python3 - "$WORK/$name" "$(python3 bench/pcap_truth.py "$WORK/$name.pcap" "$PORT")" \
        "$(grep -o '[0-9]* packets dropped by kernel' "$WORK/$name.tcpdump" | cut -d' ' -f1)" <<'EOF'
import json, sys
sys.path.insert(0, "bench")
from pcap_truth import percentile
ours = json.load(open(sys.argv[1] + "/profile_export_aiperf.json"))
def records():
    with open(sys.argv[1] + "/profile_export.jsonl") as f:
        for l in f:
            yield json.loads(l)
wire, dropped = json.loads(sys.argv[2]), sys.argv[3] or "?"
line = []
for label, metric, key in (("TTFT", "time_to_first_token", "ttft"), ("ITL", "inter_token_latency", "itl")):
    o, w = ours[metric], wire[key]
    line.append(f"{label} ours {o['avg']:.3f} / {o['p99']:.3f} ms, wire {w['mean']:.3f} / {w['p99']:.3f} ms "
                f"(mean {o['avg'] - w['mean']:+.3f}, p99 {o['p99'] - w['p99']:+.3f})")
reused = sorted(r["metrics"]["time_to_first_token"]["value"] for r in records()
                if r["metrics"].get("http_req_connection_reused", {}).get("value")
                and "time_to_first_token" in r["metrics"])
o = {"avg": sum(reused) / len(reused), "p99": percentile(reused, 0.99)} if reused else {"avg": float("nan"), "p99": float("nan")}
w = wire["ttft_reused"]
line.append(f"reused connections only: TTFT ours {o['avg']:.3f} / {o['p99']:.3f} ms, wire {w['mean']:.3f} / {w['p99']:.3f} ms "
            f"(mean {o['avg'] - w['mean']:+.3f}, p99 {o['p99'] - w['p99']:+.3f})")
print("; ".join(line) + f"; {wire['ttft']['n']} requests on the wire, {dropped} packets dropped")
EOF
}

section_9() {
    echo "== 9. stamps against the wire: mock TTFT 20 ms / ITL 5 ms, streaming ISL 128 / OSL 32, mean / p99"
    start_mock --ttft 20 --itl 5
    for run in 1:100 64:2000 512:5120; do
        printf 'concurrency %s: ' "${run%%:*}"
        wire_run "wire${run%%:*}" "${run%%:*}" "${run##*:}"
    done
}

section_10() {
    local all
    all=$(nproc)
    echo "== 10. --workers-max 1, 2 and $all (all CPUs): capacity against the --fast mock, concurrency 64, ${SECONDS_PER_RUN} s; stamps against the wire at concurrency 64"
    for threads in $(printf '%s\n' 1 2 "$all" | sort -nu); do
        start_mock --fast
        run_aiperf "plain$threads" --concurrency 64 --benchmark-duration "$SECONDS_PER_RUN" \
            --isl 128 --osl 128 --workers-max "$threads"
        run_aiperf "streamed$threads" --streaming --concurrency 64 --benchmark-duration "$SECONDS_PER_RUN" \
            --isl 128 --osl 128 --workers-max "$threads"
        printf '%s thread(s): non-streaming %.0f req/s (client CPU %.1f s), streaming %.0f req/s (client CPU %.1f s)\n' \
            "$threads" "$(json "plain$threads" 's["request_throughput"]["avg"]')" "$(cpu_seconds "plain$threads")" \
            "$(json "streamed$threads" 's["request_throughput"]["avg"]')" "$(cpu_seconds "streamed$threads")"
        start_mock --ttft 20 --itl 5
        printf '  stamps: '
        wire_run "threads$threads" 64 2000 --workers-max "$threads"
    done
}

# per_thousand NAME: client CPU seconds per 1,000 requests of a run.
per_thousand() {
    python3 -c "print(f'{$(cpu_seconds "$1") / $(json "$1" 'int(s["request_count"]["avg"])') * 1000:.2f}')"
}

section_11() {
    echo "== 11. the socket reader on and off, alternating twice: capacity against the --fast mock (concurrency 64, ${SECONDS_PER_RUN} s) and stamps against the wire (mock TTFT 20 ms / ITL 5 ms, section 9's runs)"
    local flag
    for pass in 1 2; do
        for mode in on off; do
            flag=()
            [ "$mode" = off ] && flag=(--no-socket-reader)
            start_mock --fast
            run_aiperf "plain_$mode$pass" --concurrency 64 --benchmark-duration "$SECONDS_PER_RUN" \
                --isl 128 --osl 128 "${flag[@]}"
            run_aiperf "streamed_$mode$pass" --streaming --concurrency 64 \
                --benchmark-duration "$SECONDS_PER_RUN" --isl 128 --osl 128 "${flag[@]}"
            printf 'reader %s, pass %s: non-streaming %.0f req/s (client CPU %s s per 1,000), streaming %.0f req/s (client CPU %s s per 1,000)\n' \
                "$mode" "$pass" "$(json "plain_$mode$pass" 's["request_throughput"]["avg"]')" \
                "$(per_thousand "plain_$mode$pass")" \
                "$(json "streamed_$mode$pass" 's["request_throughput"]["avg"]')" \
                "$(per_thousand "streamed_$mode$pass")"
            start_mock --ttft 20 --itl 5
            for run in 1:100 64:2000 512:5120; do
                printf '  concurrency %s: ' "${run%%:*}"
                wire_run "wire_$mode${pass}_${run%%:*}" "${run%%:*}" "${run##*:}" "${flag[@]}"
            done
        done
    done
}

# latency_wire_run NAME ARGS…: 2,000 non-streaming requests (ISL 128 / OSL 8) at
# concurrency 64 against the running mock while tcpdump captures the loopback; prints our
# request latency next to the wire's (bench/pcap_truth.py: request's last packet → the
# response's last packet), then request by request (matched by X-Request-ID) on reused
# connections: ours − wire, mean / p99 / largest, in ms.
latency_wire_run() {
    local name=$1 capture
    shift
    tcpdump -i lo -s 0 -B 131072 -w "$WORK/$name.pcap" "tcp port $PORT" 2>"$WORK/$name.tcpdump" &
    capture=$!
    sleep 1
    run_aiperf "$name" --concurrency 64 --request-count 2000 --isl 128 --osl 8 "$@"
    sleep 0.5
    kill -INT "$capture"
    wait "$capture" || true
    python3 - "$WORK/$name" "$(python3 bench/pcap_truth.py "$WORK/$name.pcap" "$PORT" "$WORK/$name.wire.json")" \
        "$(grep -o '[0-9]* packets dropped by kernel' "$WORK/$name.tcpdump" | cut -d' ' -f1)" <<'EOF'
import json, sys
sys.path.insert(0, "bench")
from pcap_truth import percentile
run, wire, dropped = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] or "?"
ours = json.load(open(run + "/profile_export_aiperf.json"))["request_latency"]
by_id = json.load(open(run + ".wire.json"))
differences = []
with open(run + "/profile_export.jsonl") as f:
    for line in f:
        record = json.loads(line)
        metrics, request_id = record["metrics"], record["metadata"].get("x_request_id")
        if metrics.get("http_req_connection_reused", {}).get("value") and request_id in by_id:
            differences.append(metrics["request_latency"]["value"] - by_id[request_id])
differences.sort()
w = wire["latency"]
print(f"request latency ours {ours['avg']:.3f} / {ours['p99']:.3f} ms, wire {w['mean']:.3f} / {w['p99']:.3f} ms "
      f"(mean {ours['avg'] - w['mean']:+.3f}, p99 {ours['p99'] - w['p99']:+.3f}); reused connections, "
      f"request by request ({len(differences)}): ours - wire mean {sum(differences) / len(differences):+.3f}, "
      f"p99 {percentile(differences, 0.99):+.3f}, largest {max(differences, key=abs):+.3f} ms; "
      f"{w['n']} requests on the wire, {dropped} packets dropped")
EOF
}

section_12() {
    echo "== 12. non-streaming request latency against the wire, socket reader on and off, alternating twice (mock TTFT 20 ms / ITL 5 ms, concurrency 64, 2,000 requests, ISL 128 / OSL 8)"
    local flag
    start_mock --ttft 20 --itl 5
    for pass in 1 2; do
        for mode in on off; do
            flag=()
            [ "$mode" = off ] && flag=(--no-socket-reader)
            printf 'reader %s, pass %s: ' "$mode" "$pass"
            latency_wire_run "latency_$mode$pass" "${flag[@]}"
        done
    done
}

for section in ${BENCH_SECTIONS:-1 2 3 4 5 6 7 8 9 10 11 12}; do
    "section_$section"
done
