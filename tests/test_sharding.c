/* Tests: sharding. */
#include <stdlib.h>
#include <string.h>

#include "sharding.h"
#include "sharding_proto.h"
#include "test_util.h"

/* Shardings exactly as XLA's HloSharding::ToString prints them. */
static const char *const xla_strings[] = {
	"{replicated}",
	"{manual}",
	"{unknown}",
	"{unreduced}",
	"{maximal device=0}",
	"{maximal device=3}",
	"{devices=[8,1,1]<=[8]}",
	"{devices=[8,1,1,1]<=[8]}",
	"{devices=[8,1]<=[8]}",
	"{devices=[1,8]<=[8]}",
	"{devices=[2,4]<=[8]}",
	"{devices=[4,2]<=[2,4]T(1,0)}",
	"{devices=[20,3]<=[3,20]T(1,0)}",
	"{devices=[2,2,2]<=[2,2,2]T(2,1,0)}",
	"{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
	"{devices=[2,1,8]<=[2,2,4]T(1,0,2) last_tile_dim_replicate}",
	"{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
	"{devices=[2,2]0,1,2,3}",
	"{devices=[2,2]3,1,2,0}",
	"{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}",
	"{devices=[2,2,2]<=[8] last_tile_dims={manual}}",
	"{devices=[2,2,2,2]<=[16] last_tile_dims={manual, replicated}}",
	"{devices=[1,2,2,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}",
	"{devices=[2,2]<=[4] last_tile_dims={unreduced}}",
	"{devices=[4,2]<=[8] shard_like 2}",
	"{devices=[4,4]<=[4,4]T(1,0) shard_as 3 metadata={op_name=\"z\"}}",
	"{replicated shard_as 0}",
	"{manual shard_like 7}",
	"{unknown shard_as 5}",
	"{replicated metadata={op_name=\"a\"}}",
	"{devices=[2,4]<=[8] metadata={op_name=\"jit(f)/add\" source_file=\"/a.py\" source_line=3}}",
	"{maximal device=1 metadata={{op_name=\"x\"}, {op_name=\"y\" source_line=2}}}",
	"{}",
	"{{replicated}, {manual}}",
	"{{devices=[2,1]<=[2]}, {maximal device=0}, {replicated metadata={op_type=\"Add\"}}}",
	"{{replicated}, {replicated}, {replicated}, {replicated}, {replicated}, "
	"/*index=5*/{replicated}}",
	"{{replicated}, {devices=[8,1]<=[8]}, {replicated}, {replicated}, {manual}, "
	"/*index=5*/{replicated}, {devices=[2,2]0,1,2,3}, {replicated}, {replicated}, "
	"{maximal device=2}, /*index=10*/{replicated}, {unknown}, {devices=[4,2]<=[2,4]T(1,0)}}",
};

enum { N_XLA = sizeof(xla_strings) / sizeof(xla_strings[0]) };

/* Parses s (the whole string must be consumed); fails the test on error. */
static shs_sharding *parse_ok(shs_arena *a, const char *s)
{
	shs_sharding *sh = NULL;
	size_t used = 0, off = 0;
	shs_err e = { 0 };
	int rc = shs_sharding_parse(a, s, strlen(s), &used, &sh, &off, &e);

	if (rc != SHS_OK)
		fprintf(stderr, "\n  parsing %s: %s\n", s, e.msg);
	SHS_ASSERT_OK(rc, &e);
	SHS_ASSERT_INT_EQ(used, strlen(s));
	return sh;
}

/* The text form of s in a malloc'ed string (caller frees). */
static char *print_str(const shs_sharding *s)
{
	shs_buf b = { 0 };
	char *out;

	shs_sharding_print(&b, s);
	out = shs_buf_take(&b);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	return out;
}

static void assert_prints(const shs_sharding *s, const char *want)
{
	char *got = print_str(s);

	SHS_ASSERT_STR_EQ(got, want);
	free(got);
}

static void xla_strings_round_trip(void)
{
	shs_arena *a = shs_arena_new(0);

	CU_ASSERT_TRUE(N_XLA >= 30);
	for (size_t i = 0; i < N_XLA; i++)
		assert_prints(parse_ok(a, xla_strings[i]), xla_strings[i]);
	shs_arena_free(a);
}

/* to_proto, packs it to bytes, unpacks and converts back. */
static shs_sharding *via_wire(shs_arena *a, const shs_sharding *s)
{
	Xla__OpSharding p, *back;
	shs_sharding *out = NULL;
	shs_err e = { 0 };
	uint8_t *bytes;
	size_t n;

	SHS_ASSERT_OK(shs_sharding_to_proto(a, s, &p, &e), &e);
	n = xla__op_sharding__get_packed_size(&p);
	bytes = malloc(n + 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
	SHS_ASSERT_INT_EQ(xla__op_sharding__pack(&p, bytes), n);
	back = xla__op_sharding__unpack(NULL, n, bytes);
	free(bytes);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	SHS_ASSERT_OK(shs_sharding_from_proto(a, back, &out, &e), &e);
	xla__op_sharding__free_unpacked(back, NULL);
	return out;
}

static void xla_strings_survive_proto(void)
{
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < N_XLA; i++) {
		shs_sharding *s = parse_ok(a, xla_strings[i]);
		shs_sharding *back = via_wire(a, s);

		if (!shs_sharding_equal(s, back))
			fprintf(stderr, "\n  not equal after proto: %s\n", xla_strings[i]);
		CU_ASSERT_TRUE_FATAL(shs_sharding_equal(s, back));
		assert_prints(back, xla_strings[i]);
	}
	shs_arena_free(a);
}

