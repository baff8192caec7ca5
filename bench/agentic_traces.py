#!/usr/bin/env python3
"""Writes a long-context agentic-coding trace in the `tracelab` or `weka_trace` format
for the start-up benchmark (docs/datasets.md#custom-dataset-files for the fields).

Usage: agentic_traces.py tracelab OUTPUT.jsonl [REQUESTS, default 12000] [SEED, default 1]
       agentic_traces.py weka OUTPUT-FOLDER [REQUESTS, default 12000] [SEED, default 1]

Both formats get the same shape: coding-agent sessions of 10 to 70 rounds whose context
starts at 4,000 to 9,000 tokens and grows by each reply and tool result, the cached
prefix being the whole previous context (now and then a cache miss in TraceLab's
`prefix_tokens`, or a compaction back to a short context that keeps only the system
prompt); about one round in twelve of a top-level session runs a subagent (a Claude
`Agent` call of 10 s or more in TraceLab, a `subagent` entry in weka) whose 3 to 10
rounds share the parent's system prompt. A TraceLab round's prefix reuse is its
`prefix_tokens`; a weka request's is its `hash_ids` (64-token blocks, local to its
trace: one trace per session, one file per trace). Input lengths average about 15,000
tokens (the Mooncake-style trace of bench/long_context_trace.py: 10,479). Prints the
request count, the average input length and the session count to stderr.
"""
import json
import os
import random
import sys
from datetime import datetime, timezone

BLOCK = 64
SYSTEM_TOKENS = 2_000
START = datetime(2025, 1, 31, 12, 0, tzinfo=timezone.utc).timestamp()

fmt, output = sys.argv[1], sys.argv[2]
target = int(sys.argv[3]) if len(sys.argv) > 3 else 12_000
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
if fmt not in ("tracelab", "weka"):
    sys.exit("the format is tracelab or weka")


