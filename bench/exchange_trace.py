#!/usr/bin/env python3
"""Sums up a gradient-exchange trace (dlcaffe train --exchange_trace=FILE):
per replica, the mean time from the step's start (the forward pass) to each
phase, and per bucket the mean of each phase of its exchange, over the steps
after --skip warm-up steps.

    python3 bench/exchange_trace.py FILE [--skip 5]

Replica lines: "enqueued" (the thread had enqueued backward), "backward"
(its device had run it), "exchange" (it saw the mean written back), "step"
(from this step's start to the next's), "exposed" (exchange - backward: the
exchange time backward did not hide). Bucket lines: when its copies were
posted, arrived, were summed, reduced over processes and written back,
each in ms after the step's start.
"""
import argparse
import collections
import statistics


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--skip", type=int, default=5)
    args = parser.parse_args()
    replicas = collections.defaultdict(list)
    buckets = collections.defaultdict(list)
    for line in open(args.trace):
        words = line.split()
        if not words:
            continue
        step = int(words[1])
        fields = {words[i]: float(words[i + 1]) for i in range(3, len(words) - 1, 2)}
        if words[0] == "replica":
            replicas[int(words[2])].append((step, fields))
        elif words[0] == "bucket":
            buckets[int(words[2])].append((step, fields))

    def mean(rows, key):
        values = [f[key] for s, f in rows if s > args.skip]
        return statistics.mean(values) if values else float("nan")

    for replica, rows in sorted(replicas.items()):
        starts = {s: f["start"] for s, f in rows}
        periods = [starts[s + 1] - starts[s] for s in starts if s > args.skip and s + 1 in starts]
        exposed = [f["exchange_done"] - f["backward_done"] for s, f in rows if s > args.skip]
        print("replica %d: enqueued %.2f  backward %.2f  exchange %.2f  step %.2f  "
              "exposed %.2f ms (%d steps)" % (
                  replica, mean(rows, "enqueued"), mean(rows, "backward_done"),
                  mean(rows, "exchange_done"),
                  statistics.mean(periods) if periods else float("nan"),
                  statistics.mean(exposed) if exposed else float("nan"),
                  len([1 for s, _ in rows if s > args.skip])))
    for bucket, rows in sorted(buckets.items()):
        floats = rows[0][1]["floats"]
        print("bucket %d (%.1f MB): posted %.2f  copied %.2f  summed %.2f  reduced %.2f  "
              "written %.2f ms" % (bucket, floats * 4 / 2**20, *(mean(rows, k) for k in (
                  "posted", "copied", "summed", "reduced", "written"))))


if __name__ == "__main__":
    main()