static void clone_is_equal_and_deep(void)
{
	shs_arena *a = shs_arena_new(0), *b = shs_arena_new(0);
	shs_sharding *orig[N_XLA], *copy[N_XLA];

	for (size_t i = 0; i < N_XLA; i++) {
		orig[i] = parse_ok(a, xla_strings[i]);
		copy[i] = shs_sharding_clone(b, orig[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(copy[i]);
	}
	shs_arena_free(a); /* the copies must not point into a */
	for (size_t i = 0; i < N_XLA; i++) {
		assert_prints(copy[i], xla_strings[i]);
		CU_ASSERT_TRUE(shs_sharding_equal(copy[i], copy[i]));
	}
	shs_arena_free(b);
}

static void different_shardings_are_not_equal(void)
{
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < N_XLA; i++)
		for (size_t j = 0; j < N_XLA; j++)
			if (i != j)
				CU_ASSERT_FALSE(shs_sharding_equal(parse_ok(a, xla_strings[i]),
								   parse_ok(a, xla_strings[j])));
	/* the same devices written as iota and as a list are equal */
	CU_ASSERT_TRUE(shs_sharding_equal(parse_ok(a, "{devices=[4,2]<=[2,4]T(1,0)}"),
					  parse_ok(a, "{devices=[4,2]0,4,1,5,2,6,3,7}")));
	CU_ASSERT_FALSE(shs_sharding_equal(parse_ok(a, "{devices=[4,2]<=[2,4]T(1,0)}"),
					   parse_ok(a, "{devices=[4,2]0,4,1,5,2,6,7,3}")));
	CU_ASSERT_FALSE(shs_sharding_equal(parse_ok(a, "{replicated metadata={op_name=\"a\"}}"),
					   parse_ok(a, "{replicated metadata={op_name=\"b\"}}")));
	shs_arena_free(a);
}

/* Non-canonical or loosely spaced inputs and what XLA prints for them. */
static const char *const canonical_cases[][2] = {
	{ "{devices=[4,2]<=[2,4]T(0,1)}", "{devices=[4,2]<=[8]}" },
	{ "{devices=[60]<=[3,4,5]T(0,1,2)}", "{devices=[60]<=[60]}" },
	{ "{devices=[20,3]<=[3,4,5]T(1,2,0)}", "{devices=[20,3]<=[3,20]T(1,0)}" },
	{ "{devices=[8]<=[1,8,1]T(2,1,0)}", "{devices=[8]<=[8]}" },
	{ "{devices=[2,2,2]<=[2,2,2]T(1,2,0)}", "{devices=[2,2,2]<=[2,4]T(1,0)}" },
	{ "{devices=[4,1]<=[1,4]T(1,0)}", "{devices=[4,1]<=[4]}" },
	{ "{devices=[1,1]<=[1,1]T(1,0)}", "{devices=[1,1]<=[1]}" },
	{ "{devices=[2,2,2]<=[2,2,2]T(0,2,1)}", "{devices=[2,2,2]<=[2,2,2]T(0,2,1)}" },
	{ "{ devices=[2, 2]<=[4]  last_tile_dim_replicate }",
	  "{devices=[2,2]<=[4] last_tile_dim_replicate}" },
	{ "{replicated metadata={source_line=3 op_name=\"a\"}}",
	  "{replicated metadata={op_name=\"a\" source_line=3}}" },
	{ "{shard_like 1 replicated}", "{replicated shard_like 1}" },
	{ "{device=4 maximal}", "{maximal device=4}" },
	{ "{/*index=0*/{replicated},{manual} }", "{{replicated}, {manual}}" },
	{ "{metadata={} replicated}", "{replicated metadata={}}" },
};

static void non_canonical_inputs_print_canonical(void)
{
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < sizeof(canonical_cases) / sizeof(canonical_cases[0]); i++) {
		shs_sharding *s = parse_ok(a, canonical_cases[i][0]);

		assert_prints(s, canonical_cases[i][1]);
		CU_ASSERT_TRUE(shs_sharding_equal(s, parse_ok(a, canonical_cases[i][1])));
	}
	shs_arena_free(a);
}

/* A malformed sharding, where the parser must point and a word its message must hold. */
typedef struct bad_case {
	const char *text;
	size_t off;
	const char *says;
} bad_case;

static const bad_case bad_cases[] = {
	{ "{devices=[2,4]<=[2,4]}", 21, "T(" },
	{ "{devices=[2,4]<=[4]}", 16, "product 4" },
	{ "{devices=[2,-4]<=[8]}", 12, "-4" },
	{ "{devices=[4611686018427387904,4]<=[8]}", 9, "overflow" },
	{ "{devices=[99999999999999999999]<=[8]}", 10, "overflows int64" },
	{ "{replicated foo}", 12, "'foo'" },
	{ "{devices=[2,2]0,1,2}", 14, "3 device ids" },
	{ "{devices=[2,2]0,1,2,3,4}", 22, "more device ids" },
	{ "{replicated", 11, "'}'" },
	{ "{maximal}", 1, "device=" },
	{ "{devices=[2,2]<=[2,2]T(0,0)}", 21, "permutation" },
	{ "{devices=[2,2]<=[2,2]T(0,2)}", 25, "out of range" },
	{ "{devices=[2,2]<=[4] last_tile_dim_replicate last_tile_dims={manual}}", 44,
	  "exclusive" },
	{ "{replicated metadata={op_nam=\"x\"}}", 22, "'op_nam'" },
	{ "{replicated devices=[2]<=[2]}", 12, "kind" },
	{ "{replicated manual}", 12, "conflicts" },
	{ "{devices=[2,2]<=[4]T(1,0)}", 19, "'T'" },
	{ "{devices=[2]<=[2] last_tile_dims={bogus}}", 34, "bogus" },
	{ "{{replicated}, {replicated}", 27, "'}'" },
	{ "replicated", 0, "'{'" },
	{ "{devices=[0,2]<=[0]}", 10, "must be >= 1" },
	{ "{replicated shard_as -1}", 12, "negative" },
	{ "{}}", 0, NULL }, /* not an error: parsing stops after "{}" */
};

