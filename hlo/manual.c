/* shard_map's manual regions and the device groups of the collectives written in them. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "manual.h"
#include "raw_attrs.h"
#include "sharding.h"

static bool is_target(const shs_instr *in, const char *target)
{
	return in->op == SHS_OP_CUSTOM_CALL && in->custom_call_target &&
	       !strcmp(in->custom_call_target, target);
}

bool shs_is_full_to_shard(const shs_instr *in)
{
	return is_target(in, "SPMDFullToShardShape");
}

bool shs_is_shard_to_full(const shs_instr *in)
{
	return is_target(in, "SPMDShardToFullShape");
}

bool shs_is_sharding_constraint(const shs_instr *in)
{
	return is_target(in, "Sharding");
}

/* {manual} (or a named sharding manual over the whole mesh), or a tuple of them. */
static bool manual_sharding(const shs_sharding *s)
{
	if (!s)
		return false;
	if (s->kind == SHS_SHARDING_NAMED)
		return s->mesh && s->mesh->whole == SHS_SHARDING_MANUAL;
	if (s->kind != SHS_SHARDING_TUPLE)
		return s->kind == SHS_SHARDING_MANUAL;
	for (uint32_t k = 0; k < s->n_tuple; k++)
		if (!manual_sharding(&s->tuple[k]))
			return false;
	return s->n_tuple > 0;
}

/* Manual over some axes only (last_tile_dims holds MANUAL, or a named sharding lists manual
 * axes): shard_map with auto axes. */
static bool partly_manual(const shs_sharding *s)
{
	if (!s)
		return false;
	if (s->kind == SHS_SHARDING_NAMED)
		return s->mesh && s->mesh->whole == SHS_SHARDING_TILED && s->mesh->n_manual;
	for (uint32_t k = 0; k < s->n_tuple; k++)
		if (partly_manual(&s->tuple[k]))
			return true;
	for (uint32_t k = 0; k < s->n_last_tile_dims; k++)
		if (s->last_tile_dims[k] == SHS_SHARDING_MANUAL)
			return true;
	return false;
}

/* Whether in (of comp) makes a value from nothing (a constant, an iota, partition-id: JAX's
 * axis_index; a broadcast of a constant: jnp.zeros), so that it belongs to the region that
 * alone uses it. */
static bool source_op(const shs_computation *comp, const shs_instr *in)
{
	if (in->op == SHS_OP_BROADCAST && in->n_operands == 1)
		return comp->instrs[in->operands[0]]->op == SHS_OP_CONSTANT;
	return !in->n_operands && (in->op == SHS_OP_CONSTANT || in->op == SHS_OP_IOTA ||
				   in->op == SHS_OP_PARTITION_ID || in->op == SHS_OP_REPLICA_ID);
}

/* Takes into each region the sources only it uses: scanned from the last instruction, so that
 * every user is seen first. A region entry's operand is on its full side, not in it. tag[i]:
 * the region of instruction i (NULL: none), for manual regions a mark (any non-NULL). */
static int take_sources(const shs_computation *comp, const void **tag)
{
	const void **want = calloc(comp->n_instrs + 1, sizeof(*want)); /* the users' region */
	bool *mixed = calloc(comp->n_instrs + 1, sizeof(*mixed));     /* users in several */

	if (!want || !mixed) {
		free(want);
		free(mixed);
		return SHS_ENOMEM;
	}
	for (uint32_t i = comp->n_instrs; i-- > 0;) {
		const shs_instr *in = comp->instrs[i];
		if (!tag[i] && want[i] && !mixed[i] && source_op(comp, in))
			tag[i] = want[i];
		for (uint32_t k = 0; k < in->n_operands; k++) {
			uint32_t o = in->operands[k];
			const void *t = shs_is_full_to_shard(in) ? NULL : tag[i];
			if (!t || (want[o] && want[o] != t))
				mixed[o] = true;
			want[o] = t;
		}
	}
	free(want);
	free(mixed);
	return SHS_OK;
}

