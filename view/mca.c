/* SPDX-License-Identifier: MIT */
/*
 * mca.c: a loop's machine code rebuilt and given to llvm-mca (mca.h): the structure file, the
 * code read from the binary, the disassembly, running llvm-mca, and reading what it printed.
 */
#include "compat.h"
#include "mca.h"
#include "buf.h"
#include "elfsyms.h"
#include "error.h"
#include "search.h"
#include "sfile.h"
#include "userdir.h"
#include "xalloc.h"

#include <Zydis/Zydis.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INSTALL_HINT "llvm-mca is not installed (Debian: apt-get install llvm)"
#define MAX_CODE (1u << 20) /* bytes of one loop */

/* A message formatted as printf does, to free. */
static char *format(const char *fmt, ...) FTH_PRINTF(1, 2);
static char *format(const char *fmt, ...)
{
	va_list ap;
	struct buf b = BUF_INIT;
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	return buf_detach(&b, NULL);
}

/* ---- finding llvm-mca ---- */

/*
 * The llvm-mca found on PATH (llvm-mca, else the newest llvm-mca-N), and what it says to
 * --version and -mcpu=help: asked once for the process (the pane asks for every loop), the
 * tool looked for again while none was found.
 */
static struct {
	char *tool;
	char *version, *help; /* NULL until asked */
} llvm_mca;

static const char *found_tool(void)
{
	if (!llvm_mca.tool)
		llvm_mca.tool = user_path_find("llvm-mca");
	for (int version = 60; !llvm_mca.tool && version > 0; version--) {
		char name[32];
		snprintf(name, sizeof(name), "llvm-mca-%d", version);
		llvm_mca.tool = user_path_find(name);
	}
	return llvm_mca.tool;
}

/* ---- the structure file ---- */

static bool same_build_id(const struct sfile *sf, const struct mca_request *rq)
{
	return sf->build_id_len == rq->build_id_len &&
	       memcmp(sf->build_id, rq->build_id, rq->build_id_len) == 0;
}

/* The structure file of RQ's binary in DIR (*.fthst, by build-id) into SF; its path, or NULL. */
static char *find_in_dir(const char *dir, const struct mca_request *rq, struct sfile *sf)
{
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	struct dirent *e;
	char *found = NULL;
	while (!found && (e = readdir(d))) {
		if (!fth_has_suffix(e->d_name, ".fthst"))
			continue;
		char *p = xpath_join(dir, e->d_name);
		memset(sf, 0, sizeof(*sf));
		if (sfile_read(p, sf) == 0 && same_build_id(sf, rq)) {
			found = p;
		} else {
			sfile_release(sf);
			free(p);
		}
	}
	closedir(d);
	fth_error_clear();
	return found;
}

/* The structure file of the binary: in RQ's directories, then in struct's cache. */
static char *find_structure(const struct mca_request *rq, struct sfile *sf)
{
	memset(sf, 0, sizeof(*sf));
	for (size_t i = 0; i < rq->nstructs; i++) {
		char *p = find_in_dir(rq->structs[i], rq, sf);
		if (p)
			return p;
	}
	char *cache = user_cache_dir("structs");
	if (!cache || !rq->build_id_len) {
		free(cache);
		return NULL;
	}
	struct buf b = BUF_INIT;
	buf_printf(&b, "%s/", cache);
	for (uint32_t i = 0; i < rq->build_id_len; i++)
		buf_printf(&b, "%02x", rq->build_id[i]);
	buf_addstr(&b, ".fthst");
	free(cache);
	char *p = buf_detach(&b, NULL);
	if (sfile_read(p, sf) == 0 && same_build_id(sf, rq))
		return p;
	sfile_release(sf);
	fth_error_clear();
	free(p);
	return NULL;
}

/* ---- the code ---- */

struct code_range {
	uint64_t lo, hi;
	uint8_t *bytes;
};

/*
 * The code of loop node LOOP, in layout order: the blocks of it and of its inner loops (BLKS,
 * since 1.4; each block's start into *STARTS), else the address ranges of it and of its
 * descendants (no block starts).
 */
