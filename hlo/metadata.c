/* OpMetadata text form and quoted strings. */
#include "metadata.h"

#include <limits.h>
#include <string.h>

#include "sharding_internal.h"

enum {
	OCTAL_DIGITS = 3,   /* CEscape writes \NNN */
	HEX_DIGITS_MAX = 2, /* we accept \xN and \xNN */
	BYTE_MAX = 0xff,
	PRINTABLE_FIRST = 0x20,
	PRINTABLE_LAST = 0x7e,
	SHOWN_KEY_MAX = 64  /* bytes of an unknown key quoted in a message */
};

/* The fields of OpMetadata in XLA's OpMetadataToString order. */
typedef enum md_field {
	MD_OP_TYPE,
	MD_OP_NAME,
	MD_SOURCE_FILE,
	MD_SOURCE_LINE,
	MD_SOURCE_END_LINE,
	MD_SOURCE_COLUMN,
	MD_SOURCE_END_COLUMN,
	MD_DEDUPLICATED_NAME,
	MD_SCHEDULING_NAME,
	MD_STACK_FRAME_ID,
	MD_FIELD_COUNT
} md_field;

static const char *const md_keys[MD_FIELD_COUNT] = {
	"op_type", "op_name", "source_file", "source_line", "source_end_line",
	"source_column", "source_end_column", "deduplicated_name", "scheduling_name",
	"stack_frame_id",
};

static bool md_is_string(md_field f)
{
	return f == MD_OP_TYPE || f == MD_OP_NAME || f == MD_SOURCE_FILE ||
	       f == MD_DEDUPLICATED_NAME || f == MD_SCHEDULING_NAME;
}

static const char **md_str(shs_metadata *m, md_field f)
{
	switch (f) {
	case MD_OP_TYPE: return &m->op_type;
	case MD_OP_NAME: return &m->op_name;
	case MD_SOURCE_FILE: return &m->source_file;
	case MD_DEDUPLICATED_NAME: return &m->deduplicated_name;
	default: return &m->scheduling_name;
	}
}

static int32_t *md_int(shs_metadata *m, md_field f)
{
	switch (f) {
	case MD_SOURCE_LINE: return &m->source_line;
	case MD_SOURCE_END_LINE: return &m->source_end_line;
	case MD_SOURCE_COLUMN: return &m->source_column;
	case MD_SOURCE_END_COLUMN: return &m->source_end_column;
	default: return &m->stack_frame_id;
	}
}

static const char *md_str_c(const shs_metadata *m, md_field f)
{
	return *md_str((shs_metadata *)m, f);
}

static int32_t md_int_c(const shs_metadata *m, md_field f)
{
	return *md_int((shs_metadata *)m, f);
}

size_t shs__skip_space(const char *s, size_t len, size_t pos)
{
	while (pos < len) {
		char c = s[pos];

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
			pos++;
		} else if (c == '/' && pos + 1 < len && s[pos + 1] == '*') {
			size_t end = pos + 2;

			while (end + 1 < len && !(s[end] == '*' && s[end + 1] == '/'))
				end++;
			if (end + 1 >= len)
				return pos; /* unterminated: leave it to the caller to complain */
			pos = end + 2;
		} else {
			break;
		}
	}
	return pos;
}

void shs_text_put_quoted(shs_buf *b, const char *s, size_t len)
{
	shs_buf_putc(b, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '\n': shs_buf_puts(b, "\\n"); break;
		case '\r': shs_buf_puts(b, "\\r"); break;
		case '\t': shs_buf_puts(b, "\\t"); break;
		case '"': shs_buf_puts(b, "\\\""); break;
		case '\'': shs_buf_puts(b, "\\'"); break;
		case '\\': shs_buf_puts(b, "\\\\"); break;
		default:
			if (c < PRINTABLE_FIRST || c > PRINTABLE_LAST)
				shs_buf_printf(b, "\\%03o", (unsigned)c);
			else
				shs_buf_putc(b, (char)c);
		}
	}
	shs_buf_putc(b, '"');
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int simple_escape(char c)
{
	switch (c) {
	case 'n': return '\n';
	case 't': return '\t';
	case 'r': return '\r';
	case 'a': return '\a';
	case 'b': return '\b';
	case 'f': return '\f';
	case 'v': return '\v';
	case '"': return '"';
	case '\'': return '\'';
	case '\\': return '\\';
	case '?': return '?';
	default: return -1;
	}
}

