/* Checks of what a strategy proposed: every spec against the instruction's leaves and the mesh,
 * every collective's axes; a strategy's faulty candidates dropped and reported. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"

enum {
	WHERE_MAX = 64,    /* "operand 12 leaf 3" */
	AXES_TEXT_MAX = 96 /* "fsdp,tensor" */
};

/* "result", "result leaf 2", "operand 1", "operand 1 leaf 0" for leaf k of the candidate. */
static void where(const shs_host_iview *v, uint32_t k, bool always_leaf, char *buf, size_t n)
{
	uint32_t op = 0, first = 0, count = v->n_result;

	if (k >= v->n_result) {
		while (op + 1 < v->instr.n_operands && v->operand_first[op + 1] <= k)
			op++;
		first = v->operand_first[op];
		count = (op + 1 < v->instr.n_operands ? v->operand_first[op + 1] : v->n_leaves) -
			first;
	}
	if (k < v->n_result)
		snprintf(buf, n, "result");
	else
		snprintf(buf, n, "operand %u", op);
	if (always_leaf || count != 1)
		snprintf(buf + strlen(buf), n - strlen(buf), " leaf %u", k - first);
}

static void axes_text(const shs_pmesh *mesh, const shs_pdim *dim, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (uint32_t j = 0; j < dim->n && len < n; j++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", j ? "," : "",
					mesh->names[dim->axes[j]]);
}

/* The axes of spec s (leaf k of v) exist and none repeats; writes the fault to msg when
 * not. */
static bool check_axes(const shs_host_iview *v, uint32_t k, const shs_pmesh *mesh,
		       const shs_pspec *s, char *msg, size_t n)
{
	char at[WHERE_MAX];
	uint32_t used = 0;

	for (uint32_t d = 0; d < s->rank; d++) {
		const shs_pdim *dim = &s->dims[d];

		if (dim->n > SHS_PLUGIN_MAX_AXES) {
			where(v, k, false, at, sizeof(at));
			snprintf(msg, n, "%s dim %u lists %u axes, at most %d", at, d, dim->n,
				 SHS_PLUGIN_MAX_AXES);
			return false;
		}
		for (uint32_t j = 0; j < dim->n; j++) {
			uint8_t x = dim->axes[j];

			if (x >= mesh->n_axes) {
				where(v, k, false, at, sizeof(at));
				snprintf(msg, n,
					 "%s dim %u: axis index %u but the mesh has %u axes", at,
					 d, x, mesh->n_axes);
				return false;
			}
			if (used & (1u << x)) {
				where(v, k, false, at, sizeof(at));
				snprintf(msg, n, "%s uses axis '%s' twice", at, mesh->names[x]);
				return false;
			}
			used |= 1u << x;
		}
	}
	return true;
}

/* The product of a dim's axis sizes, or -1 when not a positive int64. */
static int64_t axes_product(const shs_pmesh *mesh, const shs_pdim *dim)
{
	int64_t prod = 1;

	for (uint32_t j = 0; j < dim->n; j++)
		if (mesh->sizes[dim->axes[j]] < 1 ||
		    __builtin_mul_overflow(prod, mesh->sizes[dim->axes[j]], &prod))
			return -1;
	return prod;
}

/* Checks one spec against its leaf; writes the fault to msg and returns false when bad. */
static bool check_spec(const shs_host_iview *v, const shs_pmesh *mesh, uint32_t k,
		       const shs_pspec *s, char *msg, size_t n)
{
	const shs_pshape *leaf = v->leaf[k];
	char at[WHERE_MAX], axes[AXES_TEXT_MAX];

	if (s->rank != leaf->rank) {
		where(v, k, true, at, sizeof(at));
		snprintf(msg, n, "%s has rank %u, the shape has rank %u", at, s->rank, leaf->rank);
		return false;
	}
	if (!check_axes(v, k, mesh, s, msg, n))
		return false;
	for (uint32_t d = 0; d < s->rank && !s->padded; d++) {
		int64_t prod = axes_product(mesh, &s->dims[d]);

		if (s->dims[d].n && (prod < 1 || leaf->dims[d] % prod)) {
			where(v, k, false, at, sizeof(at));
			axes_text(mesh, &s->dims[d], axes, sizeof(axes));
			snprintf(msg, n, "%s dim %u (size %lld) does not divide by %lld (%s)",
				 at, d, (long long)leaf->dims[d], (long long)prod, axes);
			return false;
		}
	}
	return true;
}

