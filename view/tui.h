/* SPDX-License-Identifier: MIT */
/*
 * tui.h: the interactive ncurses interface of view, over the model (model.h).  main.c opens
 * the database, applies the command-line options, and hands over here.
 */
#ifndef FATHOM_VIEW_TUI_H
#define FATHOM_VIEW_TUI_H

#include "model.h"

#include <stdio.h>

struct tui_options {
	enum model_view view;	  /* the view shown first */
	uint32_t *metrics;	  /* the metrics shown as columns, in order (nmetrics >= 1) */
	uint32_t nmetrics;
	bool metrics_chosen;	  /* the user chose them: else as many as fit the terminal */
	bool hot_path;		  /* run the hot path from the root at start-up */
	bool ascii;		  /* ASCII line drawing and bars even in a UTF-8 locale */
	bool no_color;		  /* also when NO_COLOR is set in the environment */
	bool no_mouse;
	const char *keys;	  /* keystrokes replayed at start-up (--keys), or NULL */
	const char *database;	  /* the name shown in the title */
	const char *mcpu;	  /* the llvm-mca pane's CPU (--mcpu), or NULL: the host's */
	const char *const *structs; /* and where it looks for structure files first */
	size_t nstructs;
};

/* Run until the user quits; the terminal is restored on every way out.  Returns the exit
 * status for main: 0, or 1 after an error (the message in the thread's error). */
int tui_run(struct model *model, const struct tui_options *opt);

/* Print the keys the help screen shows, one a line after its section's title and a tab (view
 * --list-keys, which tests/e2e/t0411 compares with doc/view.1 KEYS). */
void tui_list_keys(FILE *out);

#endif
