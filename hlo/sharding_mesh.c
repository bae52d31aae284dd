/* XLA's NamedSharding (a mesh of named axes): its text as XLA prints it (named_sharding.cc,
 * mesh_and_axis.cc: `{mesh[a=2,b=4], [{a}, {b:(2)2, ?}], replicated={c}}`, the newer quoted names
 * `mesh['a'=2]`, `{maximal_mesh[device_id=5]}`), its NamedShardingProto (OpSharding field 14),
 * and equality. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sharding_internal.h"
#include "sharding_mesh.h"

enum { MAX_AXES = 64, MAX_IDS = 1 << 24 };

/* ---- Parsing --------------------------------------------------------------------------------- */

typedef struct mp {
	shs_arena *a;
	const char *s;
	size_t len, pos;
	size_t *err_off;
	shs_err *e;
} mp;

static int fail(mp *p, const char *what)
{
	*p->err_off = p->pos;
	return shs_seterr(p->e, SHS_EPARSE, "named sharding: %s at offset %zu", what, p->pos);
}

static int nomem(mp *p)
{
	*p->err_off = p->pos;
	return shs_seterr(p->e, SHS_ENOMEM, "named sharding: out of memory");
}

static char peek(mp *p)
{
	p->pos = shs__skip_space(p->s, p->len, p->pos);
	return p->pos < p->len ? p->s[p->pos] : '\0';
}

static bool eat(mp *p, char c)
{
	if (peek(p) != c)
		return false;
	p->pos++;
	return true;
}

static bool eat_word(mp *p, const char *w)
{
	size_t n = strlen(w);

	peek(p);
	if (p->pos + n > p->len || memcmp(p->s + p->pos, w, n))
		return false;
	p->pos += n;
	return true;
}

static int need(mp *p, char c, const char *what)
{
	return eat(p, c) ? SHS_OK : fail(p, what);
}

static int int_at(mp *p, int64_t lo, int64_t *out)
{
	int64_t v = 0;
	bool neg = eat(p, '-'), any = false;

	while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
		if (v > (INT64_MAX - (p->s[p->pos] - '0')) / 10)
			return fail(p, "integer out of range");
		v = v * 10 + (p->s[p->pos++] - '0');
		any = true;
	}
	if (!any || (neg ? -v : v) < lo)
		return fail(p, "expected an integer");
	*out = neg ? -v : v;
	return SHS_OK;
}

/* An axis name, bare (letters, digits, _ . - /) or 'quoted'; *quoted says which. */
static int name_at(mp *p, const char **out, bool *quoted)
{
	size_t start;

	*quoted = eat(p, '\'');
	start = p->pos;
	if (*quoted) {
		while (p->pos < p->len && p->s[p->pos] != '\'')
			p->pos++;
		if (p->pos >= p->len)
			return fail(p, "unterminated axis name");
	} else {
		while (p->pos < p->len && (p->s[p->pos] == '_' || p->s[p->pos] == '.' ||
					   (p->s[p->pos] >= 'a' && p->s[p->pos] <= 'z') ||
					   (p->s[p->pos] >= 'A' && p->s[p->pos] <= 'Z') ||
					   (p->s[p->pos] >= '0' && p->s[p->pos] <= '9')))
			p->pos++;
		if (p->pos == start)
			return fail(p, "expected an axis name");
	}
	if (!(*out = shs_arena_strndup(p->a, p->s + start, p->pos - start)))
		return nomem(p);
	p->pos += *quoted;
	return SHS_OK;
}

/* `[i,j,...]` or `(i,j,...)` into a new array. */
static int ints_at(mp *p, char open, char close, int64_t lo, int64_t **v, uint32_t *n)
{
	int64_t buf[MAX_AXES];
	int rc = need(p, open, "expected a list");

	*n = 0;
	if (rc || eat(p, close))
		return rc;
	do {
		if (*n == MAX_AXES)
			return fail(p, "list too long");
		if ((rc = int_at(p, lo, &buf[(*n)++])))
			return rc;
	} while (eat(p, ','));
	if ((rc = need(p, close, "expected the end of the list")))
		return rc;
	return (*v = shs_arena_memdup(p->a, buf, *n * sizeof(*buf))) ? SHS_OK : nomem(p);
}

