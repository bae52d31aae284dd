/* A scanner over one attribute value kept as text (raw_scan.h). */
#include "raw_scan.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shs_limits.h"

int shs__scan_fail(shs__scan *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(c->why, c->cap, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < c->cap)
		snprintf(c->why + n, c->cap - (size_t)n, " (at character %zu)", c->pos + 1);
	return SHS_EPARSE;
}

void shs__scan_blanks(shs__scan *c)
{
	while (c->s[c->pos] == ' ' || c->s[c->pos] == '\t' || c->s[c->pos] == '\n')
		c->pos++;
}

bool shs__scan_eat(shs__scan *c, char ch)
{
	shs__scan_blanks(c);
	if (c->s[c->pos] != ch)
		return false;
	c->pos++;
	return true;
}

int shs__scan_need(shs__scan *c, char ch)
{
	return shs__scan_eat(c, ch) ? SHS_OK : shs__scan_fail(c, "expected '%c'", ch);
}

int shs__scan_int(shs__scan *c, int64_t lo, int64_t *out)
{
	char *end;
	long long v;

	shs__scan_blanks(c);
	if (!(c->s[c->pos] == '-' || (c->s[c->pos] >= '0' && c->s[c->pos] <= '9')))
		return shs__scan_fail(c, "expected an integer");
	errno = 0;
	v = strtoll(c->s + c->pos, &end, 10);
	if (errno == ERANGE || v < lo)
		return shs__scan_fail(c, "integer out of range");
	c->pos = (size_t)(end - c->s);
	*out = v;
	return SHS_OK;
}

/* `{a,b,...}` (possibly empty) into *out. */
int shs__scan_ints(shs__scan *c, shs_arena *a, char open, char close, int64_t lo, shs_i64s *out)
{
	int64_t buf[SHS_MAX_RANK * 4];
	int64_t *v = buf;
	size_t n = 0, cap = sizeof(buf) / sizeof(buf[0]);
	int rc = shs__scan_need(c, open);

	if (!rc && !shs__scan_eat(c, close)) {
		do {
			if (n == cap) {
				int64_t *grown = malloc(2 * cap * sizeof(*grown));

				if (!grown)
					return SHS_ENOMEM;
				memcpy(grown, v, n * sizeof(*v));
				if (v != buf)
					free(v);
				v = grown;
				cap *= 2;
			}
			rc = shs__scan_int(c, lo, &v[n++]);
		} while (!rc && shs__scan_eat(c, ','));
		if (!rc)
			rc = shs__scan_need(c, close);
	}
	if (!rc && n > UINT32_MAX)
		rc = shs__scan_fail(c, "too many entries");
	if (!rc && n && !(out->v = shs_arena_memdup(a, v, n * sizeof(*v))))
		rc = SHS_ENOMEM;
	out->n = (uint32_t)n;
	if (v != buf)
		free(v);
	return rc;
}

int shs__scan_number(shs__scan *c, double *out)
{
	char *end;
	double v;

	shs__scan_blanks(c);
	errno = 0;
	v = strtod(c->s + c->pos, &end);
	if (end == c->s + c->pos || errno == ERANGE || !isfinite(v))
		return shs__scan_fail(c, "expected a finite number");
	c->pos = (size_t)(end - c->s);
	*out = v;
	return SHS_OK;
}

static bool word_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-' || ch == '.';
}

int shs__scan_word(shs__scan *c, const char **s, size_t *n)
{
	size_t start;

	shs__scan_blanks(c);
	start = c->pos;
	while (word_char(c->s[c->pos]))
		c->pos++;
	if (c->pos == start)
		return shs__scan_fail(c, "expected a name");
	*s = c->s + start;
	*n = c->pos - start;
	return SHS_OK;
}

int shs__scan_quoted(shs__scan *c, const char **s, size_t *n)
{
	size_t start;

	if (!shs__scan_eat(c, '"'))
		return shs__scan_fail(c, "expected a quoted string");
	start = c->pos;
	while (c->s[c->pos] && c->s[c->pos] != '"')
		c->pos += c->s[c->pos] == '\\' && c->s[c->pos + 1] ? 2 : 1;
	if (!c->s[c->pos])
		return shs__scan_fail(c, "unterminated string");
	*s = c->s + start;
	*n = c->pos - start;
	c->pos++;
	return SHS_OK;
}

int shs__scan_end(shs__scan *c, const char *what)
{
	shs__scan_blanks(c);
	return c->s[c->pos] ? shs__scan_fail(c, "unexpected text after %s", what) : SHS_OK;
}