/* Decodes the escape at s[*i] (just after the backslash) into *out; advances *i. */
static bool decode_escape(const char *s, size_t len, size_t *i, unsigned char *out)
{
	char c = s[*i];
	int v = simple_escape(c);

	if (v >= 0) {
		*out = (unsigned char)v;
		(*i)++;
		return true;
	}
	if (c >= '0' && c <= '7') {
		unsigned acc = 0;
		int k = 0;

		while (k < OCTAL_DIGITS && *i < len && s[*i] >= '0' && s[*i] <= '7') {
			acc = acc * 8 + (unsigned)(s[*i] - '0');
			(*i)++;
			k++;
		}
		if (acc > BYTE_MAX)
			return false;
		*out = (unsigned char)acc;
		return true;
	}
	if (c == 'x') {
		unsigned acc = 0;
		int k = 0;

		(*i)++;
		while (k < HEX_DIGITS_MAX && *i < len && hex_value(s[*i]) >= 0) {
			acc = acc * 16 + (unsigned)hex_value(s[*i]);
			(*i)++;
			k++;
		}
		*out = (unsigned char)acc;
		return k > 0;
	}
	return false;
}

int shs_text_parse_quoted(shs_arena *a, const char *s, size_t len, size_t *consumed,
			  char **out, size_t *out_len, size_t *err_off, shs_err *e)
{
	size_t i = 1, n = 0, end;
	char *dst;

	if (!len || s[0] != '"') {
		*err_off = 0;
		return shs_seterr(e, SHS_EPARSE, "expected '\"' to start a string");
	}
	for (end = 1; end < len && s[end] != '"'; end++)
		if (s[end] == '\\')
			end++;
	if (end >= len) {
		*err_off = 0;
		return shs_seterr(e, SHS_EPARSE, "unterminated string (no closing '\"')");
	}
	dst = shs_arena_alloc(a, end);
	if (!dst)
		return shs_seterr(e, SHS_ENOMEM, "out of memory for a %zu-byte string", end);
	while (i < end) {
		if (s[i] != '\\') {
			dst[n++] = s[i++];
			continue;
		}
		size_t at = i++;
		unsigned char c;

		if (!decode_escape(s, end, &i, &c)) {
			*err_off = at;
			return shs_seterr(e, SHS_EPARSE, "bad escape '\\%c' in string", s[at + 1]);
		}
		dst[n++] = (char)c;
	}
	dst[n] = '\0';
	*out = dst;
	*out_len = n;
	*consumed = end + 1;
	return SHS_OK;
}

bool shs_metadata_empty(const shs_metadata *m)
{
	for (int f = 0; f < MD_FIELD_COUNT; f++) {
		if (md_is_string((md_field)f) ? md_str_c(m, (md_field)f) != NULL
					      : md_int_c(m, (md_field)f) != 0)
			return false;
	}
	return true;
}

static bool str_eq(const char *x, const char *y)
{
	if (!x || !y)
		return x == y;
	return !strcmp(x, y);
}

bool shs_metadata_equal(const shs_metadata *x, const shs_metadata *y)
{
	for (int f = 0; f < MD_FIELD_COUNT; f++) {
		md_field k = (md_field)f;

		if (md_is_string(k) ? !str_eq(md_str_c(x, k), md_str_c(y, k))
				    : md_int_c(x, k) != md_int_c(y, k))
			return false;
	}
	return true;
}

void shs_metadata_print(shs_buf *b, const shs_metadata *m)
{
	bool first = true;

	shs_buf_putc(b, '{');
	for (int f = 0; f < MD_FIELD_COUNT; f++) {
		md_field k = (md_field)f;
		const char *sv = md_is_string(k) ? md_str_c(m, k) : NULL;
		int32_t iv = md_is_string(k) ? 0 : md_int_c(m, k);

		if (md_is_string(k) ? !sv || !*sv : iv == 0)
			continue;
		if (!first)
			shs_buf_putc(b, ' ');
		first = false;
		shs_buf_puts(b, md_keys[k]);
		shs_buf_putc(b, '=');
		if (sv)
			shs_text_put_quoted(b, sv, strlen(sv));
		else
			shs_buf_put_i64(b, iv);
	}
	shs_buf_putc(b, '}');
}

/* Parsing state: the text, the cursor, and where errors go. */
typedef struct md_parser {
	shs_arena *a;
	const char *s;
	size_t len, pos;
	size_t *err_off;
	shs_err *e;
} md_parser;

static int md_fail(md_parser *p, size_t off, const char *what)
{
	*p->err_off = off;
	return shs_seterr(p->e, SHS_EPARSE, "metadata: %s at offset %zu", what, off);
}