static size_t loop_ranges(const struct sfile *sf, uint32_t loop, struct code_range **out,
			  uint64_t **starts, uint32_t *nstarts)
{
	bool *in = xcalloc(sf->nnodes ? sf->nnodes : 1, sizeof(*in));
	for (uint32_t i = loop; i < sf->nnodes; i++)
		in[i] = i == loop || (sf->nodes[i].parent != SFILE_NONE &&
				      sf->nodes[i].parent < i && in[sf->nodes[i].parent]);
	size_t n = 0, cap = 0;
	uint32_t scap = 0;
	*out = NULL;
	*starts = NULL;
	*nstarts = 0;
	bool blocks = false;
	for (uint64_t k = 0; k < sf->nblocks && !blocks; k++)
		blocks = sf->blocks[k].node == loop;
	const struct sfile_range *rows = blocks ? sf->blocks : sf->ranges;
	uint64_t nrows = blocks ? sf->nblocks : sf->nranges;
	for (uint64_t k = 0; k < nrows; k++) {
		const struct sfile_range *r = &rows[k];
		if (blocks && r->node < sf->nnodes && in[r->node]) {
			ALLOC_GROW(*starts, *nstarts + 1, scap);
			(*starts)[(*nstarts)++] = r->lo;
		}
		if (r->node >= sf->nnodes || !in[r->node])
			continue;
		if (n && (*out)[n - 1].hi == r->lo) {
			(*out)[n - 1].hi = r->hi;
			continue;
		}
		ALLOC_GROW(*out, n + 1, cap);
		(*out)[n++] = (struct code_range){ r->lo, r->hi, NULL };
	}
	free(in);
	return n;
}


/* Read each range's bytes from the binary of RQ (a loadable segment's file contents). */
static int read_code(const struct mca_request *rq, struct code_range *r, size_t n)
{
	int fd = open(rq->binary, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fth_error_errno(errno, "%s: cannot open the binary", rq->binary);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	int rc = 0;
	size_t nph = 0;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph) != 0) {
		rc = fth_error("%s: not an ELF file", rq->binary);
		goto out;
	}
	const uint8_t *id;
	uint32_t idlen = elf_build_id(elf, &id);
	if (rq->build_id_len && (idlen != rq->build_id_len || memcmp(id, rq->build_id, idlen))) {
		rc = fth_error("%s: its build-id is not the one measured: the binary was rebuilt "
			       "since", rq->binary);
		goto out;
	}
	for (size_t k = 0; k < n && rc == 0; k++) {
		bool found = false;
		for (size_t i = 0; i < nph && !found; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    r[k].lo < ph.p_vaddr || r[k].hi > ph.p_vaddr + ph.p_filesz)
				continue;
			found = true;
			size_t len = (size_t)(r[k].hi - r[k].lo);
			r[k].bytes = xmalloc(len);
			if (pread(fd, r[k].bytes, len, (off_t)(ph.p_offset + r[k].lo - ph.p_vaddr)) !=
			    (ssize_t)len)
				rc = fth_error("%s: cannot read the loop's code at 0x%llx", rq->binary,
					       (unsigned long long)r[k].lo);
		}
		if (!found)
			rc = fth_error("%s: no loadable segment holds 0x%llx", rq->binary,
				       (unsigned long long)r[k].lo);
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

/* ---- the disassembly ---- */

struct insn {
	uint64_t addr;
	char *text;	/* NULL for a relative branch: written with its label */
	uint64_t target; /* a relative branch's */
	ZydisMnemonic mnemonic;
};

static bool inside(const struct code_range *r, size_t n, uint64_t a)
{
	for (size_t k = 0; k < n; k++)
		if (a >= r[k].lo && a < r[k].hi)
			return true;
	return false;
}

/* The loop cannot be modelled, and WHY (taken over). */
static void set_unmodellable(struct mca_report *out, char *why)
{
	out->status = MCA_UNMODELLABLE;
	free(out->reason);
	out->reason = why;
}