static void malformed_strings_rejected(void)
{
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const bad_case *c = &bad_cases[i];
		shs_sharding *s = NULL;
		size_t used = 0, off = 999;
		shs_err e = { 0 };
		int rc = shs_sharding_parse(a, c->text, strlen(c->text), &used, &s, &off, &e);

		if (!c->says) {
			SHS_ASSERT_OK(rc, &e);
			SHS_ASSERT_INT_EQ(used, 2);
			continue;
		}
		if (rc != SHS_EPARSE || off != c->off || !strstr(e.msg, c->says))
			fprintf(stderr, "\n  %s: rc %d off %zu msg \"%s\"\n", c->text, rc, off,
				e.msg);
		SHS_ASSERT_INT_EQ(rc, SHS_EPARSE);
		SHS_ASSERT_INT_EQ(off, c->off);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, c->says));
	}
	shs_arena_free(a);
}

static void deep_nesting_rejected(void)
{
	enum { DEEP = 200 };
	char text[2 * DEEP + 1];
	shs_arena *a = shs_arena_new(0);
	shs_sharding *s = NULL;
	size_t used, off = 0;
	shs_err e = { 0 };

	memset(text, '{', DEEP);
	memset(text + DEEP, '}', DEEP);
	text[2 * DEEP] = '\0';
	SHS_ASSERT_INT_EQ(shs_sharding_parse(a, text, strlen(text), &used, &s, &off, &e),
			  SHS_EPARSE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "nested"));
	SHS_ASSERT_INT_EQ(off, SHS_MAX_NESTING + 1);
	/* a few levels are fine (a superset of XLA, which keeps tuples flat) */
	assert_prints(parse_ok(a, "{{{replicated}}, {manual}}"), "{{{replicated}}, {manual}}");
	shs_arena_free(a);
}

/* Every truncation of every XLA string is rejected or parses a prefix, never crashes. */
static void truncated_strings_fail_cleanly(void)
{
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < N_XLA; i++) {
		size_t len = strlen(xla_strings[i]);

		for (size_t cut = 0; cut < len; cut++) {
			shs_sharding *s = NULL;
			size_t used = 0, off = 0;
			shs_err e = { 0 };
			int rc = shs_sharding_parse(a, xla_strings[i], cut, &used, &s, &off, &e);

			CU_ASSERT_EQUAL(rc, SHS_EPARSE);
			CU_ASSERT_TRUE(off <= cut);
		}
	}
	shs_arena_free(a);
}

static void devices_of_transposed_iota(void)
{
	static const int64_t want[] = { 0, 4, 1, 5, 2, 6, 3, 7 };
	static const int64_t want3[] = { 0, 4, 2, 6, 1, 5, 3, 7 };
	shs_arena *a = shs_arena_new(0);
	shs_sharding *s = parse_ok(a, "{devices=[4,2]<=[2,4]T(1,0)}");
	shs_sharding *t = parse_ok(a, "{devices=[2,2,2]<=[2,2,2]T(2,1,0)}");

	for (int64_t i = 0; i < 8; i++) {
		SHS_ASSERT_INT_EQ(shs_sharding_device(s, i), want[i]);
		SHS_ASSERT_INT_EQ(shs_sharding_device(t, i), want3[i]);
	}
	SHS_ASSERT_INT_EQ(shs_sharding_device(parse_ok(a, "{maximal device=5}"), 0), 5);
	SHS_ASSERT_INT_EQ(shs_sharding_device(parse_ok(a, "{devices=[2]7,3}"), 1), 3);
	shs_arena_free(a);
}

static void check_validates_rank_and_devices(void)
{
	shs_arena *a = shs_arena_new(0);
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_sharding_check(parse_ok(a, "{devices=[2,1,4]<=[8] "
						     "last_tile_dim_replicate}"), 2, 8, &e), &e);
	SHS_ASSERT_OK(shs_sharding_check(parse_ok(a, "{devices=[2,2]3,1,2,0}"), 2, 0, &e), &e);
	SHS_ASSERT_OK(shs_sharding_check(parse_ok(a, "{replicated}"), 5, 8, &e), &e);
	SHS_ASSERT_OK(shs_sharding_check(parse_ok(a, "{devices=[2,2,2]<=[8] "
						     "last_tile_dims={manual}}"), 2, 8, &e), &e);
	SHS_ASSERT_INT_EQ(shs_sharding_check(parse_ok(a, "{devices=[2,4]<=[8]}"), 3, 8, &e),
			  SHS_EVERIFY);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "rank 3"));
	SHS_ASSERT_INT_EQ(shs_sharding_check(parse_ok(a, "{devices=[2,4]<=[8]}"), 2, 4, &e),
			  SHS_EVERIFY);
	SHS_ASSERT_INT_EQ(shs_sharding_check(parse_ok(a, "{devices=[2,2]0,1,1,3}"), 2, 0, &e),
			  SHS_EVERIFY);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "device 1 appears twice"));
	SHS_ASSERT_INT_EQ(shs_sharding_check(parse_ok(a, "{devices=[2,2]0,1,2,4}"), 2, 4, &e),
			  SHS_EVERIFY);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "device 4"));
	SHS_ASSERT_INT_EQ(shs_sharding_check(parse_ok(a, "{maximal device=9}"), 1, 8, &e),
			  SHS_EVERIFY);
	SHS_ASSERT_INT_EQ(shs_sharding_check(parse_ok(a, "{devices=[1,1]<=[1]}"), 2, 0, &e),
			  SHS_EVERIFY);
	SHS_ASSERT_INT_EQ(shs_sharding_check(parse_ok(a, "{{replicated}, {devices=[2]0,0}}"), 0,
					     0, &e), SHS_EVERIFY);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "tuple element 1"));
	shs_arena_free(a);
}

/* ---- Proto specifics ------------------------------------------------------------------------ */