static int mesh_at(mp *p, shs_mesh_sharding *m)
{
	const char *names[MAX_AXES];
	int64_t sizes[MAX_AXES];
	int rc;

	if (eat_word(p, "maximal_mesh[device_id=")) {
		m->maximal = true;
		if ((rc = int_at(p, 0, &m->device)))
			return rc;
		return need(p, ']', "expected ']' after the device");
	}
	if (!eat_word(p, "mesh[") && !eat_word(p, "@mesh<"))
		return fail(p, "expected mesh[");
	if (peek(p) != ']') {
		do {
			bool quoted;

			if (m->n_axes == MAX_AXES)
				return fail(p, "too many mesh axes");
			if ((rc = name_at(p, &names[m->n_axes], &quoted)) ||
			    (rc = need(p, '=', "expected '=' after the axis name")) ||
			    (rc = int_at(p, 1, &sizes[m->n_axes])))
				return rc;
			m->quoted |= quoted;
			m->n_axes++;
		} while (eat(p, ','));
	}
	if ((rc = need(p, ']', "expected ']' to close the mesh")))
		return rc;
	m->names = shs_arena_memdup(p->a, names, m->n_axes * sizeof(*names));
	m->sizes = shs_arena_memdup(p->a, sizes, m->n_axes * sizeof(*sizes));
	return m->n_axes && (!m->names || !m->sizes) ? nomem(p) : SHS_OK;
}

/* `device_ids=(0,2,1,3)` or `device_ids=([4,16]T(1,0))`, after the '='. */
static int device_ids_at(mp *p, shs_mesh_sharding *m)
{
	int64_t *perm = NULL;
	uint32_t n_perm = 0;
	size_t open;
	int rc;

	peek(p);
	open = p->pos;
	if ((rc = need(p, '(', "expected '(' after device_ids=")))
		return rc;
	if (peek(p) == '[') {
		if ((rc = ints_at(p, '[', ']', 1, &m->iota_dims, &m->n_iota)))
			return rc;
		if (eat(p, 'T') && (rc = ints_at(p, '(', ')', 0, &perm, &n_perm)))
			return rc;
		if (n_perm && n_perm != m->n_iota)
			return fail(p, "the transpose does not match the reshape");
		if (!(m->iota_perm = shs_arena_alloc(p->a, m->n_iota * sizeof(*m->iota_perm))))
			return nomem(p);
		for (uint32_t k = 0; k < m->n_iota; k++)
			m->iota_perm[k] = n_perm ? (int32_t)perm[k] : (int32_t)k;
		if (!shs__is_permutation(m->iota_perm, m->n_iota))
			return fail(p, "the transpose is not a permutation");
		return need(p, ')', "expected ')' after the device order");
	}
	p->pos = open; /* ints_at reads the '(' again */
	return ints_at(p, '(', ')', 0, &m->device_ids, &m->n_device_ids);
}

static int axis_ref_at(mp *p, const shs_mesh_sharding *m, shs_axis_ref *r)
{
	const char *name;
	bool quoted;
	int rc = name_at(p, &name, &quoted);

	if (rc)
		return rc;
	r->axis = m->n_axes;
	for (uint32_t k = 0; k < m->n_axes; k++)
		if (!strcmp(m->names[k], name))
			r->axis = k;
	if (r->axis == m->n_axes)
		return fail(p, "an axis the mesh lacks");
	r->pre_size = r->size = 0;
	if (!eat_word(p, ":("))
		return SHS_OK;
	if ((rc = int_at(p, 1, &r->pre_size)) || (rc = need(p, ')', "expected ')'")))
		return rc;
	return int_at(p, 1, &r->size);
}

/* `{a, b:(2)2, ?}` into d (open when it holds `?`), or `{c, d}` (no `?`) for an axis list. */
static int axes_at(mp *p, const shs_mesh_sharding *m, shs_mesh_dim *d, bool dim)
{
	shs_axis_ref buf[MAX_AXES];
	int rc = need(p, '{', "expected '{'");

	d->n = 0;
	while (!rc && !eat(p, '}')) {
		if ((d->n || d->open) && (rc = need(p, ',', "expected ',' or '}'")))
			break;
		if (dim && eat(p, '?')) {
			d->open = true;
			continue;
		}
		if (d->n == MAX_AXES)
			return fail(p, "too many axes");
		rc = axis_ref_at(p, m, &buf[d->n++]);
	}
	if (!rc && d->n && !(d->axes = shs_arena_memdup(p->a, buf, d->n * sizeof(*buf))))
		rc = nomem(p);
	return rc;
}