/* Decode the ranges into INSNS; a loop llvm-mca cannot model sets OUT's status. */
static size_t disassemble(const struct code_range *r, size_t n, struct insn **insns,
			  struct mca_report *out)
{
	ZydisDecoder dec;
	ZydisFormatter fmt;
	size_t count = 0, cap = 0;
	*insns = NULL;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)) ||
	    !ZYAN_SUCCESS(ZydisFormatterInit(&fmt, ZYDIS_FORMATTER_STYLE_INTEL))) {
		out->status = MCA_FAILED;
		out->reason = xstrdup("the Zydis decoder cannot start");
		return 0;
	}
	for (size_t k = 0; k < n && out->status == MCA_OK; k++) {
		uint64_t a = r[k].lo;
		while (a < r[k].hi && out->status == MCA_OK) {
			ZydisDecodedInstruction zi;
			ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
			const uint8_t *p = r[k].bytes + (a - r[k].lo);
			if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, p, (size_t)(r[k].hi - a), &zi,
								 ops))) {
				set_unmodellable(out, format("bytes that do not decode at 0x%llx",
							     (unsigned long long)a));
				break;
			}
			ALLOC_GROW(*insns, count + 1, cap);
			struct insn *x = &(*insns)[count++];
			*x = (struct insn){ .addr = a, .mnemonic = zi.mnemonic };
			bool branch = zi.meta.category == ZYDIS_CATEGORY_COND_BR ||
				      zi.meta.category == ZYDIS_CATEGORY_UNCOND_BR;
			unsigned long long at = a;
			if (zi.meta.category == ZYDIS_CATEGORY_CALL)
				set_unmodellable(out, format("it calls a function (the call at 0x%llx): "
							     "llvm-mca models straight-line code only",
							     at));
			else if (zi.meta.category == ZYDIS_CATEGORY_RET)
				set_unmodellable(out, format("it returns (at 0x%llx)", at));
			else if (zi.meta.category == ZYDIS_CATEGORY_SYSCALL ||
				 zi.meta.category == ZYDIS_CATEGORY_SYSTEM)
				set_unmodellable(out, format("it enters the kernel (at 0x%llx)", at));
			else if (branch && ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
				set_unmodellable(out, format("it jumps indirectly (at 0x%llx)", at));
			if (branch && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
				x->target = a + zi.length + (uint64_t)ops[0].imm.value.s;
			} else {
				char text[256];
				if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(
					    &fmt, &zi, ops, zi.operand_count_visible, text,
					    sizeof(text), ZYDIS_RUNTIME_ADDRESS_NONE, ZYAN_NULL)))
					set_unmodellable(out, format("an instruction at 0x%llx that "
								     "cannot be written out", at));
				else
					x->text = xstrdup(text);
			}
			a += zi.length;
		}
	}
	return count;
}

/* The assembly llvm-mca reads: Intel syntax, branches to labels. */
static void write_assembly(const struct insn *x, size_t n, const struct code_range *r,
			   size_t nr, struct buf *src, struct mca_report *out)
{
	/* The branches' targets, sorted: where a label goes. */
	uint64_t *targets = xcalloc(n + 1, sizeof(*targets));
	size_t ntargets = 0;
	for (size_t i = 0; i < n; i++)
		if (!x[i].text)
			targets[ntargets++] = x[i].target;
	qsort(targets, ntargets, sizeof(*targets), fth_cmp_u64);
	buf_addstr(src, ".intel_syntax noprefix\n");
	out->assembly = xcalloc(n + 1, sizeof(char *));
	out->addresses = xcalloc(n + 1, sizeof(uint64_t));
	for (size_t i = 0; i < n; i++) {
		size_t t = fth_lower_bound(targets, ntargets, sizeof(*targets), 0, x[i].addr);
		if (t < ntargets && targets[t] == x[i].addr)
			buf_printf(src, ".L%llx:\n", (unsigned long long)x[i].addr);
		struct buf line = BUF_INIT;
		if (x[i].text)
			buf_addstr(&line, x[i].text);
		else if (inside(r, nr, x[i].target))
			buf_printf(&line, "%s .L%llx", ZydisMnemonicGetString(x[i].mnemonic),
				   (unsigned long long)x[i].target);
		else
			buf_printf(&line, "%s .Lexit", ZydisMnemonicGetString(x[i].mnemonic));
		buf_printf(src, "%s\n", (char *)line.data);
		out->addresses[out->ninstructions] = x[i].addr;
		out->assembly[out->ninstructions++] = buf_detach(&line, NULL);
	}
	free(targets);
}

