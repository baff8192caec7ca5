#!/usr/bin/env python3
"""Writes a Mooncake-style trace of long contexts (JSON lines: timestamp, input_length,
output_length, hash_ids with 512-token blocks) for the start-up benchmark.

Usage: long_context_trace.py OUTPUT [LINES, default 12000] [SEED, default 1]

The shape follows the published Mooncake traces: requests share long prefixes (a few
hundred documents or system prompts, each reused by many requests), then add a unique
tail; input lengths average a little above 10,000 tokens; timestamps are milliseconds,
about 1 s apart on average.
"""
import json
import random
import sys

BLOCK = 512

output = sys.argv[1]
lines = int(sys.argv[2]) if len(sys.argv) > 2 else 12_000
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)

next_id = 0


def fresh_blocks(count):
    global next_id
    ids = list(range(next_id, next_id + count))
    next_id += count
    return ids


# Shared prefixes of 6 to 32 blocks (3k to 16k tokens).
prefixes = [fresh_blocks(rng.randint(6, 32)) for _ in range(300)]

timestamp = 0
total_isl = 0
with open(output, "w") as f:
    for _ in range(lines):
        prefix = prefixes[min(int(rng.expovariate(1 / 40)), len(prefixes) - 1)]
        shared = prefix[: rng.randint(len(prefix) // 2, len(prefix))]
        tail = fresh_blocks(rng.randint(1, 12))
        hash_ids = shared + tail
        input_length = (len(hash_ids) - 1) * BLOCK + rng.randint(1, BLOCK)
        total_isl += input_length
        line = {
            "timestamp": timestamp,
            "input_length": input_length,
            "output_length": rng.randint(16, 512),
            "hash_ids": hash_ids,
        }
        f.write(json.dumps(line) + "\n")
        timestamp += int(rng.expovariate(1 / 1000))

print(
    f"{lines} lines, average ISL {total_isl / lines:.0f} tokens, "
    f"{next_id} distinct blocks",
    file=sys.stderr,
)
