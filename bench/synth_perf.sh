#!/usr/bin/env bash
# Where a default-sized synthetic run's client CPU goes, by thread, for several aiperf
# builds run in the order given against one `--fast` mock: `perf record` (flat, no call
# graphs) of a non-streaming run, concurrency 64, OSL 8, `--random-seed 1`, one new
# conversation per request (`pool=…` labels run over `--num-dataset-entries 1000`
# instead). Per run: client CPU per request (user + sys under perf), then per thread its
# share of all samples and the share of tokenizer functions (`bpe::`, `tokenizer::`, the
# memo and its hash) in it.
# Usage: MOCK=…mock-server bash bench/synth_perf.sh REQUESTS ISL LABEL=AIPERF_BINARY […]
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS=$1
ISL=$2
shift 2
# shellcheck source=bench/lib.sh
. bench/lib.sh
start_mock --fast

for run in "$@"; do
    label=${run%%=*}
    binary=${run#*=}
    pool=()
    [[ $label == pool* ]] && pool=(--num-dataset-entries 1000)
    /usr/bin/time -f '%U %S' -o "$WORK/time" perf record -F 999 -o "$WORK/perf.data" -- \
        "$binary" profile -m mock-model --url "$URL" --ui-type none --random-seed 1 \
        --artifact-dir "$WORK/run" --concurrency 64 --osl 8 --isl "$ISL" \
        --request-count "$REQUESTS" "${pool[@]}" >"$WORK/out" 2>"$WORK/perf-record.log"
    awk -v n="$REQUESTS" -v label="$label" \
        '{printf "== %s: %.1f us client CPU per request under perf\n", label, ($1 + $2) / n * 1e6}' \
        "$WORK/time"
    perf report -i "$WORK/perf.data" --no-children --sort comm,symbol -g none 2>/dev/null |
        awk '/%/ { share = $1; sub("%", "", share); thread = $2; symbol = "";
                   for (i = 4; i <= NF; i++) symbol = symbol " " $i;
                   if (symbol ~ /bpe::|tokenizer::|Tokenizer|memo::|foldhash/) tokens[thread] += share;
                   all[thread] += share }
             END { for (t in all) printf "   %-16s %5.1f %% of samples, tokenizer %5.1f %%\n", t, all[t], tokens[t] }' |
        sort -k2 -nr
    rm -rf "$WORK/run"
done