/* ---- running llvm-mca ---- */

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run ARGV with SRC on its standard input for at most SECONDS; its output and errors. */
static int run_tool(char *const *argv, const struct buf *src, unsigned seconds, struct buf *so,
		    struct buf *se, int *status, bool *timed_out)
{
	int in[2], o[2], e[2];
	*timed_out = false;
	if (pipe2(in, O_CLOEXEC) < 0)
		return fth_error_errno(errno, "pipe");
	if (pipe2(o, O_CLOEXEC) < 0) {
		close(in[0]), close(in[1]);
		return fth_error_errno(errno, "pipe");
	}
	if (pipe2(e, O_CLOEXEC) < 0) {
		close(in[0]), close(in[1]), close(o[0]), close(o[1]);
		return fth_error_errno(errno, "pipe");
	}
	pid_t pid = fork();
	if (pid < 0) {
		int err = errno;
		close(in[0]), close(in[1]), close(o[0]), close(o[1]), close(e[0]), close(e[1]);
		return fth_error_errno(err, "fork");
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(o[1], 1);
		dup2(e[1], 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]), close(o[1]), close(e[1]);
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	size_t written = 0;
	int fds[3] = { in[1], o[0], e[0] };
	double end = now_seconds() + seconds;
	while (fds[1] >= 0 || fds[2] >= 0) {
		struct pollfd p[3];
		int np = 0, which[3];
		if (fds[0] >= 0 && written == src->len) {
			close(fds[0]);
			fds[0] = -1;
		}
		for (int i = 0; i < 3; i++)
			if (fds[i] >= 0) {
				p[np] = (struct pollfd){ fds[i], i ? POLLIN : POLLOUT, 0 };
				which[np++] = i;
			}
		double left = end - now_seconds();
		if (left <= 0) {
			*timed_out = true;
			break;
		}
		int r = poll(p, (nfds_t)np, (int)(left * 1000) + 1);
		if (r < 0 && errno != EINTR)
			break;
		for (int k = 0; r > 0 && k < np; k++) {
			int i = which[k];
			if (!p[k].revents)
				continue;
			if (i == 0) {
				ssize_t w = write(fds[0], src->data + written, src->len - written);
				if (w > 0)
					written += (size_t)w;
				else {
					close(fds[0]);
					fds[0] = -1;
				}
				continue;
			}
			char chunk[8192];
			ssize_t got = read(fds[i], chunk, sizeof(chunk));
			if (got > 0) {
				buf_add(i == 1 ? so : se, chunk, (size_t)got);
			} else if (got == 0 || errno != EINTR) {
				close(fds[i]);
				fds[i] = -1;
			}
		}
	}
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (*timed_out)
		kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	signal(SIGPIPE, old);
	buf_addch(so, '\0');
	so->len--;
	buf_addch(se, '\0');
	se->len--;
	return 0;
}

/* ---- reading what llvm-mca printed ---- */

static const char *after(const char *line, const char *key)
{
	size_t k = strlen(key);
	return strncmp(line, key, k) == 0 ? line + k : NULL;
}

static char *trimmed(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	char *t = xmalloc(n + 1);
	memcpy(t, s, n);
	t[n] = '\0';
	/* llvm-mca separates mnemonic and operands with a tab, and aligns with spaces */
	char *w = t;
	for (char *p = t; *p; p++) {
		char ch = *p == '\t' ? ' ' : *p;
		if (ch == ' ' && w > t && w[-1] == ' ')
			continue;
		*w++ = ch;
	}
	*w = '\0';
	return t;
}

