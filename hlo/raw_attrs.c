/* Raw text attributes with a protobuf field: their values parsed and printed as XLA prints them
 * (collective_device_list.cc, hlo_instructions.cc), and their order. */
#include "raw_attrs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raw_scan.h"
#include "shs_limits.h"

/* XLA's print order (HloCollectiveInstruction, HloAllReduceInstructionBase,
 * HloCollectivePermuteInstruction, HloCustomCallInstruction::PrintExtraAttributesImpl). */
static const char *const kind_names[SHS__RAW_KINDS] = {
	[SHS__RAW_REPLICA_GROUPS] = "replica_groups",
	[SHS__RAW_CONSTRAIN_LAYOUT] = "constrain_layout",
	[SHS__RAW_USE_GLOBAL_IDS] = "use_global_device_ids",
	[SHS__RAW_SOURCE_TARGET] = "source_target_pairs",
	[SHS__RAW_API_VERSION] = "api_version",
	[SHS__RAW_IS_COMPOSITE] = "is_composite",
	[SHS__RAW_STATISTICS] = "statistics",
	[SHS__RAW_RESULT_ACCURACY] = "result_accuracy",
	[SHS__RAW_ORIGIN] = "origin",
};

/* CustomCallApiVersion (xla/service/hlo.proto). */
static const char *const api_versions[] = {
	"API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
	"API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI",
};

enum { API_VERSION_ORIGINAL = 1 };

shs__raw_kind shs__raw_kind_of(const char *name)
{
	for (int k = 0; name && k < SHS__RAW_KINDS; k++)
		if (!strcmp(name, kind_names[k]))
			return (shs__raw_kind)k;
	return SHS__RAW_OTHER;
}

const char *shs__raw_name(shs__raw_kind k)
{
	return (unsigned)k < SHS__RAW_KINDS ? kind_names[k] : NULL;
}

bool shs__op_has_replica_groups(shs_opcode op)
{
	switch (op) {
	case SHS_OP_ALL_GATHER: case SHS_OP_ALL_GATHER_START: case SHS_OP_ALL_REDUCE:
	case SHS_OP_ALL_REDUCE_START: case SHS_OP_REDUCE_SCATTER: case SHS_OP_ALL_TO_ALL:
	case SHS_OP_RAGGED_ALL_TO_ALL: case SHS_OP_COLLECTIVE_BROADCAST:
		return true;
	default:
		return false;
	}
}

bool shs__op_has_pairs(shs_opcode op)
{
	return op == SHS_OP_COLLECTIVE_PERMUTE || op == SHS_OP_COLLECTIVE_PERMUTE_START;
}

int shs__api_version_of(const char *name)
{
	for (size_t k = 0; name && k < sizeof(api_versions) / sizeof(api_versions[0]); k++)
		if (!strcmp(name, api_versions[k]))
			return (int)k;
	return -1;
}

const char *shs__api_version_name(int v)
{
	return v >= 0 && (size_t)v < sizeof(api_versions) / sizeof(api_versions[0])
		? api_versions[v] : NULL;
}

static int64_t product(const shs_i64s *l)
{
	int64_t p = 1;

	for (uint32_t k = 0; k < l->n; k++) {
		if (l->v[k] <= 0 || p > INT64_MAX / l->v[k])
			return -1;
		p *= l->v[k];
	}
	return p;
}

