#!/bin/sh
# SPDX-License-Identifier: MIT
# t0003-lean-symbols.sh: the async-signal-safe library that measure links (lib/liblean) and
# the preloaded library call no malloc, stdio or locking functions.
. "$top_srcdir/tests/lib/test-lib.sh"

command -v nm >/dev/null || skip_all 'nm (binutils) is not installed'
lean="$top_builddir/lib/.libs/liblean.a"
[ -f "$lean" ] || skip_all "no $lean (built without static convenience archives)"
forbidden='^(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|strdup|strndup|printf|fprintf|sprintf|snprintf|vsnprintf|vfprintf|puts|fputs|fwrite|fopen|fclose|fflush|perror|strerror|syslog|pthread_mutex_lock|pthread_mutex_unlock|__assert_fail|exit|abort|atexit|dlopen|dlsym|dl_iterate_phdr)$'

test_expect_success 'liblean references no malloc, stdio, locks or exit' '
	nm -u "$lean" | awk "{print \$NF}" | sort -u >undefined &&
	test -s undefined &&
	! grep -E "$forbidden" undefined
'
test_expect_success 'the zstd calls it makes are the static-workspace ones' '
	grep "^ZSTD_" undefined >zstd &&
	grep -qx ZSTD_initStaticCStream zstd &&
	! grep -qE "^ZSTD_(createCStream|createCCtx|compress)$" zstd
'
test_done