int mca_parse(const char *text, struct mca_report *r)
{
	enum { NONE, BOTTLENECK, CRITICAL, RESOURCES, PRESSURE_HEADER, PRESSURE } section = NONE;
	bool any = false;
	struct buf bottleneck = BUF_INIT;
	uint32_t acrit = 0, ares = 0;
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char *l = trimmed(line, len);
		const char *v;
		if ((v = after(l, "Iterations:"))) {
			r->iterations = (uint32_t)strtoul(v, NULL, 10);
		} else if ((v = after(l, "Total Cycles:"))) {
			r->total_cycles = strtoull(v, NULL, 10);
		} else if ((v = after(l, "Dispatch Width:"))) {
			r->dispatch_width = (uint32_t)strtoul(v, NULL, 10);
		} else if ((v = after(l, "uOps Per Cycle:"))) {
			r->uops_per_cycle = strtod(v, NULL);
		} else if ((v = after(l, "IPC:"))) {
			r->ipc = strtod(v, NULL);
		} else if ((v = after(l, "Block RThroughput:"))) {
			r->block_rthroughput = strtod(v, NULL);
			any = true;
		} else if (strncmp(l, "No resource or data dependency bottlenecks", 42) == 0) {
			buf_addstr(&bottleneck, "none found");
		} else if (after(l, "Throughput Bottlenecks:")) {
			section = BOTTLENECK;
		} else if (after(l, "Critical sequence based on the simulation:")) {
			section = CRITICAL;
		} else if (strcmp(l, "Resources:") == 0) {
			section = RESOURCES;
		} else if (strcmp(l, "Resource pressure per iteration:") == 0) {
			section = PRESSURE_HEADER;
		} else if (section == BOTTLENECK && *l) {
			/* "Data Dependencies:      [ 68.97% ]", "- Register Dependencies [ 68.97% ]" */
			const char *open = strchr(l, '[');
			if (open && !strstr(l, "[ 0.00% ]")) {
				if (bottleneck.len)
					buf_addstr(&bottleneck, ", ");
				char *name = trimmed(l, (size_t)(open - l));
				size_t n = strlen(name);
				if (n && name[n - 1] == ':')
					name[n - 1] = '\0';
				char *share = trimmed(open + 1, strcspn(open + 1, "]"));
				buf_printf(&bottleneck, "%s %s", name[0] == '-' ? name + 2 : name,
					   share);
				free(share);
				free(name);
			}
		} else if (section == BOTTLENECK) {
			section = NONE;
		} else if (section == CRITICAL && strstr(l, "+---->")) {
			/* "+----> 1.    vaddsd xmm0, ...  ## REGISTER dependency:  xmm0" */
			const char *dot = strstr(l, ". ");
			if (dot) {
				ALLOC_GROW(r->critical, r->ncritical + 1, acrit);
				char *c = trimmed(dot + 2, strlen(dot + 2));
				/* "  ## REGISTER dependency:  xmm0" -> "  (register dependency: xmm0)" */
				char *mark = strstr(c, "##");
				if (mark) {
					char *dep = trimmed(mark + 2, strlen(mark + 2));
					char *ins = trimmed(c, (size_t)(mark - c));
					struct buf b = BUF_INIT;
					buf_printf(&b, "%s  (%s)", ins, dep);
					free(dep), free(ins), free(c);
					c = buf_detach(&b, NULL);
				}
				r->critical[r->ncritical++] = c;
			}
		} else if (section == CRITICAL && strncmp(l, "Instruction Info:", 17) == 0) {
			section = NONE;
		} else if (section == RESOURCES && l[0] == '[') {
			/* "[3]   - Zn3ALU0"; the units of a group "[14.1] - Zn3LSU" as Zn3LSU.1 */
			const char *dash = strstr(l, "- "), *dot = strchr(l, '.');
			if (dash) {
				ALLOC_GROW(r->resources, r->nresources + 1, ares);
				char *name = trimmed(dash + 2, strlen(dash + 2));
				if (dot && dot < dash) {
					char *unit = format("%s.%.*s", name, (int)strcspn(dot + 1, "]"),
							    dot + 1);
					free(name);
					name = unit;
				}
				r->resources[r->nresources++] = (struct mca_resource){ name, 0 };
			}
		} else if (section == RESOURCES && !*l) {
			section = r->nresources ? NONE : RESOURCES;
		} else if (section == PRESSURE_HEADER && l[0] == '[') {
			section = PRESSURE;
		} else if (section == PRESSURE) {
			const char *p = l;
			for (uint32_t i = 0; i < r->nresources && *p; i++) {
				while (*p == ' ')
					p++;
				if (*p == '-') {
					p++;
				} else {
					char *end;
					r->resources[i].pressure = strtod(p, &end);
					p = end;
				}
			}
			section = NONE;
		}
		free(l);
		if (!nl)
			break;
		line = nl + 1;
	}
	if (bottleneck.len)
		r->bottleneck = buf_detach(&bottleneck, NULL);
	buf_release(&bottleneck);
	return any ? 0 : -1;
}