static bool check_colls(const shs_cand *c, const shs_pmesh *mesh, char *msg, size_t n)
{
	uint32_t valid = mesh->n_axes >= 32 ? UINT32_MAX : (1u << mesh->n_axes) - 1u;

	for (uint32_t k = 0; k < c->n_colls; k++) {
		const shs_coll *x = &c->colls[k];

		if (x->kind < SHS_PCOLL_ALL_REDUCE || x->kind >= SHS_PCOLL_COUNT) {
			snprintf(msg, n, "collective %u has kind %d", k, x->kind);
			return false;
		}
		if (!x->axes_mask || (x->axes_mask & ~valid)) {
			snprintf(msg, n, "collective %u: axes mask 0x%x but the mesh has %u axes",
				 k, x->axes_mask, mesh->n_axes);
			return false;
		}
		if (!isfinite(x->bytes) || x->bytes < 0) {
			snprintf(msg, n, "collective %u: %g bytes", k, x->bytes);
			return false;
		}
	}
	return true;
}

/* Whether candidate c is valid; writes the fault to msg when not. A leaf equal to the one of
 * the valid candidate before it (prev, or NULL) is not checked again: a strategy's candidates
 * share most operand specs. */
static bool check_cand(const shs_pemit *out, const shs_cand *c, const shs_cand *prev,
		       const char *recorded, char *msg, size_t n)
{
	if (recorded) {
		snprintf(msg, n, "%s", recorded);
		return false;
	}
	for (uint32_t k = 0; k < out->v->n_leaves; k++)
		if ((!prev || !shs__host_same_spec(&c->result[k], &prev->result[k])) &&
		    !check_spec(out->v, out->mesh, k, &c->result[k], msg, n))
			return false;
	return check_colls(c, out->mesh, msg, n);
}

/* Keeps this strategy's valid candidates (in order) and reports the others. */
void shs__host_check_strategy(shs_pemit *out)
{
	char pre[SHS_ERRMSG_MAX], msg[SHS_ERRMSG_MAX];
	uint32_t keep = out->first;

	for (uint32_t k = out->first; k < out->list->n; k++) {
		shs_cand *c = &out->list->v[k];
		char **rec = &out->faults[k - out->first];
		const shs_cand *prev = keep > out->first ? &out->list->v[keep - 1] : NULL;

		if (check_cand(out, c, prev, *rec, msg, sizeof(msg))) {
			if (keep != k)
				out->list->v[keep] = *c;
			keep++;
		} else {
			shs__host_prefix(out, pre, sizeof(pre));
			shs__host_warn(out->h, "%s: candidate '%s': %s", pre, c->label, msg);
		}
		if (*rec) {
			free(*rec);
			*rec = NULL;
		}
	}
	out->list->n = keep;
}

/* Drops every candidate of this strategy: its generator failed. */
void shs__host_drop_strategy(shs_pemit *out)
{
	char pre[SHS_ERRMSG_MAX];
	uint32_t n = out->list->n - out->first;

	shs__host_prefix(out, pre, sizeof(pre));
	shs__host_warn(out->h, "%s: generator failed: %s (%u candidates dropped)", pre,
		       out->failed ? out->fail_msg : "no reason given", n);
	for (uint32_t k = out->first; k < out->list->n; k++) {
		free(out->faults[k - out->first]);
		out->faults[k - out->first] = NULL;
	}
	out->list->n = out->first;
}
