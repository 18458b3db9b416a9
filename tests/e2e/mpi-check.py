#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# mpi-check.py: t0124's check of the 4 ranks' shares.  RANK_JSON (a pattern with %d) is each
# rank's flat view (--rank R --raw --format json), THREAD_GLOB (with %d) its threads' (--thread
# T); PERIOD the sampling period in ns.  Rank R did R + 1 units of work in each of its two
# threads: its share of rank_work's time must be (R + 1) / 10 to within five standard errors
# of the samples taken, widened by the spread the run shows between a rank's two threads.
import glob, json, math, sys

rank_json, thread_glob, period = sys.argv[1], sys.argv[2], float(sys.argv[3])
def work(path):
    """rank_work's inclusive task-clock (ns) in a flat view's JSON, and the rank shown."""
    d = json.load(open(path))
    found = []
    def walk(n):
        if n.get("kind") == "function" and n.get("name") == "rank_work":
            found.append(n["inclusive"]["task-clock"])
        for c in n.get("children", []):
            walk(c)
    walk(d["tree"])
    return sum(found), d["rank"]
ranks = {}
for r in range(4):
    v, shown = work(rank_json % r)
    assert shown == r, "rank%d.json shows rank %r" % (r, shown)
    threads = [work(p)[0] for p in glob.glob(thread_glob % r)]
    # The rank is its threads: the same sum, exactly (raw values).
    assert abs(sum(threads) - v) <= 1e-6 * max(v, 1), (r, v, threads)
    busy = sorted(threads)[-2:]
    ranks[r] = (v, busy)
total = sum(v for v, _ in ranks.values())
n = total / period  # samples of rank_work, one per period of CPU time
assert n > 0, "no samples of rank_work"
# Equal work in a rank's two threads: their difference is the run's own spread.
spread = max(abs(b[1] - b[0]) / (b[1] + b[0]) for _, b in ranks.values())
for r, (v, busy) in sorted(ranks.items()):
    p = (r + 1) / 10.0
    share = v / total
    bound = 5 * math.sqrt(p * (1 - p) / n) + p * spread + 1 / n
    print("rank %d: share %.4f, expected %.4f, bound %.4f (n %.0f, spread %.4f)"
          % (r, share, p, bound, n, spread))
    assert abs(share - p) <= bound, "rank %d: share %.4f, not %.1f" % (r, share, p)
