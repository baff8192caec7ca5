#!/usr/bin/env bash
# Where the client's CPU goes in `bench/profile.sh` section 1 (non-streaming chat,
# concurrency 64, ISL/OSL 128, `--fast` mock): `perf record --call-graph dwarf` on a
# release `aiperf` for the whole run, then the client CPU per request, the share of each
# thread, the flat profile (`perf report --no-children`) and, for the two busiest threads,
# the functions with the largest inclusive shares (TOP of them, default 30).
# Usage: bash bench/perf_profile.sh [SECONDS, default 5] [OUT DIR, default a temp dir]
# (the stack copies take ~35 MB a second of run).
# AIPERF=path/to/aiperf (and MOCK=path/to/aiperf-mock-server) profile other builds (e.g.
# copies of the ones before a change) without building.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_RUN=${1:-5}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"

if [ -z "${AIPERF:-}" ]; then
    cargo build --release -q -p aiperf-cli -p aiperf-mock-server
fi
AIPERF=${AIPERF:-target/release/aiperf}
MOCK=${MOCK:-target/release/aiperf-mock-server}

# shellcheck source=bench/lib.sh
. bench/lib.sh
start_mock --fast

# DWARF unwinding: the release build has no frame pointers, and `-g` gets no callers.
/usr/bin/time -f '%e %U %S %M' -o "$OUT/aiperf.time" \
    perf record --call-graph dwarf,16384 -F 1999 -o "$OUT/perf.data" -- \
    "$AIPERF" profile -m mock-model --url "$URL" --ui-type none --random-seed 1 \
    --artifact-dir "$OUT/run" --concurrency 64 --benchmark-duration "$SECONDS_PER_RUN" \
    --isl 128 --osl 128 >"$OUT/aiperf.out" 2>"$OUT/perf-record.log"

requests=$(python3 -c 'import json,sys;print(int(json.load(open(sys.argv[1]))["request_count"]["avg"]))' \
    "$OUT/run/profile_export_aiperf.json")
# perf's own CPU is in these seconds too; it is small next to the client's (a few %).
awk -v n="$requests" '{printf "%d requests, %.0f req/s, client CPU %.1f us per request (user %.1f s, system %.1f s)\n", n, n / '"$SECONDS_PER_RUN"', ($2 + $3) / n * 1e6, $2, $3}' \
    "$OUT/aiperf.time"

# The sending runtime runs on the main thread and the record processor on a thread of its
# own, both called `aiperf`: perf's `pid` key tells threads apart by id (the main thread's
# is the lowest).
echo "== CPU by thread (thread id:name; sending runtime = the lowest id)"
perf report -i "$OUT/perf.data" --no-children --sort pid --stdio -g none 2>/dev/null \
    | grep -E '^ +[0-9]' | head -6
echo "== functions above 1 % (self time)"
perf report -i "$OUT/perf.data" --no-children --percent-limit 1 --sort comm,dso,sym \
    --stdio -g none 2>/dev/null | grep -E '^ +[0-9]'
# Inclusive shares per thread: a sample counts once for every function on its stack, so
# a thread's lines overlap and do not add up. The flame graph's top entries, as text.
perf script -i "$OUT/perf.data" --no-inline -F comm,tid,ip,sym 2>/dev/null >"$OUT/script.txt"
PYTHONPATH=bench python3 - "$OUT/script.txt" "${TOP:-30}" <<'EOF'
import collections, sys

from perf_samples import samples

top = int(sys.argv[2])
KERNEL_ENTRY = {"entry_SYSCALL_64_after_hwframe", "asm_exc_page_fault"}
threads = collections.defaultdict(list)
for comm, tid, frames in samples(sys.argv[1]):
    threads[f"{comm} {tid}"].append(frames)
total = sum(len(s) for s in threads.values())
busiest = sorted(threads, key=lambda t: -len(threads[t]))[:2]
for thread in sorted(busiest, key=lambda t: int(t.split()[1])):
    stacks = threads[thread]
    inclusive = collections.Counter()
    for frames in stacks:
        inclusive.update(set(frames) - {"[unknown]"})
    kernel = sum(1 for frames in stacks if KERNEL_ENTRY & set(frames))
    print(f"== thread {thread}: {100 * len(stacks) / total:.1f} % of the client's samples "
          f"(kernel {100 * kernel / len(stacks):.0f} %); inclusive, of the thread's samples")
    for name, count in inclusive.most_common(top):
        print(f"  {100 * count / len(stacks):5.1f} %  {name[:140]}")
EOF
echo "(perf data in $OUT/perf.data)"
