# SPDX-License-Identifier: MIT
"""tma-loops.py: the checks of the per-loop top-down tests (t0404, t0453), independent of prof
and view: where to put samples in tests/struct-workloads/tma-loops.c's binary, and what each
loop, inline call site and function must show.

  place SRC DUMP DISASM BIN    a make-tma-mfile -s file: samples at addresses of each loop's
                               own statements (from struct --dump), in each function outside
                               its loops, under main's call of stream and branchy (the return
                               addresses from objdump -d), each with the labels of every loop,
                               inline call site and function it counts in (callers' included),
                               and "# label" lines that say which tree node each label is
  tree WANT PLACE csv|json OUT every labelled node of view --batch --topdown OUT has each TMA
                               node's value of make-tma-mfile -p's "group" lines, to 1e-6
  db WANT PLACE DUMP           fathom-dump of the database: each labelled context's inclusive
                               counters are the label's sums (make-tma-mfile scales them for
                               multiplexing)
  pane WANT LABEL SCREEN       the TMA pane on the screen shows the label's values (0.1 %)
"""
import json
import re
import sys

# Behaviours (make-tma-mfile's, plus two defined here) of the code in each scope.
BEHAVIOURS = {
    "frontend": ".25 .10 .45 .20 .08 .05 .30 .05",
    "vector": ".55 .03 .12 .30 .20 .02 .06 .10",
}
SCOPE_BEHAVIOUR = {
    "loop-stream": ("stream", 4e6), "fn-stream": ("compute", 1e6),
    "loop-branchy-inner": ("branchy", 3e6), "loop-branchy-outer": ("frontend", 2e6),
    "fn-branchy": ("compute", 1e6), "loop-norm": ("vector", 3e6), "loop-main": ("frontend", 1e6),
    "loop-init": ("compute", 1e6), "fn-main": ("compute", 5e5),
}
REQUIRED = ["Retiring", "Bad Speculation", "Frontend Bound", "Backend Bound", "Memory Bound",
            "Core Bound", "Misprediction", "Machine Clear", "Fetch Latency",
            "Fetch Bandwidth", "Light Operations", "Heavy Operations"]


def fail(msg):
    sys.exit("tma-loops.py: " + msg)


def markers(src):
    """Header line -> loop name, from the LOOP comments."""
    out = {}
    for no, text in enumerate(open(src), 1):
        m = re.search(r"/\* LOOP (\S+) (\S+) \*/", text)
        if m:
            out[no] = m.group(1)
    return out


def parse_dump(path, loop_names):
    """Statement rows (lo, hi, scopes): scopes are labels, outermost first."""
    rows, stack, build_id, seen = [], [], None, {}
    for text in open(path):
        m = re.match(r"( *)(\S+) ?(.*)", text.rstrip("\n"))
        ind, kind, rest = len(m.group(1)) // 2, m.group(2), m.group(3)
        if kind == "build-id" and ind == 1:
            build_id = rest.split()[0]
        while stack and stack[-1][0] >= ind:
            stack.pop()
        if kind == "function":
            stack.append((ind, "fn-" + rest.split()[0]))
        elif kind == "inline":
            stack.append((ind, "inl-" + rest.split()[0]))
        elif kind == "loop":
            line = int(re.match(r"at .*?:(\d+)", rest).group(1))
            label = "loop-" + loop_names.get(line, "line%d" % line)
            fn = next(s for _, s in stack if s.startswith("fn-"))
            if (fn, label) in seen:
                fail("two loops %s in %s" % (label, fn))
            seen[(fn, label)] = line
            stack.append((ind, label))
        elif kind == "stmt":
            m = re.search(r"\[0x([0-9a-f]+)-0x([0-9a-f]+)\)$", rest)
            line = re.match(r".*?:(\d+)", rest)
            if stack and line:
                rows.append((int(m.group(1), 16), int(m.group(2), 16),
                             [s for _, s in stack]))
    return rows, build_id, seen


def return_addresses(disasm, caller, callees):
    """callee -> the address after its call in CALLER (objdump -d)."""
    out, infn, prev_call = {}, False, None
    for text in open(disasm):
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", text.strip())
        if m:
            infn, prev_call = m.group(1) == caller, None
            continue
        m = re.match(r"^\s*([0-9a-f]+):\s*(.*)$", text)
        if not infn or not m:
            continue
        addr, insn = int(m.group(1), 16), m.group(2)
        if prev_call:
            out.setdefault(prev_call, addr)
            prev_call = None
        c = re.search(r"\bcall\w*\s+[0-9a-f]+ <([^>+]+)>", insn)
        if c and c.group(1) in callees:
            prev_call = c.group(1)
    for c in callees:
        if c not in out:
            fail("no call of %s in %s" % (c, caller))
    return out


