/* Hardware files: JSON entries that override or extend the built-in catalog, and an entry as JSON. */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hardware.h"

enum {
	INT_MAX_VALUE = 1 << 20,  /* the largest integer member (pod dims, node size, ...) */
	POD_DIMS = 3,
	NAMES_TEXT = 512
};

/* What a member holds. */
typedef enum member_kind {
	POSITIVE,     /* a double > 0 */
	NONNEGATIVE,  /* a double >= 0 (a peak of 0: no such unit) */
	FRACTION,     /* a double in 0..1 (an achieved fraction; 0: all of it) */
	INTEGER,      /* an int64_t in 1..INT_MAX_VALUE */
	RANK,         /* a uint32_t in 1..POD_DIMS */
	BOOLEAN,
	POD           /* a list of 1..POD_DIMS integers */
} member_kind;

/* Which entries may have the member, and which must. */
typedef enum member_scope { BOTH, TPU_ONLY, GPU_ONLY } member_scope;

/* What a number measures, and the physical range a nonzero one must lie in: a chip's FLOP/s
 * from a gigaFLOP/s to an exaFLOP/s, bandwidths from 100 kB/s to a PB/s, memories from a MB
 * to a PB, latencies from a nanosecond to a second. Outside it a value is a typo (1e-308,
 * 1.7e308), and the predictions it gives are inf or nan. */
typedef enum member_unit { U_NONE, U_FLOPS, U_BW, U_BYTES, U_SECONDS } member_unit;

static const struct {
	double lo, hi;
	const char *what;
} unit_range[] = {
	[U_NONE] = { 0, INFINITY, "" },
	[U_FLOPS] = { 1e9, 1e18, "FLOP/s" },
	[U_BW] = { 1e5, 1e15, "bytes/s" },
	[U_BYTES] = { 1e6, 1e15, "bytes" },
	[U_SECONDS] = { 1e-9, 1, "seconds" },
};

typedef struct member {
	const char *name;
	member_kind kind;
	size_t offset;
	member_scope scope;
	bool required;
	member_unit unit;
} member;

#define AT(field) offsetof(shs_hardware, field)

