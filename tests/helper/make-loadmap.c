/* SPDX-License-Identifier: MIT */
/*
 * make-loadmap.c: writes a measurement file whose load map names the given paths, for
 * struct's directory-mode tests:  make-loadmap OUT PATH[=BUILDID_HEX]...
 */
#include "compat.h"
#include "error.h"
#include "mfile.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	fth_progname = "make-loadmap";
	if (argc < 2)
		die(2, "usage: make-loadmap OUT PATH[=BUILDID_HEX]...");
	struct mfile m;
	memset(&m, 0, sizeof(m));
	m.id.host = xstrdup("test");
	m.id.program = xstrdup(argc > 2 ? argv[2] : "none");
	m.id.cwd = xstrdup("/");
	m.id.end_reason = xstrdup("exit");
	m.id.rank = -1;
	m.id.parent_thread = -1;
	m.nmodules = (uint32_t)(argc - 2);
	m.modules = xcalloc(m.nmodules + 1, sizeof(*m.modules));
	for (uint32_t i = 0; i < m.nmodules; i++) {
		struct mfile_module *mod = &m.modules[i];
		char *arg = xstrdup(argv[i + 2]), *eq = strchr(arg, '=');
		if (eq) {
			*eq++ = 0;
			size_t n = strlen(eq) / 2;
			mod->build_id = xmalloc(n + 1);
			for (size_t k = 0; k < n; k++) {
				unsigned v;
				if (sscanf(eq + 2 * k, "%2x", &v) != 1)
					die(2, "bad build-id %s", eq);
				mod->build_id[k] = (uint8_t)v;
			}
			mod->build_id_len = (uint32_t)n;
		}
		mod->path = arg;
		mod->nranges = 1;
		mod->ranges = xcalloc(1, sizeof(*mod->ranges));
		mod->ranges[0].start = 0x400000 + 0x100000 * (uint64_t)i;
		mod->ranges[0].end = mod->ranges[0].start + 0x1000;
		mod->ranges[0].prot = 5;
	}
	m.cct.nnodes = 1;
	m.cct.parent = xcalloc(1, sizeof(uint32_t));
	m.cct.parent[0] = MFILE_NO_PARENT;
	m.cct.kind = xcalloc(1, 1);
	m.cct.module = xcalloc(1, sizeof(uint32_t));
	m.cct.module[0] = MFILE_NO_MODULE;
	m.cct.offset = xcalloc(1, sizeof(uint64_t));
	m.cct.val_start = xcalloc(2, sizeof(uint32_t));
	if (mfile_write(argv[1], &m, 1) < 0)
		die(1, "%s", fth_errmsg());
	mfile_release(&m);
	return 0;
}