static void to_proto_follows_xla(void)
{
	shs_arena *a = shs_arena_new(0);
	Xla__OpSharding p;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_sharding_to_proto(a, parse_ok(a, "{replicated}"), &p, &e), &e);
	SHS_ASSERT_INT_EQ(p.type, 0);
	SHS_ASSERT_INT_EQ(xla__op_sharding__get_packed_size(&p), 0);

	SHS_ASSERT_OK(shs_sharding_to_proto(a, parse_ok(a, "{maximal device=3}"), &p, &e), &e);
	SHS_ASSERT_INT_EQ(p.type, 1);
	SHS_ASSERT_INT_EQ(p.n_tile_assignment_dimensions, 1);
	SHS_ASSERT_INT_EQ(p.tile_assignment_dimensions[0], 1);
	SHS_ASSERT_INT_EQ(p.n_tile_assignment_devices, 1);
	SHS_ASSERT_INT_EQ(p.tile_assignment_devices[0], 3);

	SHS_ASSERT_OK(shs_sharding_to_proto(a, parse_ok(a, "{devices=[4,1,2]<=[2,4]T(1,0) "
							 "last_tile_dim_replicate shard_like 4}"),
					    &p, &e), &e);
	SHS_ASSERT_INT_EQ(p.type, 3);
	SHS_ASSERT_INT_EQ(p.n_tile_assignment_dimensions, 3);
	SHS_ASSERT_INT_EQ(p.n_tile_assignment_devices, 0);
	SHS_ASSERT_INT_EQ(p.n_iota_reshape_dims, 2);
	SHS_ASSERT_INT_EQ(p.iota_reshape_dims[1], 4);
	SHS_ASSERT_INT_EQ(p.iota_transpose_perm[0], 1);
	CU_ASSERT_TRUE(p.replicate_on_last_tile_dim);
	CU_ASSERT_TRUE(p.is_shard_group);
	SHS_ASSERT_INT_EQ(p.shard_group_id, 4);
	SHS_ASSERT_INT_EQ(p.shard_group_type, 1);

	SHS_ASSERT_OK(shs_sharding_to_proto(a, parse_ok(a, "{devices=[2,2]3,1,2,0}"), &p, &e), &e);
	SHS_ASSERT_INT_EQ(p.n_tile_assignment_devices, 4);
	SHS_ASSERT_INT_EQ(p.tile_assignment_devices[0], 3);
	SHS_ASSERT_INT_EQ(p.n_iota_reshape_dims, 0);

	SHS_ASSERT_OK(shs_sharding_to_proto(a, parse_ok(a, "{{manual}, {replicated metadata="
							 "{op_name=\"q\"}}}"), &p, &e), &e);
	SHS_ASSERT_INT_EQ(p.type, 2);
	SHS_ASSERT_INT_EQ(p.n_tuple_shardings, 2);
	{ /* tuple elements are the bytes of their OpSharding (proto/xla_hlo.proto) */
		Xla__OpSharding *el0 = xla__op_sharding__unpack(NULL, p.tuple_shardings[0].len,
								p.tuple_shardings[0].data);
		Xla__OpSharding *el1 = xla__op_sharding__unpack(NULL, p.tuple_shardings[1].len,
								p.tuple_shardings[1].data);

		CU_ASSERT_PTR_NOT_NULL_FATAL(el0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(el1);
		SHS_ASSERT_INT_EQ(el0->type, 4);
		SHS_ASSERT_INT_EQ(el1->n_metadata, 1);
		SHS_ASSERT_STR_EQ(el1->metadata[0]->op_name, "q");
		SHS_ASSERT_STR_EQ(el1->metadata[0]->op_type, "");
		xla__op_sharding__free_unpacked(el0, NULL);
		xla__op_sharding__free_unpacked(el1, NULL);
	}
	shs_arena_free(a);
}

static void from_proto_special_cases(void)
{
	static int64_t dims2[] = { 2, 4 }, dims1[] = { 1 }, dev1[] = { 6 }, ones[] = { 1, 1 };
	static int64_t iota_r[] = { 2, 4 };
	static int32_t perm_id[] = { 0, 1 }, perm_bad[] = { 1, 1 };
	shs_arena *a = shs_arena_new(0);
	Xla__OpSharding p = XLA__OP_SHARDING__INIT;
	shs_sharding *s = NULL;
	shs_err e = { 0 };

	/* type OTHER with one device is maximal */
	p.type = 3;
	p.n_tile_assignment_dimensions = 1;
	p.tile_assignment_dimensions = dims1;
	p.n_tile_assignment_devices = 1;
	p.tile_assignment_devices = dev1;
	SHS_ASSERT_OK(shs_sharding_from_proto(a, &p, &s, &e), &e);
	assert_prints(s, "{maximal device=6}");

	/* iota all ones is maximal device 0 */
	p.n_tile_assignment_devices = 0;
	p.n_iota_reshape_dims = p.n_iota_transpose_perm = 2;
	p.iota_reshape_dims = ones;
	p.iota_transpose_perm = perm_id;
	SHS_ASSERT_OK(shs_sharding_from_proto(a, &p, &s, &e), &e);
	assert_prints(s, "{maximal device=0}");

	/* a non-canonical iota comes out canonical */
	p.n_tile_assignment_dimensions = 2;
	p.tile_assignment_dimensions = dims2;
	p.iota_reshape_dims = iota_r;
	SHS_ASSERT_OK(shs_sharding_from_proto(a, &p, &s, &e), &e);
	assert_prints(s, "{devices=[2,4]<=[8]}");

	p.iota_transpose_perm = perm_bad;
	SHS_ASSERT_INT_EQ(shs_sharding_from_proto(a, &p, &s, &e), SHS_EPARSE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "permutation"));

	p.iota_transpose_perm = perm_id;
	p.n_tile_assignment_dimensions = 1; /* product 2 != 8 */
	SHS_ASSERT_INT_EQ(shs_sharding_from_proto(a, &p, &s, &e), SHS_EPARSE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "differs"));

	p.type = 9;
	SHS_ASSERT_INT_EQ(shs_sharding_from_proto(a, &p, &s, &e), SHS_EPARSE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "unknown type 9"));

	p.type = 1; /* MAXIMAL with no device at all */
	p.n_iota_reshape_dims = p.n_iota_transpose_perm = 0;
	SHS_ASSERT_INT_EQ(shs_sharding_from_proto(a, &p, &s, &e), SHS_EPARSE);
	shs_arena_free(a);
}

