#!/usr/bin/env python3
"""Wire truth for TTFT and ITL from a loopback capture of streamed chat completions.

usage: pcap_truth.py FILE SERVER_PORT   (FILE from `tcpdump -i lo -w FILE 'tcp port PORT'`)

Per request on each connection:
  TTFT = the client's last request packet -> the first server packet whose payload carries
         a content delta (`"content":"` followed by a character), as ../shared/tools/pcap_ttft.py;
  ITL  = (last content packet - first content packet) / (content deltas - 1), the AIPerf
         definition (request latency - TTFT) / (output tokens - 1) with one token per delta,
         as the mock sends them.
  latency = the client's last request packet -> the last server packet before the
         connection's next request (the response's end, streamed or not).
Prints one JSON object: {"ttft": {"n", "mean", "p99"}, "itl": {...}, "ttft_reused": {...},
"latency": {...}, "latency_reused": {...}} in ms, percentiles interpolated linearly
(numpy's default, as aiperf reports them). The `_reused` figures leave out each
connection's first request: for those aiperf counts the connection's set-up (as the
Python AIPerf does) and the wire does not.
With a third argument OUT, also writes each request's wire latency in ms by its
`X-Request-ID` to OUT as JSON ({"id": ms, …}), to compare request by request.
"""
import json
import re
import statistics
import struct
import sys

CONTENT = re.compile(rb'"content":"[^"]')
REQUEST_ID = re.compile(rb'\r\nx-request-id: *([^\r]*)\r\n', re.IGNORECASE)


def packets(path):
    """(time in s, source port, destination port, payload) of each IPv4 TCP packet."""
    with open(path, "rb") as f:
        header = f.read(24)
        magic, = struct.unpack("<I", header[:4])
        nano = magic == 0xA1B23C4D
        linktype, = struct.unpack("<I", header[20:24])
        offset = {1: 14, 113: 16}.get(linktype, 0)
        while True:
            record = f.read(16)
            if len(record) < 16:
                return
            secs, frac, captured, _ = struct.unpack("<IIII", record)
            data = f.read(captured)
            ip = data[offset:]
            if len(ip) < 20 or ip[0] >> 4 != 4:
                continue
            tcp = ip[(ip[0] & 15) * 4:]
            source, destination = struct.unpack(">HH", tcp[:4])
            payload = tcp[(tcp[12] >> 4) * 4:]
            if payload:
                yield secs + frac / (1e9 if nano else 1e6), source, destination, payload


def percentile(sorted_values, p):
    position = (len(sorted_values) - 1) * p
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def summary(values_ms):
    values_ms.sort()
    return {
        "n": len(values_ms),
        "mean": statistics.fmean(values_ms) if values_ms else float("nan"),
        "p99": percentile(values_ms, 0.99) if values_ms else float("nan"),
    }


def main():
    path, port = sys.argv[1], int(sys.argv[2])
    requests = {}  # client port -> the request in progress
    done = []
    connected = set()  # client ports that already sent a request

    def close(request):
        if request and request["first"] is not None:
            done.append(request)

    for t, source, destination, payload in packets(path):
        if destination == port:
            if payload.startswith(b"GET "):
                # aiperf's scrape of the server's metrics after the run, on a pooled
                # connection: it ends the request before it and is not one itself.
                close(requests.pop(source, None))
                connected.add(source)
            elif payload.startswith(b"POST "):
                close(requests.get(source))
                request_id = REQUEST_ID.search(payload)
                requests[source] = {"sent": t, "first": None, "last": None, "end": None, "deltas": 0,
                                     "reused": source in connected,
                                     "id": request_id.group(1).decode() if request_id else None}
                connected.add(source)
            elif source in requests and requests[source]["first"] is None:
                requests[source]["sent"] = t  # later segments of the same request
        elif source == port and destination in requests:
            request = requests[destination]
            request["end"] = t
            deltas = len(CONTENT.findall(payload))
            if deltas:
                if request["first"] is None:
                    request["first"] = t
                request["last"] = t
                request["deltas"] += deltas
    for request in requests.values():
        close(request)
    ttft = [(r["first"] - r["sent"]) * 1e3 for r in done]
    itl = [(r["last"] - r["first"]) * 1e3 / (r["deltas"] - 1) for r in done if r["deltas"] > 1]
    reused = [(r["first"] - r["sent"]) * 1e3 for r in done if r["reused"]]
    latency = [(r["end"] - r["sent"]) * 1e3 for r in done]
    latency_reused = [(r["end"] - r["sent"]) * 1e3 for r in done if r["reused"]]
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as out:
            json.dump({r["id"]: (r["end"] - r["sent"]) * 1e3 for r in done if r["id"]}, out)
    print(json.dumps({"ttft": summary(ttft), "itl": summary(itl), "ttft_reused": summary(reused),
                      "latency": summary(latency), "latency_reused": summary(latency_reused)}))


if __name__ == "__main__":
    main()