/* `[G,S]<=[dims]` and an optional `T(perm)`, checked as XLA's IotaReplicaGroupList checks. */
static int iota_groups(shs__scan *c, shs_arena *a, shs__groups *out)
{
	shs_i64s gs = { 0 };
	int64_t total;
	int rc = shs__scan_ints(c, a, '[', ']', 0, &gs);

	if (!rc && gs.n != 2)
		rc = shs__scan_fail(c, "the iota form starts [groups,size]");
	if (!rc && !(shs__scan_eat(c, '<') && c->s[c->pos] == '='))
		rc = shs__scan_fail(c, "expected '<=' after [groups,size]");
	if (!rc) {
		c->pos++;
		rc = shs__scan_ints(c, a, '[', ']', 1, &out->reshape);
	}
	if (!rc && shs__scan_eat(c, 'T'))
		rc = shs__scan_ints(c, a, '(', ')', 0, &out->perm);
	if (rc)
		return rc;
	out->iota = true;
	out->n_groups = gs.v[0];
	out->group_size = gs.v[1];
	total = product(&out->reshape);
	if (out->reshape.n == 0 || out->reshape.n > SHS_MAX_RANK || total < 0 ||
	    (out->n_groups && out->group_size > total / out->n_groups) ||
	    out->n_groups * out->group_size != total)
		return shs__scan_fail(c, "[%" PRId64 ",%" PRId64 "] groups do not hold the "
				      "devices of the reshape", out->n_groups, out->group_size);
	if (out->perm.n && out->perm.n != out->reshape.n)
		return shs__scan_fail(c, "the transpose has %u entries for %u reshape dimensions",
			    out->perm.n, out->reshape.n);
	for (uint32_t i = 0; i < out->perm.n; i++)
		for (uint32_t j = 0; j < out->perm.n; j++)
			if (out->perm.v[i] >= out->perm.n ||
			    (i != j && out->perm.v[i] == out->perm.v[j]))
				return shs__scan_fail(c, "the transpose is not a permutation");
	return SHS_OK;
}

int shs__groups_parse(shs_arena *a, const char *value, bool pairs, shs__groups *out, char *why,
		      size_t cap)
{
	shs__scan c = { value, 0, why, cap };
	shs_i64s *groups = NULL;
	size_t n = 0, room = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	shs__scan_blanks(&c);
	if (!pairs && value[c.pos] == '[')
		rc = iota_groups(&c, a, out);
	else if (!(rc = shs__scan_need(&c, '{')) && !shs__scan_eat(&c, '}')) {
		do {
			if (n == room) {
				shs_i64s *grown;

				room = room ? 2 * room : 8;
				if (room > UINT32_MAX)
					return shs__scan_fail(&c, "too many groups");
				grown = shs_arena_alloc(a, room * sizeof(*grown));
				if (!grown)
					return SHS_ENOMEM;
				if (n)
					memcpy(grown, groups, n * sizeof(*groups));
				groups = grown;
			}
			memset(&groups[n], 0, sizeof(groups[n]));
			rc = shs__scan_ints(&c, a, '{', '}', 0, &groups[n++]);
			if (!rc && pairs && groups[n - 1].n != 2)
				rc = shs__scan_fail(&c, "a source-target pair has two entries");
		} while (!rc && shs__scan_eat(&c, ','));
		if (!rc)
			rc = shs__scan_need(&c, '}');
	}
	if (rc)
		return rc;
	if ((rc = shs__scan_end(&c, "the groups")))
		return rc;
	if (!out->iota) {
		out->n = (uint32_t)n;
		out->groups = groups;
	}
	return SHS_OK;
}

static void put_list(shs_buf *b, const shs_i64s *l, char open, char close)
{
	shs_buf_putc(b, open);
	for (uint32_t k = 0; k < l->n; k++) {
		if (k)
			shs_buf_putc(b, ',');
		shs_buf_put_i64(b, l->v[k]);
	}
	shs_buf_putc(b, close);
}

void shs__groups_print(shs_buf *b, const shs__groups *g)
{
	if (g->iota) {
		shs_buf_printf(b, "[%" PRId64 ",%" PRId64 "]<=", g->n_groups, g->group_size);
		put_list(b, &g->reshape, '[', ']');
		if (g->perm.n) {
			shs_buf_putc(b, 'T');
			put_list(b, &g->perm, '(', ')');
		}
		return;
	}
	shs_buf_putc(b, '{');
	for (uint32_t k = 0; k < g->n; k++) {
		if (k)
			shs_buf_putc(b, ',');
		put_list(b, &g->groups[k], '{', '}');
	}
	shs_buf_putc(b, '}');
}

