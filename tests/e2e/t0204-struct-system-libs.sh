#!/bin/sh
# SPDX-License-Identifier: MIT
# t0204-struct-system-libs.sh: /bin/sh, python3 and every shared library they load (python's
# dlopen'ed extension modules included) are analysed without error, and each structure file
# reads back.
. "$top_srcdir/tests/lib/test-lib.sh"

command -v ldd >/dev/null 2>&1 || skip_all 'ldd is not installed'
bins=$(readlink -f /bin/sh)
libs=$(ldd "$bins" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p')
# python3 (the interpreter itself, not a wrapper script) and everything mapped once it has
# imported the usual extension modules, dlopen'ed ones included.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 2>/dev/null)
if [ -n "$py" ]; then
	pyfiles=$("$py" -c '
import sys
for m in ("ssl", "ctypes", "json", "decimal", "sqlite3", "zlib", "hashlib", "socket",
          "select", "math", "bz2", "lzma", "readline", "curses", "xml.parsers.expat"):
    try:
        __import__(m)
    except Exception:
        pass
print(sys.executable)
for line in open("/proc/self/maps"):
    path = line.split()[-1]
    if path.startswith("/") and ".so" in path:
        print(path)
' 2>/dev/null)
	bins="$bins $(echo "$pyfiles" | head -1)"
	libs="$libs
$(echo "$pyfiles" | tail -n +2)"
fi
libs=$(echo "$libs" | grep . | xargs -n1 readlink -f | sort -u)
[ -n "$libs" ] || skip_all 'ldd found no libraries'
printf '%s\n' $bins $libs >files
test_expect_success 'every binary and library is analysed without error' "
	mkdir out && struct --no-cache -q -j 2 -o out \$(cat files) 2>err; status=\$?
	cat err; test \$status -eq 0 && ! grep -qi 'error\\|corrupt' err
"
test_expect_success 'one structure file each, and each reads back' "
	n=0
	for f in \$(cat files); do
		set -- out/\$(basename \$f)-*.fthst && test -f \"\$1\" &&
		struct --dump \"\$1\" >dump && grep -q '^module ' dump || exit 1
		n=\$((n + 1))
	done
	test \$n -ge 10
"
test_expect_success 'libc has functions, lines or not, and loops' "
	libc=\$(grep '/libc\\.so' files) && set -- out/\$(basename \$libc)-*.fthst &&
	struct --dump \"\$1\" >libc.dump &&
	test \$(grep -c '^    function ' libc.dump) -gt 1000 &&
	test \$(grep -c '^ *loop at ' libc.dump) -gt 500
"
test_done