/* take_sources for the manual regions' marks. */
static int take_sources_marks(const shs_computation *comp, bool *marks)
{
	const void **tag = calloc(comp->n_instrs + 1, sizeof(*tag));
	int rc;

	if (!tag)
		return SHS_ENOMEM;
	for (uint32_t i = 0; i < comp->n_instrs; i++)
		tag[i] = marks[i] ? marks : NULL;
	rc = take_sources(comp, tag);
	for (uint32_t i = 0; i < comp->n_instrs; i++)
		marks[i] = tag[i] != NULL;
	free(tag);
	return rc;
}

/* Marks computation c's manual instructions (all of them when whole[c]: a manual instruction
 * calls it) and those of partly manual regions (all of them in the region opened by within[c]
 * when it is set: an instruction of that region calls it), and sets whole[] and within[] of the
 * computations they call. */
static int mark_comp(const shs_module *m, shs_manual *mm, uint32_t c, bool *whole,
		     const shs_instr **within)
{
	const shs_computation *comp = m->comps[c];
	bool *marks = calloc(comp->n_instrs + 1, sizeof(*marks)), any = false, part = false;
	const shs_instr **entry = calloc(comp->n_instrs + 1, sizeof(*entry));

	if (!marks || !entry) {
		free(marks);
		free(entry);
		return SHS_ENOMEM;
	}
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i], *at = within[c];
		bool opens = shs_is_full_to_shard(in) && partly_manual(in->sharding);
		bool man = whole[c] || manual_sharding(in->sharding) ||
			   (shs_is_full_to_shard(in) && !opens);
		for (uint32_t k = 0; k < in->n_operands && !man; k++)
			man = marks[in->operands[k]];
		for (uint32_t k = 0; k < in->n_operands && !at && !man; k++)
			at = entry[in->operands[k]];
		if (opens && !man)
			at = in;
		man = man && !shs_is_shard_to_full(in);
		at = man || shs_is_shard_to_full(in) ? NULL : at;
		marks[i] = man;
		entry[i] = at;
		for (uint32_t k = 0; shs_opcode_runs_called(in->op) && k < in->n_called; k++)
			if (in->called[k] < m->n_comps) {
				whole[in->called[k]] |= man;
				if (at && !within[in->called[k]])
					within[in->called[k]] = at;
			}
	}
	if (take_sources(comp, (const void **)entry) != SHS_OK ||
	    take_sources_marks(comp, marks) != SHS_OK) {
		free(marks);
		free(entry);
		return SHS_ENOMEM;
	}
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		any |= marks[i];
		part |= entry[i] != NULL;
	}
	if (!any) {
		free(marks);
		marks = NULL;
	}
	if (!part) {
		free(entry);
		entry = NULL;
	}
	mm->marks[c] = marks;
	mm->entry[c] = entry;
	mm->any |= any || part;
	return SHS_OK;
}

int shs_manual_make(const shs_module *m, shs_manual *out, shs_err *e)
{
	bool *whole = calloc(m->n_comps + 1, sizeof(*whole));
	const shs_instr **within = calloc(m->n_comps + 1, sizeof(*within));
	int rc = SHS_OK;

	memset(out, 0, sizeof(*out));
	out->marks = calloc(m->n_comps + 1, sizeof(*out->marks));
	out->entry = calloc(m->n_comps + 1, sizeof(*out->entry));
	out->n_comps = m->n_comps;
	if (!whole || !within || !out->marks || !out->entry)
		rc = SHS_ENOMEM;
	/* callees come before callers: from the last, a computation's callers are all marked */
	for (uint32_t c = m->n_comps; rc == SHS_OK && c-- > 0;)
		rc = mark_comp(m, out, c, whole, within);
	free(whole);
	free(within);
	if (rc == SHS_OK)
		return SHS_OK;
	shs_manual_free(out);
	return shs_seterr(e, SHS_ENOMEM, "manual regions: out of memory");
}

