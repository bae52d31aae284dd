/* How a plan splits the sequence: the residual stream's layout (the token embedding's output)
 * and how its flash-attention kernels run (ring, gathered K/V, or on their shard alone), for
 * the search's and the evaluation's reports. */
#include <stdlib.h>
#include <string.h>

#include "report_sequence.h"

/* The sequence length of the token inputs: dim 1 of a rank-2 integer entry parameter. */
static int64_t token_seq(const shs_module *m)
{
	const shs_computation *c = shs_module_entry(m);

	for (uint32_t i = 0; c && i < c->n_instrs; i++) {
		const shs_instr *p = c->instrs[i];
		if (p->op == SHS_OP_PARAMETER && p->shape.type != SHS_TUPLE && p->shape.rank == 2 &&
		    !shs_elem_is_float(p->shape.type) && shs_param_is_data(p))
			return p->shape.dims[1];
	}
	return 0;
}

/* The residual stream: the first gather (in computation order) of a rank-3 [B, T, D] result
 * with T the tokens' sequence; false when there is none. */
static bool residual(const shs_module *m, const shs_plan *p, uint32_t *c, uint32_t *i)
{
	int64_t t = token_seq(m);

	for (uint32_t k = 0; t > 0 && k < m->n_comps && k < p->n_comps; k++)
		for (uint32_t j = 0; j < m->comps[k]->n_instrs; j++) {
			const shs_instr *in = m->comps[k]->instrs[j];
			if (in->op == SHS_OP_GATHER && in->shape.type != SHS_TUPLE &&
			    in->shape.rank == 3 && in->shape.dims[1] == t && p->d[k][j].set &&
			    p->d[k][j].n_leaves) {
				*c = k;
				*i = j;
				return true;
			}
		}
	return false;
}

/* The axes of the sequence dim, their names into axes; what that split is. */
static const char *kind_of(const shs_plan *p, const shs_pspec *s, char *axes, size_t cap)
{
	uint32_t mask = 0;
	size_t used = 0;

	axes[0] = '\0';
	for (uint32_t a = 0; a < p->mesh.n_axes; a++)
		if (shs_spec_dim_of(s, a) == 1) {
			mask |= 1u << a;
			used += (size_t)snprintf(axes + used, used < cap ? cap - used : 0, "%s%s",
						 used ? "," : "", p->mesh.names[a]);
		}
	if (!mask)
		return "none";
	for (uint32_t a = 0; a < p->mesh.n_axes; a++)
		if ((mask >> a & 1) && !strcmp(p->mesh.names[a], "tensor"))
			return "tensor (sequence parallelism)";
	return "context";
}

/* The flash-attention kernels of p by how they run: over the context axis as a ring or with K
 * and V gathered, or on their shard alone (labels of strategies/custom_call.c). */
typedef struct attention_count {
	uint32_t ring, gather, local;
} attention_count;

static attention_count count_attention(const shs_module *m, const shs_plan *p)
{
	attention_count n = { 0 };

	for (uint32_t k = 0; k < m->n_comps && k < p->n_comps; k++)
		for (uint32_t j = 0; j < m->comps[k]->n_instrs; j++) {
			const char *l = p->d[k][j].label;
			if (m->comps[k]->instrs[j]->op != SHS_OP_CUSTOM_CALL || !p->d[k][j].set)
				continue;
			if (!strncmp(l, "flash-ring ", 11))
				n.ring++;
			else if (!strncmp(l, "flash-gather ", 13))
				n.gather++;
			else if (!strncmp(l, "flash ", 6))
				n.local++;
		}
	return n;
}

uint32_t shs_sequence_axes(const shs_module *m, const shs_plan *p)
{
	uint32_t c, i, mask = 0;

	if (!p || !residual(m, p, &c, &i))
		return 0;
	for (uint32_t a = 0; a < p->mesh.n_axes; a++)
		if (shs_spec_dim_of(&p->d[c][i].leaves[0], a) == 1)
			mask |= 1u << a;
	return mask;
}

void shs_sequence_report_print(FILE *out, const shs_module *m, const shs_plan *p)
{
	uint32_t c, i;
	char axes[128], *text;
	const char *kind;
	attention_count n;

	if (!residual(m, p, &c, &i))
		return;
	n = count_attention(m, p);
	kind = kind_of(p, &p->d[c][i].leaves[0], axes, sizeof(axes));
	text = shs_specs_text(&p->mesh, &p->d[c][i].leaves[0], 1);
	if (!strcmp(kind, "none"))
		fprintf(out, "sequence        not split: the residual stream as %s", text ? text : "?");
	else
		fprintf(out, "sequence        split over %s (%s): the residual stream as %s", axes,
			!strcmp(kind, "context") ? "context parallelism" :
			"Megatron's sequence parallelism: norms and residuals split inside the tensor "
			"axis", text ? text : "?");
	free(text);
	if (n.ring || n.gather || (strcmp(kind, "none") && n.local))
		fprintf(out, "; attention kernels: %u as a ring (K/V blocks passed around, under the "
			"work), %u with K/V gathered, %u on their shard", n.ring, n.gather, n.local);
	fprintf(out, "\n");
}

json_t *shs_sequence_report_with(json_t *o, const shs_module *m, const shs_plan *p)
{
	uint32_t c, i;
	char axes[128], *text;
	json_t *s, *list;
	const char *kind;
	attention_count n;

	if (!o || !residual(m, p, &c, &i))
		return o;
	kind = kind_of(p, &p->d[c][i].leaves[0], axes, sizeof(axes));
	text = shs_specs_text(&p->mesh, &p->d[c][i].leaves[0], 1);
	s = json_object();
	list = json_array();
	for (char *a = axes, *next; *a; a = next) {
		next = strchr(a, ',');
		if (next)
			*next++ = '\0';
		else
			next = a + strlen(a);
		json_array_append_new(list, json_string(a));
	}
	json_object_set_new(s, "split_over", list);
	json_object_set_new(s, "sharding", text ? json_string(text) : json_null());
	json_object_set_new(s, "kind", json_string(kind));
	n = count_attention(m, p);
	json_object_set_new(s, "attention", json_pack("{s:I, s:I, s:I}", "ring", (json_int_t)n.ring,
						      "gather", (json_int_t)n.gather, "local",
						      (json_int_t)n.local));
	json_object_set_new(o, "sequence", s);
	free(text);
	return o;
}
