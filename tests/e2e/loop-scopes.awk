# SPDX-License-Identifier: MIT
# loop-scopes.awk: the loops and inline call sites of a struct --dump, each with the scopes
# around it (t0201, t0202, t0211 print what they compare from these):
#   loop FUNCTION INLINE LINE PARENT_LINE reducible|irreducible
#   inline FUNCTION NAME PARENT_LINE
# INLINE is the innermost inline call site above the loop and PARENT_LINE the enclosing loop's
# header line, "-" when there is none.
{ match($0, /^ */); ind = RLENGTH; kind = $1 }
kind == "function" { fn = $2; n = 0; next }
kind != "loop" && kind != "inline" { next }
{
	while (n > 0 && sind[n] >= ind) n--
	parent = "-"; inl = "-"
	for (i = n; i > 0; i--) if (skind[i] == "loop") { parent = sline[i]; break }
	for (i = n; i > 0; i--) if (skind[i] == "inline") { inl = sname[i]; break }
	n++; sind[n] = ind; skind[n] = kind; sname[n] = $2
	if (kind == "loop") {
		split($3, w, ":"); sline[n] = w[2]
		print "loop", fn, inl, w[2], parent, (/irreducible/ ? "irreducible" : "reducible")
	} else
		print "inline", fn, $2, parent
}