static void from_proto_bounds_tuple_depth(void)
{
	enum { DEEP = SHS_MAX_NESTING + 5 };
	Xla__OpSharding levels[DEEP];
	ProtobufCBinaryData packed[DEEP]; /* the bytes of levels[i], level i - 1's one element */
	shs_arena *a = shs_arena_new(0);
	shs_sharding *s = NULL;
	shs_err e = { 0 };

	for (int i = DEEP; i-- > 0;) {
		xla__op_sharding__init(&levels[i]);
		levels[i].type = 2;
		if (i + 1 < DEEP) {
			levels[i].n_tuple_shardings = 1;
			levels[i].tuple_shardings = &packed[i + 1];
		}
		packed[i].len = xla__op_sharding__get_packed_size(&levels[i]);
		packed[i].data = malloc(packed[i].len + 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(packed[i].data);
		xla__op_sharding__pack(&levels[i], packed[i].data);
	}
	SHS_ASSERT_INT_EQ(shs_sharding_from_proto(a, &levels[0], &s, &e), SHS_EPARSE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "nested"));
	SHS_ASSERT_OK(shs_sharding_from_proto(a, &levels[DEEP - 10], &s, &e), &e);
	assert_prints(s, "{{{{{{{{{{}}}}}}}}}}");
	for (int i = 0; i < DEEP; i++)
		free(packed[i].data);
	shs_arena_free(a);
}

/* ---- Named shardings ------------------------------------------------------------------------ */

/* A named sharding from text like "data,model|" (dims split by '|', axes by ','). */
static shs_named_sharding named_of(const shs_mesh *mesh, const char *spec)
{
	shs_named_sharding n = { .rank = 1 };
	const char *p = spec;

	while (*p) {
		size_t len = strcspn(p, ",|");
		uint32_t k;

		for (k = 0; len && k < mesh->n_axes; k++)
			if (strlen(mesh->names[k]) == len && !memcmp(mesh->names[k], p, len))
				break;
		if (len) {
			CU_ASSERT_TRUE_FATAL(k < mesh->n_axes);
			n.dim_axes[n.rank - 1][n.n_dim_axes[n.rank - 1]++] = (uint8_t)k;
		}
		p += len;
		if (*p == '|')
			n.rank++;
		if (*p)
			p++;
	}
	return n;
}

typedef struct named_case {
	const char *spec, *xla, *printed;
} named_case;

static void check_named_cases(const shs_mesh *mesh, const named_case *cases, size_t n)
{
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < n; i++) {
		shs_named_sharding nm = named_of(mesh, cases[i].spec), back;
		shs_sharding *s = NULL;
		shs_err e = { 0 };
		shs_buf b = { 0 };
		char *txt;

		SHS_ASSERT_OK(shs_sharding_from_named(a, mesh, &nm, &s, &e), &e);
		assert_prints(s, cases[i].xla);
		SHS_ASSERT_OK(shs_sharding_check(s, nm.rank, 0, &e), &e);
		/* and back, from the parsed XLA text */
		SHS_ASSERT_OK(shs_sharding_to_named(mesh, parse_ok(a, cases[i].xla), nm.rank, &back,
						    &e), &e);
		shs_named_sharding_print(&b, mesh, &back);
		txt = shs_buf_take(&b);
		SHS_ASSERT_STR_EQ(txt, cases[i].printed);
		free(txt);
		SHS_ASSERT_INT_EQ(back.rank, nm.rank);
		for (uint32_t d = 0; d < nm.rank; d++) {
			SHS_ASSERT_INT_EQ(back.n_dim_axes[d], nm.n_dim_axes[d]);
			CU_ASSERT_EQUAL(memcmp(back.dim_axes[d], nm.dim_axes[d], nm.n_dim_axes[d]), 0);
		}
	}
	shs_arena_free(a);
}

static void named_on_one_axis_mesh(void)
{
	static const shs_mesh mesh = { .n_axes = 1, .names = { "x" }, .sizes = { 8 } };
	static const named_case cases[] = {
		{ "x|", "{devices=[8,1]<=[8]}", "[{x}, {}]" },
		{ "|x", "{devices=[1,8]<=[8]}", "[{}, {x}]" },
		{ "x", "{devices=[8]<=[8]}", "[{x}]" },
		{ "|", "{replicated}", "[{}, {}]" },
	};

	check_named_cases(&mesh, cases, sizeof(cases) / sizeof(cases[0]));
}

static void named_on_two_axis_mesh(void)
{
	static const shs_mesh mesh = { .n_axes = 2, .names = { "data", "model" },
				       .sizes = { 2, 4 } };
	static const named_case cases[] = {
		{ "data|model", "{devices=[2,4]<=[8]}", "[{data}, {model}]" },
		{ "model|data", "{devices=[4,2]<=[2,4]T(1,0)}", "[{model}, {data}]" },
		{ "model|", "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
		  "[{model}, {}]" },
		{ "data|", "{devices=[2,1,4]<=[8] last_tile_dim_replicate}", "[{data}, {}]" },
		{ "|", "{replicated}", "[{}, {}]" },
		{ "data,model", "{devices=[8]<=[8]}", "[{data,model}]" },
		{ "model,data", "{devices=[8]<=[2,4]T(1,0)}", "[{model,data}]" },
		{ "|data|model", "{devices=[1,2,4]<=[8]}", "[{}, {data}, {model}]" },
	};

	check_named_cases(&mesh, cases, sizeof(cases) / sizeof(cases[0]));
}