int shs__raw_keep_text(shs_arena *a, shs_buf *b, const char *value, const char **canonical)
{
	const char *text = b->data ? b->data : "";
	int rc = SHS_OK;

	if (b->oom)
		rc = SHS_ENOMEM;
	else if (strcmp(text, value) && !(*canonical = shs_arena_strdup(a, text)))
		rc = SHS_ENOMEM;
	shs_buf_free(b);
	return rc;
}

static int check_bool(const char *value, char *why, size_t cap)
{
	if (!strcmp(value, "true") || !strcmp(value, "false"))
		return SHS_OK;
	snprintf(why, cap, "expected true or false, not '%s'", value);
	return SHS_EPARSE;
}

int shs__raw_canonical(shs_arena *a, shs__raw_kind k, const char *value, const char **canonical,
		       char *why, size_t cap)
{
	shs__groups g;
	shs_buf b = { 0 };
	int rc;

	*canonical = value;
	switch (k) {
	case SHS__RAW_REPLICA_GROUPS: case SHS__RAW_SOURCE_TARGET:
		rc = shs__groups_parse(a, value, k == SHS__RAW_SOURCE_TARGET, &g, why, cap);
		if (rc)
			return rc;
		shs__groups_print(&b, &g);
		return shs__raw_keep_text(a, &b, value, canonical);
	case SHS__RAW_CONSTRAIN_LAYOUT: case SHS__RAW_USE_GLOBAL_IDS: case SHS__RAW_IS_COMPOSITE:
		return check_bool(value, why, cap);
	case SHS__RAW_STATISTICS: case SHS__RAW_RESULT_ACCURACY: case SHS__RAW_ORIGIN:
		return shs__extra_canonical(a, k, value, canonical, why, cap);
	case SHS__RAW_API_VERSION:
		if (shs__api_version_of(value) < 0) {
			snprintf(why, cap, "'%s' is no CustomCallApiVersion", value);
			return SHS_EPARSE;
		}
		return SHS_OK;
	default:
		return SHS_OK;
	}
}

int shs__instr_canonical(shs_arena *a, const char *name, const char *value,
			 const char **canonical, char *why, size_t cap)
{
	return shs__raw_canonical(a, shs__raw_kind_of(name), value, canonical, why, cap);
}

/* What XLA never prints: a false flag, and the original custom-call API. */
static bool printed(shs__raw_kind k, const char *value)
{
	switch (k) {
	case SHS__RAW_CONSTRAIN_LAYOUT: case SHS__RAW_USE_GLOBAL_IDS: case SHS__RAW_IS_COMPOSITE:
		return strcmp(value, "false") != 0;
	case SHS__RAW_API_VERSION:
		return shs__api_version_of(value) != API_VERSION_ORIGINAL;
	default:
		return value[0] != '\0';
	}
}

static int rank(const shs_raw_attr *r)
{
	shs__raw_kind k = shs__raw_kind_of(r->name);

	return k == SHS__RAW_OTHER ? SHS__RAW_KINDS : (int)k;
}

/* Whether in lacks the attribute of kind k that XLA always prints for its opcode. */
static bool missing(const shs_instr *in, shs__raw_kind k)
{
	if (k == SHS__RAW_REPLICA_GROUPS ? !shs__op_has_replica_groups(in->op)
					 : !shs__op_has_pairs(in->op))
		return false;
	for (uint32_t i = 0; i < in->n_raw_attrs; i++)
		if (shs__raw_kind_of(in->raw_attrs[i].name) == k)
			return false;
	return true;
}

