/* SPDX-License-Identifier: MIT */
/*
 * plugins.c: dlopen libplugina.so, work in it, dlclose it; then the same with libpluginb.so,
 * which the loader usually maps at the address A had.  argv[1] = directory of the plugins.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static int run(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	void *h = dlopen(path, RTLD_NOW);
	if (!h)
		return fprintf(stderr, "plugins: %s\n", dlerror()), 1;
	void (*fn)(double) = (void (*)(double))dlsym(h, "plugin_run");
	if (!fn)
		return 1;
	printf("%s at %p\n", name, (void *)fn);
	fn(0.3);
	dlclose(h);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	return run(dir, "libplugina.so") || run(dir, "libpluginb.so");
}