/* ---- all of it ---- */

/* The first line of TEXT that holds "error" (or the first line), for a message. */
static char *first_error(const char *text)
{
	const char *p = strstr(text, "error: ");
	if (!p)
		p = text;
	else
		p += strlen("error: ");
	return trimmed(p, strcspn(p, "\n"));
}

static int analyse_code(const struct mca_request *rq, char *tool, struct code_range *ranges,
			size_t nr, struct mca_report *out)
{
	struct insn *insns;
	size_t n = disassemble(ranges, nr, &insns, out);
	struct buf src = BUF_INIT, so = BUF_INIT, se = BUF_INIT;
	if (out->status == MCA_OK && n == 0)
		set_unmodellable(out, format("no instructions at 0x%llx",
					     (unsigned long long)rq->header));
	if (out->status == MCA_OK)
		write_assembly(insns, n, ranges, nr, &src, out);
	for (size_t i = 0; i < n; i++)
		free(insns[i].text);
	free(insns);
	if (out->status != MCA_OK) {
		buf_release(&src);
		return 0;
	}
	char *mcpu = rq->mcpu ? format("-mcpu=%s", rq->mcpu) : NULL;
	char *argv[5] = { tool, "-bottleneck-analysis", "-", NULL, NULL };
	if (mcpu) {
		argv[2] = mcpu;
		argv[3] = "-";
	}
	int status = 0;
	bool timed_out = false;
	unsigned seconds = rq->timeout_seconds ? rq->timeout_seconds : 20;
	int rc = run_tool(argv, &src, seconds, &so, &se, &status, &timed_out);
	if (rc == 0) {
		if (timed_out) {
			out->status = MCA_FAILED;
			out->reason = format("%s did not finish within %u s", tool, seconds);
		} else if (strstr((char *)se.data, "is not a recognized processor")) {
			out->status = MCA_FAILED;
			out->reason = format("%s does not know the CPU '%s' (llvm-mca -mcpu=help "
					       "lists those it knows)", tool, rq->mcpu ? rq->mcpu : "?");
		} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
			   strstr((char *)se.data, "error: ")) {
			char *why = first_error(se.len ? (char *)se.data : "it failed");
			bool unknown = strstr((char *)se.data, "invalid instruction") ||
				       strstr((char *)se.data, "unsupported") ||
				       strstr((char *)se.data, "invalid operand");
			out->status = unknown ? MCA_UNMODELLABLE : MCA_FAILED;
			if (unknown)
				out->reason = format("%s does not know one of its instructions: %s",
					  tool, why);
			else
				out->reason = format("%s failed: %s", tool, why);
			free(why);
		} else if (mca_parse((char *)so.data, out) < 0) {
			out->status = MCA_FAILED;
			out->reason = format("%s printed no block throughput", tool);
		}
	}
	free(mcpu);
	buf_release(&src);
	buf_release(&so);
	buf_release(&se);
	return rc;
}

/* ---- the processor ---- */

/* LLVM's names of a processor, best first; Intel's family 6 by model. */
static const struct intel_cpu {
	const char *names[4];
	uint8_t models[8]; /* 0 ends the list */
} intel_cpus[] = {
	{ { "sandybridge" }, { 0x2a, 0x2d } },
	{ { "ivybridge" }, { 0x3a, 0x3e } },
	{ { "haswell" }, { 0x3c, 0x3f, 0x45, 0x46 } },
	{ { "broadwell" }, { 0x3d, 0x47, 0x4f, 0x56 } },
	{ { "skylake" }, { 0x4e, 0x5e, 0x8e, 0x9e, 0xa5, 0xa6 } },
	{ { "cascadelake", "skylake-avx512" }, { 0x55 } },
	{ { "icelake-server" }, { 0x6a, 0x6c } },
	{ { "icelake-client" }, { 0x7d, 0x7e } },
	{ { "tigerlake", "icelake-client" }, { 0x8c, 0x8d } },
	{ { "alderlake", "skylake" }, { 0x97, 0x9a } },
	{ { "raptorlake", "alderlake", "skylake" }, { 0xb7, 0xba, 0xbf } },
	{ { "meteorlake", "alderlake", "skylake" }, { 0xaa, 0xab, 0xac } },
	{ { "sapphirerapids", "icelake-server" }, { 0x8f } },
	{ { "emeraldrapids", "sapphirerapids", "icelake-server" }, { 0xcf } },
	{ { "graniterapids", "sapphirerapids", "icelake-server" }, { 0xad, 0xae } },
};