static void named_on_three_axis_mesh(void)
{
	static const shs_mesh mesh = { .n_axes = 3, .names = { "data", "fsdp", "tensor" },
				       .sizes = { 2, 4, 2 } };
	static const named_case cases[] = {
		{ "fsdp,tensor||data", "{devices=[8,1,2]<=[2,8]T(1,0)}",
		  "[{fsdp,tensor}, {}, {data}]" },
		{ "tensor|data", "{devices=[2,2,4]<=[8,2]T(1,0) last_tile_dim_replicate}",
		  "[{tensor}, {data}]" },
		{ "data|fsdp", "{devices=[2,4,2]<=[16] last_tile_dim_replicate}",
		  "[{data}, {fsdp}]" },
		{ "fsdp", "{devices=[4,4]<=[2,4,2]T(1,0,2) last_tile_dim_replicate}", "[{fsdp}]" },
		{ "data,fsdp|tensor", "{devices=[8,2]<=[16]}", "[{data,fsdp}, {tensor}]" },
		{ "tensor,data|fsdp", "{devices=[4,4]<=[8,2]T(1,0)}",
		  "[{tensor,data}, {fsdp}]" },
	};

	check_named_cases(&mesh, cases, sizeof(cases) / sizeof(cases[0]));
}

static void named_from_explicit_devices_and_failures(void)
{
	static const shs_mesh m2 = { .n_axes = 2, .names = { "data", "model" },
				     .sizes = { 2, 4 } };
	static const shs_mesh m1 = { .n_axes = 1, .names = { "x" }, .sizes = { 8 } };
	shs_arena *a = shs_arena_new(0);
	shs_named_sharding n, bad = { .rank = 2 };
	shs_sharding *s = NULL;
	shs_err e = { 0 };
	shs_buf b = { 0 };
	char *txt;

	SHS_ASSERT_OK(shs_sharding_to_named(&m2, parse_ok(a, "{devices=[4,2]0,4,1,5,2,6,3,7}"), 2,
					    &n, &e), &e);
	shs_named_sharding_print(&b, &m2, &n);
	txt = shs_buf_take(&b);
	SHS_ASSERT_STR_EQ(txt, "[{model}, {data}]");
	free(txt);
	/* replication groups are sets: their order inside does not matter */
	SHS_ASSERT_OK(shs_sharding_to_named(&m2, parse_ok(a, "{devices=[2,1,4]3,2,1,0,4,5,6,7 "
							     "last_tile_dim_replicate}"), 2, &n, &e), &e);
	SHS_ASSERT_INT_EQ(n.n_dim_axes[0], 1);
	SHS_ASSERT_INT_EQ(n.n_dim_axes[1], 0);

	SHS_ASSERT_INT_EQ(shs_sharding_to_named(&m2, parse_ok(a, "{devices=[2,4]0,2,1,3,4,5,6,7}"),
						2, &n, &e), SHS_EINVAL);
	SHS_ASSERT_INT_EQ(shs_sharding_to_named(&m1, parse_ok(a, "{devices=[2,4]<=[8]}"), 2, &n,
						&e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "whole mesh axes"));
	SHS_ASSERT_INT_EQ(shs_sharding_to_named(&m2, parse_ok(a, "{devices=[2,4]<=[8]}"), 3, &n,
						&e), SHS_EINVAL);
	SHS_ASSERT_INT_EQ(shs_sharding_to_named(&m2, parse_ok(a, "{manual}"), 2, &n, &e),
			  SHS_EINVAL);
	SHS_ASSERT_INT_EQ(shs_sharding_to_named(&m2, parse_ok(a, "{devices=[2,2]<=[4]}"), 2, &n,
						&e), SHS_EINVAL);

	bad.n_dim_axes[0] = bad.n_dim_axes[1] = 1; /* data on both dims */
	SHS_ASSERT_INT_EQ(shs_sharding_from_named(a, &m2, &bad, &s, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "data"));
	bad.dim_axes[1][0] = 5;
	SHS_ASSERT_INT_EQ(shs_sharding_from_named(a, &m2, &bad, &s, &e), SHS_EINVAL);
	shs_arena_free(a);
}

/* shard_map with auto axes: a sharding manual over some axes reads as its auto axes' named
 * form and the mask of its manual ones, whichever axis is manual and however the devices are
 * ordered, and is written back as XLA writes it; a manual subgroup over part of an axis, an
 * unreduced one, or a manual axis splitting a dim is refused. */
