/* Helpers shared by the built-in strategy plugins: specs, enumeration, partial sums, labels. */
#include "common.h"

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

void sc_replicated(uint32_t rank, shs_pspec *out)
{
	memset(out, 0, sizeof(*out));
	out->rank = rank;
}

bool sc_equal(const shs_pspec *a, const shs_pspec *b)
{
	if (a->rank != b->rank || a->rank > SHS_PLUGIN_MAX_RANK)
		return false;
	for (uint32_t d = 0; d < a->rank; d++) {
		if (a->dims[d].n != b->dims[d].n)
			return false;
		for (uint32_t k = 0; k < a->dims[d].n && k < SHS_PLUGIN_MAX_AXES; k++)
			if (a->dims[d].axes[k] != b->dims[d].axes[k])
				return false;
	}
	return true;
}

/* Whether a dim of size `size` splits evenly over the axes of d (whose sizes are positive). */
static bool dim_divides(int64_t size, const shs_pdim *d, const shs_pmesh *mesh)
{
	int64_t prod = 1;

	if (size == 0)
		return true;
	for (uint32_t k = 0; k < d->n; k++) {
		prod *= mesh->sizes[d->axes[k]];
		if (prod > size)
			return false;
	}
	return size % prod == 0;
}

/* Whether every axis of s exists on mesh (with a positive size), fits a dim, and is used once. */
static bool axes_ok(const shs_pspec *s, const shs_pmesh *mesh)
{
	uint32_t seen = 0;

	if (s->rank > SHS_PLUGIN_MAX_RANK || mesh->n_axes > SHS_PLUGIN_MAX_AXES)
		return false;
	for (uint32_t d = 0; d < s->rank; d++) {
		if (s->dims[d].n > SHS_PLUGIN_MAX_AXES)
			return false;
		for (uint32_t k = 0; k < s->dims[d].n; k++) {
			uint32_t a = s->dims[d].axes[k];

			if (a >= mesh->n_axes || mesh->sizes[a] <= 0 || (seen & (1u << a)))
				return false;
			seen |= 1u << a;
		}
	}
	return true;
}

bool sc_valid(const shs_pspec *s, const shs_pshape *shape, const shs_pmesh *mesh)
{
	if (shape->type == SHS_PTYPE_TUPLE || s->rank != shape->rank || !axes_ok(s, mesh))
		return false;
	if (s->padded)
		return true;
	for (uint32_t d = 0; d < s->rank; d++)
		if (!dim_divides(shape->dims[d], &s->dims[d], mesh))
			return false;
	return true;
}

int64_t sc_dim_shards(const shs_pdim *d, const shs_pmesh *mesh)
{
	int64_t prod = 1;

	for (uint32_t k = 0; k < d->n && k < SHS_PLUGIN_MAX_AXES; k++)
		prod *= mesh->sizes[d->axes[k]];
	return prod;
}

uint32_t sc_dim_mask(const shs_pdim *d)
{
	uint32_t mask = 0;

	for (uint32_t k = 0; k < d->n && k < SHS_PLUGIN_MAX_AXES; k++)
		mask |= 1u << d->axes[k];
	return mask;
}

uint32_t sc_axes_mask(const shs_pspec *s)
{
	uint32_t mask = 0;

	for (uint32_t d = 0; d < s->rank && d < SHS_PLUGIN_MAX_RANK; d++)
		mask |= sc_dim_mask(&s->dims[d]);
	return mask;
}

int sc_axis_dim(const shs_pspec *s, uint32_t axis)
{
	for (uint32_t d = 0; d < s->rank && d < SHS_PLUGIN_MAX_RANK; d++)
		for (uint32_t k = 0; k < s->dims[d].n && k < SHS_PLUGIN_MAX_AXES; k++)
			if (s->dims[d].axes[k] == axis)
				return (int)d;
	return -1;
}

bool sc_split_shrinks(int64_t size, int64_t shards, int64_t n)
{
	if (size <= 0 || shards <= 0 || n <= 1 || shards > INT64_MAX / n)
		return false;
	return (size + shards * n - 1) / (shards * n) < (size + shards - 1) / shards;
}

void sc_mark_padded(shs_pspec *s, const shs_pshape *shape, const shs_pmesh *mesh)
{
	s->padded = false;
	if (shape->type == SHS_PTYPE_TUPLE)
		return;
	for (uint32_t d = 0; d < s->rank && d < shape->rank; d++)
		if (!dim_divides(shape->dims[d], &s->dims[d], mesh))
			s->padded = true;
}

double sc_local_elems(const shs_pshape *shape, const shs_pspec *s, const shs_pmesh *mesh)
{
	double elems = 1.0;

	for (uint32_t d = 0; d < shape->rank; d++) {
		int64_t shards = d < s->rank ? sc_dim_shards(&s->dims[d], mesh) : 1;

		elems *= (double)((shape->dims[d] + shards - 1) / shards);
	}
	return elems;
}

double sc_local_bytes(const shs_host_api *api, const shs_pshape *shape, const shs_pspec *s,
		      const shs_pmesh *mesh)
{
	return sc_local_elems(shape, s, mesh) * (double)api->elem_bytes(shape->type);
}