/* AMD's by family and model ranges [LO, HI] (pairs; HI 0 ends the list). */
static const struct amd_cpu {
	unsigned family;
	const char *names[4];
	uint8_t ranges[6];
} amd_cpus[] = {
	{ 0x17, { "znver1" }, { 0x00, 0x2f } },
	{ 0x17, { "znver2", "znver1" }, { 0x30, 0xff } },
	{ 0x19, { "znver3", "znver2" }, { 0x00, 0x0f, 0x20, 0x5f } },
	{ 0x19, { "znver4", "znver3", "znver2" }, { 0x10, 0x1f, 0x60, 0xaf } },
	{ 0x1a, { "znver5", "znver4", "znver3" }, { 0x00, 0xff } },
};

const char *const *mca_cpu_names(const char *cpu)
{
	char vendor[16];
	unsigned family, model;
	if (!cpu || sscanf(cpu, "%15s %u %u", vendor, &family, &model) != 3)
		return NULL;
	if (strcmp(vendor, "GenuineIntel") == 0 && family == 6)
		for (size_t i = 0; i < ARRAY_SIZE(intel_cpus); i++)
			for (size_t k = 0; k < 8 && intel_cpus[i].models[k]; k++)
				if (intel_cpus[i].models[k] == model)
					return intel_cpus[i].names;
	if (strcmp(vendor, "AuthenticAMD") == 0)
		for (size_t i = 0; i < ARRAY_SIZE(amd_cpus); i++)
			for (size_t k = 0; k + 1 < 6 && amd_cpus[i].ranges[k + 1]; k += 2)
				if (amd_cpus[i].family == family && model >= amd_cpus[i].ranges[k] &&
				    model <= amd_cpus[i].ranges[k + 1])
					return amd_cpus[i].names;
	return NULL;
}

/* What the tool found prints to ARG, both of its streams, in *SAID (asked once). */
static const char *tool_says(const char *arg, char **said)
{
	if (!*said) {
		char *argv[] = { llvm_mca.tool, (char *)arg, NULL };
		struct buf none = BUF_INIT, so = BUF_INIT, se = BUF_INIT;
		int status;
		bool timed_out;
		run_tool(argv, &none, 10, &so, &se, &status, &timed_out);
		fth_error_clear();
		buf_add(&so, se.data, se.len);
		*said = buf_detach(&so, NULL);
		buf_release(&none);
		buf_release(&se);
	}
	return *said;
}

/* Whether the tool found models CPU NAME (it lists it under -mcpu=help). */
static bool tool_knows(const char *name)
{
	char key[64];
	snprintf(key, sizeof(key), "\n  %s ", name);
	return strstr(tool_says("-mcpu=help", &llvm_mca.help), key) != NULL;
}

/* The CPU for llvm-mca from the measured processor CPU (its first name the tool knows) into
 * *MCPU (to free), with a note on the choice into *NOTE (to free): NULL *MCPU when none. */
static void choose_cpu(const char *cpu, char **mcpu, char **note)
{
	*mcpu = *note = NULL;
	if (!cpu || !*cpu)
		return;
	const char *const *names = mca_cpu_names(cpu);
	if (!names) {
		*note = format("the measured processor (%s) is not one this view maps to llvm-mca's "
			       "names: --mcpu names it", cpu);
		return;
	}
	for (size_t i = 0; i < 4 && names[i] && !*mcpu; i++)
		if (tool_knows(names[i]))
			*mcpu = xstrdup(names[i]);
	if (!*mcpu)
		*note = format("the measured processor (%s, %s) is not one this llvm-mca models", cpu,
			       names[0]);
	else if (strcmp(*mcpu, names[0]) != 0)
		*note = format("the measured processor is %s (%s), which this llvm-mca does not "
			       "model: %s, the nearest it does", names[0], cpu, *mcpu);
	else
		*note = format("the measured processor (%s)", cpu);
}