static int dims_at(mp *p, shs_mesh_sharding *m)
{
	shs_mesh_dim buf[SHS_MAX_RANK];
	int rc = need(p, '[', "expected '['");

	while (!rc && !eat(p, ']')) {
		if (m->rank && (rc = need(p, ',', "expected ',' or ']'")))
			break;
		if (m->rank == SHS_MAX_RANK)
			return fail(p, "too many dimensions");
		memset(&buf[m->rank], 0, sizeof(buf[0]));
		rc = axes_at(p, m, &buf[m->rank++], true);
	}
	if (!rc && m->rank && !(m->dims = shs_arena_memdup(p->a, buf, m->rank * sizeof(*buf))))
		rc = nomem(p);
	return rc;
}

/* `, metadata={{...}, {...}}` records into sh. */
static int metadata_at(mp *p, shs_sharding *sh)
{
	shs_metadata buf[16];
	uint32_t n = 0;
	int rc = need(p, '{', "expected '{' after metadata=");

	while (!rc && !eat(p, '}')) {
		size_t used = 0, off = 0;

		if (n && (rc = need(p, ',', "expected ',' or '}'")))
			break;
		if (n == sizeof(buf) / sizeof(buf[0]))
			return fail(p, "too many metadata records");
		memset(&buf[n], 0, sizeof(buf[n]));
		peek(p);
		rc = shs_metadata_parse(p->a, p->s + p->pos, p->len - p->pos, &used, &buf[n++],
					&off, p->e);
		if (rc) {
			*p->err_off = p->pos + off;
			return rc;
		}
		p->pos += used;
	}
	if (!rc && n && !(sh->metadata = shs_arena_memdup(p->a, buf, n * sizeof(*buf))))
		rc = nomem(p);
	sh->n_metadata = n;
	return rc;
}

/* The items after the mesh, each at most once (a second would overwrite the first, or extend
 * its dimensions with ones never read). */
enum {
	SEEN_DIMS = 1 << 0,
	SEEN_DEVICE_IDS = 1 << 1,
	SEEN_METADATA = 1 << 2,
	SEEN_WHOLE = 1 << 3,
	SEEN_LIST = 1 << 4 /* shifted by the list: replicated=, unreduced=, manual= */
};

/* Marks item bit as seen, or fails naming it when it was already. */
static int once(mp *p, unsigned *seen, unsigned bit, const char *what)
{
	char msg[64];

	if (!(*seen & bit)) {
		*seen |= bit;
		return SHS_OK;
	}
	snprintf(msg, sizeof(msg), "%s given twice", what);
	return fail(p, msg);
}

/* The words after the mesh: replicated, unreduced, manual, [dims], X={axes}, metadata=. */
static int rest_at(mp *p, shs_sharding *sh, shs_mesh_sharding *m)
{
	static const char *const wholes[] = { "replicated", "unreduced", "manual" };
	static const shs_sharding_kind kinds[] = { SHS_SHARDING_REPLICATED, SHS_SHARDING_UNREDUCED,
						   SHS_SHARDING_MANUAL };
	unsigned seen = 0;
	int rc = SHS_OK;

	while (!rc && eat(p, ',')) {
		shs_mesh_dim list = { 0 };
		bool found = false;

		if (peek(p) == '[') {
			if (!(rc = once(p, &seen, SEEN_DIMS, "the dimensions")))
				rc = dims_at(p, m);
			continue;
		}
		if (eat_word(p, "device_ids=")) {
			if (!(rc = once(p, &seen, SEEN_DEVICE_IDS, "device_ids")))
				rc = device_ids_at(p, m);
			continue;
		}
		if (eat_word(p, "metadata=")) {
			if (!(rc = once(p, &seen, SEEN_METADATA, "metadata")))
				rc = metadata_at(p, sh);
			continue;
		}
		for (int k = 0; !found && k < 3; k++) {
			char key[16];

			snprintf(key, sizeof(key), "%s=", wholes[k]);
			if (eat_word(p, key)) {
				found = true;
				if ((rc = once(p, &seen, SEEN_LIST << k, key)))
					break;
				rc = axes_at(p, m, &list, false);
				*(k == 0   ? &m->n_replicated
				  : k == 1 ? &m->n_unreduced
					   : &m->n_manual) = list.n;
				*(k == 0 ? &m->replicated : k == 1 ? &m->unreduced : &m->manual) =
					list.axes;
			} else if (eat_word(p, wholes[k])) {
				found = true;
				rc = once(p, &seen, SEEN_WHOLE, "a whole-value word");
				m->whole = kinds[k];
			}
		}
		if (!found)
			rc = fail(p, "unknown named-sharding item");
	}
	return rc ? rc : need(p, '}', "expected '}' to end the named sharding");
}

