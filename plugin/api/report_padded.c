/* The padded dimensions of a plan, as the evaluation and the search's report name them. */
#include <stdlib.h>

#include "report_padded.h"

enum { SHOWN = 3 };

/* Appends the padded dims of spec s on array shape a (instruction in of computation comp). */
static int add_value(const shs_mesh *mesh, const char *comp, const char *instr,
		     const shs_shape *a, const shs_pspec *s, shs_padded_dim **out, uint32_t *n,
		     uint32_t *cap)
{
	for (uint32_t d = 0; d < a->rank && d < s->rank; d++) {
		int64_t split = shs_spec_dim_split(s, d, mesh), size = a->dims[d];

		if (split <= 1 || size % split == 0)
			continue;
		if (*n == *cap) {
			uint32_t grown_cap = *cap ? 2 * *cap : 16;
			shs_padded_dim *grown = realloc(*out, grown_cap * sizeof(*grown));
			if (!grown)
				return -1;
			*out = grown;
			*cap = grown_cap;
		}
		(*out)[(*n)++] = (shs_padded_dim){ .comp = comp, .instr = instr, .dim = d,
						   .size = size, .split = split,
						   .padded = (size + split - 1) / split * split };
	}
	return 0;
}

int shs_padded_dims(const shs_module *m, const shs_plan *p, shs_padded_dim **out, uint32_t *n)
{
	uint32_t cap = 0;
	bool *reducer = shs_comp_reducers(m);

	*out = NULL;
	*n = 0;
	if (!reducer)
		return -1;
	for (uint32_t c = 0; c < m->n_comps && c < p->n_comps; c++) {
		const shs_computation *comp = m->comps[c];
		if (reducer[c])
			continue;
		for (uint32_t i = 0; i < comp->n_instrs && i < p->n_instrs[c]; i++) {
			const shs_decision *d = &p->d[c][i];
			const shs_instr *in = comp->instrs[i];
			if (!d->set || d->n_leaves < 1 || in->shape.type == SHS_TUPLE ||
			    !d->leaves[0].padded)
				continue;
			if (add_value(&p->mesh, comp->name, in->name, &in->shape, &d->leaves[0], out,
				      n, &cap)) {
				free(*out);
				free(reducer);
				*out = NULL;
				*n = 0;
				return -1;
			}
		}
	}
	free(reducer);
	return 0;
}

static double waste_fraction(const shs_padded_dim *x)
{
	return x->size > 0 ? (double)(x->padded - x->size) / (double)x->size : 0;
}

void shs_padded_report_print(FILE *out, const shs_module *m, const shs_plan *p)
{
	shs_padded_dim *dims = NULL;
	uint32_t n = 0, values = 0, top[SHOWN], n_top = 0;

	if (shs_padded_dims(m, p, &dims, &n) || !n) {
		free(dims);
		return;
	}
	for (uint32_t k = 0; k < n; k++) {
		values += k == 0 || dims[k].instr != dims[k - 1].instr;
		/* keep the SHOWN largest wastes, the first of equals */
		uint32_t at = n_top;
		while (at > 0 && waste_fraction(&dims[k]) > waste_fraction(&dims[top[at - 1]]))
			at--;
		if (at >= SHOWN)
			continue;
		if (n_top < SHOWN)
			n_top++;
		for (uint32_t j = n_top - 1; j > at; j--)
			top[j] = top[j - 1];
		top[at] = k;
	}
	fprintf(out, "padded          %u dims of %u values do not divide their axes (padded as XLA "
		"pads them; JSON: padded), most waste:", n, values);
	for (uint32_t j = 0; j < n_top; j++) {
		const shs_padded_dim *x = &dims[top[j]];
		fprintf(out, "%s %s dim %u %lld -> %lld over %lld (+%.1f %%)", j ? ";" : "",
			x->instr, x->dim, (long long)x->size, (long long)x->padded,
			(long long)x->split, 100 * waste_fraction(x));
	}
	fprintf(out, "\n");
	free(dims);
}

json_t *shs_padded_report_with(json_t *o, const shs_module *m, const shs_plan *p)
{
	shs_padded_dim *dims = NULL;
	uint32_t n = 0;
	json_t *arr;

	if (!o)
		return NULL;
	arr = json_array();
	if (!arr || shs_padded_dims(m, p, &dims, &n)) {
		json_decref(arr);
		json_decref(o);
		return NULL;
	}
	for (uint32_t k = 0; k < n; k++) {
		const shs_padded_dim *x = &dims[k];
		json_t *j = json_object();
		json_object_set_new(j, "computation", json_string(x->comp));
		json_object_set_new(j, "instruction", json_string(x->instr));
		json_object_set_new(j, "dim", json_integer(x->dim));
		json_object_set_new(j, "size", json_integer(x->size));
		json_object_set_new(j, "split", json_integer(x->split));
		json_object_set_new(j, "padded_size", json_integer(x->padded));
		json_object_set_new(j, "waste", json_integer(x->padded - x->size));
		json_object_set_new(j, "waste_fraction", json_real(waste_fraction(x)));
		json_array_append_new(arr, j);
	}
	free(dims);
	json_object_set_new(o, "padded", arr);
	return o;
}
