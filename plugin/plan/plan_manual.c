/* shard_map's manual regions in a plan: the program's own per-device code is kept as written.
 * An instruction of a region is replicated over the mesh in its local shapes (each device runs
 * it on its own shard, as XLA's partitioner leaves it); the region's entry takes its operand in
 * the sharding the program states and its exit gives the whole array in its own; a collective
 * written in the region moves what its device groups say over the mesh axes they span. */
#include <stdlib.h>
#include <string.h>

#include "manual.h"
#include "propagate_internal.h"

/* s with only the mesh axes in mask (keep) or only those not in it. */
static void restrict_spec(const shs_pspec *s, uint32_t mask, bool keep, shs_pspec *out)
{
	shs_spec_replicated(out, s->rank);
	for (uint32_t d = 0; d < s->rank; d++)
		for (uint32_t k = 0; k < s->dims[d].n; k++)
			if (((mask >> s->dims[d].axes[k]) & 1u) == keep)
				shs__spec_add(out, d, s->dims[d].axes[k]);
}

/* A spec of full that splits it into local (their dims' ratios) over the mesh axes of mask not
 * yet used, in mesh order; false when the ratios are no product of those axes. */
static bool split_spec(const shs_shape *full, const shs_shape *local, const shs_mesh *mesh,
		       uint32_t mask, shs_pspec *out)
{
	bool used[SHS_MESH_MAX_AXES] = { false };

	if (full->rank != local->rank || full->rank > SHS_PLUGIN_MAX_RANK)
		return false;
	shs_spec_replicated(out, full->rank);
	for (uint32_t d = 0; d < full->rank; d++) {
		int64_t want, have = 1;
		if (local->dims[d] <= 0 || full->dims[d] % local->dims[d])
			return false;
		want = full->dims[d] / local->dims[d];
		for (uint32_t a = 0; a < mesh->n_axes && have < want; a++)
			if (!used[a] && ((mask >> a) & 1u) && mesh->sizes[a] > 1 &&
			    (want / have) % mesh->sizes[a] == 0) {
				used[a] = true;
				have *= mesh->sizes[a];
				shs__spec_add(out, d, (int)a);
			}
		if (have != want)
			return false;
	}
	return true;
}

/* Whether the axes of mask in spec s cut full into pieces of local's dims (the last one
 * padded). */
static bool makes_local(const shs_pspec *s, uint32_t mask, const shs_shape *full,
			const shs_shape *local, const shs_mesh *mesh)
{
	shs_pspec by;

	if (s->rank != full->rank || full->rank != local->rank)
		return false;
	restrict_spec(s, mask, true, &by);
	for (uint32_t d = 0; d < full->rank; d++) {
		int64_t n = shs_spec_dim_split(&by, d, mesh);
		if (n <= 0 || (full->dims[d] + n - 1) / n != local->dims[d])
			return false;
	}
	return true;
}

int shs__manual_axes(const shs_mesh *mesh, const shs_instr *partial, uint32_t *mask,
		     shs_err *e)
{
	shs_named_sharding named;
	shs_err why = { 0 };

	*mask = (1u << mesh->n_axes) - 1;
	if (!partial)
		return SHS_OK;
	if (partial->sharding && partial->shape.type != SHS_TUPLE &&
	    shs_sharding_to_named_manual(mesh, partial->sharding, partial->shape.rank, &named,
					 mask, &why) == SHS_OK && *mask)
		return SHS_OK;
	return shs_seterr(e, SHS_EINVAL, "%s: its shard_map region's manual axes are not axes of "
			  "the mesh (%s)", partial->name, why.msg[0] ? why.msg : "none named");
}

/* The spec the region boundary in gives its full side (the operand of an entry, the result
 * of an exit) over the region's manual axes (mask) and any others: the sharding the program
 * states there (the entry's operand's, a Sharding custom call's or a parameter's; the exit's
 * own), else the split its shapes make. */
