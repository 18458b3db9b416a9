/* SPDX-License-Identifier: MIT */
/*
 * io.c: the launcher's IO source (source.h): -e IO adds one event per metric, counted by the
 * preloaded library's read and write wrappers; nothing to check or open here (the library
 * says what it cannot see).
 */
#include "compat.h"
#include "mfile.h"
#include "source.h"

static const struct wrapper_metric io_metric[MIO_COUNT] = {
	[MIO_BYTES_READ] = { "IO Bytes Read", MFILE_UNIT_BYTES },
	[MIO_BYTES_WRITTEN] = { "IO Bytes Written", MFILE_UNIT_BYTES },
	[MIO_READ_TIME] = { "IO Read Time", MFILE_UNIT_NANOSECONDS },
	[MIO_WRITE_TIME] = { "IO Write Time", MFILE_UNIT_NANOSECONDS },
};

const struct launcher_source launcher_io_source = {
	.name = "IO",
	.description = "bytes read and written and the time in read, write, pread, readv, fread, "
		       "fwrite... by calling context (no period)",
	.wrapped = &(const struct wrapper_metrics){ MSOURCE_IO, io_metric, MIO_COUNT, 0, "" },
};