static const member members[] = {
	{ "gpu", BOOLEAN, AT(gpu), BOTH, false, U_NONE },
	{ "flops_bf16", POSITIVE, AT(flops[SHS_HW_BF16]), BOTH, true, U_FLOPS },
	{ "flops_fp8", NONNEGATIVE, AT(flops[SHS_HW_FP8]), BOTH, false, U_FLOPS },
	{ "flops_fp32", NONNEGATIVE, AT(flops[SHS_HW_FP32]), BOTH, false, U_FLOPS },
	{ "flops_int8", NONNEGATIVE, AT(flops[SHS_HW_INT8]), BOTH, false, U_FLOPS },
	{ "hbm_bytes", POSITIVE, AT(hbm_bytes), BOTH, true, U_BYTES },
	{ "hbm_bw", POSITIVE, AT(hbm_bw), BOTH, true, U_BW },
	{ "torus_rank", RANK, AT(torus_rank), TPU_ONLY, true, U_NONE },
	{ "ici_bw", POSITIVE, AT(ici_bw), TPU_ONLY, true, U_BW },
	{ "ici_latency", POSITIVE, AT(ici_latency), TPU_ONLY, true, U_SECONDS },
	{ "pod", POD, AT(pod), TPU_ONLY, true, U_NONE },
	{ "max_slice", POD, AT(max_slice), TPU_ONLY, false, U_NONE },
	{ "wrap_unit", INTEGER, AT(wrap_unit), TPU_ONLY, true, U_NONE },
	{ "wrap_needs_equal", BOOLEAN, AT(wrap_needs_equal), TPU_ONLY, false, U_NONE },
	{ "chips_per_host", INTEGER, AT(chips_per_host), TPU_ONLY, true, U_NONE },
	{ "node_size", INTEGER, AT(node_size), GPU_ONLY, true, U_NONE },
	{ "gpu_egress", POSITIVE, AT(gpu_egress), GPU_ONLY, true, U_BW },
	{ "node_egress", POSITIVE, AT(node_egress), GPU_ONLY, true, U_BW },
	/* GPUs: node_egress / node_size when an added entry does not give it */
	{ "dcn_bw", POSITIVE, AT(dcn_bw), BOTH, true, U_BW },
	{ "host_bw", NONNEGATIVE, AT(host_bw), BOTH, false, U_BW },
	{ "host_mem_bytes", NONNEGATIVE, AT(host_mem_bytes), BOTH, false, U_BYTES },
	/* achievable rates (hardware_rates.c): 0 or absent means the peak / line rate */
	{ "matmul_eff", FRACTION, AT(matmul_eff), BOTH, false, U_NONE },
	{ "hbm_eff", FRACTION, AT(hbm_eff), BOTH, false, U_NONE },
	{ "bmm_hbm_eff", FRACTION, AT(bmm_hbm_eff), BOTH, false, U_NONE },
	{ "matmul_tile", INTEGER, AT(matmul_tile), BOTH, false, U_NONE },
	{ "ici_eff", FRACTION, AT(ici_eff), TPU_ONLY, false, U_NONE },
	{ "nvlink_eff", FRACTION, AT(nvlink_eff), GPU_ONLY, false, U_NONE },
	{ "scaleout_eff", FRACTION, AT(scaleout_eff), GPU_ONLY, false, U_NONE },
	{ "dcn_eff", FRACTION, AT(dcn_eff), BOTH, false, U_NONE },
	{ "coll_latency", NONNEGATIVE, AT(coll_latency), GPU_ONLY, false, U_SECONDS },
	{ "nvlink_step_latency", NONNEGATIVE, AT(nvlink_step_latency), GPU_ONLY, false, U_SECONDS },
	{ "scaleout_step_latency", NONNEGATIVE, AT(scaleout_step_latency), GPU_ONLY, false,
	  U_SECONDS },
	{ "scaleout_tree_latency", NONNEGATIVE, AT(scaleout_tree_latency), GPU_ONLY, false,
	  U_SECONDS },
	{ "windowed_einsum_bytes", NONNEGATIVE, AT(windowed_einsum_bytes), BOTH, false, U_NONE },
	{ "all_reduce_combine_bytes", NONNEGATIVE, AT(all_reduce_combine_bytes), BOTH, false,
	  U_BYTES },
};

enum { N_MEMBERS = sizeof(members) / sizeof(members[0]) };

/* Where an error is: the file and the entry. */
typedef struct where {
	const char *path;
	size_t index;
	const char *name;
	shs_err *e;
} where;

static int bad(const where *w, const char *fmt, ...) SHS_PRINTF(2, 3);

static int bad(const where *w, const char *fmt, ...)
{
	char msg[SHS_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (w->name)
		return shs_seterr(w->e, SHS_EINVAL, "%s: hardware[%zu] '%s': %s", w->path, w->index,
				  w->name, msg);
	return shs_seterr(w->e, SHS_EINVAL, "%s: hardware[%zu]: %s", w->path, w->index, msg);
}

/* A short description of a JSON value for messages: the number, or its type. */
static void describe(const json_t *v, char *buf, size_t cap)
{
	if (json_is_integer(v))
		snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, cap, "%g", json_real_value(v));
	else if (json_is_string(v))
		snprintf(buf, cap, "a string");
	else if (json_is_boolean(v))
		snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
	else if (json_is_null(v))
		snprintf(buf, cap, "null");
	else if (json_is_array(v))
		snprintf(buf, cap, "a list of %zu", json_array_size(v));
	else
		snprintf(buf, cap, "an object");
}

static int bad_value(const where *w, const member *m, const json_t *v, const char *want)
{
	char got[64];

	describe(v, got, sizeof(got));
	return bad(w, "member '%s' must be %s, got %s", m->name, want, got);
}

