/* SPDX-License-Identifier: MIT */
/*
 * tui-keys.c: the keys of view's interface as data: the --keys syntax (a key is a character,
 * or a name in angle brackets: <Enter>, <Down>, <C-o>, <M-Left>, <F5>, <lt>), the extended
 * codes the terminal gives Alt-Left and Alt-Right, and the help table that the help screen
 * shows (doc/view.1 KEYS says the same).
 */
#include "compat.h"
#include "error.h"
#include "tui-internal.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int alt_left_code = -1, alt_right_code = -1;
static bool fkey_usable[13];

/* What xterm-like terminals send for F1..F12 (PF1-PF4 and the VT220 function keys), decoded
 * as well when the terminal description says nothing else of them: a terminal emulator run
 * with TERM=vt100 sends these, the vt100 description has only PF1-PF4 (or the keypad as
 * F5-F10). */
static const char *const fkey_sequences[][2] = {
	{ NULL, NULL },		  { "\033OP", "\033[11~" }, { "\033OQ", "\033[12~" },
	{ "\033OR", "\033[13~" }, { "\033OS", "\033[14~" }, { "\033[15~", NULL },
	{ "\033[17~", NULL },	  { "\033[18~", NULL },      { "\033[19~", NULL },
	{ "\033[20~", NULL },	  { "\033[21~", NULL },      { "\033[23~", NULL },
	{ "\033[24~", NULL },
};

void tui_keys_init(void)
{
	for (int n = 1; n <= 12; n++) {
		char cap[8];
		const char *s;
		for (int k = 0; k < 2; k++) {
			const char *seq = fkey_sequences[n][k];
			if (seq && key_defined(seq) == 0)
				define_key(seq, KEY_F(n));
		}
		/* An F-key is advertised only when curses decodes what the terminal sends for
		 * it: the description's kfN, or one of the sequences above. */
		snprintf(cap, sizeof(cap), "kf%d", n);
		s = tigetstr(cap);
		fkey_usable[n] = (s && s != (char *)-1 && s[0] && key_defined(s) == KEY_F(n)) ||
				 key_defined(fkey_sequences[n][0]) == KEY_F(n);
	}
	alt_left_code = key_defined("\033[1;3D");
	alt_right_code = key_defined("\033[1;3C");
	if (alt_left_code <= 0) {
		const char *s = tigetstr("kLFT3");
		if (s && s != (char *)-1)
			alt_left_code = key_defined(s);
	}
	if (alt_right_code <= 0) {
		const char *s = tigetstr("kRIT3");
		if (s && s != (char *)-1)
			alt_right_code = key_defined(s);
	}
}

bool tui_fkey_usable(int n)
{
	return n >= 1 && n <= 12 && fkey_usable[n];
}

/* Map the terminal's codes for Alt-Left/Alt-Right to ours. */
int tui_translate_key(int key)
{
	if (key > 0 && key == alt_left_code)
		return TK_ALT_LEFT;
	if (key > 0 && key == alt_right_code)
		return TK_ALT_RIGHT;
	return key;
}

static const struct {
	const char *name;
	int key;
} key_names[] = {
	{ "Enter", TK_ENTER },	    { "CR", TK_ENTER },	       { "Return", TK_ENTER },
	{ "Esc", TK_ESC },	    { "Escape", TK_ESC },      { "Tab", '\t' },
	{ "S-Tab", KEY_BTAB },	    { "BS", KEY_BACKSPACE },   { "Backspace", KEY_BACKSPACE },
	{ "Space", ' ' },	    { "lt", '<' },	       { "gt", '>' },
	{ "Bslash", '\\' },	    { "Up", KEY_UP },	       { "Down", KEY_DOWN },
	{ "Left", KEY_LEFT },	    { "Right", KEY_RIGHT },    { "PgUp", KEY_PPAGE },
	{ "PageUp", KEY_PPAGE },    { "PgDn", KEY_NPAGE },     { "PageDown", KEY_NPAGE },
	{ "Home", KEY_HOME },	    { "End", KEY_END },	       { "Del", KEY_DC },
	{ "M-Left", TK_ALT_LEFT }, { "M-Right", TK_ALT_RIGHT },
};

static int parse_key_name(const char *name, size_t len, int *key)
{
	for (size_t i = 0; i < ARRAY_SIZE(key_names); i++)
		if (strlen(key_names[i].name) == len && !strncasecmp(name, key_names[i].name, len)) {
			*key = key_names[i].key;
			return 0;
		}
	if ((name[0] == 'F' || name[0] == 'f') && len >= 2 && len <= 3) {
		int n = 0;
		for (size_t i = 1; i < len; i++) {
			if (name[i] < '0' || name[i] > '9')
				return -1;
			n = n * 10 + (name[i] - '0');
		}
		if (n < 1 || n > 12)
			return -1;
		*key = KEY_F(n);
		return 0;
	}
	if (len == 3 && (name[0] == 'C' || name[0] == 'c') && name[1] == '-') {
		char c = name[2];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if ((c < 'a' || c > 'z') && c != '[' && c != '\\' && c != ']')
			return -1;
		*key = TK_CTRL(c);
		return 0;
	}
	if (len == 3 && (name[0] == 'M' || name[0] == 'm') && name[1] == '-' &&
	    (unsigned char)name[2] > ' ' && (unsigned char)name[2] < 127) {
		*key = TK_ALT((unsigned char)name[2]);
		return 0;
	}
	return -1;
}