/* spec when it is usable as a (structural) hint for the array shape, else NULL. */
static const shs_pspec *usable_hint(const shs_pspec *spec, const shs_pshape *shape,
				    const shs_pmesh *mesh)
{
	if (!spec || shape->type == SHS_PTYPE_TUPLE || spec->rank != shape->rank ||
	    !axes_ok(spec, mesh))
		return NULL;
	return spec;
}

const shs_pspec *sc_operand_hint(const shs_pquery *q, uint32_t k)
{
	if (!q->hints || k >= q->instr->n_operands || !q->hints[k])
		return NULL;
	return usable_hint(&q->hints[k][0], &q->instr->operands[k], q->mesh);
}

const shs_pspec *sc_result_hint(const shs_pquery *q)
{
	return usable_hint(q->result_hint, &q->instr->shape, q->mesh);
}

/* The state of one sc_enum_assign walk. */
typedef struct assign_walk {
	uint32_t n_slots;
	const int64_t *sizes;
	const uint64_t *allowed;
	const uint64_t *pad;
	const shs_pmesh *mesh;
	sc_assign_fn fn;
	void *user;
	shs_pdim slots[SC_MAX_SLOTS];
	int64_t prod[SC_MAX_SLOTS];
} assign_walk;

/* Whether axis a (of size n) can join slot s given the axes already there. */
static bool slot_takes(const assign_walk *w, uint32_t s, uint32_t a, int64_t n)
{
	int64_t size;

	if (w->allowed && !(w->allowed[a] & ((uint64_t)1 << s)))
		return false;
	if (!w->sizes)
		return true;
	size = w->sizes[s];
	if (size == 0)
		return true;
	if (size < 0)
		return false;
	if (w->prod[s] <= size / n && size % (w->prod[s] * n) == 0)
		return true;
	/* XLA pads a dim that does not divide: offered where a hint put the axis */
	return w->pad && (w->pad[a] & ((uint64_t)1 << s)) && sc_split_shrinks(size, w->prod[s], n);
}

/* Places axis a and the ones after it in every way, then calls back. */
static int assign_from(assign_walk *w, uint32_t a)
{
	int rc;

	if (a == w->mesh->n_axes)
		return w->fn(w->slots, w->user);
	rc = assign_from(w, a + 1);
	if (rc != 0 || w->mesh->sizes[a] <= 0)
		return rc;
	for (uint32_t s = 0; s < w->n_slots; s++) {
		shs_pdim *d = &w->slots[s];
		int64_t n = w->mesh->sizes[a];

		if (!slot_takes(w, s, a, n))
			continue;
		w->prod[s] *= n;
		for (uint32_t pos = 0; pos <= d->n; pos++) {
			memmove(&d->axes[pos + 1], &d->axes[pos], d->n - pos);
			d->axes[pos] = (uint8_t)a;
			d->n++;
			rc = assign_from(w, a + 1);
			d->n--;
			memmove(&d->axes[pos], &d->axes[pos + 1], d->n - pos);
			if (rc != 0)
				break;
		}
		w->prod[s] /= n;
		if (rc != 0)
			return rc;
	}
	return 0;
}

int sc_enum_assign(uint32_t n_slots, const int64_t *sizes, const uint64_t *allowed,
		   const shs_pmesh *mesh, sc_assign_fn fn, void *user)
{
	return sc_enum_assign_padded(n_slots, sizes, allowed, NULL, mesh, fn, user);
}

int sc_enum_assign_padded(uint32_t n_slots, const int64_t *sizes, const uint64_t *allowed,
			  const uint64_t *pad, const shs_pmesh *mesh, sc_assign_fn fn,
			  void *user)
{
	assign_walk w;

	if (n_slots > SC_MAX_SLOTS || mesh->n_axes > SHS_PLUGIN_MAX_AXES)
		return -1;
	memset(&w, 0, sizeof(w));
	w.n_slots = n_slots;
	w.sizes = sizes;
	w.allowed = allowed;
	w.pad = pad;
	w.mesh = mesh;
	w.fn = fn;
	w.user = user;
	for (uint32_t s = 0; s < n_slots; s++)
		w.prod[s] = 1;
	return assign_from(&w, 0);
}

/* Adapts sc_enum_assign's slots to specs for sc_enum_specs. */
typedef struct spec_walk {
	uint32_t rank;
	sc_spec_fn fn;
	void *user;
} spec_walk;

static int spec_from_slots(const shs_pdim *slots, void *user)
{
	const spec_walk *w = user;
	shs_pspec s;

	sc_replicated(w->rank, &s);
	memcpy(s.dims, slots, w->rank * sizeof(s.dims[0]));
	return w->fn(&s, w->user);
}

int sc_enum_specs(const shs_pshape *shape, const shs_pmesh *mesh, const uint64_t *allowed,
		  sc_spec_fn fn, void *user)
{
	spec_walk w = { .rank = shape->rank, .fn = fn, .user = user };

	if (shape->type == SHS_PTYPE_TUPLE || shape->rank > SHS_PLUGIN_MAX_RANK)
		return -1;
	return sc_enum_assign(shape->rank, shape->dims, allowed, mesh, spec_from_slots, &w);
}

