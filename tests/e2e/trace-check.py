#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# trace-check.py: checks view's trace timeline of tests/measure-workloads/phases against the
# phase boundaries the program printed of itself.
#
#   trace-check.py depth-of FUNCTION JSON...    the first of the JSON files (one per depth,
#                                               in depth order) whose bins name FUNCTION
#   trace-check.py json PHASES JSON A B         every worker thread's bins: A in its first
#                                               phase, B in its second (or idle where it did
#                                               not run), idle while it sleeps
#   trace-check.py text PHASES JSON TEXT        the text rows say what the JSON bins say
#
# A bin counts when it lies inside one phase, at least one bin away from the phase's ends:
# the timeline is right "within one bin at each phase boundary".  Exit 1 with the reason.
import json
import sys


def fail(msg):
    print("trace-check:", msg)
    sys.exit(1)


def phases(path):
    got = {}
    for line in open(path):
        f = line.split()
        if f and f[0] == "phases":
            got[int(f[1])] = [int(x) for x in f[2:8]]
    if len(got) != 4:
        fail("%s: %d threads printed their phases, not 4" % (path, len(got)))
    return got


def names(doc):
    return {b.get("name") for t in doc["threads"] for b in t["bins"] if b["kind"] == "work"}


def expected(doc, ph, a, b):
    """(tid, bin, what) for the bins well inside a phase: a name, or "idle"."""
    start, width = doc["start_ns"], doc["bin_ns"]
    out = []
    for t in doc["threads"]:
        if t["tid"] not in ph:
            continue
        p = ph[t["tid"]]
        spans = [(p[0], p[1], a), (p[2], p[3], b), (p[4], p[5], "idle")]
        for i in range(doc["bins"]):
            lo, hi = start + i * width, start + (i + 1) * width
            for s, e, what in spans:
                if lo >= s + width and hi <= e - width:
                    out.append((t["tid"], i, what))
    return out


def check_json(ph, doc, a, b):
    """Inside a phase of work, its function, or idle where the thread did not run (a busy
    machine); at least one bin of it per thread and phase.  Inside the sleep, idle only."""
    bins = {t["tid"]: t["bins"] for t in doc["threads"]}
    want = expected(doc, ph, a, b)
    counted = {a: 0, b: 0, "idle": 0}
    shown_once = {}
    for tid, i, what in want:
        got = bins[tid][i]
        shown = got.get("name") if got["kind"] == "work" else got["kind"]
        if shown != what and not (what != "idle" and shown == "idle"):
            fail("thread %d bin %d: %s, expected %s" % (tid, i, shown, what))
        counted[what] += 1
        if shown == what:
            shown_once[(tid, what)] = True
    for what, n in counted.items():
        if n == 0:
            fail("no bin lies well inside a phase of %s: the window is too coarse" % what)
    for tid in ph:
        for what in {a, b}:
            if any(t == tid and w == what for t, _, w in want) and not shown_once.get((tid, what)):
                fail("thread %d: no bin of its %s phase shows %s" % (tid, what, what))
    print("checked %d bins: %s" % (len(want), counted))


def main():
    cmd = sys.argv[1]
    if cmd == "depth-of":
        for path in sys.argv[3:]:
            doc = json.load(open(path))
            if sys.argv[2] in names(doc):
                print(doc["depth"])
                return
        fail("no depth shows %s" % sys.argv[2])
    ph = phases(sys.argv[2])
    doc = json.load(open(sys.argv[3]))
    if cmd == "json":
        check_json(ph, doc, sys.argv[4], sys.argv[5])
    elif cmd == "text":
        legend, rows = {}, {}
        for line in open(sys.argv[4]):
            if line.startswith("  ") and len(line) > 5 and line[3:5] == "  ":
                legend[line[2]] = line[5:].rstrip("\n")
            elif line.startswith("  tid "):
                tid = int(line.split()[1])
                rows[tid] = line[line.index("|") + 1:line.rindex("|")]
        for t in doc["threads"]:
            row = rows.get(t["tid"])
            if row is None or len(row) != doc["bins"]:
                fail("thread %d: no text row of %d bins" % (t["tid"], doc["bins"]))
            for i, cell in enumerate(t["bins"]):
                c = row[i]
                if cell["kind"] == "work":
                    if legend.get(c) != cell["name"]:
                        fail("thread %d bin %d: %r (%s), JSON says %s" %
                             (t["tid"], i, c, legend.get(c), cell["name"]))
                elif c != {"idle": ".", "untraced": "-"}.get(cell["kind"], " "):
                    fail("thread %d bin %d: %r for %s" % (t["tid"], i, c, cell["kind"]))
        print("text rows agree with the JSON bins (%d threads)" % len(rows))
    else:
        fail("unknown command " + cmd)


main()