/* What the text read says as XLA's NamedSharding holds it (and its protobuf form keeps it): a
 * maximal sharding is alone, a whole-value word has no dimensions or axis lists beside it, and
 * the value is settled (shs__mesh_sharding_settle). */
static int settle_read(mp *p, shs_mesh_sharding *m)
{
	bool lists = m->rank || m->n_replicated || m->n_unreduced || m->n_manual;

	if (m->maximal && (lists || m->whole != SHS_SHARDING_TILED || m->n_device_ids ||
			   m->n_iota))
		return fail(p, "maximal_mesh takes no dimensions, axis lists, device_ids or "
			    "whole-value word");
	if (m->whole != SHS_SHARDING_TILED && lists)
		return fail(p, "a whole-value word takes no dimensions or axis lists");
	if ((m->n_device_ids || m->n_iota) && !shs__mesh_order_fits(m))
		return fail(p, "device_ids must order as many devices as the mesh has");
	if (m->whole != SHS_SHARDING_TILED && !m->n_axes)
		m->whole = SHS_SHARDING_REPLICATED; /* unreduced or manual over no axis */
	shs__mesh_sharding_settle(m);
	return SHS_OK;
}

bool shs__mesh_order_fits(const shs_mesh_sharding *m)
{
	int64_t mesh = 1, order = m->n_device_ids;

	if (!shs__dims_product(m->sizes, m->n_axes, &mesh) ||
	    (m->n_iota && !shs__dims_product(m->iota_dims, m->n_iota, &order)))
		return false;
	return order == mesh;
}

/* Whether refs are every axis of m, whole, in order. */
static bool is_all(const shs_mesh_sharding *m, const shs_axis_ref *r, uint32_t n)
{
	if (n != m->n_axes || !n)
		return false;
	for (uint32_t k = 0; k < n; k++)
		if (r[k].axis != k || r[k].size)
			return false;
	return true;
}

void shs__mesh_sharding_settle(shs_mesh_sharding *m)
{
	bool split = false;

	for (uint32_t d = 0; d < m->rank; d++)
		split |= m->dims[d].n || m->dims[d].open;
	if (m->whole == SHS_SHARDING_TILED && !m->maximal && !split && !m->n_replicated) {
		if (!m->n_unreduced && !m->n_manual)
			m->whole = SHS_SHARDING_REPLICATED;
		else if (!m->n_manual && is_all(m, m->unreduced, m->n_unreduced))
			m->whole = SHS_SHARDING_UNREDUCED;
		else if (!m->n_unreduced && is_all(m, m->manual, m->n_manual))
			m->whole = SHS_SHARDING_MANUAL;
	}
	if (m->whole != SHS_SHARDING_TILED || m->maximal)
		m->rank = m->n_replicated = m->n_unreduced = m->n_manual = 0;
}

bool shs__at_mesh_sharding(const char *s, size_t len, size_t pos)
{
	static const char *const starts[] = { "mesh[", "maximal_mesh[", "@mesh<" };

	pos = shs__skip_space(s, len, pos);
	for (size_t k = 0; k < sizeof(starts) / sizeof(starts[0]); k++)
		if (pos + strlen(starts[k]) <= len &&
		    !memcmp(s + pos, starts[k], strlen(starts[k])))
			return true;
	return false;
}

int shs__mesh_sharding_parse(shs_arena *a, const char *s, size_t len, size_t *pos,
			     shs_sharding *sh, size_t *err_off, shs_err *e)
{
	mp p = { a, s, len, *pos, err_off, e };
	shs_mesh_sharding *m = shs_arena_calloc(a, 1, sizeof(*m));
	int rc;

	if (!m)
		return nomem(&p);
	m->whole = SHS_SHARDING_TILED;
	sh->kind = SHS_SHARDING_NAMED;
	sh->mesh = m;
	rc = mesh_at(&p, m);
	if (rc == SHS_OK)
		rc = rest_at(&p, sh, m);
	if (rc == SHS_OK)
		rc = settle_read(&p, m);
	*pos = p.pos;
	return rc;
}