def scopes_at(rows, addr):
    for lo, hi, scopes in rows:
        if lo <= addr < hi:
            return scopes
    fail("no statement at %#x" % addr)


def place(src, dump, disasm, binary):
    names = markers(src)
    rows, build_id, loops = parse_dump(dump, names)
    for want in ("loop-stream", "loop-branchy-outer", "loop-branchy-inner", "loop-norm",
                 "loop-main"):
        if not any(label == want for _, label in loops):
            fail("struct found no %s" % want)
    ret = return_addresses(disasm, "main", ["stream", "branchy"])
    print("module %s %s" % (binary, build_id or "-"))
    for name, shares in BEHAVIOURS.items():
        print("behaviour %s %s" % (name, shares))
    # "# label LABEL KIND NAME LINE FUNCTION PARENT": the tree node of each label.
    print("# label all root - 0 - -")
    for fn in ("stream", "branchy", "main"):
        print("# label fn-%s function %s 0 - -" % (fn, fn))
    for (fn, label), line in sorted(loops.items()):
        parent = "inline:norm2" if label == "loop-norm" else "-"
        print("# label %s loop - %d %s %s" % (label, line, fn[3:], parent))
    print("# label inl-norm2 inline norm2 0 main -")
    # Samples: up to 3 statement rows of each scope's own code, several samples at each.
    own = {}
    for lo, hi, scopes in rows:
        own.setdefault(scopes[-1], []).append((lo, hi, scopes))
    k = 0
    for scope, (behaviour, cycles) in SCOPE_BEHAVIOUR.items():
        mine = own.get(scope, [])
        if not mine:
            fail("no statement of %s's own" % scope)
        picks = sorted({0, len(mine) // 2, len(mine) - 1})
        for i in picks:
            lo, hi, scopes = mine[i]
            fn = scopes[0][3:]
            callers, labels = "-", ["all"] + scopes
            if fn in ret:
                callers = "%#x" % ret[fn]
                labels += [s for s in scopes_at(rows, ret[fn] - 1) if s not in labels]
            k += 1
            print("sample %#x %s %d %.0f %s %s" % (lo, behaviour, 8 + 5 * (k % 4),
                                                   cycles * (1 + 0.1 * (k % 3)), callers,
                                                   ",".join(labels)))


def read_want(path):
    groups, sums = {}, {}
    for text in open(path):
        w = text.split()
        if w and w[0] == "group":
            groups.setdefault(w[1], {})[" ".join(w[2:-1])] = float(w[-1])
        elif w and w[0] == "sum":
            sums.setdefault(w[1], {})[w[2]] = float(w[3])
    return groups, sums


def read_labels(path):
    out = {}
    for text in open(path):
        w = text.split()
        if w[:2] == ["#", "label"]:
            out[w[2]] = dict(kind=w[3], name=w[4], line=int(w[5]), fn=w[6], parent=w[7])
    return out


def matches(spec, node, ancestors):
    if node["kind"] != spec["kind"]:
        return False
    if spec["name"] != "-" and node["name"] != spec["name"]:
        return False
    if spec["line"] and node["line"] != spec["line"]:
        return False
    fns = [a["name"] for a in ancestors if a["kind"] == "function"]
    if spec["fn"] != "-" and (not fns or fns[-1] != spec["fn"]):
        return False
    if spec["parent"] != "-":
        kind, name = spec["parent"].split(":")
        up = [a for a in ancestors if a["kind"] not in ("line",)]
        if not up or up[-1]["kind"] != kind or up[-1]["name"] != name:
            return False
    return True


def tree_nodes(fmt, path):
    """(node, ancestors) for every row of view's CSV or JSON output."""
    out = []
    if fmt == "csv":
        import csv
        rows = list(csv.reader(open(path)))
        head = rows[0]
        cols = {h[len("topdown "):]: i for i, h in enumerate(head) if h.startswith("topdown ")}
        stack = []
        for r in rows[1:]:
            d = int(r[2])
            node = dict(kind=r[4], name=r[5], line=int(r[7]) if r[7] else 0,
                        topdown={k: (float(r[i]) if r[i] else None) for k, i in cols.items()})
            del stack[d:]
            out.append((node, list(stack)))
            stack.append(node)
    else:
        doc = json.load(open(path))

        def walk(n, anc):
            node = dict(kind=n["kind"], name=n["name"], line=n["line"] or 0,
                        topdown=n["topdown"])
            out.append((node, anc))
            for c in n["children"]:
                walk(c, anc + [node])
        tree = doc["tree"]
        for t in tree if isinstance(tree, list) else [tree]:
            walk(t, [])
    return out


def check_tree(want, placefile, fmt, path):
    groups, _ = read_want(want)
    labels = read_labels(placefile)
    nodes = tree_nodes(fmt, path)
    checked = 0
    for label, spec in labels.items():
        found = [n for n, anc in nodes if matches(spec, n, anc)]
        if len(found) != 1:
            fail("%s: %d nodes match %s" % (label, len(found), spec))
        got, exp = found[0]["topdown"], groups[label]
        for name in REQUIRED:
            if name not in exp:
                fail("make-tma-mfile gave no %s" % name)
        for name, value in exp.items():
            if name == "Total Slots":
                continue
            g = got.get(name)
            if g is None or abs(g - value) > 1e-6:
                fail("%s %s: view %s, expected %.9f" % (label, name, g, value))
            checked += 1
    # The loops differ, so that a share taken from the wrong loop cannot pass.
    be = {l: groups[l]["Backend Bound"] for l in ("loop-stream", "loop-branchy-inner",
                                                  "loop-branchy-outer", "loop-norm")}
    if min(abs(a - b) for a in be.values() for b in be.values() if a is not b) < 0.005:
        fail("the loops' Backend Bound shares are too close: %s" % be)
    print("%d values checked on %d nodes" % (checked, len(labels)))


def check_db(want, placefile, dump):
    """fathom-dump: each labelled context's inclusive counters = the (scaled) sums."""
    _, sums = read_want(want)
    labels = read_labels(placefile)
    metrics, ctx, values = {}, [], {}
    stack = []
    for text in open(dump):
        m = re.match(r"^  m(\d+) \"([^\"]*)\" (raw|derived) ", text)
        if m:
            metrics[int(m.group(1))] = m.group(2)
            continue
        m = re.match(r"^( *)(\d+) (\w+) ?(.*)$", text)
        if m:
            ind = len(m.group(1)) // 2
            rest = m.group(4)
            name = rest.split()[0].strip('"') if rest else ""
            lm = re.search(r":(\d+)", rest)
            kind = m.group(3)
            if kind == "entry" and name == "root":
                kind = "root"
            node = dict(id=int(m.group(2)), kind=kind, name=name,
                        line=int(lm.group(1)) if lm else 0)
            del stack[ind:]
            ctx.append((node, list(stack)))
            stack.append(node)
            continue
        m = re.match(r"^ *m(\d+) incl (\S+)", text)
        if m and ctx:
            values.setdefault(ctx[-1][0]["id"], {})[int(m.group(1))] = float(m.group(2))
    checked = 0
    for label, spec in labels.items():
        found = [n for n, anc in ctx if matches(spec, n, anc)]
        if len(found) != 1:
            fail("%s: %d contexts match in the database dump" % (label, len(found)))
        have = values.get(found[0]["id"], {})
        for k, name in metrics.items():
            if name not in sums[label]:
                continue
            w = sums[label][name]
            if abs(have.get(k, 0.0) - w) > 1e-9 * max(1.0, w):
                fail("%s %s: database %s, expected %s" % (label, name, have.get(k), w))
            checked += 1
    print("%d counter sums checked" % checked)


def check_pane(want, label, screen):
    groups, _ = read_want(want)
    text = open(screen).read()
    checked = 0
    for name, value in groups[label].items():
        if name == "Total Slots":
            continue
        m = re.search(r"[│»> ]\s*" + re.escape(name) + r" +[^0-9\n]*?(\d+\.\d)%", text)
        if not m:
            fail("%s: no %s in the pane" % (label, name))
        if abs(float(m.group(1)) - 100 * value) > 0.05 + 1e-9:
            fail("%s %s: pane %s%%, expected %.3f%%" % (label, name, m.group(1), 100 * value))
        checked += 1
    if checked < len(REQUIRED):
        fail("only %d nodes in the pane" % checked)
    print("%d pane values checked" % checked)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "place":
        place(*args)
    elif cmd == "tree":
        check_tree(*args)
    elif cmd == "db":
        check_db(*args)
    elif cmd == "pane":
        check_pane(*args)
    else:
        fail("unknown command " + cmd)
