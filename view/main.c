/* SPDX-License-Identifier: MIT */
/*
 * view: the terminal browser of metric databases.  main() parses the options, opens the
 * database through the model (view/model.h), then prints a view (--batch, view/batch.c) or
 * hands over to the ncurses interface (view/tui.h).
 */
#include "compat.h"
#include "batch.h"
#include "batch-mca.h"
#include "batch-trace.h"
#include "compare.h"
#include "dbfile.h"
#include "error.h"
#include "model.h"
#include "tui.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: view [options] DATABASE\n"
		"       view [options] DATABASE-A DATABASE-B\n"
		"Browse a metric database written by prof (its directory, or its summary.fdb), or\n"
		"compare two: scopes matched by what they are in the source, each metric as A, B,\n"
		"B-A and B/A, sorted by the largest change.\n"
		"\n"
		"  --batch                 print the tree instead of the interactive interface\n"
		"  --view VIEW             top-down (default), bottom-up, flat or trace (the\n"
		"                          timeline of a run measured with measure -t)\n"
		"  --format FORMAT         batch output: text (default), csv or json\n"
		"  --metric NAME           a metric to show (repeatable; exact name, any case, or a\n"
		"                          unique prefix); default: every measured metric that\n"
		"                          is not zero in the whole program\n"
		"  --depth N               batch: levels expanded below the root (default: all);\n"
		"                          trace: the call-path depth shown (0: the outermost)\n"
		"  --width W               trace, batch: bins across the window (default: 100)\n"
		"  --time A-B              trace: the window, in seconds from the trace's start\n"
		"                          (A- to its end; default: all of it)\n"
		"  --hot-path              batch: expand along the hot path from the root\n"
		"  --no-hot-path           interactive: open with the root expanded only (default:\n"
		"                          along the hot path)\n"
		"  --topdown               batch: add each node's top-down (TMA) breakdown\n"
		"  --raw                   batch: exact values as stored (ns, bytes, unrounded),\n"
		"                          not in the screen's units and rounding\n"
		"  --normalize             comparing: counts as shares of each run's total (time\n"
		"                          stays in seconds), for runs of different lengths or rates\n"
		"  --min-change X          comparing: hide scopes whose change of the sorted metric\n"
		"                          is below X (in its unit: seconds, bytes, a count) or X%%\n"
		"                          (of the larger run's total), with nothing larger below\n"
		"  --source-path DIR       look for source files in DIR too (repeatable)\n"
		"  --thread N              show thread N's values instead of the sum over threads\n"
		"  --process PID           show the sums over process PID's threads\n"
		"  --rank R                show the sums over MPI rank R's threads\n"
		"  --mca LOOP              batch: the loop at FILE:LINE (or context N) through\n"
		"                          llvm-mca: its predicted cycles per iteration, IPC,\n"
		"                          bottleneck and port pressure, beside what was measured\n"
		"  --mcpu CPU              --mca: the CPU llvm-mca models (default: this host's)\n"
		"  --structs DIR           --mca: look for structure files in DIR first (repeatable;\n"
		"                          then struct's cache)\n"
		"  --ascii                 ASCII line drawing and arrows\n"
		"  --no-color              no colours (also when NO_COLOR is set)\n"
		"  --no-mouse              do not take the mouse\n"
		"  --no-demangle           C++ and Rust names as the binaries spell them\n"
		"  --keys KEYS             keystrokes replayed at start-up (interactive)\n"
		"  -h, --help              this help\n"
		"      --version           the version\n");
}

enum {
	OPT_BATCH = 256, OPT_VIEW, OPT_FORMAT, OPT_METRIC, OPT_DEPTH, OPT_HOT_PATH, OPT_NO_HOT_PATH,
	OPT_TOPDOWN, OPT_SOURCE_PATH, OPT_THREAD, OPT_PROCESS, OPT_RANK, OPT_ASCII, OPT_NO_COLOR, OPT_NO_MOUSE,
	OPT_NO_DEMANGLE, OPT_KEYS, OPT_VERSION, OPT_RAW, OPT_LIST_KEYS, OPT_WIDTH, OPT_TIME,
	OPT_NORMALIZE, OPT_MIN_CHANGE, OPT_MCA, OPT_MCPU, OPT_STRUCTS
};