/* The CPU llvm-mca models by default: the host's, as its --version names it ("Host CPU:"),
 * in a new string; NULL when it does not say. */
static char *host_cpu(void)
{
	const char *p = strstr(tool_says("--version", &llvm_mca.version), "Host CPU:");
	if (!p)
		return NULL;
	p += strlen("Host CPU:");
	return trimmed(p, strcspn(p, "\n"));
}

int mca_analyse(const struct mca_request *request, struct mca_report *out)
{
	memset(out, 0, sizeof(*out));
	out->status = MCA_OK;
	out->mcpu = xstrdup(request->mcpu ? request->mcpu : "");
	struct sfile sf;
	if (!found_tool()) {
		out->status = MCA_NO_TOOL;
		out->reason = xstrdup(INSTALL_HINT);
		return 0;
	}
	char *tool = llvm_mca.tool;
	out->tool = xstrdup(tool);
	/* The CPU: --mcpu, else the measured processor's model, else llvm-mca's default. */
	struct mca_request chosen_rq = *request;
	const struct mca_request *rq = &chosen_rq;
	if (!request->mcpu && request->measured_cpu) {
		char *chosen;
		choose_cpu(request->measured_cpu, &chosen, &out->cpu_note);
		if (chosen) {
			free(out->mcpu);
			out->mcpu = chosen;
			chosen_rq.mcpu = chosen;
		}
	}
	if (!rq->mcpu) {
		char *cpu = host_cpu();
		if (cpu) {
			free(out->mcpu);
			out->mcpu = cpu;
			out->host_cpu = true;
		}
	}
	char *path = find_structure(rq, &sf);
	if (!path) {
		out->status = MCA_NO_CODE;
		out->reason = format("no structure file of %s with its build-id (run struct on "
				       "the measurements, or give the directory of its structure "
				       "file with --structs)", rq->binary);
		return 0;
	}
	out->structure = path;
	uint32_t loop = SFILE_NONE;
	for (uint32_t i = 0; i < sf.nnodes && loop == SFILE_NONE; i++)
		if (sf.nodes[i].kind == SFILE_LOOP && sf.nodes[i].addr == rq->header)
			loop = i;
	struct code_range *ranges = NULL;
	size_t nr = loop == SFILE_NONE ? 0
				       : loop_ranges(&sf, loop, &ranges, &out->block_starts,
						     &out->nblocks);
	sfile_release(&sf);
	int rc = 0;
	if (!nr) {
		out->status = MCA_NO_CODE;
		out->reason = format("%s has no loop with its header at 0x%llx", path,
			  (unsigned long long)rq->header);
	} else if (ranges[nr - 1].hi - ranges[0].lo > MAX_CODE) {
		out->status = MCA_UNMODELLABLE;
		out->reason = format("the loop spans more than %u bytes", MAX_CODE);
	} else if (read_code(rq, ranges, nr) < 0) {
		out->status = MCA_NO_CODE;
		out->reason = xstrdup(fth_errmsg());
		fth_error_clear();
	} else {
		out->lo = ranges[0].lo;
		out->hi = ranges[nr - 1].hi;
		rc = analyse_code(rq, tool, ranges, nr, out);
	}
	for (size_t k = 0; k < nr; k++)
		free(ranges[k].bytes);
	free(ranges);
	return rc;
}

void mca_report_release(struct mca_report *r)
{
	free(r->reason);
	free(r->tool);
	free(r->mcpu);
	free(r->cpu_note);
	free(r->structure);
	free(r->block_starts);
	free(r->addresses);
	free_strings(r->assembly, r->assembly ? r->ninstructions : 0);
	for (uint32_t i = 0; i < r->nresources; i++)
		free(r->resources[i].name);
	free(r->resources);
	free(r->bottleneck);
	free_strings(r->critical, r->ncritical);
	memset(r, 0, sizeof(*r));
}
