/* SPDX-License-Identifier: MIT */
/*
 * io.c: the launcher's IO source (source.h): -e IO adds one event per metric, counted by the
 * preloaded library's read and write wrappers; nothing to check or open here (the library
 * says what it cannot see).
 */
#include "compat.h"
#include "mfile.h"
#include "source.h"

static bool io_names(const char *name)
{
	return events_same_name(name, "IO");
}

static int io_add(struct mconfig *c, const char *name, const char *rate,
		  const struct event_defaults *d, int16_t group, bool leader)
{
	static const struct wrapper_metric metric[MIO_COUNT] = {
		[MIO_BYTES_READ] = { "IO Bytes Read", MFILE_UNIT_BYTES },
		[MIO_BYTES_WRITTEN] = { "IO Bytes Written", MFILE_UNIT_BYTES },
		[MIO_READ_TIME] = { "IO Read Time", MFILE_UNIT_NANOSECONDS },
		[MIO_WRITE_TIME] = { "IO Write Time", MFILE_UNIT_NANOSECONDS },
	};
	(void)name, (void)d, (void)leader;
	return events_add_wrapper_metrics(c, "IO", MSOURCE_IO, metric, MIO_COUNT, 0, rate, "",
					  group);
}

static void io_list(source_show_fn *show, void *ctx)
{
	show(ctx, "IO", "bytes read and written and the time in read, write, pread, readv, "
			"fread, fwrite... by calling context (no period)");
}

const struct launcher_source launcher_io_source = {
	.name = "IO",
	.names = io_names,
	.add = io_add,
	.list = io_list,
};