int shs__raw_finish(shs_arena *a, shs_instr *in)
{
	bool no_groups = missing(in, SHS__RAW_REPLICA_GROUPS);
	bool no_pairs = missing(in, SHS__RAW_SOURCE_TARGET);
	uint32_t n = 0, extra = no_groups + no_pairs;
	shs_raw_attr *out;

	if (!in->n_raw_attrs && !extra)
		return SHS_OK;
	out = shs_arena_alloc(a, (in->n_raw_attrs + extra) * sizeof(*out));
	if (!out)
		return SHS_ENOMEM;
	/* a stable selection by rank: few attributes, so a pass per rank is cheap */
	for (int r = 0; r <= SHS__RAW_KINDS; r++) {
		if ((r == SHS__RAW_REPLICA_GROUPS && no_groups) ||
		    (r == SHS__RAW_SOURCE_TARGET && no_pairs))
			out[n++] = (shs_raw_attr){ kind_names[r], "{}" };
		for (uint32_t i = 0; i < in->n_raw_attrs; i++)
			if (rank(&in->raw_attrs[i]) == r &&
			    printed(shs__raw_kind_of(in->raw_attrs[i].name),
				    in->raw_attrs[i].value))
				out[n++] = in->raw_attrs[i];
	}
	in->raw_attrs = out;
	in->n_raw_attrs = n;
	return SHS_OK;
}

/* ---- Header attributes ----------------------------------------------------------------------- */

int shs__donors_parse(shs_arena *a, const char *value, shs__donor **out, uint32_t *n, char *why,
		      size_t cap)
{
	shs__scan c = { value, 0, why, cap };
	shs__donor *d = NULL;
	size_t count = 0, room = 0;
	int rc = shs__scan_need(&c, '{');

	while (!rc && !shs__scan_eat(&c, '}')) {
		if (count && (rc = shs__scan_need(&c, ',')))
			break;
		if (count == room) {
			shs__donor *grown;

			room = room ? 2 * room : 8;
			if (room > UINT32_MAX)
				return shs__scan_fail(&c, "too many buffer donors");
			if (!(grown = shs_arena_alloc(a, room * sizeof(*grown))))
				return SHS_ENOMEM;
			if (count)
				memcpy(grown, d, count * sizeof(*d));
			d = grown;
		}
		memset(&d[count], 0, sizeof(d[count]));
		rc = shs__scan_need(&c, '(');
		if (!rc)
			rc = shs__scan_int(&c, 0, &d[count].param);
		if (!rc)
			rc = shs__scan_need(&c, ',');
		if (!rc)
			rc = shs__scan_ints(&c, a, '{', '}', 0, &d[count].index);
		if (!rc)
			rc = shs__scan_need(&c, ')');
		count++;
	}
	if (rc)
		return rc;
	if ((rc = shs__scan_end(&c, "the buffer donors")))
		return rc;
	*out = d;
	*n = (uint32_t)count;
	return SHS_OK;
}

void shs__donors_print(shs_buf *b, const shs__donor *d, uint32_t n)
{
	shs_buf_puts(b, "{ ");
	for (uint32_t k = 0; k < n; k++) {
		shs_buf_printf(b, "%s(%" PRId64 ", ", k ? ", " : "", d[k].param);
		put_list(b, &d[k].index, '{', '}');
		shs_buf_putc(b, ')');
	}
	shs_buf_puts(b, " }");
}

int shs__header_canonical(shs_arena *a, const char *name, const char *value,
			  const char **canonical, char *why, size_t cap)
{
	shs__donor *d;
	shs_buf b = { 0 };
	uint32_t n;
	int rc;

	*canonical = value;
	if (!strcmp(name, "is_scheduled"))
		return check_bool(value, why, cap);
	if (strcmp(name, "buffer_donor"))
		return SHS_OK;
	if ((rc = shs__donors_parse(a, value, &d, &n, why, cap)))
		return rc;
	shs__donors_print(&b, d, n);
	return shs__raw_keep_text(a, &b, value, canonical);
}
