#!/usr/bin/env bash
# Fuzz the Prometheus parser with AFL++ on stable Rust (cargo-fuzz needs nightly).
# Usage: bash fuzz/run.sh [SECONDS]   (needs `cargo install cargo-afl`; default 600 s)
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-600}"
cargo afl build --release --quiet
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1
cargo afl fuzz -i seeds -o out -V "$seconds" target/release/prometheus
grep -E "execs_done|saved_crashes|saved_hangs|corpus_count" out/default/fuzzer_stats
