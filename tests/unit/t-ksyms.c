/* SPDX-License-Identifier: MIT */
/* t-ksyms.c: the kernel symbols file (lib/ksyms.h): picked out of kallsyms text, written and
 * read back, merged, searched; hidden addresses said; corrupt files refused by line. */
#include "compat.h"
#include "error.h"
#include "ksyms.h"
#include "tap.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char kallsyms[] =
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 t startup_64\n"
	"ffffffff81000c60 T asm_exc_page_fault\n"
	"ffffffff81000c90 T asm_sysvec_apic_timer_interrupt\n"
	"ffffffff81001000 D some_data\n"
	"ffffffff81002000 t local_fn\n"
	"ffffffffc0001000 t mod_fn\t[e1000]\n"
	"ffffffffc0002000 t mod_end\t[e1000]\n";

static FILE *text(const char *s)
{
	return fmemopen((void *)s, strlen(s), "r");
}

static int write_file(const char *name, const char *s)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n = fd >= 0 ? write(fd, s, strlen(s)) : -1;
	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static void refused(const char *content, const char *why, const char *title)
{
	struct ksyms k;
	unlink("bad.ksyms");
	write_file("bad.ksyms", content);
	ok(ksyms_read("bad.ksyms", &k) < 0, "refused: %s", title);
	like(fth_errmsg(), why, "  says %s", why);
}

int main(void)
{
	struct ksyms k;
	memset(&k, 0, sizeof(k));
	uint64_t addrs[] = { 0xffffffff81000c81, 0xffffffff81000c62, 0xffffffffc0001010,
			     0xffffffff81000010, 0xffffffffc0003000, 0x1000 };
	FILE *f = text(kallsyms);
	ok(ksyms_from_kallsyms(f, addrs, 6, &k) == 0, "kallsyms text read");
	fclose(f);
	is_uint(k.n, 3, "three symbols cover the addresses (one twice; two past or before all)");
	ok(!k.hidden, "not hidden");
	const struct ksym *s = ksyms_find(&k, 0xffffffff81000c81);
	ok(s && !strcmp(s->name, "asm_exc_page_fault") && s->end == 0xffffffff81000c90,
	   "a function ends where the next symbol starts");
	s = ksyms_find(&k, 0xffffffff81000010);
	ok(s && !strcmp(s->name, "_text"), "of two names at one address, the global one");
	s = ksyms_find(&k, 0xffffffffc0001010);
	ok(s && !strcmp(s->name, "mod_fn [e1000]"), "a module's symbol names its module");
	ok(!ksyms_find(&k, 0xffffffff81000c90), "an address no saved symbol covers: none");

	k.host = strdup("vm");
	k.build_id_len = 3;
	memcpy(k.build_id, "\x01\xab\xff", 3);
	char dir[] = "/tmp/t-ksyms-XXXXXX";
	ok(mkdtemp(dir) != NULL && chdir(dir) == 0, "a scratch directory");
	int dfd = open(".", O_RDONLY | O_DIRECTORY);
	ok(ksyms_write(dfd, "a.ksyms", &k) == 0, "written");
	ok(ksyms_write(dfd, "a.ksyms", &k) < 0, "never over an existing file");
	struct ksyms r;
	ok(ksyms_read("a.ksyms", &r) == 0, "read back: %s", fth_errmsg());
	ok(r.n == 3 && !strcmp(r.syms[2].name, "mod_fn [e1000]") && !strcmp(r.host, "vm") &&
		   r.build_id_len == 3 && !memcmp(r.build_id, "\x01\xab\xff", 3),
	   "the same symbols, host and build-id");

	struct ksyms o;
	memset(&o, 0, sizeof(o));
	uint64_t more[] = { 0xffffffff81002010, 0xffffffff81000c70 };
	f = text(kallsyms);
	ksyms_from_kallsyms(f, more, 2, &o);
	fclose(f);
	ksyms_merge(&r, &o);
	ok(r.n == 4 && ksyms_find(&r, 0xffffffff81002010) &&
		   !strcmp(ksyms_find(&r, 0xffffffff81002010)->name, "local_fn"),
	   "merged: the union, each symbol once");
	ksyms_release(&o);
	ksyms_release(&r);

	/* Without root, or with kernel.kptr_restrict, every address reads 0. */
	f = text("0000000000000000 T _text\n0000000000000000 T asm_exc_page_fault\n");
	memset(&o, 0, sizeof(o));
	ok(ksyms_from_kallsyms(f, addrs, 6, &o) == 0 && o.n == 0 && o.hidden &&
		   strstr(o.hidden, "kptr_restrict"),
	   "hidden addresses: no symbols, and why");
	fclose(f);
	o.host = strdup("vm");
	ok(ksyms_write(dfd, "h.ksyms", &o) == 0 && ksyms_read("h.ksyms", &r) == 0 && r.hidden &&
		   !strcmp(r.hidden, o.hidden),
	   "the reason is kept in the file");
	ksyms_release(&r);
	ksyms_release(&o);

	refused("", "empty file", "an empty file");
	refused("FTHMKSYX 1\n", "not a kernel symbols file", "another magic");
	refused("FTHMKSYM 2\nhost a\nbuild-id \n", "version 2", "an unknown version");
	refused("FTHMKSYM 1\nhost a\nbuild-id 0\n", "bad build-id", "an odd build-id");
	refused("FTHMKSYM 1\nhost a\nbuild-id 00\n0000000000000010 0000000000000008 f\n",
		"out of order", "a symbol ending before it starts");
	refused("FTHMKSYM 1\nhost a\nbuild-id 00\n10 20 f\n18 30 g\n", "overlapping",
		"overlapping symbols");
	refused("FTHMKSYM 1\nhost a\nbuild-id 00\n10 20 f", "cut short", "a cut last line");
	refused("FTHMKSYM 1\nhost a\nbuild-id 00\n10 20 \x1b[2J\n", "bad symbol name",
		"a name with a terminal escape");
	refused("FTHMKSYM 1\nhost a\n10 20 f\n", "missing", "no build-id line");
	refused("FTHMKSYM 1\nhost a\nbuild-id 00\nzz 20 f\n", "line 4", "says the line");
	unlink("bad.ksyms");
	unlink("a.ksyms");
	unlink("h.ksyms");
	close(dfd);
	ok(chdir("/") == 0 && rmdir(dir) == 0, "scratch directory removed");
	ksyms_release(&k);
	return done_testing();
}