int tui_parse_keys(const char *s, int **keys, size_t *nkeys)
{
	size_t n = 0, cap = strlen(s) + 1;
	int *out = xmalloc(cap * sizeof(*out));

	while (*s) {
		if (*s == '<') {
			const char *end = strchr(s + 1, '>');
			int key;
			if (!end || end == s + 1 || parse_key_name(s + 1, (size_t)(end - s - 1), &key)) {
				size_t len = end ? (size_t)(end - s + 1) : strlen(s);
				free(out);
				return fth_error("--keys: unknown key name '%.*s' (write <lt> for a "
						 "literal '<'; names: <Enter> <Esc> <Tab> <BS> <Space> "
						 "<Up> <Down> <Left> <Right> <PgUp> <PgDn> <Home> <End> "
						 "<F1>..<F12> <C-x> <M-x> <M-Left> <M-Right>)",
						 (int)FTH_MIN(len, 40), s);
			}
			out[n++] = key;
			s = end + 1;
		} else if (*s == '\n') {
			out[n++] = TK_ENTER;
			s++;
		} else {
			out[n++] = (unsigned char)*s++;
		}
	}
	*keys = out;
	*nkeys = n;
	return 0;
}

const struct tui_help_entry tui_help[] = {
	{ NULL, "Moving" },
	{ "j  Down", "next row" },
	{ "k  Up", "previous row" },
	{ "PgDn  Space", "page down" },
	{ "PgUp  b", "page up" },
	{ "C-d  C-u", "half a page down / up" },
	{ "g  Home", "first row" },
	{ "G  End", "last row" },
	{ NULL, "The tree" },
	{ "Enter", "expand or collapse the selection" },
	{ "l  Right", "expand (on an expanded row: go to its first child)" },
	{ "h  Left", "collapse (on a collapsed row: go to its parent)" },
	{ "+  -", "expand / collapse one more level under the selection" },
	{ "*", "expand the whole subtree of the selection" },
	{ "E  C", "expand all / collapse all" },
	{ "1  2  3", "top-down / bottom-up / flat view" },
	{ "H  F5", "hot path from the selection (threshold in the footer)" },
	{ "L", "set the hot-path threshold (percent of the parent)" },
	{ "z  F7", "zoom: make the selection the root" },
	{ "Z  Backspace", "zoom out one level" },
	{ "f  F8", "flatten one level (flat view)" },
	{ "F", "unflatten one level (flat view)" },
	{ "c", "callers of the selected function (bottom-up view)" },
	{ "C-o  M-Left", "back in the navigation history (view, zoom, selection)" },
	{ "M-Right", "forward in the navigation history" },
	{ NULL, "Search and filter" },
	{ "/  F3", "search: matches are revealed as you type; Enter keeps, Esc goes back" },
	{ "n  N", "next / previous match" },
	{ "\\  &  F4", "filter: hide scopes matching a glob (then s: the scopes only, their"
			" children stay; t or Enter: with their subtrees); several filters all"
			" apply; -N drops filter N, - drops all" },
	{ NULL, "Columns" },
	{ "<  >", "sort by the previous / next column" },
	{ "I", "invert the sort order" },
	{ "F6 n  M-n", "sort by column n (0: by name); 1-3 switch views" },
	{ "o  F2", "column chooser: inclusive, exclusive, which metrics" },
	{ "%", "show value / percent / both" },
	{ NULL, "Panes" },
	{ "s", "source pane of the selected scope (S: add a source directory)" },
	{ "t", "TMA pane (top-down breakdown) of the selected scope" },
	{ "T", "TMA pane: Intel's levels 1, 1-2, 1-3, 1-4, all" },
	{ "p", "threads pane: per-thread values as a sorted histogram" },
	{ "r", "threads pane with a cursor: Enter shows one thread only, or all" },
	{ "Tab  S-Tab", "move the keys between the tree and the panes" },
	{ "i", "database information" },
	{ NULL, "Other" },
	{ "?  F1", "this help" },
	{ "C-l", "redraw the screen" },
	{ "Esc", "cancel a prompt, close a popup, give the keys back to the tree" },
	{ "q", "close the popup or pane, else quit" },
	{ "F10", "quit (also from a popup or pane)" },
	{ "mouse", "click selects, double-click expands, wheel scrolls, a header sorts"
		   " (--no-mouse: off)" },
};
const size_t tui_nhelp = ARRAY_SIZE(tui_help);