static const struct option options[] = {
	{ "batch", no_argument, NULL, OPT_BATCH },
	{ "view", required_argument, NULL, OPT_VIEW },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "metric", required_argument, NULL, OPT_METRIC },
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ "width", required_argument, NULL, OPT_WIDTH },
	{ "time", required_argument, NULL, OPT_TIME },
	{ "hot-path", no_argument, NULL, OPT_HOT_PATH },
	{ "no-hot-path", no_argument, NULL, OPT_NO_HOT_PATH },
	{ "topdown", no_argument, NULL, OPT_TOPDOWN },
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "normalize", no_argument, NULL, OPT_NORMALIZE },
	{ "min-change", required_argument, NULL, OPT_MIN_CHANGE },
	{ "source-path", required_argument, NULL, OPT_SOURCE_PATH },
	{ "thread", required_argument, NULL, OPT_THREAD },
	{ "process", required_argument, NULL, OPT_PROCESS },
	{ "rank", required_argument, NULL, OPT_RANK },
	{ "mca", required_argument, NULL, OPT_MCA },
	{ "mcpu", required_argument, NULL, OPT_MCPU },
	{ "structs", required_argument, NULL, OPT_STRUCTS },
	{ "ascii", no_argument, NULL, OPT_ASCII },
	{ "no-color", no_argument, NULL, OPT_NO_COLOR },
	{ "no-mouse", no_argument, NULL, OPT_NO_MOUSE },
	{ "no-demangle", no_argument, NULL, OPT_NO_DEMANGLE },
	{ "keys", required_argument, NULL, OPT_KEYS },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	/* Not in the help: for the test that holds doc/view.1 KEYS to the key table. */
	{ "list-keys", no_argument, NULL, OPT_LIST_KEYS },
	{ NULL, 0, NULL, 0 },
};

static long parse_number(const char *opt, const char *s, long max)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 0 || v > max)
		die(1, "%s: '%s' is not a number from 0 to %ld", opt, s, max);
	return v;
}

struct choice {
	const char *name;
	int value;
};

static const struct choice view_names[] = {
	{ "top-down", MODEL_TOPDOWN }, { "topdown", MODEL_TOPDOWN }, { "bottom-up", MODEL_BOTTOMUP },
	{ "bottomup", MODEL_BOTTOMUP }, { "flat", MODEL_FLAT }, { "trace", MODEL_NVIEWS },
};
static const struct choice format_names[] = {
	{ "text", BATCH_TEXT }, { "csv", BATCH_CSV }, { "json", BATCH_JSON },
};

/* The value of the choice named ARG; else die saying that OPT takes one of EXPECTED. */
static int parse_choice(const char *opt, const char *arg, const struct choice *choices, size_t n,
			const char *expected)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(arg, choices[i].name))
			return choices[i].value;
	die(1, "%s: '%s' is not %s", opt, arg, expected);
}

/* Add ARG to the list of a repeatable option. */
static void append_arg(const char ***list, size_t *n, const char *arg)
{
	*list = xreallocarray(*list, *n + 1, sizeof(**list));
	(*list)[(*n)++] = arg;
}

/* --time A-B: seconds from the trace's start (B < 0: to its end). */
static void parse_window(const char *arg, double *from, double *to)
{
	char *end;
	errno = 0;
	*from = strtod(arg, &end);
	*to = -1;
	if (end == arg || *end != '-' || errno || !(*from >= 0))
		die(1, "--time: '%s' is not A-B or A- (seconds from the trace's start)", arg);
	if (end[1]) {
		const char *b = end + 1;
		*to = strtod(b, &end);
		if (end == b || *end || errno || !(*to > *from))
			die(1, "--time: '%s' is not A-B with B after A (seconds)", arg);
	}
}