def iso(seconds):
    at = datetime.fromtimestamp(START + seconds, timezone.utc)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Context:
    """An agent's context: its length in tokens and the hash ids of its blocks."""

    def __init__(self, fresh_ids, blocks=()):
        self.fresh_ids = fresh_ids
        self.blocks = list(blocks)

    def grow_to(self, length, prefix):
        """The context becomes `length` tokens, the first `prefix` of them unchanged."""
        kept = self.blocks[: prefix // BLOCK]
        self.blocks = kept + self.fresh_ids(-(-length // BLOCK) - len(kept))


def agent(t, count, context, run_subagent=None):
    """The rounds of one agent starting at `t`, each a dict; `run_subagent(spawned_at,
    context)` (top-level agents only) gives a subagent's rounds and how long it ran."""
    global written, total_input
    length = rng.randint(4_000, 9_000) if run_subagent else rng.randint(3_000, 8_000)
    kept = SYSTEM_TOKENS  # tokens of the previous context this round's begins with
    cached = kept  # of which the server had cached (TraceLab's prefix_tokens)
    made = []
    for index in range(count):
        output = rng.randint(30, 800)
        api = 1.0 + output / 60
        context.grow_to(length, kept)
        written += 1
        total_input += length
        round_ = {"t": t, "api": api, "in": length, "prefix": cached, "out": output,
                  "hash_ids": list(context.blocks), "child": None}
        made.append(round_)
        think = rng.uniform(0.5, 20)
        if run_subagent and index + 1 < count and rng.random() < 1 / 12:
            spawned_at = t + api
            child, duration = run_subagent(spawned_at, context)
            round_["child"] = (spawned_at, duration, child)
            think = duration + rng.uniform(0.2, 2)  # the next round waits for it
        t += api + think
        if length > 30_000 and rng.random() < 0.03:
            kept = SYSTEM_TOKENS  # a compaction: only the system prompt is kept
            length = rng.randint(3_000, 6_000)
        else:
            kept = length
            length += output + int(rng.expovariate(1 / 150)) + 20
        cached = 0 if rng.random() < 0.05 else kept  # now and then a cache miss
    return made


def session(t):
    """A top-level agent's rounds, with its subagents'; hash ids local to it."""
    next_id = [0]

    def fresh_ids(count):
        next_id[0] += count
        return list(range(next_id[0] - count, next_id[0]))

    def run_subagent(spawned_at, parent):
        system = parent.blocks[: SYSTEM_TOKENS // BLOCK]
        start = spawned_at + rng.uniform(0.1, 1)
        child = agent(start, rng.randint(3, 10), Context(fresh_ids, system))
        end = child[-1]["t"] + child[-1]["api"] + 0.2
        # Claude's spawning calls count from 10 s (TracelabJoin::min_spawn_ms).
        return child, max(end - spawned_at, 10.5)

    return agent(t, rng.randint(10, 70), Context(fresh_ids), run_subagent)


written = 0
total_input = 0
sessions = 0


def tracelab_row(session, index, round_, user, tools=()):
    kind = "user_message" if index == 0 else "tool_result"
    return {
        "session_id": session,
        "round_index": index,
        "user": user,
        "project": "repo",
        "provider": "claude",
        "model": "claude-opus",
        "input_tokens_total": round_["in"],
        "prefix_tokens": round_["prefix"],
        "newly_append_tokens": round_["in"] - round_["prefix"],
        "output_tokens": round_["out"],
        "timing_events": [
            {"event_type": kind, "timestamp": iso(round_["t"])},
            {"event_type": "tool_call", "timestamp": iso(round_["t"] + round_["api"])},
        ],
        "tools": list(tools),
    }


def weka_request(round_, t0):
    return {
        "t": round(round_["t"] - t0, 6),
        "type": "s",
        "model": "claude-opus",
        "in": round_["in"],
        "out": round_["out"],
        "hash_ids": round_["hash_ids"],
        "api_time": round(round_["api"], 6),
        "think_time": 1.0,
    }


if fmt == "weka":
    os.makedirs(output, exist_ok=True)
    out = None
else:
    out = open(output, "w")

session_start = 0.0
while written < target:
    name = f"session-{sessions:05}"
    user = f"user-{sessions % 40}"
    made = session(session_start)
    sessions += 1
    session_start += rng.expovariate(1 / 30)
    if fmt == "tracelab":
        children = []
        for index, r in enumerate(made):
            tools = []
            if r["child"] is not None:
                spawn, duration, child_rounds = r["child"]
                tools.append({
                    "tool_name": "Agent",
                    "emitted_at": iso(spawn),
                    "result_at": iso(spawn + duration),
                    "tool_wall_latency_ms": duration * 1000,
                })
                children.append(child_rounds)
            out.write(json.dumps(tracelab_row(name, index, r, user, tools)) + "\n")
        for n, child_rounds in enumerate(children):
            for index, r in enumerate(child_rounds):
                row = tracelab_row(f"{name}-agent-{n}", index, r, user)
                out.write(json.dumps(row) + "\n")
    else:
        t0 = made[0]["t"]
        requests = []
        for n, r in enumerate(made):
            requests.append(weka_request(r, t0))
            if r["child"] is not None:
                spawn, duration, child_rounds = r["child"]
                requests.append({
                    "type": "subagent",
                    "t": round(spawn - t0, 6),
                    "agent_id": f"agent_{n:03}",
                    "subagent_type": "Explore",
                    "duration_ms": int(duration * 1000),
                    "total_tokens": sum(c["in"] + c["out"] for c in child_rounds),
                    "tool_use_count": len(child_rounds),
                    "status": "completed",
                    "models": ["claude-opus"],
                    "requests": [weka_request(c, t0) for c in child_rounds],
                })
        trace = {
            "id": name,
            "models": ["claude-opus"],
            "block_size": BLOCK,
            "hash_id_scope": "local",
            "requests": requests,
        }
        with open(os.path.join(output, f"{name}.json"), "w") as f:
            json.dump(trace, f)

if out is not None:
    out.close()
print(
    f"{written} requests, average ISL {total_input / written:.0f} tokens, "
    f"{sessions} sessions",
    file=sys.stderr,
)