static bool is_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static int md_parse_int(md_parser *p, md_field k, int32_t *out)
{
	size_t start = p->pos, i = p->pos;
	bool neg = false;
	int64_t v = 0;

	if (i < p->len && p->s[i] == '-') {
		neg = true;
		i++;
	}
	if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
		return md_fail(p, start, "expected an integer");
	for (; i < p->len && p->s[i] >= '0' && p->s[i] <= '9'; i++) {
		v = v * 10 + (p->s[i] - '0');
		if (v > (int64_t)INT32_MAX + 1) {
			*p->err_off = start;
			return shs_seterr(p->e, SHS_EPARSE,
					  "metadata: %s value at offset %zu does not fit int32",
					  md_keys[k], start);
		}
	}
	if (neg)
		v = -v;
	if (v > INT32_MAX) {
		*p->err_off = start;
		return shs_seterr(p->e, SHS_EPARSE,
				  "metadata: %s value at offset %zu does not fit int32", md_keys[k],
				  start);
	}
	*out = (int32_t)v;
	p->pos = i;
	return SHS_OK;
}

static int md_parse_value(md_parser *p, md_field k, shs_metadata *out)
{
	size_t used = 0, slen = 0, off = 0;
	char *str = NULL;
	int rc;

	if (!md_is_string(k))
		return md_parse_int(p, k, md_int(out, k));
	if (p->pos >= p->len || p->s[p->pos] != '"') {
		*p->err_off = p->pos;
		return shs_seterr(p->e, SHS_EPARSE,
				  "metadata: expected a quoted string for %s at offset %zu",
				  md_keys[k], p->pos);
	}
	rc = shs_text_parse_quoted(p->a, p->s + p->pos, p->len - p->pos, &used, &str, &slen,
				   &off, p->e);
	if (rc != SHS_OK) {
		*p->err_off = p->pos + off;
		if (p->e)
			shs_err_prefix(p->e, "metadata: %s at offset %zu", md_keys[k],
				       p->pos + off);
		return rc;
	}
	if (memchr(str, 0, slen)) { /* kept as a C string: it would end there */
		*p->err_off = p->pos;
		return shs_seterr(p->e, SHS_EPARSE, "metadata: %s holds a NUL byte (\\0) at offset "
				  "%zu, which this does not keep", md_keys[k], p->pos);
	}
	p->pos += used;
	*md_str(out, k) = slen ? str : NULL;
	return SHS_OK;
}

/* Parses one `key=value` at p->pos; seen tracks duplicates. */
static int md_parse_item(md_parser *p, bool *seen, shs_metadata *out)
{
	size_t start = p->pos, klen;
	int k;

	while (p->pos < p->len && is_ident_char(p->s[p->pos]))
		p->pos++;
	klen = p->pos - start;
	if (!klen)
		return md_fail(p, start, "expected a key or '}'");
	for (k = 0; k < MD_FIELD_COUNT; k++)
		if (strlen(md_keys[k]) == klen && !memcmp(md_keys[k], p->s + start, klen))
			break;
	if (k == MD_FIELD_COUNT) {
		*p->err_off = start;
		return shs_seterr(p->e, SHS_EPARSE, "metadata: unknown key '%.*s' at offset %zu",
				  (int)(klen > SHOWN_KEY_MAX ? SHOWN_KEY_MAX : klen), p->s + start, start);
	}
	if (seen[k]) {
		*p->err_off = start;
		return shs_seterr(p->e, SHS_EPARSE, "metadata: %s given twice at offset %zu",
				  md_keys[k], start);
	}
	seen[k] = true;
	p->pos = shs__skip_space(p->s, p->len, p->pos);
	if (p->pos >= p->len || p->s[p->pos] != '=') {
		*p->err_off = p->pos;
		return shs_seterr(p->e, SHS_EPARSE, "metadata: expected '=' after %s at offset %zu",
				  md_keys[k], p->pos);
	}
	p->pos = shs__skip_space(p->s, p->len, p->pos + 1);
	return md_parse_value(p, (md_field)k, out);
}

int shs_metadata_parse(shs_arena *a, const char *s, size_t len, size_t *consumed,
		       shs_metadata *out, size_t *err_off, shs_err *e)
{
	md_parser p = { .a = a, .s = s, .len = len, .err_off = err_off, .e = e };
	bool seen[MD_FIELD_COUNT] = { false };
	shs_metadata m = { 0 };
	int rc;

	if (!len || s[0] != '{')
		return md_fail(&p, 0, "expected '{'");
	p.pos = shs__skip_space(s, len, 1);
	while (p.pos < len && s[p.pos] != '}') {
		rc = md_parse_item(&p, seen, &m);
		if (rc != SHS_OK)
			return rc;
		p.pos = shs__skip_space(s, len, p.pos);
		if (p.pos < len && s[p.pos] == ',')
			p.pos = shs__skip_space(s, len, p.pos + 1);
	}
	if (p.pos >= len)
		return md_fail(&p, p.pos, "expected '}' before the end of input");
	*consumed = p.pos + 1;
	*out = m;
	return SHS_OK;
}