static int set_number(shs_hardware *h, const member *m, const json_t *v, const where *w)
{
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	bool ok = isfinite(x) && (m->kind == POSITIVE ? x > 0 : x >= 0) &&
		  (m->kind != FRACTION || x <= 1);
	char range[96];

	if (!ok)
		return bad_value(w, m, v, m->kind == NONNEGATIVE ? "a number >= 0" :
					  m->kind == FRACTION  ? "a number from 0 to 1" :
								 "a positive number");
	if (x != 0 && (x < unit_range[m->unit].lo || x > unit_range[m->unit].hi)) {
		snprintf(range, sizeof(range), "%s from %g to %g", unit_range[m->unit].what,
			 unit_range[m->unit].lo, unit_range[m->unit].hi);
		return bad_value(w, m, v, range);
	}
	memcpy((char *)h + m->offset, &x, sizeof(x));
	return SHS_OK;
}

static bool int_in(const json_t *v, json_int_t lo, json_int_t hi)
{
	return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

static int set_integer(shs_hardware *h, const member *m, const json_t *v, const where *w)
{
	char want[64];

	if (m->kind == RANK) {
		uint32_t r = int_in(v, 1, POD_DIMS) ? (uint32_t)json_integer_value(v) : 0;
		if (!r)
			return bad_value(w, m, v, "1, 2 or 3");
		memcpy((char *)h + m->offset, &r, sizeof(r));
		return SHS_OK;
	}
	if (!int_in(v, 1, INT_MAX_VALUE)) {
		snprintf(want, sizeof(want), "an integer from 1 to %d", INT_MAX_VALUE);
		return bad_value(w, m, v, want);
	}
	int64_t x = (int64_t)json_integer_value(v);
	memcpy((char *)h + m->offset, &x, sizeof(x));
	return SHS_OK;
}

/* "pod": [16, 20, 28] (or "max_slice"); dims past the list are 1. */
static int set_pod(shs_hardware *h, const member *m, const json_t *v, const where *w)
{
	size_t n = json_is_array(v) ? json_array_size(v) : 0;
	int64_t *dims = (int64_t *)(void *)((char *)h + m->offset);
	char want[96];

	snprintf(want, sizeof(want), "a list of 1 to %d integers from 1 to %d", POD_DIMS,
		 INT_MAX_VALUE);
	if (n < 1 || n > POD_DIMS)
		return bad_value(w, m, v, want);
	for (size_t d = 0; d < n; d++)
		if (!int_in(json_array_get(v, d), 1, INT_MAX_VALUE))
			return bad(w, "member '%s' must be %s; dim %zu is not", m->name, want, d);
	for (size_t d = 0; d < POD_DIMS; d++)
		dims[d] = d < n ? (int64_t)json_integer_value(json_array_get(v, d)) : 1;
	return SHS_OK;
}

static int set_member(shs_hardware *h, const member *m, const json_t *v, const where *w)
{
	switch (m->kind) {
	case POSITIVE:
	case NONNEGATIVE:
	case FRACTION:
		return set_number(h, m, v, w);
	case INTEGER:
	case RANK:
		return set_integer(h, m, v, w);
	case BOOLEAN:
		if (!json_is_boolean(v))
			return bad_value(w, m, v, "true or false");
		*(bool *)((char *)h + m->offset) = json_is_true(v);
		return SHS_OK;
	case POD:
		return set_pod(h, m, v, w);
	}
	return bad(w, "member '%s' has an unknown kind", m->name);
}

static const member *find_member(const char *name)
{
	for (size_t k = 0; k < N_MEMBERS; k++)
		if (!strcmp(members[k].name, name))
			return &members[k];
	return NULL;
}

static int unknown_member(const where *w, const char *key)
{
	char list[NAMES_TEXT] = "name, base";
	size_t used = strlen(list);

	for (size_t k = 0; k < N_MEMBERS && used < sizeof(list); k++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, ", %s", members[k].name);
	return bad(w, "unknown member '%s' (members: %s)", key, list);
}

/* Clears the members that entries of the other kind (GPU or TPU) have. */
static void clear_other_kind(shs_hardware *h)
{
	member_scope other = h->gpu ? TPU_ONLY : GPU_ONLY;

	for (size_t k = 0; k < N_MEMBERS; k++) {
		if (members[k].scope != other)
			continue;
		if (members[k].kind == POD)
			memset((char *)h + members[k].offset, 0, sizeof(h->pod));
		else if (members[k].kind == BOOLEAN)
			*(bool *)((char *)h + members[k].offset) = false;
		else if (members[k].kind == RANK)
			h->torus_rank = 0;
		else if (members[k].kind == INTEGER)
			memset((char *)h + members[k].offset, 0, sizeof(int64_t));
		else
			memset((char *)h + members[k].offset, 0, sizeof(double));
	}
}

/* Whether h has the required member m (a nonzero value). */
static bool has_member(const shs_hardware *h, const member *m)
{
	const char *p = (const char *)h + m->offset;

	switch (m->kind) {
	case POSITIVE:
	case NONNEGATIVE:
	case FRACTION:
		return *(const double *)(const void *)p > 0;
	case INTEGER:
		return *(const int64_t *)(const void *)p > 0;
	case RANK:
		return h->torus_rank > 0;
	case POD:
		return *(const int64_t *)(const void *)p > 0;
	case BOOLEAN:
		return true;
	}
	return false;
}

/* Whether box a fits box b in some orientation (both POD_DIMS long). */
static bool fits_sorted(const int64_t *a, const int64_t *b)
{
	int64_t x[POD_DIMS], y[POD_DIMS];

	memcpy(x, a, sizeof(x));
	memcpy(y, b, sizeof(y));
	for (int i = 1; i < POD_DIMS; i++)
		for (int j = i; j > 0; j--) {
			int64_t t;
			if (x[j - 1] > x[j]) {
				t = x[j], x[j] = x[j - 1], x[j - 1] = t;
			}
			if (y[j - 1] > y[j]) {
				t = y[j], y[j] = y[j - 1], y[j - 1] = t;
			}
		}
	for (int i = 0; i < POD_DIMS; i++)
		if (x[i] > y[i])
			return false;
	return true;
}

/* The finished entry: every member its kind needs; a pod of torus_rank dims (pod_len: the
 * length of the list this entry gave, 0 when it gave none); a max_slice, when there is one, of
 * as many dims and inside the pod. */
static int check_entry(shs_hardware *h, size_t pod_len, size_t slice_len, const where *w)
{
	if (h->gpu && !(h->dcn_bw > 0) && h->node_egress > 0 && h->node_size > 0) {
		h->dcn_bw = h->node_egress / (double)h->node_size;
		/* in range as a given one must be (a small node_egress over a large node) */
		if (h->dcn_bw < unit_range[U_BW].lo)
			return bad(w, "member 'dcn_bw' (node_egress / node_size when not "
				   "given) must be %s from %g to %g, got %g", unit_range[U_BW].what,
				   unit_range[U_BW].lo, unit_range[U_BW].hi, h->dcn_bw);
	}
	for (size_t k = 0; k < N_MEMBERS; k++) {
		const member *m = &members[k];
		bool applies = m->scope == BOTH || (m->scope == GPU_ONLY) == h->gpu;
		if (applies && m->required && !has_member(h, m))
			return bad(w, "a %s entry needs member '%s'", h->gpu ? "GPU" : "TPU",
				   m->name);
	}
	if (h->gpu)
		return SHS_OK;
	if (pod_len && pod_len != h->torus_rank)
		return bad(w, "member 'pod' has %zu dims but torus_rank is %u", pod_len,
			   h->torus_rank);
	for (uint32_t d = h->torus_rank; d < POD_DIMS; d++)
		if (h->pod[d] != 1)
			return bad(w, "torus_rank %u needs a pod of %u dims, not %lldx%lldx%lld",
				   h->torus_rank, h->torus_rank, (long long)h->pod[0],
				   (long long)h->pod[1], (long long)h->pod[2]);
	if (slice_len && slice_len != h->torus_rank)
		return bad(w, "member 'max_slice' has %zu dims but torus_rank is %u", slice_len,
			   h->torus_rank);
	if (h->max_slice[0] > 0 && !fits_sorted(h->max_slice, h->pod))
		return bad(w, "member 'max_slice' %lldx%lldx%lld does not fit the pod "
			   "%lldx%lldx%lld", (long long)h->max_slice[0],
			   (long long)h->max_slice[1], (long long)h->max_slice[2],
			   (long long)h->pod[0], (long long)h->pod[1], (long long)h->pod[2]);
	return SHS_OK;
}

/* Whether name is usable: 1..SHS_HW_NAME_MAX-1 of letters, digits, '-', '_', '.'. */
static bool good_name(const char *name)
{
	size_t n = strlen(name);

	if (!n || n >= SHS_HW_NAME_MAX)
		return false;
	for (size_t k = 0; k < n; k++) {
		unsigned char ch = (unsigned char)name[k];
		if (!isalnum(ch) && ch != '-' && ch != '_' && ch != '.')
			return false;
	}
	return true;
}

/* The entry *out of c to fill for name: an existing one, or a new one (from base or zero). */
static int start_entry(shs_hw_catalog *c, const char *name, const json_t *base, where *w,
		       shs_hardware **out)
{
	const shs_hardware *old = shs_hw_find(c, name), *from = NULL;
	shs_hardware *h;

	if (old && base)
		return bad(w, "member 'base' is only for new entries; '%s' exists", old->name);
	if (old) {
		*out = &c->hw[old - c->hw];
		w->name = old->name;
		return SHS_OK;
	}
	if (base && !json_is_string(base))
		return bad(w, "member 'base' must be a hardware name");
	if (base && !(from = shs_hw_find(c, json_string_value(base)))) {
		char names[NAMES_TEXT];
		shs_hw_names(c, names, sizeof(names));
		return bad(w, "unknown base '%s' (known: %s)", json_string_value(base), names);
	}
	if (c->n >= SHS_HW_MAX)
		return bad(w, "the catalog is full (%d entries)", SHS_HW_MAX);
	h = &c->hw[c->n++];
	if (from)
		*h = *from;
	else
		memset(h, 0, sizeof(*h));
	memset(h->name, 0, sizeof(h->name));
	for (size_t k = 0; name[k]; k++)
		h->name[k] = (char)tolower((unsigned char)name[k]);
	*out = h;
	return SHS_OK;
}

/* Applies one object of the "hardware" list to c. */
static int load_entry(shs_hw_catalog *c, const json_t *obj, where *w)
{
	const json_t *name = json_object_get(obj, "name"), *gpu = json_object_get(obj, "gpu"), *v;
	const json_t *slice = json_object_get(obj, "max_slice");
	const char *key;
	shs_hardware *h = NULL;
	int rc;

	if (!json_is_object(obj))
		return bad(w, "each entry must be an object");
	if (!json_is_string(name))
		return bad(w, "member 'name' must be given, as a string");
	if (!good_name(json_string_value(name)))
		return bad(w, "name '%s' must be 1 to %d letters, digits, '-', '_' or '.'",
			   json_string_value(name), SHS_HW_NAME_MAX - 1);
	w->name = json_string_value(name);
	rc = start_entry(c, w->name, json_object_get(obj, "base"), w, &h);
	if (rc != SHS_OK)
		return rc;
	if (gpu) {
		bool was = h->gpu;
		rc = set_member(h, find_member("gpu"), gpu, w);
		if (rc != SHS_OK)
			return rc;
		if (was != h->gpu)
			clear_other_kind(h);
	}
	json_object_foreach((json_t *)obj, key, v) {
		const member *m = find_member(key);
		if (!strcmp(key, "name") || !strcmp(key, "base") || !strcmp(key, "gpu"))
			continue;
		if (!m)
			return unknown_member(w, key);
		if (m->scope != BOTH && (m->scope == GPU_ONLY) != h->gpu)
			return bad(w, "member '%s' is only for %s entries", key,
				   m->scope == GPU_ONLY ? "GPU" : "TPU");
		rc = set_member(h, m, v, w);
		if (rc != SHS_OK)
			return rc;
	}
	v = json_object_get(obj, "pod");
	return check_entry(h, v ? json_array_size(v) : 0, slice ? json_array_size(slice) : 0, w);
}

static int load_root(shs_hw_catalog *c, const json_t *root, const char *path, shs_err *e)
{
	where w = { .path = path, .e = e };
	const json_t *list = json_object_get(root, "hardware"), *v;
	const char *key;
	int rc = SHS_OK;

	if (!json_is_object(root))
		return shs_seterr(e, SHS_EINVAL, "%s: the top level must be an object", path);
	json_object_foreach((json_t *)root, key, v)
		if (strcmp(key, "hardware"))
			return shs_seterr(e, SHS_EINVAL, "%s: unknown top-level member '%s' (only "
					  "\"hardware\")", path, key);
	if (!json_is_array(list))
		return shs_seterr(e, SHS_EINVAL, "%s: member 'hardware' must be given, as a list",
				  path);
	for (size_t k = 0; rc == SHS_OK && k < json_array_size(list); k++) {
		w.index = k;
		w.name = NULL;
		rc = load_entry(c, json_array_get(list, k), &w);
	}
	return rc;
}

int shs_hw_catalog_load_json(shs_hw_catalog *c, const char *path, shs_err *e)
{
	shs_hw_catalog *copy = malloc(sizeof(*copy));
	json_error_t err;
	json_t *root;
	int rc;

	if (!copy)
		return shs_seterr(e, SHS_ENOMEM, "%s: out of memory", path);
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!root) {
		/* not jansson's "near 'TOKEN'": it would echo a file that is not ours to show
		 * (hardware-file=/etc/passwd) */
		char *near = strstr(err.text, " near '");
		if (near && err.line >= 0)
			*near = '\0';
		if (err.line >= 0)
			rc = shs_seterr(e, SHS_EPARSE, "%s:%d:%d: not hardware JSON: %s", path,
					err.line, err.column, err.text);
		else if (strstr(err.text, path)) /* "unable to open PATH: ..." */
			rc = shs_seterr(e, SHS_EIO, "%s", err.text);
		else
			rc = shs_seterr(e, SHS_EIO, "%s: %s", path, err.text);
		goto out_free;
	}
	*copy = *c;
	rc = load_root(copy, root, path, e);
	if (rc == SHS_OK)
		*c = *copy;
	json_decref(root);
out_free:
	free(copy);
	return rc;
}

