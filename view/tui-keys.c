/* SPDX-License-Identifier: MIT */
/*
 * tui-keys.c: the keys of view's interface as data: the --keys syntax (a key is a character,
 * or a name in angle brackets: <Enter>, <Down>, <C-o>, <M-Left>, <F5>, <lt>), the extended
 * codes the terminal gives Alt-Left and Alt-Right, and view --list-keys (the keys themselves are
 * the rows of tui-keys.def).
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

void tui_list_keys(FILE *out)
{
	const char *section = "";

	for (size_t i = 0; i < tui_nkeys; i++) {
		const char *keys = tui_keys[i].keys;
		if (!tui_keys[i].action)
			section = tui_keys[i].what;
		if (!keys)
			continue;
		while (*keys) {
			const char *end = strstr(keys, "  ");
			size_t len = end ? (size_t)(end - keys) : strlen(keys);
			fprintf(out, "%s\t%.*s\n", section, (int)len, keys);
			keys += len;
			while (*keys == ' ')
				keys++;
		}
	}
}
