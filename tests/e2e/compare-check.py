# SPDX-License-Identifier: MIT
# compare-check.py: checks of view's comparison of two runs (t0413) on its JSON output.
#
#   compare-check.py same COMPARE.json A.json B.json
#       every scope below main in each single run's tree is in the comparison's at the same
#       path of labels, with that run's values exactly, and B-A is B minus A
#   compare-check.py split COMPARE.json SAMPLES_A SAMPLES_B
#       work_three's share of work_three + work_one is 3/4 in A and 1/2 in B, and the change of
#       each is right, to within the sampling error of the samples each run took
#   compare-check.py flat COMPARE.json A.json B.json
#       the same as "same" for the function rows of a bottom-up or flat tree (by name)
#   compare-check.py tma|normalized COMPARE.json
#       make-viewdb's tma against tma-after: the TMA node changes, or --normalize's shares
import json
import math
import sys

METRIC = "task-clock"


def load(path):
    with open(path) as f:
        return json.load(f)


def site(label):
    """A call site's label without its callee ("f.c:5 » g", or "call at f.c:5" where it calls
    several): which callees a site has differs between the runs and the comparison."""
    if label.startswith("call at "):
        return label[len("call at "):]
    return label.split(" » ")[0]


def below_main(tree):
    """{label path below main: [nodes]} of the first "main" function of TREE: a path can
    name several scopes (a line's samples and a call from it, two calls from one line), so
    the values are compared as the sums of the scopes of each path."""
    out = {}

    def find(node):
        if node["kind"] == "function" and node["name"] == "main":
            return node
        for c in node["children"]:
            m = find(c)
            if m:
                return m
        return None

    def walk(node, path):
        out.setdefault(path, []).append(node)
        for c in node["children"]:
            walk(c, path + (site(c["label"]),))

    main = find(tree)
    assert main, "no main in the tree"
    walk(main, ("main",))
    return out


def close(x, y):
    return abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y))


def check_values(cmp_nodes, singles, run, where):
    for side in ("inclusive", "exclusive"):
        want = sum(n[side].get(METRIC, 0) or 0 for n in singles)
        got = sum(c[side][run + ":" + METRIC] or 0 for c in cmp_nodes)
        assert close(want, got), "%s %s: %s's %s %r in the comparison, %r alone" % (
            where, side, run, METRIC, got, want)
        for c in cmp_nodes:
            a = c[side]["A:" + METRIC] or 0
            b = c[side]["B:" + METRIC] or 0
            d = c[side]["B-A:" + METRIC]
            assert close(d, b - a), "%s %s: B-A %r, B %r - A %r" % (where, side, d, b, a)


def same(cmp_path, a_path, b_path):
    cmp = below_main(load(cmp_path)["tree"])
    n = 0
    for run, path in (("A", a_path), ("B", b_path)):
        for p, nodes in below_main(load(path)["tree"]).items():
            assert p in cmp, "%s's %s is not in the comparison" % (run, " > ".join(p))
            check_values(cmp[p], nodes, run, " > ".join(p))
            n += len(nodes)
    loops = [p for p in cmp if p[-1].startswith("loop at ") and
             any(c["runs"] == "both" for c in cmp[p])]
    assert loops, "no loop matched in both runs"
    print("%d scopes of the two runs in the comparison, %d loops matched" % (n, len(loops)))


def functions(tree):
    out = {}

    def walk(node):
        if node["kind"] == "function":
            out.setdefault(node["name"], node)
        for c in node["children"]:
            walk(c)
    walk(tree)
    return out


def flat(cmp_path, a_path, b_path):
    cmp = functions(load(cmp_path)["tree"])
    for run, path in (("A", a_path), ("B", b_path)):
        for name, node in functions(load(path)["tree"]).items():
            assert name in cmp, "%s's function %s is not in the comparison" % (run, name)
            check_values([cmp[name]], [node], run, name)
    for name in ("work_three", "work_one"):
        assert cmp[name]["runs"] == "both", name
    print("%d functions" % len(cmp))


def split(cmp_path, samples_a, samples_b):
    d = load(cmp_path)
    fns = functions(d["tree"])
    three, one = fns["work_three"]["inclusive"], fns["work_one"]["inclusive"]
    totals = d["totals"]
    for run, samples, want in (("A", samples_a, 0.75), ("B", samples_b, 0.5)):
        t, o = three[run + ":" + METRIC], one[run + ":" + METRIC]
        share = t / (t + o)
        # The samples that fell in the two functions, and the binomial error of a share of them;
        # 0.01 for what the loop around the calls costs outside them.
        n = samples * (t + o) / totals[run + ":" + METRIC]
        bound = 5 * math.sqrt(want * (1 - want) / n) + 0.01
        print("%s: work_three %.4g s, work_one %.4g s: share %.3f (want %.2f +- %.3f, %d samples)"
              % (run, t, o, share, want, bound, n))
        assert abs(share - want) <= bound, run
    # The change of each function as a share of the work: B's minus A's.
    for name, node, want in (("work_three", three, -0.25), ("work_one", one, 0.25)):
        a, b = node["A:" + METRIC], node["B:" + METRIC]
        wa, wb = three["A:" + METRIC] + one["A:" + METRIC], three["B:" + METRIC] + one["B:" + METRIC]
        change = b / wb - a / wa
        n = min(samples_a * wa / totals["A:" + METRIC], samples_b * wb / totals["B:" + METRIC])
        bound = 5 * math.sqrt(2 * 0.25 / n) + 0.02
        print("%s: change of its share %+.3f (want %+.2f +- %.3f)" % (name, change, want, bound))
        assert abs(change - want) <= bound, name
        assert close(node["B-A:" + METRIC], b - a), name


def find(node, label):
    if node["label"] == label:
        return node
    for c in node["children"]:
        f = find(c, label)
        if f:
            return f
    return None


def tma(cmp_path):
    """make-viewdb's tma against tma-after (--raw --topdown): the node changes."""
    d = load(cmp_path)
    k6, k8, main = (find(d["tree"], l) for l in ("kern.c:6", "kern.c:8", "main"))
    assert k6["topdown"]["Backend Bound"] == {"a": 0.75, "b": 0.5, "change": -0.25}, k6["topdown"]
    assert k6["topdown"]["Retiring"] == {"a": 0.15, "b": 0.4, "change": 0.25}, k6["topdown"]
    assert k8["topdown"]["Backend Bound"]["change"] == 0, k8["topdown"]
    assert main["topdown"]["Backend Bound"] == {"a": 0.45, "b": 0.325, "change": -0.125}
    assert k8["inclusive"]["B-A:cpu-clock"] == 100, k8["inclusive"]


def normalized(cmp_path):
    """tma against tma-after with --normalize --metric topdown-be-bound: shares of each total
    (A: 750 + 150, B: 500 + 150)."""
    k6 = find(load(cmp_path)["tree"], "kern.c:6")["inclusive"]
    want = 500 / 650 - 750 / 900
    assert abs(k6["B-A:topdown-be-bound"] - want) < 1e-12, (k6, want)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "same":
        same(*sys.argv[2:5])
    elif what == "flat":
        flat(*sys.argv[2:5])
    elif what == "tma":
        tma(sys.argv[2])
    elif what == "normalized":
        normalized(sys.argv[2])
    elif what == "split":
        split(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit("compare-check.py: unknown check " + what)
