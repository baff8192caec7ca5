"""The samples of `perf script -F comm,tid,ip,sym` output, for bench/perf_profile.sh and
bench/perf_shares.sh (which run Python with PYTHONPATH=bench)."""

import re


def samples(path):
    """Yields (comm, tid, frames) per sample, innermost frame first. Frames lose perf's
    offsets and Rust's hash suffixes, which split one function into many names."""
    for sample in open(path, errors="replace").read().split("\n\n"):
        lines = [line.strip() for line in sample.strip().split("\n") if line.strip()]
        if len(lines) < 2:
            continue
        comm, tid = lines[0].split()[:2]
        frames = [(line.split(None, 1) + ["?"])[1] for line in lines[1:]]
        yield comm, tid, [
            re.sub(r"::h[0-9a-f]{16}$", "", re.sub(r"\+0x[0-9a-f]+$", "", frame))
            for frame in frames
        ]