void shs_manual_free(shs_manual *mm)
{
	for (uint32_t c = 0; c < mm->n_comps; c++) {
		if (mm->marks)
			free(mm->marks[c]);
		if (mm->entry)
			free((void *)mm->entry[c]);
	}
	free(mm->marks);
	free((void *)mm->entry);
	memset(mm, 0, sizeof(*mm));
}

bool shs_manual_any(const shs_module *m)
{
	shs_manual mm;
	shs_err e = { 0 };
	bool any;

	if (shs_manual_make(m, &mm, &e) != SHS_OK)
		return false;
	any = mm.any;
	shs_manual_free(&mm);
	return any;
}

bool shs_manual_is(const shs_manual *mm, uint32_t c, uint32_t i)
{
	return mm->marks && c < mm->n_comps && mm->marks[c] && mm->marks[c][i];
}

const shs_instr *shs_manual_entry(const shs_manual *mm, uint32_t c, uint32_t i)
{
	return mm->entry && c < mm->n_comps && mm->entry[c] ? mm->entry[c][i] : NULL;
}

static bool partitioned_op(shs_opcode op)
{
	switch (op) {
	case SHS_OP_ALL_GATHER: case SHS_OP_ALL_GATHER_START: case SHS_OP_ALL_REDUCE:
	case SHS_OP_ALL_REDUCE_START: case SHS_OP_REDUCE_SCATTER: case SHS_OP_ALL_TO_ALL:
	case SHS_OP_RAGGED_ALL_TO_ALL: case SHS_OP_COLLECTIVE_BROADCAST:
	case SHS_OP_COLLECTIVE_PERMUTE: case SHS_OP_COLLECTIVE_PERMUTE_START:
	case SHS_OP_PARTITION_ID:
		return true;
	default:
		return false;
	}
}

const shs_instr *shs_partitioned_witness(const shs_module *m, const shs_computation **comp)
{
	const shs_instr *w = NULL;
	shs_manual mm;
	shs_err e = { 0 };

	if (shs_manual_make(m, &mm, &e) != SHS_OK)
		return NULL;
	for (uint32_t c = 0; c < m->n_comps && !w; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs && !w; i++)
			if (partitioned_op(m->comps[c]->instrs[i]->op) &&
			    !shs_manual_is(&mm, c, i) && !shs_manual_entry(&mm, c, i)) {
				w = m->comps[c]->instrs[i];
				if (comp)
					*comp = m->comps[c];
			}
	shs_manual_free(&mm);
	return w;
}

/* The value at flat position j of iota(prod(reshape)).reshape(reshape).transpose(perm). */
static int64_t iota_at(const shs__groups *g, int64_t j)
{
	int64_t orig[64] = { 0 }, v = 0;
	uint32_t r = g->reshape.n;

	for (uint32_t k = r; k-- > 0;) {
		uint32_t d = g->perm.n ? (uint32_t)g->perm.v[k] : k;
		orig[d] = j % g->reshape.v[d];
		j /= g->reshape.v[d];
	}
	for (uint32_t d = 0; d < r; d++)
		v = v * g->reshape.v[d] + orig[d];
	return v;
}

static uint64_t iota_size(const shs__groups *g)
{
	uint64_t n = 1;

	for (uint32_t d = 0; d < g->reshape.n; d++)
		n = g->reshape.v[d] > 0 && n <= INT32_MAX ? n * (uint64_t)g->reshape.v[d] : 0;
	return n;
}

static const char *raw_value(const shs_instr *in, shs__raw_kind kind)
{
	for (uint32_t k = 0; k < in->n_raw_attrs; k++)
		if (shs__raw_kind_of(in->raw_attrs[k].name) == kind)
			return in->raw_attrs[k].value;
	return NULL;
}