/* ---- Printing -------------------------------------------------------------------------------- */

static void put_name(shs_buf *b, const shs_mesh_sharding *m, uint32_t axis)
{
	if (m->quoted)
		shs_buf_putc(b, '\'');
	shs_buf_puts(b, axis < m->n_axes ? m->names[axis] : "?");
	if (m->quoted)
		shs_buf_putc(b, '\'');
}

static void put_axes(shs_buf *b, const shs_mesh_sharding *m, const shs_axis_ref *r, uint32_t n,
		     bool open)
{
	shs_buf_putc(b, '{');
	for (uint32_t k = 0; k < n; k++) {
		if (k)
			shs_buf_puts(b, ", ");
		put_name(b, m, r[k].axis);
		if (r[k].size)
			shs_buf_printf(b, ":(%" PRId64 ")%" PRId64, r[k].pre_size, r[k].size);
	}
	if (open)
		shs_buf_puts(b, n ? ", ?" : "?");
	shs_buf_putc(b, '}');
}

static void put_ints(shs_buf *b, const int64_t *v, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		shs_buf_printf(b, "%s%" PRId64, k ? "," : "", v[k]);
}

void shs__mesh_sharding_print(shs_buf *b, const shs_sharding *sh)
{
	const shs_mesh_sharding *m = sh->mesh;
	static const char *const lists[] = { "replicated", "unreduced", "manual" };
	const shs_axis_ref *refs[] = { m->replicated, m->unreduced, m->manual };
	const uint32_t counts[] = { m->n_replicated, m->n_unreduced, m->n_manual };

	shs_buf_putc(b, '{');
	if (m->maximal) {
		shs_buf_printf(b, "maximal_mesh[device_id=%" PRId64 "]", m->device);
	} else {
		shs_buf_puts(b, "mesh[");
		for (uint32_t k = 0; k < m->n_axes; k++) {
			if (k)
				shs_buf_putc(b, ',');
			put_name(b, m, k);
			shs_buf_printf(b, "=%" PRId64, m->sizes[k]);
		}
		shs_buf_putc(b, ']');
	}
	if (m->n_device_ids || m->n_iota) {
		shs_buf_puts(b, ", device_ids=(");
		if (m->n_iota) {
			shs_buf_putc(b, '[');
			put_ints(b, m->iota_dims, m->n_iota);
			shs_buf_puts(b, "]T(");
			for (uint32_t k = 0; k < m->n_iota; k++)
				shs_buf_printf(b, "%s%d", k ? "," : "", m->iota_perm[k]);
			shs_buf_putc(b, ')');
		} else {
			put_ints(b, m->device_ids, m->n_device_ids);
		}
		shs_buf_putc(b, ')');
	}
	if (m->whole == SHS_SHARDING_REPLICATED)
		shs_buf_puts(b, ", replicated");
	else if (m->whole == SHS_SHARDING_UNREDUCED)
		shs_buf_puts(b, ", unreduced");
	else if (m->whole == SHS_SHARDING_MANUAL)
		shs_buf_puts(b, ", manual");
	else if (!m->maximal) {
		shs_buf_puts(b, ", [");
		for (uint32_t d = 0; d < m->rank; d++) {
			if (d)
				shs_buf_puts(b, ", ");
			put_axes(b, m, m->dims[d].axes, m->dims[d].n, m->dims[d].open);
		}
		shs_buf_putc(b, ']');
		for (int k = 0; k < 3; k++)
			if (counts[k]) {
				shs_buf_printf(b, ", %s=", lists[k]);
				put_axes(b, m, refs[k], counts[k], false);
			}
	}
	if (sh->n_metadata) {
		shs_buf_puts(b, ", metadata=");
		shs__put_metadata_list(b, sh->metadata, sh->n_metadata);
	}
	shs_buf_putc(b, '}');
}

/* ---- Equality -------------------------------------------------------------------------------- */

static bool refs_equal(const shs_axis_ref *x, uint32_t nx, const shs_axis_ref *y, uint32_t ny)
{
	if (nx != ny)
		return false;
	for (uint32_t k = 0; k < nx; k++)
		if (x[k].axis != y[k].axis || x[k].pre_size != y[k].pre_size ||
		    x[k].size != y[k].size)
			return false;
	return true;
}