static void named_of_partly_manual(void)
{
	static const shs_mesh m = { .n_axes = 2, .names = { "stage", "data" }, .sizes = { 2, 4 } };
	static const struct {
		const char *xla, *named;
		uint32_t manual;
	} cases[] = {
		{ "{devices=[1,1,2,4]<=[8] last_tile_dims={manual, replicated}}", "[{}, {}]", 1 },
		{ "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dims={manual}}", "[{data}, {}]", 1 },
		{ "{devices=[1,2,4]<=[8] last_tile_dims={manual}}", "[{}, {stage}]", 2 },
		{ "{devices=[2,1,4]<=[8] last_tile_dim_replicate}", "[{stage}, {}]", 0 },
		/* Shardy's named form, as newer XLA exports it */
		{ "{mesh['stage'=2,'data'=4], [{'data'}, {}], manual={'stage'}}", "[{data}, {}]",
		  1 },
	};
	static const char *const bad[] = {
		"{devices=[1,1,2,4]<=[4,2]T(1,0) last_tile_dims={manual, replicated}}",
		"{devices=[1,1,2,4]<=[8] last_tile_dims={manual, unreduced}}",
		"{devices=[2,4]<=[8] last_tile_dims={manual}}",
	};
	shs_arena *a = shs_arena_new(0);
	shs_named_sharding n;
	shs_sharding *back = NULL;
	shs_err e = { 0 };
	uint32_t manual;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		shs_buf b = { 0 };
		char *txt;
		SHS_ASSERT_OK(shs_sharding_to_named_manual(&m, parse_ok(a, cases[i].xla), 2, &n,
							   &manual, &e), &e);
		shs_named_sharding_print(&b, &m, &n);
		txt = shs_buf_take(&b);
		SHS_ASSERT_STR_EQ(txt, cases[i].named);
		SHS_ASSERT_INT_EQ(manual, cases[i].manual);
		free(txt);
		/* and back: XLA's own text, as shard_map writes it (the tiled form) */
		SHS_ASSERT_OK(shs_sharding_from_named_manual(a, &m, &n, manual, &back, &e), &e);
		shs_sharding_print(&b, back);
		txt = shs_buf_take(&b);
		if (strncmp(cases[i].xla, "{mesh", 5))
			SHS_ASSERT_STR_EQ(txt, cases[i].xla);
		else
			SHS_ASSERT_STR_EQ(txt, cases[1].xla);
		free(txt);
	}
	/* a manual axis cannot split a dim */
	n.rank = 2;
	n.n_dim_axes[0] = 1;
	n.dim_axes[0][0] = 0;
	n.n_dim_axes[1] = 0;
	SHS_ASSERT_INT_EQ(shs_sharding_from_named_manual(a, &m, &n, 1, &back, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "stage is manual"));
	/* the manual subgroup runs over two of data's four devices; an unreduced subgroup; tile
	 * dims that do not count the subgroup */
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		SHS_ASSERT_INT_EQ(shs_sharding_to_named_manual(&m, parse_ok(a, bad[k]), 2, &n,
							       &manual, &e), SHS_EINVAL);
	SHS_ASSERT_INT_EQ(shs_sharding_to_named_manual(&m, parse_ok(a, bad[0]), 2, &n, &manual,
						       &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "not whole axes"));
	shs_arena_free(a);
}

/* ---- Real files --------------------------------------------------------------------------- */

static void real_file_shardings_round_trip(void)
{
	static const char *const files[] = {
		"nv_maxtext_1n1g_jit_train_step_before_optimization.hlo",
		"mha_block_1x12x128x64_bf16.hlo",
	};
	shs_arena *a = shs_arena_new(0);
	size_t seen = 0;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		size_t len = 0;
		char *text = (char *)shs_test_read_file(shs_test_hlo_path(files[f]), &len);
		const char *p = text;

		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		while ((p = strstr(p, "sharding={"))) {
			shs_sharding *s = NULL;
			size_t used = 0, off = 0, start = (size_t)(p - text) + strlen("sharding=");
			shs_err e = { 0 };
			char *got;

			SHS_ASSERT_OK(shs_sharding_parse(a, text + start, len - start, &used, &s,
							 &off, &e), &e);
			got = print_str(s);
			SHS_ASSERT_INT_EQ(strlen(got), used);
			CU_ASSERT_EQUAL(memcmp(got, text + start, used), 0);
			free(got);
			seen++;
			p = text + start;
		}
		free(text);
	}
	CU_ASSERT_TRUE(seen > 100);
	shs_arena_free(a);
}

/* XLA's NamedSharding as XLA prints it (openxla named_sharding_test.cc and the newer quoted
 * names of its parser tests). */
static const char *const named_strings[] = {
	"{mesh[a=2,b=4,c=3,d=8], [{c}, {a, b:(2)2, ?}]}",
	"{mesh[], replicated}",
	"{mesh[a=2,b=4,c=3,d=8], replicated}",
	"{mesh[a=2,b=4,c=3,d=8], [], replicated={c}}",
	"{maximal_mesh[device_id=5]}",
	"{mesh[a=2,b=4,c=3,d=8], unreduced}",
	"{mesh[a=2,b=4,c=3,d=8], [], unreduced={d:(4)2}}",
	"{mesh[a=2,b=4,c=3,d=8], manual}",
	"{mesh[a=2,b=4,c=3,d=8], [], manual={d:(4)2}}",
	"{mesh[a=2,b=4,c=4,d=2], device_ids=([4,16]T(1,0)), [{a}]}",
	"{mesh[a=2,b=4,c=3,d=8], [{a}], replicated={c}, unreduced={d:(4)2}, manual={b:(2)2}}",
	"{mesh[a=2,b=4,c=3,d=8], [{a}], replicated={c}, unreduced={d:(4)2}, manual={b:(2)2}, "
	"metadata={{op_name=\"foo\"}, {op_name=\"bar\"}}}",
	"{mesh['x'=2,'y'=2], [{'y'}, {}], manual={'x'}}",
	"{mesh['x'=2,'y'=2], device_ids=(0,2,1,3), [{'x'}]}",
	"{{replicated}, {mesh[a=2,b=4], replicated}, {maximal device=5}, "
	"{maximal_mesh[device_id=5]}}",
};

/* Each prints back as read and survives OpSharding's field 14 as the same sharding (an iota
 * device order comes back as its list, quoted names as bare ones when they need no quotes); a
 * proto carrying one no longer loads as replicated. */
static void named_shardings_round_trip(void)
{
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < sizeof(named_strings) / sizeof(named_strings[0]); i++) {
		shs_sharding *s = parse_ok(a, named_strings[i]);
		shs_sharding *back = via_wire(a, s);

		assert_prints(s, named_strings[i]);
		if (!shs_sharding_equal(s, back))
			fprintf(stderr, "\n  not equal after proto: %s\n", named_strings[i]);
		CU_ASSERT_TRUE(shs_sharding_equal(s, back));
		CU_ASSERT_NOT_EQUAL(back->kind, SHS_SHARDING_REPLICATED);
		for (size_t j = 0; j < i; j++)
			CU_ASSERT_FALSE(shs_sharding_equal(s, parse_ok(a, named_strings[j])));
	}
	/* blanks are allowed where XLA's printer puts none */
	assert_prints(parse_ok(a, "{mesh['x'=2, 'y'=2], device_ids=( 0, 2, 1, 3 ), [{'x'}]}"),
		      "{mesh['x'=2,'y'=2], device_ids=(0,2,1,3), [{'x'}]}");
	shs_arena_free(a);
}

