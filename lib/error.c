/* SPDX-License-Identifier: MIT */
/* error.c: per-thread error messages and the async-signal-safe formatter behind them. */
#include "compat.h"
#include "error.h"

#include <errno.h>
#include <string.h>
#include <sys/types.h>

#define ERRMSG_SIZE 1024

static __thread char errmsg[ERRMSG_SIZE];

static void put_char(char *buf, size_t size, size_t *pos, char c)
{
	if (*pos + 1 < size)
		buf[*pos] = c;
	(*pos)++;
}

static void put_padded(char *buf, size_t size, size_t *pos, const char *s, size_t len,
		       int width, bool left, char pad)
{
	int fill = width > (int)len ? width - (int)len : 0;
	if (!left)
		while (fill-- > 0)
			put_char(buf, size, pos, pad);
	for (size_t i = 0; i < len; i++)
		put_char(buf, size, pos, s[i]);
	if (left)
		while (fill-- > 0)
			put_char(buf, size, pos, ' ');
}

size_t fth_vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t pos = 0;
	for (const char *f = fmt; *f; f++) {
		if (*f != '%') {
			put_char(buf, size, &pos, *f);
			continue;
		}
		f++;
		bool left = false, alt = false;
		char pad = ' ';
		for (;; f++) {
			if (*f == '-')
				left = true;
			else if (*f == '0')
				pad = '0';
			else if (*f == '#')
				alt = true;
			else
				break;
		}
		int width = 0;
		while (*f >= '0' && *f <= '9')
			width = width * 10 + (*f++ - '0');
		int precision = -1;
		if (*f == '.') {
			f++;
			if (*f == '*') {
				precision = va_arg(ap, int);
				f++;
			} else {
				precision = 0;
				while (*f >= '0' && *f <= '9')
					precision = precision * 10 + (*f++ - '0');
			}
		}
		int lng = 0;
		bool size_mod = false;
		while (*f == 'l') {
			lng++;
			f++;
		}
		if (*f == 'z') {
			size_mod = true;
			f++;
		}
		char num[32];
		char *end = num + sizeof(num), *p = end;
		unsigned long long u;
		bool neg = false, hex_prefix = false;
		unsigned base = 10;
		bool upper = false;
		switch (*f) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			size_t len = 0;
			while ((precision < 0 || (int)len < precision) && s[len])
				len++;
			put_padded(buf, size, &pos, s, len, width, left, ' ');
			continue;
		}
		case 'c':
			num[0] = (char)va_arg(ap, int);
			put_padded(buf, size, &pos, num, 1, width, left, ' ');
			continue;
		case '%':
			put_char(buf, size, &pos, '%');
			continue;
		case 'd':
		case 'i': {
			long long v;
			if (size_mod)
				v = va_arg(ap, ssize_t);
			else if (lng >= 2)
				v = va_arg(ap, long long);
			else if (lng == 1)
				v = va_arg(ap, long);
			else
				v = va_arg(ap, int);
			neg = v < 0;
			u = neg ? -(unsigned long long)v : (unsigned long long)v;
			break;
		}
		case 'p':
			u = (uintptr_t)va_arg(ap, void *);
			base = 16;
			hex_prefix = true;
			break;
		case 'X':
			upper = true;
			/* fall through */
		case 'x':
			base = 16;
			/* fall through */
		case 'u':
			if (size_mod)
				u = va_arg(ap, size_t);
			else if (lng >= 2)
				u = va_arg(ap, unsigned long long);
			else if (lng == 1)
				u = va_arg(ap, unsigned long);
			else
				u = va_arg(ap, unsigned int);
			/* '#': "0x" before a nonzero hexadecimal number, as printf does. */
			hex_prefix = alt && base == 16 && u != 0;
			break;
		default:
			/* Unknown conversion: print it as is and stop consuming arguments. */
			put_char(buf, size, &pos, '%');
			if (*f)
				put_char(buf, size, &pos, *f);
			else
				f--;
			continue;
		}
		const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
		do {
			*--p = digits[u % base];
			u /= base;
		} while (u);
		if (neg || hex_prefix) {
			/* The sign or "0x" counts toward the width and goes before zero padding. */
			const char *pre = neg ? "-" : upper ? "0X" : "0x";
			int plen = neg ? 1 : 2;
			if (pad == '0') {
				for (int i = 0; i < plen; i++)
					put_char(buf, size, &pos, pre[i]);
				width = width > plen ? width - plen : 0;
			} else {
				for (int i = plen; i-- > 0;)
					*--p = pre[i];
			}
		}
		put_padded(buf, size, &pos, p, (size_t)(end - p), width, left, left ? ' ' : pad);
	}
	if (size)
		buf[pos < size ? pos : size - 1] = '\0';
	return pos;
}

size_t fth_format(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t n = fth_vformat(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

static const struct {
	int code;
	const char *text;
} errno_names[] = {
	{ EPERM, "Operation not permitted" },	{ ENOENT, "No such file or directory" },
	{ EINTR, "Interrupted system call" },	{ EIO, "Input/output error" },
	{ EBADF, "Bad file descriptor" },	{ EAGAIN, "Resource temporarily unavailable" },
	{ ENOMEM, "Cannot allocate memory" },	{ EACCES, "Permission denied" },
	{ EFAULT, "Bad address" },		{ EEXIST, "File exists" },
	{ ENOTDIR, "Not a directory" },		{ EISDIR, "Is a directory" },
	{ EINVAL, "Invalid argument" },		{ EMFILE, "Too many open files" },
	{ ENFILE, "Too many open files in system" }, { EFBIG, "File too large" },
	{ ENOSPC, "No space left on device" },	{ EROFS, "Read-only file system" },
	{ EPIPE, "Broken pipe" },		{ ENAMETOOLONG, "File name too long" },
	{ ENOSYS, "Function not implemented" }, { EDQUOT, "Disk quota exceeded" },
	{ EOPNOTSUPP, "Operation not supported" }, { ENODEV, "No such device" },
	{ E2BIG, "Argument list too long" },	{ ENOEXEC, "Exec format error" },
	{ ESRCH, "No such process" },		{ ETXTBSY, "Text file busy" },
	{ ELOOP, "Too many levels of symbolic links" }, { ESTALE, "Stale file handle" },
};

const char *fth_strerror(int err, char *buf, size_t size)
{
	for (size_t i = 0; i < ARRAY_SIZE(errno_names); i++)
		if (errno_names[i].code == err)
			return errno_names[i].text;
	fth_format(buf, size, "error %d", err);
	return buf;
}

int fth_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fth_vformat(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	return -1;
}

int fth_error_errno(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t n = fth_vformat(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	char tmp[32];
	if (n < sizeof(errmsg))
		fth_format(errmsg + n, sizeof(errmsg) - n, ": %s", fth_strerror(err, tmp, sizeof(tmp)));
	return -1;
}

int fth_error_prefix(const char *fmt, ...)
{
	char old[ERRMSG_SIZE];
	memcpy(old, errmsg, sizeof(old));
	va_list ap;
	va_start(ap, fmt);
	size_t n = fth_vformat(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	if (n < sizeof(errmsg))
		fth_format(errmsg + n, sizeof(errmsg) - n, ": %s", old);
	return -1;
}

const char *fth_errmsg(void)
{
	return errmsg;
}

void fth_error_clear(void)
{
	errmsg[0] = '\0';
}

