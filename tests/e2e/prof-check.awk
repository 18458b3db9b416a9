# SPDX-License-Identifier: MIT
# prof-check.awk: reads `fathom-dump DATABASE` and checks that at every context, for every
# metric, exclusive + the children's inclusive = inclusive (exactly: the values are integers),
# and that every thread's values add up the same way.  Prints "additive N contexts" or the
# first contexts that do not add up, and exits non-zero then.
function depth_of(line,    d, m) {
	if (match(line, /^ *\[[0-9]+\] /)) {
		m = substr(line, RSTART, RLENGTH)
		gsub(/[^0-9]/, "", m)
		return m + 0
	}
	match(line, /^ */)
	return RLENGTH / 2
}
/^contexts / { inctx = 1; next }
/^functions / { inctx = 0; next }
/^thread t[0-9]+:/ { thread = $2; sub(/:$/, "", thread); nthreads++; next }
inctx && / m[0-9]+ incl / {
	for (i = 1; i <= NF; i++) {
		if ($i ~ /^m[0-9]+$/) metric = $i
		if ($i == "incl") inc = $(i + 1)
		if ($i == "excl") exc = $(i + 1)
	}
	key = cur SUBSEP metric
	incl[key] = inc; excl[key] = exc; metrics[metric] = 1
	next
}
inctx {
	d = depth_of($0)
	line = $0
	sub(/^ *(\[[0-9]+\] )?/, "", line)
	split(line, w, " ")
	cur = w[1]
	stack[d] = cur
	parent[cur] = d > 0 ? stack[d - 1] : -1
	ids[cur] = 1
	next
}
thread != "" && /^  [0-9]+ m[0-9]+ / {
	k = thread SUBSEP $1 SUBSEP $2
	tin[k] = $3; tex[k] = $4; tthreads[thread] = 1
}
END {
	bad = 0
	for (id in ids) for (m in metrics) kids[id SUBSEP m] = 0
	for (id in ids) if (parent[id] >= 0) for (m in metrics) kids[parent[id] SUBSEP m] += incl[id SUBSEP m]
	for (id in ids) for (m in metrics) {
		k = id SUBSEP m
		if (excl[k] + kids[k] != incl[k] + 0) {
			if (bad++ < 10) printf "context %s %s: %s + %s != %s\n", id, m, excl[k], kids[k], incl[k]
		}
	}
	for (t in tthreads) {
		delete tk
		for (k in tin) { split(k, p, SUBSEP); if (p[1] == t) { id = p[2]; m = p[3]; if (parent[id] >= 0) tk[parent[id] SUBSEP m] += tin[k] } }
		for (k in tin) { split(k, p, SUBSEP); if (p[1] != t) continue
			if (tex[k] + tk[p[2] SUBSEP p[3]] != tin[k] + 0) {
				if (bad++ < 10) printf "thread %s context %s: does not add up\n", t, p[2]
			}
		}
	}
	n = 0; for (id in ids) n++
	if (bad) { printf "%d sums do not add up\n", bad; exit 1 }
	printf "additive %d contexts %d threads\n", n, nthreads
}
