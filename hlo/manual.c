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

/* {manual}, or a tuple of them. */
static bool manual_sharding(const shs_sharding *s)
{
	if (!s)
		return false;
	if (s->kind != SHS_SHARDING_TUPLE)
		return s->kind == SHS_SHARDING_MANUAL;
	for (uint32_t k = 0; k < s->n_tuple; k++)
		if (!manual_sharding(&s->tuple[k]))
			return false;
	return s->n_tuple > 0;
}

/* Manual over some axes only (last_tile_dims holds MANUAL): shard_map with auto axes. */
static bool partly_manual(const shs_sharding *s)
{
	if (!s)
		return false;
	for (uint32_t k = 0; k < s->n_tuple; k++)
		if (partly_manual(&s->tuple[k]))
			return true;
	for (uint32_t k = 0; k < s->n_last_tile_dims; k++)
		if (s->last_tile_dims[k] == SHS_SHARDING_MANUAL)
			return true;
	return false;
}

static bool runs_called(shs_opcode op)
{
	return op == SHS_OP_CALL || op == SHS_OP_WHILE || op == SHS_OP_CONDITIONAL;
}

/* Marks computation c's manual instructions (all of them when whole[c]: a manual instruction
 * calls it) and sets whole[] of the computations its manual instructions call. */
static int mark_comp(const shs_module *m, shs_manual *mm, uint32_t c, bool *whole)
{
	const shs_computation *comp = m->comps[c];
	bool *marks = calloc(comp->n_instrs + 1, sizeof(*marks)), any = false;

	if (!marks)
		return SHS_ENOMEM;
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		bool man = whole[c] || manual_sharding(in->sharding) ||
			   (shs_is_full_to_shard(in) && !partly_manual(in->sharding));
		for (uint32_t k = 0; k < in->n_operands && !man; k++)
			man = marks[in->operands[k]];
		man = man && !shs_is_shard_to_full(in);
		marks[i] = man;
		any |= man;
		for (uint32_t k = 0; man && runs_called(in->op) && k < in->n_called; k++)
			if (in->called[k] < m->n_comps)
				whole[in->called[k]] = true;
	}
	if (!any) {
		free(marks);
		marks = NULL;
	}
	mm->marks[c] = marks;
	mm->any |= any;
	return SHS_OK;
}

int shs_manual_make(const shs_module *m, shs_manual *out, shs_err *e)
{
	bool *whole = calloc(m->n_comps + 1, sizeof(*whole));
	int rc = SHS_OK;

	memset(out, 0, sizeof(*out));
	out->marks = calloc(m->n_comps + 1, sizeof(*out->marks));
	out->n_comps = m->n_comps;
	if (!whole || !out->marks)
		rc = SHS_ENOMEM;
	/* callees come before callers: from the last, a computation's callers are all marked */
	for (uint32_t c = m->n_comps; rc == SHS_OK && c-- > 0;)
		rc = mark_comp(m, out, c, whole);
	free(whole);
	if (rc == SHS_OK)
		return SHS_OK;
	shs_manual_free(out);
	return shs_seterr(e, SHS_ENOMEM, "manual regions: out of memory");
}

void shs_manual_free(shs_manual *mm)
{
	for (uint32_t c = 0; mm->marks && c < mm->n_comps; c++)
		free(mm->marks[c]);
	free(mm->marks);
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
			if (partitioned_op(m->comps[c]->instrs[i]->op) && !shs_manual_is(&mm, c, i)) {
				w = m->comps[c]->instrs[i];
				if (comp)
					*comp = m->comps[c];
			}
	shs_manual_free(&mm);
	return w;
}

const shs_instr *shs_manual_partial(const shs_module *m, const shs_computation **comp)
{
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++)
			if (partly_manual(m->comps[c]->instrs[i]->sharding)) {
				if (comp)
					*comp = m->comps[c];
				return m->comps[c]->instrs[i];
			}
	return NULL;
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
