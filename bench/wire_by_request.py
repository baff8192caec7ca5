#!/usr/bin/env python3
"""Our stamps against the wire's, request by request, for a streamed run captured on loopback.

usage: wire_by_request.py FILE SERVER_PORT RUN_DIR
  FILE     `tcpdump -i lo -w FILE 'tcp port PORT'` taken during the run
  RUN_DIR  the run's artifact directory (its profile_export.jsonl)

Requests are matched by their X-Request-ID; connections' first requests are left out (their
set-up counts in ours and not on the wire). For each request on a reused connection:
  send  = our request start (the last request byte's write) - the wire's last request packet
  first = our first content chunk (start + TTFT) - the wire's first content packet
Each is shown relative to its median, which takes out the constant offset between our
clock's wall anchor and the capture's clock; a tail in one of them says which stamp is
late. Then TTFT ours - wire per request, and the two TTFT distributions' difference
(what bench/profile.sh section 9 prints).
"""
import json
import re
import statistics
import sys

from pcap_truth import CONTENT, REQUEST_ID, packets, percentile


def wire_requests(path, port):
    """X-Request-ID -> {"sent", "first", "reused"} in seconds."""
    by_id, current, seen = {}, {}, set()
    for t, source, destination, payload in packets(path):
        if destination == port:
            if payload.startswith(b"POST "):
                found = REQUEST_ID.search(payload)
                request = {"sent": t, "first": None, "reused": source in seen}
                seen.add(source)
                current[source] = request
                if found:
                    by_id[found.group(1).decode()] = request
            elif source in current and current[source]["first"] is None:
                current[source]["sent"] = t  # later segments of the same request
        elif source == port and destination in current:
            request = current[destination]
            if request["first"] is None and CONTENT.search(payload):
                request["first"] = t
    return by_id


def spread(name, values):
    values = sorted(values)
    median = percentile(values, 0.5)
    rel = lambda p: percentile(values, p) - median
    print(f"{name}: n={len(values)}, from the median: p90 {rel(0.9):+.3f}, p99 {rel(0.99):+.3f}, "
          f"largest {values[-1] - median:+.3f}, smallest {values[0] - median:+.3f} ms")


def main():
    path, port, run = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    wire = wire_requests(path, port)
    send, first, ttft, ours, truth = [], [], [], [], []
    with open(run + "/profile_export.jsonl") as records:
        for line in records:
            record = json.loads(line)
            metrics = record["metrics"]
            request = wire.get(record["metadata"].get("x_request_id"))
            if (not request or not request["reused"] or request["first"] is None
                    or "time_to_first_token" not in metrics):
                continue
            start = record["metadata"]["request_start_ns"] / 1e9
            ours_ttft = metrics["time_to_first_token"]["value"]
            wire_ttft = (request["first"] - request["sent"]) * 1e3
            send.append((start - request["sent"]) * 1e3)
            first.append((start + ours_ttft / 1e3 - request["first"]) * 1e3)
            ttft.append(ours_ttft - wire_ttft)
            ours.append(ours_ttft)
            truth.append(wire_ttft)
    spread("send stamp, ours - wire", send)
    spread("first content stamp, ours - wire", first)
    ttft.sort()
    print(f"TTFT ours - wire by request: mean {statistics.fmean(ttft):+.3f}, "
          f"p99 {percentile(ttft, 0.99):+.3f}, largest {ttft[-1]:+.3f} ms")
    ours.sort()
    truth.sort()
    print(f"TTFT distributions: mean {statistics.fmean(ours) - statistics.fmean(truth):+.3f}, "
          f"p99 {percentile(ours, 0.99) - percentile(truth, 0.99):+.3f} ms")


if __name__ == "__main__":
    main()