/* Lays out g's groups in ids (n x size); SHS_EINVAL when they are not all of that size. */
static int expand(const shs__groups *g, int64_t *ids, uint64_t n, uint64_t size)
{
	if (g->iota) {
		for (uint64_t j = 0; j < n * size; j++)
			ids[j] = iota_at(g, (int64_t)j);
		return SHS_OK;
	}
	for (uint64_t k = 0; k < n; k++) {
		if (g->groups[k].n != size)
			return SHS_EINVAL;
		memcpy(&ids[k * size], g->groups[k].v, size * sizeof(*ids));
	}
	return SHS_OK;
}

int shs_collective_groups(const shs_instr *in, int64_t n_devices, int64_t **ids,
			  uint32_t *n_groups, uint32_t *group_size, shs_err *e)
{
	bool pairs = shs__op_has_pairs(in->op);
	const char *value;
	char why[SHS_ERRMSG_MAX] = "";
	shs__groups g;
	shs_arena *a;
	uint64_t n, size;
	int rc;

	*ids = NULL;
	if (!pairs && !shs__op_has_replica_groups(in->op))
		return shs_seterr(e, SHS_EINVAL, "%s: a %s has no device groups", in->name,
				  shs_opcode_name(in->op));
	value = raw_value(in, pairs ? SHS__RAW_SOURCE_TARGET : SHS__RAW_REPLICA_GROUPS);
	if (!(a = shs_arena_new(0)))
		return shs_seterr(e, SHS_ENOMEM, "%s: out of memory", in->name);
	rc = shs__groups_parse(a, value ? value : "{}", pairs, &g, why, sizeof(why));
	if (rc == SHS_EPARSE)
		shs_seterr(e, rc, "%s: its %s: %s", in->name,
			   pairs ? "source_target_pairs" : "replica_groups", why);
	n = g.iota ? (uint64_t)g.n_groups : g.n;
	size = g.iota ? (uint64_t)g.group_size : n ? g.groups[0].n : 0;
	bool every = rc == SHS_OK && !pairs && n == 0; /* {}: every device, one group */

	if (every) {
		n = 1;
		size = (uint64_t)n_devices;
	}
	if (rc == SHS_OK && (n == 0 || size == 0 || n > UINT32_MAX || size > UINT32_MAX ||
			     n * size > (uint64_t)INT32_MAX || g.reshape.n > 64))
		rc = shs_seterr(e, SHS_EINVAL, "%s: %" PRIu64 " device groups of %" PRIu64
				" are out of range", in->name, n, size);
	if (rc == SHS_OK && g.iota && iota_size(&g) != n * size)
		rc = shs_seterr(e, SHS_EINVAL, "%s: its iota groups do not cover their devices",
				in->name);
	if (rc == SHS_OK && !(*ids = malloc(n * size * sizeof(**ids))))
		rc = shs_seterr(e, SHS_ENOMEM, "%s: out of memory", in->name);
	if (rc == SHS_OK && every)
		for (uint64_t j = 0; j < size; j++)
			(*ids)[j] = (int64_t)j;
	else if (rc == SHS_OK && expand(&g, *ids, n, size) != SHS_OK)
		rc = shs_seterr(e, SHS_EINVAL, "%s: its device groups differ in size", in->name);
	for (uint64_t j = 0; rc == SHS_OK && j < n * size; j++)
		if ((*ids)[j] < 0 || (*ids)[j] >= n_devices)
			rc = shs_seterr(e, SHS_EINVAL, "%s: device %" PRId64 " is not one of the "
					"%" PRId64 " devices", in->name, (*ids)[j], n_devices);
	if (rc != SHS_OK) {
		free(*ids);
		*ids = NULL;
	} else {
		*n_groups = (uint32_t)n;
		*group_size = (uint32_t)size;
	}
	shs_arena_free(a);
	return rc;
}