/* "rs" and dim d (< SHS_PLUGIN_MAX_RANK, two digits at most) into suffix. */
static void rs_suffix(char *suffix, uint32_t d)
{
	char *p = suffix;

	*p++ = 'r';
	*p++ = 's';
	if (d >= 10)
		*p++ = (char)('0' + d / 10);
	*p++ = (char)('0' + d % 10);
	*p = '\0';
}

uint32_t sc_psum_variants(const shs_pspec *result, const shs_pdim *partial,
			  const shs_pshape *shape, const shs_pmesh *mesh, bool with_cm,
			  sc_psum *out)
{
	return sc_psum_variants_padded(result, partial, shape, mesh, with_cm, 0, out);
}

uint32_t sc_psum_variants_padded(const shs_pspec *result, const shs_pdim *partial,
				 const shs_pshape *shape, const shs_pmesh *mesh, bool with_cm,
				 uint64_t pad_dims, sc_psum *out)
{
	uint32_t n = 0;

	if (partial->n == 0)
		return 0;
	out[n] = (sc_psum){ .kind = SHS_PCOLL_ALL_REDUCE, .dim = -1, .result = *result };
	memcpy(out[n].suffix, "ar", sizeof("ar"));
	n++;
	if (sc_axes_mask(result) & sc_dim_mask(partial))
		return n;
	for (uint32_t d = 0; d < result->rank && d < shape->rank; d++) {
		shs_pdim *dim;

		if (result->dims[d].n + partial->n > SHS_PLUGIN_MAX_AXES)
			continue;
		out[n] = (sc_psum){ .kind = SHS_PCOLL_REDUCE_SCATTER, .dim = (int32_t)d,
				    .result = *result };
		dim = &out[n].result.dims[d];
		memcpy(&dim->axes[dim->n], partial->axes, partial->n);
		dim->n = (uint8_t)(dim->n + partial->n);
		if (!dim_divides(shape->dims[d], dim, mesh)) {
			if (!(pad_dims & ((uint64_t)1 << d)) ||
			    !sc_split_shrinks(shape->dims[d],
					      sc_dim_shards(&result->dims[d], mesh),
					      sc_dim_shards(partial, mesh)))
				continue;
			out[n].result.padded = true;
		}
		rs_suffix(out[n].suffix, d);
		n++;
		if (!with_cm)
			continue;
		out[n] = out[n - 1];
		out[n].overlappable = true;
		strcat(out[n].suffix, " cm");
		n++;
	}
	return n;
}

void sc_append(char *buf, size_t cap, size_t *len, const char *str)
{
	sc_append_n(buf, cap, len, str, strlen(str));
}

void sc_append_dim(char *buf, size_t cap, size_t *len, const shs_pdim *d,
		   const shs_pmesh *mesh)
{
	if (d->n == 0) {
		sc_append_char(buf, cap, len, '-');
		return;
	}
	for (uint32_t k = 0; k < d->n && k < SHS_PLUGIN_MAX_AXES; k++) {
		uint32_t a = d->axes[k];

		if (k > 0)
			sc_append_char(buf, cap, len, '+');
		if (a < mesh->n_axes && mesh->names && mesh->names[a]) {
			sc_append(buf, cap, len, mesh->names[a]);
		} else {
			char num[16];

			snprintf(num, sizeof(num), "#%u", a);
			sc_append(buf, cap, len, num);
		}
	}
}

size_t sc_format_dim(char *buf, size_t cap, const shs_pdim *d, const shs_pmesh *mesh)
{
	size_t len = 0;

	if (cap > 0)
		buf[0] = '\0';
	sc_append_dim(buf, cap, &len, d, mesh);
	return len;
}

size_t sc_format_spec(char *buf, size_t cap, const shs_pspec *s, const shs_pmesh *mesh)
{
	size_t len = 0;

	if (cap > 0)
		buf[0] = '\0';
	sc_append(buf, cap, &len, "[");
	for (uint32_t d = 0; d < s->rank && d < SHS_PLUGIN_MAX_RANK; d++) {
		if (d > 0)
			sc_append(buf, cap, &len, ",");
		sc_append_dim(buf, cap, &len, &s->dims[d], mesh);
	}
	sc_append(buf, cap, &len, "]");
	return len;
}

/* The number after key and any blanks and sep characters in a backend_config (JSON's
 * `"flops": 4096`, sep ":"; Transformer Engine's MLIR dictionary `mask_type = 2 : i64`, sep
 * "="), or -1 when absent. */
double sc_config_number(const char *cfg, const char *key, char sep)
{
	const char *p = cfg ? strstr(cfg, key) : NULL;

	if (!p)
		return -1;
	p += strlen(key);
	while (*p == ' ' || *p == sep)
		p++;
	return (*p >= '0' && *p <= '9') ? strtod(p, NULL) : -1;
}
