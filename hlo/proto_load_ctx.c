/* The loader's context: errors that name the position, and small converters its files share. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto_internal.h"

/* ---- Errors ---------------------------------------------------------------------------------- */

/* "origin: computation 'c', instruction 'i'" for the current position. */
static void where(const shs__pl *c, char *buf, size_t size)
{
	if (c->instr)
		snprintf(buf, size, "%s: computation '%s', instruction '%s'", c->origin, c->comp,
			 c->instr);
	else if (c->comp)
		snprintf(buf, size, "%s: computation '%s'", c->origin, c->comp);
	else if (c->part)
		snprintf(buf, size, "%s: %s", c->origin, c->part);
	else
		snprintf(buf, size, "%s", c->origin);
}

int shs__pl_fail(const shs__pl *c, int code, const char *fmt, ...)
{
	char at[SHS_ERRMSG_MAX];
	va_list ap;

	where(c, at, sizeof(at));
	va_start(ap, fmt);
	code = shs_vseterr_at(c->e, code, at, fmt, ap);
	va_end(ap);
	return code;
}

int shs__pl_prefix(const shs__pl *c, const char *what)
{
	char at[SHS_ERRMSG_MAX];

	where(c, at, sizeof(at));
	return shs_err_prefix(c->e, "%s: %s", at, what);
}

int shs__pl_nomem(const shs__pl *c)
{
	return shs__pl_fail(c, SHS_ENOMEM, "out of memory (over the load budget)");
}

int shs__pl_too_deep(const shs__pl *c, const char *what)
{
	return shs__pl_fail(c, SHS_EPARSE, "nesting too deep: %s nested deeper than %d levels",
			    what, SHS_MAX_NESTING);
}

void *shs__pl_nested(const shs__pl *c, const ProtobufCMessageDescriptor *d,
		     const ProtobufCBinaryData *b, const char *what, size_t i, int *rc)
{
	void *msg = shs__pb_unpack_nested(c->scratch, d, b);

	if (!msg && c->scratch->refused)
		*rc = shs__pl_nomem(c);
	else if (!msg)
		*rc = shs__pl_fail(c, SHS_EPARSE, "malformed protobuf in %s[%zu] (%zu bytes)", what,
				   i, b->len);
	return msg;
}

/* ---- Small converters ------------------------------------------------------------------------ */

int shs__pl_i64s(const shs__pl *c, shs_i64s *out, const int64_t *v, size_t n)
{
	out->n = 0;
	out->v = NULL;
	if (!n)
		return SHS_OK;
	if (n > UINT32_MAX)
		return shs__pl_fail(c, SHS_EUNSUPPORTED, "list of %zu integers is too long", n);
	out->v = shs_arena_memdup(c->a, v, n * sizeof(*v));
	if (!out->v)
		return shs__pl_nomem(c);
	out->n = (uint32_t)n;
	return SHS_OK;
}

int shs__pl_unknown(const shs__pl *c, const ProtobufCMessage *msg, shs_bytes *out)
{
	size_t total = 0, at = 0;
	uint8_t *p;

	out->len = 0;
	out->data = NULL;
	if (!msg->n_unknown_fields)
		return SHS_OK;
	for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
		const ProtobufCMessageUnknownField *u = &msg->unknown_fields[i];

		total += shs__pb_varint_len((uint64_t)u->tag << SHS__PB_TAG_SHIFT) + u->len;
	}
	p = shs_arena_alloc(c->a, total);
	if (!p)
		return shs__pl_nomem(c);
	for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
		const ProtobufCMessageUnknownField *u = &msg->unknown_fields[i];
		uint64_t tag = (uint64_t)u->tag << SHS__PB_TAG_SHIFT | (uint64_t)u->wire_type;

		at += shs__pb_put_varint(p + at, tag);
		memcpy(p + at, u->data, u->len);
		at += u->len;
	}
	out->data = p;
	out->len = at;
	return SHS_OK;
}

int shs__pl_attrs(const shs__pl *c, const Xla__FrontendAttributes *p, uint32_t *n,
		  shs_attr_kv **out)
{
	*n = 0;
	*out = NULL;
	if (!p || !p->n_map)
		return SHS_OK;
	if (p->n_map > UINT32_MAX)
		return shs__pl_fail(c, SHS_EUNSUPPORTED, "too many frontend attributes");
	*out = shs_arena_alloc(c->a, p->n_map * sizeof(**out));
	if (!*out)
		return shs__pl_nomem(c);
	for (size_t i = 0; i < p->n_map; i++) {
		shs__strs s = { 0 };

		shs__strs_add(&s, p->map[i]->key, &(*out)[i].key, true);
		shs__strs_add(&s, p->map[i]->value, &(*out)[i].value, true);
		if (!shs__strs_copy(&s, c->a))
			return shs__pl_nomem(c);
	}
	*n = (uint32_t)p->n_map;
	return SHS_OK;
}