/* view --batch --view trace: the timeline of MODEL's database. */
static int batch_timeline(struct model *model, const struct batch_options *bo, uint32_t width,
			  double from, double to)
{
	struct trace_model *tm;
	int rc = model_traces(model, &tm);
	if (rc != 0) {
		if (rc > 0)
			fth_error("%s: no traces: measure the program with measure -t, then run "
				  "prof again", bo->database);
		return -1;
	}
	uint64_t span = tm->t_end - tm->t_begin;
	uint64_t t0 = tm->t_begin + (uint64_t)(from * 1e9);
	uint64_t t1 = to < 0 ? tm->t_end + 1 : tm->t_begin + (uint64_t)(to * 1e9);
	if (t0 > tm->t_end)
		return fth_error("--time: the trace is %.3f s long", (double)span / 1e9);
	trace_model_set_depth(tm, bo->depth != UINT32_MAX ? bo->depth
							   : trace_model_default_depth(tm, t0, t1));
	struct batch_trace_options o = { .m = tm, .t0 = t0, .t1 = t1, .width = width,
					 .json = bo->format == BATCH_JSON,
					 .database = bo->database,
					 .function_name = model_function_name, .ctx = model };
	if (bo->format == BATCH_CSV)
		return fth_error("--view trace: text or json, not csv");
	return batch_trace(&o, stdout);
}

/* --min-change X or X%: *PERCENT says which. */
static double parse_min_change(const char *arg, bool *percent)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	*percent = *end == '%';
	if (end == arg || errno || (*end && strcmp(end, "%")) || !(v >= 0) || isinf(v))
		die(1, "--min-change: '%s' is not a number, or a percentage (5%%)", arg);
	return v;
}

/* The bound of --min-change on METRIC (a change, B - A) in its stored unit. */
static double min_change_bound(struct model *model, uint32_t metric, double v, bool percent)
{
	const struct model_compare *cmp = model_comparison(model);
	const struct model_compare_metric *c = &cmp->metrics[metric];
	if (percent) {
		if (c->normalized)
			return v / 100;
		double ta = fabs(model_total(model, c->a)), tb = fabs(model_total(model, c->b));
		return v / 100 * (ta > tb ? ta : tb);
	}
	const char *unit = model_number_unit(model, metric, false);
	return unit && !strcmp(unit, "s") ? v * 1e9 : v;
}

/* The columns of --metric NAME: in a comparison, a metric of both runs named without its run
 * ("cpu-clock") brings its group (A, B, B-A, B/A). */
static void add_metric_columns(struct model *model, uint32_t k, uint32_t *metrics, uint32_t *n)
{
	const struct model_compare *cmp = model_comparison(model);
	const struct model_compare_metric *c = cmp ? &cmp->metrics[k] : NULL;
	if (!c || c->role != MODEL_ROLE_A || c->delta == DBFILE_NONE) {
		metrics[(*n)++] = k;
		return;
	}
	const uint32_t group[4] = { c->a, c->b, c->delta, c->ratio };
	for (int g = 0; g < 4; g++)
		metrics[(*n)++] = group[g];
}

/* Whether PATH is a directory of measurement files (measure's output) without a database. */
static bool is_measurement_directory(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool database = false, measurements = false;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		database |= !strcmp(de->d_name, DBFILE_SUMMARY);
		measurements |= n > 5 && !strcmp(de->d_name + n - 5, ".fthm");
	}
	closedir(d);
	return measurements && !database;
}