/* A named sharding settles as XLA's NamedSharding and its protobuf form read it (a value with
 * no dimension split is replicated, unreduced or manual as a whole; over a mesh without axes,
 * replicated), so the text printed and the OpSharding written say the same (fuzz_sharding:
 * {mesh[], manual} came back from OpSharding as replicated); items given twice, a whole-value
 * word beside dimensions and a maximal_mesh with more are refused (a second dimension list
 * extended the first with entries never read). */
static void named_shardings_settle(void)
{
	static const char *const settled[][2] = {
		{ "{mesh[], manual}", "{mesh[], replicated}" },
		{ "{mesh[], unreduced}", "{mesh[], replicated}" },
		{ "{mesh[a=2], []}", "{mesh[a=2], replicated}" },
		{ "{mesh[a=2], [{}, {}]}", "{mesh[a=2], replicated}" },
		{ "{mesh[a=2,b=2], [], manual={a, b}}", "{mesh[a=2,b=2], manual}" },
		{ "{mesh[a=2,b=2], [], unreduced={a, b}}", "{mesh[a=2,b=2], unreduced}" },
	};
	static const char *const refused[][2] = {
		{ "{mesh[a=2], [{a}], [, {a}]}", "the dimensions given twice" },
		{ "{mesh[a=2], replicated={a}, replicated={a}}", "replicated= given twice" },
		{ "{mesh[a=2], manual, replicated}", "whole-value word given twice" },
		{ "{mesh[a=2], device_ids=(0,1), device_ids=(1,0)}", "device_ids given twice" },
		{ "{mesh[a=2], [{a}], manual}", "takes no dimensions" },
		{ "{mesh[a=2], unreduced={a}, replicated}", "takes no dimensions" },
		{ "{maximal_mesh[device_id=1], [{}]}", "maximal_mesh takes no" },
		{ "{maximal_mesh[device_id=1], replicated}", "maximal_mesh takes no" },
		/* fuzz_sharding: 16 ids for 64 devices came back from OpSharding otherwise */
		{ "{mesh[a=2,b=4,c=4,d=2], device_ids=([1,16]T(1,0)), [{a}]}",
		  "device_ids must order as many devices as the mesh has" },
		{ "{mesh[a=2], device_ids=(1,0,2)}", "as many devices as the mesh has" },
	};
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < sizeof(settled) / sizeof(settled[0]); i++) {
		shs_sharding *s = parse_ok(a, settled[i][0]);

		assert_prints(s, settled[i][1]);
		CU_ASSERT_TRUE(shs_sharding_equal(s, via_wire(a, s)));
		CU_ASSERT_TRUE(shs_sharding_equal(s, parse_ok(a, settled[i][1])));
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		shs_sharding *s = NULL;
		size_t used = 0, off = 0;
		shs_err e = { 0 };
		int rc = shs_sharding_parse(a, refused[i][0], strlen(refused[i][0]), &used, &s,
					    &off, &e);

		if (rc != SHS_EPARSE || !strstr(e.msg, refused[i][1]))
			fprintf(stderr, "\n  %s: rc %d msg \"%s\"\n", refused[i][0], rc, e.msg);
		SHS_ASSERT_INT_EQ(rc, SHS_EPARSE);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, refused[i][1]));
	}
	/* and from protobuf: a device list of another length than the mesh */
	{
		Xla__OpSharding p;
		shs_sharding *back = NULL;
		shs_err e = { 0 };

		SHS_ASSERT_OK(shs_sharding_to_proto(a, parse_ok(a, "{mesh[a=2], device_ids=(1,0)}"),
						    &p, &e), &e);
		p.named_sharding->mesh->n_device_ids = 1;
		SHS_ASSERT_INT_EQ(shs_sharding_from_proto(a, &p, &back, &e), SHS_EPARSE);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "1 device ids for a mesh of another size"));
	}
	shs_arena_free(a);
}

CU_TestInfo sharding_tests[] = {
	{ "XLA's named shardings: text and protobuf round trips", named_shardings_round_trip },
	{ "named shardings settle as XLA reads them; repeats refused", named_shardings_settle },
	{ "XLA strings parse and print identically", xla_strings_round_trip },
	{ "XLA strings survive OpSharding bytes", xla_strings_survive_proto },
	{ "clone is deep and equal", clone_is_equal_and_deep },
	{ "different shardings are not equal", different_shardings_are_not_equal },
	{ "non-canonical inputs print canonical", non_canonical_inputs_print_canonical },
	{ "malformed strings rejected at the fault", malformed_strings_rejected },
	{ "deep nesting rejected", deep_nesting_rejected },
	{ "truncated strings fail cleanly", truncated_strings_fail_cleanly },
	{ "device(i) of transposed iota", devices_of_transposed_iota },
	{ "check validates rank and devices", check_validates_rank_and_devices },
	{ "to_proto follows HloSharding::ToProto", to_proto_follows_xla },
	{ "from_proto special cases", from_proto_special_cases },
	{ "from_proto bounds tuple depth", from_proto_bounds_tuple_depth },
	{ "named on a 1-axis mesh", named_on_one_axis_mesh },
	{ "named on a 2-axis mesh", named_on_two_axis_mesh },
	{ "named on a 3-axis mesh", named_on_three_axis_mesh },
	{ "named from explicit devices, and failures", named_from_explicit_devices_and_failures },
	{ "named of a sharding manual over some axes", named_of_partly_manual },
	{ "real file shardings round trip", real_file_shardings_round_trip },
	CU_TEST_INFO_NULL,
};
