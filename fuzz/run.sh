#!/usr/bin/env bash
# Fuzz aiperf-rs parsers with AFL++ on stable Rust (cargo-fuzz needs nightly).
#
# Usage: bash fuzz/run.sh [TARGET|all] [SECONDS] [EXECS]
#   TARGET   prometheus, sse, responses, datasets, traces, or all (default: all, one after another)
#   SECONDS  stop each target after this long (default 600)
#   EXECS    also stop it after this many executions (AFL++ -E; default: no limit)
# Needs `cargo install cargo-afl`. Runs under `nice -n ${NICE:-10}`. Findings land in
# fuzz/out/TARGET/default/{crashes,hangs}; an older fuzz/out/TARGET is moved aside first.
set -euo pipefail
cd "$(dirname "$0")"
targets=(prometheus sse responses datasets traces)
target="${1:-all}"
seconds="${2:-600}"
execs="${3:-}"
if [[ "$target" == all ]]; then
    selected=("${targets[@]}")
elif [[ " ${targets[*]} " == *" $target "* ]]; then
    selected=("$target")
else
    echo "unknown target '$target'; one of: ${targets[*]} all" >&2
    exit 2
fi

cargo afl build --release --quiet
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 AFL_NO_AFFINITY=1
limits=(-V "$seconds")
if [[ -n "$execs" ]]; then
    limits+=(-E "$execs")
fi
mkdir -p out
for name in "${selected[@]}"; do
    if [[ -e "out/$name" ]]; then
        mv "out/$name" "out/$name.$(date +%Y%m%d-%H%M%S)"
    fi
    echo "== $name"
    nice -n "${NICE:-10}" cargo afl fuzz -i "seeds/$name" -o "out/$name" "${limits[@]}" \
        "target/release/$name" > "out/$name.log" 2>&1 || {
        tail -n 30 "out/$name.log" >&2
        exit 1
    }
    grep -E "^(run_time|execs_done|execs_per_sec|corpus_count|bitmap_cvg|saved_crashes|saved_hangs) " \
        "out/$name/default/fuzzer_stats"
done