int main(int argc, char **argv)
{
	fth_progname = "view";
	bool batch = false, no_demangle = false;
	struct batch_options bo = { .view = MODEL_TOPDOWN,
				    .format = BATCH_TEXT,
				    .depth = UINT32_MAX };
	struct tui_options to = { .hot_path = true };
	const char **metric_names = NULL, **source_paths = NULL, **struct_dirs = NULL;
	size_t nmetric_names = 0, nsource_paths = 0, nstruct_dirs = 0;
	const char *mca_loop = NULL, *mcpu = NULL;
	long thread = -1, process = -1, rank = -1;
	uint32_t trace_width = 100;
	double time_from = 0, time_to = -1, min_change = 0;
	bool min_change_percent = false;
	struct compare_options co = { 0 };
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (c) {
		case OPT_BATCH:
			batch = true;
			break;
		case OPT_VIEW:
			bo.view = (enum model_view)parse_choice("--view", optarg, view_names,
								ARRAY_SIZE(view_names),
								"top-down, bottom-up, flat or trace");
			break;
		case OPT_FORMAT:
			bo.format = (enum batch_format)parse_choice("--format", optarg, format_names,
								    ARRAY_SIZE(format_names),
								    "text, csv or json");
			break;
		case OPT_METRIC:
			append_arg(&metric_names, &nmetric_names, optarg);
			break;
		case OPT_DEPTH:
			bo.depth = (uint32_t)parse_number("--depth", optarg, INT_MAX);
			break;
		case OPT_WIDTH:
			trace_width = (uint32_t)parse_number("--width", optarg, 100000);
			if (!trace_width)
				die(1, "--width: at least one bin");
			break;
		case OPT_TIME:
			parse_window(optarg, &time_from, &time_to);
			break;
		case OPT_HOT_PATH:
			bo.hot_path = to.hot_path = true;
			break;
		case OPT_NO_HOT_PATH:
			to.hot_path = false;
			break;
		case OPT_TOPDOWN:
			bo.topdown = true;
			break;
		case OPT_RAW:
			bo.raw = true;
			break;
		case OPT_NORMALIZE:
			co.normalize = true;
			break;
		case OPT_MIN_CHANGE:
			min_change = parse_min_change(optarg, &min_change_percent);
			break;
		case OPT_SOURCE_PATH:
			append_arg(&source_paths, &nsource_paths, optarg);
			break;
		case OPT_THREAD:
			thread = parse_number("--thread", optarg, INT32_MAX);
			break;
		case OPT_PROCESS:
			process = parse_number("--process", optarg, UINT32_MAX);
			break;
		case OPT_RANK:
			rank = parse_number("--rank", optarg, INT32_MAX);
			break;
		case OPT_MCA:
			mca_loop = optarg;
			break;
		case OPT_MCPU:
			mcpu = optarg;
			break;
		case OPT_STRUCTS:
			append_arg(&struct_dirs, &nstruct_dirs, optarg);
			break;
		case OPT_ASCII:
			bo.ascii = to.ascii = true;
			break;
		case OPT_NO_COLOR:
			to.no_color = true;
			break;
		case OPT_NO_DEMANGLE:
			no_demangle = true;
			break;
		case OPT_NO_MOUSE:
			to.no_mouse = true;
			break;
		case OPT_KEYS:
			to.keys = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			printf("view (fathom) %s\n", PACKAGE_VERSION);
			return 0;
		case OPT_LIST_KEYS:
			tui_list_keys(stdout);
			return 0;
		case ':':
			die(1, "%s needs an argument (view --help lists the options)", argv[optind - 1]);
		default:
			die(1, "unknown option %s (view --help lists the options)", argv[optind - 1]);
		}
	}
	if (optind == argc || argc - optind > 2) {
		usage(stderr);
		die(1, optind == argc ? "no database given" : "one database, or two to compare");
	}
	bool comparing = argc - optind == 2;
	for (int i = optind; i < argc; i++)
		if (is_measurement_directory(argv[i]))
			die(1, "%s: a measurement directory, not a database: run 'prof %s' first, "
			       "then view the database it writes", argv[i], argv[i]);
	if (comparing && bo.view == MODEL_NVIEWS)
		die(1, "--view trace: a timeline is of one run; view each database's on its own "
		       "(view --view trace %s)", argv[optind]);
	if (!comparing && (co.normalize || min_change > 0))
		die(1, "%s: two databases to compare", co.normalize ? "--normalize" : "--min-change");
	if (mca_loop && comparing)
		die(1, "--mca: a loop of one run (view --batch --mca LOOP DATABASE)");
	if (!mca_loop && batch && (mcpu || nstruct_dirs))
		die(1, "%s: goes with --mca LOOP (or the interactive view's llvm-mca pane)",
		    mcpu ? "--mcpu" : "--structs");
	if (mca_loop)
		batch = true;
	const char *database = argv[optind];
	bool whole = batch && bo.view != MODEL_NVIEWS;
	co.whole = whole;
	co.no_threads = batch && thread < 0 && process < 0 && rank < 0;
	struct model *model = comparing ? compare_open(argv[optind], argv[optind + 1], &co)
			      : whole	  ? model_open_whole(database)
					  : model_open(database);
	if (!model)
		die(1, "%s", fth_errmsg());
	model_set_demangle(model, !no_demangle);
	uint32_t *metrics = xcalloc(4 * nmetric_names + model_nmetrics(model) + 1, sizeof(uint32_t));
	uint32_t nmetrics = 0;
	for (size_t i = 0; i < nmetric_names; i++) {
		int k = model_metric_by_name(model, metric_names[i]);
		if (k < 0) {
			fprintf(stderr, "view: %s: no metric '%s' (or it is ambiguous); metrics:",
				database, metric_names[i]);
			for (uint32_t m = 0; m < model_nmetrics(model); m++)
				fprintf(stderr, "%s \"%s\"", m ? "," : "",
					model_metric(model, m)->name);
			fputc('\n', stderr);
			model_close(model);
			return 1;
		}
		add_metric_columns(model, (uint32_t)k, metrics, &nmetrics);
	}
	if (!nmetrics)
		nmetrics = model_default_metrics(model, metrics, model_nmetrics(model));
	if (!nmetrics) {
		model_close(model);
		die(1, "%s: the database has no metrics", database);
	}
	for (size_t i = 0; i < nsource_paths; i++)
		model_add_source_path(model, source_paths[i]);
	if ((thread >= 0) + (process >= 0) + (rank >= 0) > 1) {
		model_close(model);
		die(1, "--thread, --process and --rank: one of them");
	}
	if ((thread >= 0 && model_select_thread(model, (int32_t)thread) < 0) ||
	    (process >= 0 && model_select_process(model, (uint32_t)process) < 0) ||
	    (rank >= 0 && model_select_rank(model, (int32_t)rank) < 0)) {
		fprintf(stderr, "view: %s\n", fth_errmsg());
		model_close(model);
		return 1;
	}
	/* The order: the first column's, or in a comparison the change of its group. */
	struct model_sort sort = model_get_sort(model);
	const struct model_compare *cmp = model_comparison(model);
	sort.metric = metrics[0];
	if (cmp && cmp->metrics[metrics[0]].delta != DBFILE_NONE) {
		sort.metric = cmp->metrics[metrics[0]].delta;
		sort.by_magnitude = true;
	}
	model_set_sort(model, &sort);
	if (min_change > 0) {
		if (!cmp || cmp->metrics[sort.metric].role != MODEL_ROLE_DELTA) {
			fprintf(stderr, "view: --min-change: the first metric (%s) was not measured "
				"in both runs\n", model_metric(model, metrics[0])->name);
			model_close(model);
			return 1;
		}
		model_set_min_change(model, sort.metric,
				     min_change_bound(model, sort.metric, min_change,
						      min_change_percent));
	}
	int rc;
	if (batch) {
		bo.metrics = metrics;
		bo.nmetrics = nmetrics;
		bo.database = database;
		if (mca_loop) {
			struct batch_mca_options mo = { .loop = mca_loop, .mcpu = mcpu,
							.structs = struct_dirs,
							.nstructs = nstruct_dirs,
							.json = bo.format == BATCH_JSON,
							.database = database };
			rc = batch_mca(model, &mo, stdout) < 0 ? 1 : 0;
		} else if (bo.view == MODEL_NVIEWS)
			rc = batch_timeline(model, &bo, trace_width, time_from, time_to) < 0 ? 1 : 0;
		else
			rc = batch_run(model, &bo, stdout) < 0 ? 1 : 0;
		if (rc)
			fprintf(stderr, "view: %s\n", fth_errmsg());
	} else {
		to.view = bo.view;
		to.metrics = metrics;
		to.nmetrics = nmetrics;
		to.metrics_chosen = nmetric_names > 0;
		char *title = NULL;
		if (cmp) {
			size_t n = strlen(cmp->name_a) + strlen(cmp->name_b) + 8;
			title = xmalloc(n);
			snprintf(title, n, "%s vs %s", cmp->name_a, cmp->name_b);
		}
		to.database = title ? title : database;
		to.mcpu = mcpu;
		to.structs = struct_dirs;
		to.nstructs = nstruct_dirs;
		rc = tui_run(model, &to);
		free(title);
		if (rc != 0 && fth_errmsg()[0])
			fprintf(stderr, "view: %s\n", fth_errmsg());
	}
	model_close(model);
	free(metrics);
	free(metric_names);
	free(source_paths);
	free(struct_dirs);
	return rc;
}