static int full_side(shs__prop *x, uint32_t c, uint32_t i, uint32_t mask, shs_pspec *out,
		     shs_err *e)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	bool entry = shs_is_full_to_shard(in);
	uint32_t o = entry && in->n_operands == 1 ? in->operands[0] : UINT32_MAX;
	const shs_shape *full = entry ? (o != UINT32_MAX ? &comp->instrs[o]->shape : NULL)
				      : &in->shape;
	const shs_shape *local = entry ? &in->shape
				       : in->n_operands == 1 ? &comp->instrs[in->operands[0]]->shape
							     : NULL;
	const shs_sharding *stated = entry ? (o != UINT32_MAX ? comp->instrs[o]->sharding : NULL)
					   : in->sharding;
	shs_err why = { 0 };

	if (!full || !local || full->type == SHS_TUPLE || local->type == SHS_TUPLE)
		return shs_seterr(e, SHS_EINVAL, "%s: a shard_map boundary of one array is "
				  "expected", in->name);
	if (stated && shs__spec_from_sharding(&x->r->mesh, stated, full->rank, out, &why) ==
			      SHS_OK && shs__spec_fits(out, full, &x->r->mesh) &&
	    makes_local(out, mask, full, local, &x->r->mesh))
		return SHS_OK;
	if (split_spec(full, local, &x->r->mesh, mask, out))
		return SHS_OK;
	return shs_seterr(e, SHS_EINVAL, "%s: its shard_map region splits %s into %s, which the "
			  "mesh's axes cannot make", in->name, entry ? "its operand" : "its result",
			  entry ? "its result" : "its operand");
}

/* Fixes the decision of boundary i of a region over the axes of mask: the full side as
 * full_side says, the local side the same but for those axes (replicated for a manual region),
 * no work: XLA's partitioner makes each boundary a copy of the local array (its custom-call
 * handler), which its algebraic simplifier removes as a copy between equal layouts. */
static int fix_boundary(shs__prop *x, uint32_t c, uint32_t i, uint32_t mask, shs_err *e)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	bool entry = shs_is_full_to_shard(in);
	shs_decision *d = shs__dec(x, c, i);
	uint32_t first[2] = { 0, 1 };
	shs_pspec full, local;
	int rc = full_side(x, c, i, mask, &full, e);

	if (rc != SHS_OK)
		return rc;
	restrict_spec(&full, mask, false, &local);
	rc = shs__dec_set(x, d, entry ? &local : &full, 1, entry ? &full : &local, first, 1,
			  "manual", entry ? "enters a shard_map region" : "leaves a shard_map region",
			  0);
	if (rc != SHS_OK)
		return shs_seterr(e, rc, "plan: out of memory");
	d->fixed = true;
	return SHS_OK;
}

/* The region of instruction i of computation c: its entry (NULL for none or a manual region),
 * and whether it is in one (*in_region) or leaves one (*exit). */
static const shs_instr *region_of(const shs__prop *x, uint32_t c, uint32_t i, bool *in_region,
				  bool *exit)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *in = comp->instrs[i], *at = shs_manual_entry(&x->manual, c, i);

	*exit = false;
	*in_region = shs_manual_is(&x->manual, c, i) || at;
	if (shs_is_shard_to_full(in) && in->n_operands == 1) {
		uint32_t o = in->operands[0];
		*exit = shs_manual_is(&x->manual, c, o) || shs_manual_entry(&x->manual, c, o);
		if (!at)
			at = shs_manual_entry(&x->manual, c, o);
	}
	return at;
}

int shs__manual_fix(shs__prop *x, shs_err *e)
{
	const shs_instr *last = NULL; /* the region whose axes were read last, and them */
	uint32_t last_mask = 0;
	int rc = SHS_OK;

	if (!x->manual.any)
		return SHS_OK;
	for (uint32_t c = 0; c < x->m->n_comps && rc == SHS_OK; c++)
		for (uint32_t i = 0; i < x->m->comps[c]->n_instrs && rc == SHS_OK; i++) {
			const shs_instr *in = x->m->comps[c]->instrs[i];
			bool inside, exit, to_full = shs_is_shard_to_full(in);
			const shs_instr *at = region_of(x, c, i, &inside, &exit);
			uint32_t mask = 0;
			if (!inside && !exit && !to_full)
				continue;
			/* a manual region's shardings are the program's; a partly manual one's
			 * constraints (over its auto axes) stay */
			if (x->hint_set[c] && (!at || to_full || shs_is_full_to_shard(in)))
				x->hint_set[c][i] = x->pinned[c][i] = false;
			if (at && at == last) {
				mask = last_mask;
			} else if ((rc = shs__manual_axes(&x->r->mesh, at, &mask, e)) == SHS_OK &&
				   at) {
				last = at;
				last_mask = mask;
			}
			if (rc == SHS_OK && at && !to_full) /* a partly manual region's exit is
							     * decided as its operand is */
				shs__dec(x, c, i)->manual_axes = mask;
			if (rc == SHS_OK && (shs_is_full_to_shard(in) || (to_full && !at)))
				rc = fix_boundary(x, c, i, mask, e);
		}
	return rc;
}