/* Device k of m's order (iota over the mesh, explicit, or iota transposed). */
static int64_t device_at(const shs_mesh_sharding *m, int64_t k)
{
	int64_t idx[SHS_SHARDING_MAX_DIMS], stride = 1, id = 0;

	if (m->n_device_ids)
		return m->device_ids[k];
	if (!m->n_iota)
		return k;
	/* position k of the transposed array: its coordinates in the permuted dims */
	for (uint32_t j = m->n_iota; j-- > 0;) {
		int64_t size = m->iota_dims[m->iota_perm[j]];

		idx[m->iota_perm[j]] = k % size;
		k /= size;
	}
	for (uint32_t j = m->n_iota; j-- > 0;) {
		id += idx[j] * stride;
		stride *= m->iota_dims[j];
	}
	return id;
}

static int64_t device_count(const shs_mesh_sharding *m)
{
	int64_t n = 1;

	if (m->n_device_ids)
		return m->n_device_ids;
	if (m->n_iota)
		return shs__dims_product(m->iota_dims, m->n_iota, &n) ? n : -1;
	return shs__dims_product(m->sizes, m->n_axes, &n) ? n : -1;
}

bool shs__mesh_sharding_equal(const shs_mesh_sharding *x, const shs_mesh_sharding *y)
{
	int64_t n = device_count(x);

	if (x->maximal != y->maximal || x->n_axes != y->n_axes || x->whole != y->whole ||
	    x->rank != y->rank || (x->maximal && x->device != y->device) || n != device_count(y))
		return false;
	for (uint32_t k = 0; k < x->n_axes; k++)
		if (strcmp(x->names[k], y->names[k]) || x->sizes[k] != y->sizes[k])
			return false;
	for (int64_t k = 0; n <= MAX_IDS && k < n; k++)
		if (device_at(x, k) != device_at(y, k))
			return false;
	for (uint32_t d = 0; d < x->rank; d++)
		if (x->dims[d].open != y->dims[d].open ||
		    !refs_equal(x->dims[d].axes, x->dims[d].n, y->dims[d].axes, y->dims[d].n))
			return false;
	return refs_equal(x->replicated, x->n_replicated, y->replicated, y->n_replicated) &&
	       refs_equal(x->unreduced, x->n_unreduced, y->unreduced, y->n_unreduced) &&
	       refs_equal(x->manual, x->n_manual, y->manual, y->n_manual);
}

/* ---- Copying --------------------------------------------------------------------------------- */

static shs_axis_ref *dup_refs(shs_arena *a, const shs_axis_ref *r, uint32_t n, bool *ok)
{
	return shs__dup_array(a, r, n, sizeof(*r), ok);
}

shs_mesh_sharding *shs__mesh_sharding_clone(shs_arena *a, const shs_mesh_sharding *m)
{
	shs_mesh_sharding *d = shs_arena_alloc(a, sizeof(*d));
	bool ok = d != NULL;

	if (!ok)
		return NULL;
	*d = *m;
	d->names = shs__dup_array(a, m->names, m->n_axes, sizeof(*m->names), &ok);
	for (uint32_t k = 0; ok && k < m->n_axes; k++)
		ok = (d->names[k] = shs_arena_strdup(a, m->names[k])) != NULL;
	d->sizes = shs__dup_array(a, m->sizes, m->n_axes, sizeof(*m->sizes), &ok);
	d->device_ids = shs__dup_array(a, m->device_ids, m->n_device_ids, sizeof(int64_t), &ok);
	d->iota_dims = shs__dup_array(a, m->iota_dims, m->n_iota, sizeof(int64_t), &ok);
	d->iota_perm = shs__dup_array(a, m->iota_perm, m->n_iota, sizeof(int32_t), &ok);
	d->dims = shs__dup_array(a, m->dims, m->rank, sizeof(*m->dims), &ok);
	for (uint32_t k = 0; ok && k < m->rank; k++)
		d->dims[k].axes = dup_refs(a, m->dims[k].axes, m->dims[k].n, &ok);
	d->replicated = dup_refs(a, m->replicated, m->n_replicated, &ok);
	d->unreduced = dup_refs(a, m->unreduced, m->n_unreduced, &ok);
	d->manual = dup_refs(a, m->manual, m->n_manual, &ok);
	return ok ? d : NULL;
}
