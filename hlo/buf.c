/* Growable byte buffer. */
#include "buf.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(shs_buf *b, size_t extra)
{
	size_t want, cap;
	char *p;

	if (b->oom)
		return false;
	if (extra > SIZE_MAX - b->len - 1)
		goto fail;
	want = b->len + extra + 1;
	if (want <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		goto fail;
	b->data = p;
	b->cap = cap;
	return true;
fail:
	b->oom = true;
	return false;
}

void shs_buf_free(shs_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void shs_buf_reset(shs_buf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->data)
		b->data[0] = '\0';
}

void shs_buf_put(shs_buf *b, const void *p, size_t n)
{
	if (!reserve(b, n))
		return;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void shs_buf_puts(shs_buf *b, const char *s)
{
	shs_buf_put(b, s, strlen(s));
}

void shs_buf_putc(shs_buf *b, char c)
{
	if (!reserve(b, 1))
		return;
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
}

void shs_buf_printf(shs_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, (size_t)n)) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void shs_buf_put_i64(shs_buf *b, int64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);

	shs_buf_put(b, tmp, (size_t)n);
}

char *shs_buf_take(shs_buf *b)
{
	char *p = (b->oom || !b->len) ? NULL : b->data;

	if (!p)
		free(b->data);
	memset(b, 0, sizeof(*b));
	return p;
}

void shs_str_copy(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}