int shs__manual_exit(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	const shs_instr *op = in->n_operands == 1 ? x->m->comps[c]->instrs[in->operands[0]] : NULL;
	const shs_decision *od = op ? shs__dec(x, c, in->operands[0]) : NULL;
	uint32_t first[2] = { 0, 1 }, mask = od ? od->manual_axes : 0;
	shs_pspec local, full;

	if (!op || !mask || op->shape.type == SHS_TUPLE || in->shape.rank != op->shape.rank ||
	    in->shape.rank > SHS_PLUGIN_MAX_RANK)
		return 0;
	if (od->set && od->n_leaves == 1)
		local = od->leaves[0];
	else
		shs_spec_replicated(&local, op->shape.rank);
	/* the manual axes go back on the dims the region's pieces make whole again, major: the
	 * whole array is the groups' pieces one after another, each split as the region split it */
	shs_spec_replicated(&full, local.rank);
	for (uint32_t d = 0; d < in->shape.rank; d++) {
		int64_t grow = op->shape.dims[d] > 0 ? in->shape.dims[d] / op->shape.dims[d] : 1;
		for (uint32_t a = 0; grow > 1 && a < x->r->mesh.n_axes; a++)
			if (((mask >> a) & 1u) && grow % x->r->mesh.sizes[a] == 0) {
				grow /= x->r->mesh.sizes[a];
				shs__spec_add(&full, d, (int)a);
			}
		for (uint32_t k = 0; k < local.dims[d].n; k++)
			shs__spec_add(&full, d, local.dims[d].axes[k]);
	}
	if (shs__dec_set(x, shs__dec(x, c, i), &full, 1, &local, first, 1, "manual",
			 "leaves a shard_map region", 0) != SHS_OK) {
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		return -1;
	}
	return 1;
}

/* The kind of the collective op is and whether its bytes are its result's (an all-gather's:
 * what it gathers) rather than its operands'; -1 for no collective. */
static int coll_kind(shs_opcode op, bool *of_result)
{
	*of_result = false;
	switch (op) {
	case SHS_OP_ALL_REDUCE: case SHS_OP_ALL_REDUCE_START:
		return SHS_PCOLL_ALL_REDUCE;
	case SHS_OP_ALL_GATHER: case SHS_OP_ALL_GATHER_START:
		*of_result = true;
		return SHS_PCOLL_ALL_GATHER;
	case SHS_OP_REDUCE_SCATTER:
		return SHS_PCOLL_REDUCE_SCATTER;
	case SHS_OP_ALL_TO_ALL: case SHS_OP_RAGGED_ALL_TO_ALL:
		return SHS_PCOLL_ALL_TO_ALL;
	case SHS_OP_COLLECTIVE_PERMUTE: case SHS_OP_COLLECTIVE_PERMUTE_START:
	case SHS_OP_COLLECTIVE_BROADCAST:
		return SHS_PCOLL_PERMUTE;
	default:
		return -1;
	}
}

/* The mesh axes along which the devices of each group (n groups of size, row by row) differ. */
static uint32_t group_axes(const shs_mesh *mesh, const int64_t *ids, uint32_t n, uint32_t size)
{
	uint32_t mask = 0;

	for (uint64_t g = 0; g < n; g++)
		for (uint64_t k = 1; k < size; k++)
			for (uint32_t ax = 0; ax < mesh->n_axes; ax++)
				if (shs_mesh_coord(mesh, ids[g * size], ax) !=
				    shs_mesh_coord(mesh, ids[g * size + k], ax))
					mask |= 1u << ax;
	return mask;
}

int shs__manual_coll(const shs__prop *x, uint32_t c, uint32_t i, shs_coll *out, shs_err *e)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	bool of_result;
	int kind = coll_kind(in->op, &of_result);
	int64_t devices = 1, *ids = NULL;
	uint32_t n, size;
	int rc;

	if (kind < 0)
		return 0;
	for (uint32_t a = 0; a < x->r->mesh.n_axes; a++)
		devices *= x->r->mesh.sizes[a];
	rc = shs_collective_groups(in, devices, &ids, &n, &size, e);
	if (rc != SHS_OK)
		return -1;
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	out->axes_mask = group_axes(&x->r->mesh, ids, n, size);
	if (of_result) {
		out->bytes = (double)shs_shape_bytes(&in->shape);
	} else {
		for (uint32_t k = 0; k < in->n_operands; k++)
			out->bytes += (double)shs_shape_bytes(&comp->instrs[in->operands[k]]->shape);
	}
	free(ids);
	return 1;
}