/* Member m of h as a JSON value. */
static json_t *member_json(const shs_hardware *h, const member *m)
{
	const char *p = (const char *)h + m->offset;
	json_t *pod;

	switch (m->kind) {
	case POSITIVE:
	case NONNEGATIVE:
	case FRACTION:
		return json_real(*(const double *)(const void *)p);
	case INTEGER:
		return json_integer((json_int_t)*(const int64_t *)(const void *)p);
	case RANK:
		return json_integer((json_int_t)h->torus_rank);
	case BOOLEAN:
		return json_boolean(*(const bool *)(const void *)p);
	case POD:
		pod = json_array();
		for (uint32_t d = 0; pod && d < h->torus_rank && d < POD_DIMS; d++)
			json_array_append_new(pod, json_integer(
				(json_int_t)((const int64_t *)(const void *)p)[d]));
		return pod;
	}
	return NULL;
}

json_t *shs_hw_to_json(const shs_hardware *h)
{
	json_t *o = json_object();
	bool ok = o && !json_object_set_new(o, "name", json_string(h->name));

	for (size_t k = 0; ok && k < N_MEMBERS; k++) {
		const member *m = &members[k];
		if ((m->scope != BOTH && (m->scope == GPU_ONLY) != h->gpu) ||
		    (!m->required && (m->kind == POD || m->kind == INTEGER) && !has_member(h, m)))
			continue;
		ok = !json_object_set_new(o, m->name, member_json(h, m));
	}
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}
