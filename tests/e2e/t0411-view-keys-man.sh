#!/bin/sh
# SPDX-License-Identifier: MIT
# t0411-view-keys-man.sh: doc/view.1 KEYS names the keys of the help screen, section by section,
# and no others: both lists are made into "section<TAB>key" lines, the table's by
# view --list-keys (view/tui-keys.def), the man page's from the tags of its .TP entries.
. "$top_srcdir/tests/lib/test-lib.sh"

# The man page's spelling to the help's: Ctrl-O is C-o, Alt-Left M-Left, Shift-Tab S-Tab.
man_keys() {
	awk '
	/^\.SH / { keys = ($0 == ".SH KEYS"); next }
	!keys { next }
	/^\.SS Replaying keys/ { keys = 0; next }
	/^\.SS / { section = substr($0, 5); next }
	/^\.TP/ { tag = 1; next }
	tag {
		tag = 0
		line = $0
		sub(/^\.B[R]? /, "", line)
		gsub(/\\f[IPRB]/, "", line)
		gsub(/\\-/, "-", line)
		gsub(/\\e/, "\\", line)
		n = split(line, alts, /" *, *"/)
		for (i = 1; i <= n; i++) {
			k = alts[i]
			gsub(/"/, "", k)
			gsub(/^ +| +$/, "", k)
			gsub(/ +/, " ", k)
			sub(/- /, "-", k)
			if (k ~ /^Ctrl-/)
				k = "C-" tolower(substr(k, 6))
			sub(/^Alt-/, "M-", k)
			sub(/^Shift-/, "S-", k)
			print section "\t" k
		}
	}' "$top_srcdir/doc/view.1" | sort -u
}

test_expect_success 'view --list-keys lists the help screen keys' '
	view --list-keys >table && grep -q "^Moving	j$" table && grep -q "^Other	F10$" table
'
test_expect_success 'doc/view.1 KEYS and the key table name the same keys' '
	sort -u table >table.sorted && man_keys >man.sorted && test_cmp table.sorted man.sorted
'
test_done
