/* Tests: element types, half-precision conversions, arena and buffer basics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "elem.h"
#include "test_util.h"

static void names_round_trip(void)
{
	for (int t = 1; t < SHS_ELEM_COUNT; t++) {
		const char *n = shs_elem_name(t);

		CU_ASSERT_PTR_NOT_NULL_FATAL(n);
		SHS_ASSERT_INT_EQ(shs_elem_from_name(n, strlen(n)), t);
	}
	SHS_ASSERT_INT_EQ(shs_elem_from_name("f31", 3), -1);
	CU_ASSERT_PTR_NULL(shs_elem_name(99));
	CU_ASSERT_PTR_NULL(shs_elem_name(-1));
}

static void byte_sizes(void)
{
	SHS_ASSERT_INT_EQ(shs_elem_bytes(SHS_PRED), 1);
	SHS_ASSERT_INT_EQ(shs_elem_bytes(SHS_BF16), 2);
	SHS_ASSERT_INT_EQ(shs_elem_bytes(SHS_F32), 4);
	SHS_ASSERT_INT_EQ(shs_elem_bytes(SHS_C64), 8);
	SHS_ASSERT_INT_EQ(shs_elem_bytes(SHS_C128), 16);
	SHS_ASSERT_INT_EQ(shs_elem_bytes(SHS_S4), 1); /* unpacked unless the layout packs it */
	SHS_ASSERT_INT_EQ(shs_elem_bytes(SHS_TUPLE), 0);
	SHS_ASSERT_INT_EQ(shs_elem_bytes(SHS_TOKEN), 0);
}

static void shape_bytes_packing(void)
{
	int64_t dims[2] = { 3, 5 };
	shs_layout packed = { .element_size_in_bits = 4 };
	shs_shape s4 = { .type = SHS_S4, .rank = 2, .dims = dims };
	shs_shape f32 = { .type = SHS_F32, .rank = 2, .dims = dims };
	shs_shape tup_elems[2] = { f32, s4 };
	shs_shape tup = { .type = SHS_TUPLE, .n_tuple = 2, .tuple = tup_elems };
	int64_t huge[2] = { INT64_MAX / 2, 3 };
	shs_shape over = { .type = SHS_F32, .rank = 2, .dims = huge };

	SHS_ASSERT_INT_EQ(shs_shape_bytes(&s4), 15);
	s4.layout = &packed;
	SHS_ASSERT_INT_EQ(shs_shape_bytes(&s4), 8); /* 15 nibbles round up to 8 bytes */
	SHS_ASSERT_INT_EQ(shs_shape_bytes(&f32), 60);
	SHS_ASSERT_INT_EQ(shs_shape_bytes(&tup), 75);
	SHS_ASSERT_INT_EQ(shs_shape_elements(&over), -1);
	SHS_ASSERT_INT_EQ(shs_shape_bytes(&over), -1);
}

static void bf16_rounding(void)
{
	/* 3.141 lies between bf16 3.140625 (0x4049) and 3.15625 (0x404a): nearest is 0x4049 */
	SHS_ASSERT_INT_EQ(shs_f32_to_bf16(3.141f), 0x4049);
	SHS_ASSERT_INT_EQ(shs_f32_to_bf16(1.0f), 0x3f80);
	SHS_ASSERT_INT_EQ(shs_f32_to_bf16(-2.0f), 0xc000);
	SHS_ASSERT_INT_EQ(shs_f32_to_bf16(INFINITY), 0x7f80);
	/* ties go to even: 1 + 2^-8 is halfway between 0x3f80 and 0x3f81 */
	SHS_ASSERT_INT_EQ(shs_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
	SHS_ASSERT_INT_EQ(shs_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
	CU_ASSERT_TRUE(isnan(shs_bf16_to_f32(shs_f32_to_bf16(NAN))));
	CU_ASSERT_EQUAL(shs_bf16_to_f32(0x4049), 3.140625f);
}

static void f16_rounding(void)
{
	SHS_ASSERT_INT_EQ(shs_f64_to_f16(1.0), 0x3c00);
	SHS_ASSERT_INT_EQ(shs_f64_to_f16(-2.0), 0xc000);
	SHS_ASSERT_INT_EQ(shs_f64_to_f16(65504.0), 0x7bff);
	SHS_ASSERT_INT_EQ(shs_f64_to_f16(65520.0), 0x7c00);   /* rounds up to inf */
	SHS_ASSERT_INT_EQ(shs_f64_to_f16(0x1p-24), 0x0001);   /* smallest subnormal */
	SHS_ASSERT_INT_EQ(shs_f64_to_f16(0x1p-26), 0x0000);   /* below half of it */
	SHS_ASSERT_INT_EQ(shs_f64_to_f16(0.0078125), 0x2000);
	SHS_ASSERT_INT_EQ(shs_f64_to_f16(1.0 + 0x1p-11), 0x3c00); /* tie to even */
	CU_ASSERT_EQUAL(shs_f16_to_f64(0x3555), 0.333251953125);
	CU_ASSERT_EQUAL(shs_f16_to_f64(0x0001), 0x1p-24);
	CU_ASSERT_TRUE(isinf(shs_f16_to_f64(0xfc00)) && shs_f16_to_f64(0xfc00) < 0);
	for (uint32_t h = 0; h < 0x7c00; h++) /* every finite positive half converts back exactly */
		if (shs_f64_to_f16(shs_f16_to_f64((uint16_t)h)) != h)
			CU_FAIL_FATAL("f16 round trip");
}

static void arena_budget(void)
{
	shs_arena *a = shs_arena_new(1 << 20);
	void *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	p = shs_arena_alloc(a, 1000);
	CU_ASSERT_PTR_NOT_NULL(p);
	CU_ASSERT_EQUAL((uintptr_t)p % 16, 0);
	CU_ASSERT_PTR_NULL(shs_arena_alloc(a, 2 << 20)); /* over the budget */
	CU_ASSERT_PTR_NULL(shs_arena_calloc(a, SIZE_MAX / 2, 4)); /* overflow */
	SHS_ASSERT_STR_EQ(shs_arena_strndup(a, "abcdef", 3), "abc");
	shs_arena_free(a);
	shs_arena_free(NULL);
}

static void buf_appends(void)
{
	shs_buf b = { 0 };
	char *s;

	for (int k = 0; k < 1000; k++)
		shs_buf_printf(&b, "%d,", k);
	shs_buf_put_i64(&b, INT64_MIN);
	CU_ASSERT_FALSE(b.oom);
	CU_ASSERT_EQUAL(strncmp(b.data, "0,1,2,", 6), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data, "999,-9223372036854775808"));
	s = shs_buf_take(&b);
	CU_ASSERT_PTR_NOT_NULL(s);
	CU_ASSERT_EQUAL(b.len, 0);
	free(s);
}

CU_TestInfo elem_tests[] = {
	{ "element names round-trip", names_round_trip },
	{ "element byte sizes", byte_sizes },
	{ "shape bytes pack sub-byte types", shape_bytes_packing },
	{ "bf16 rounds to nearest even", bf16_rounding },
	{ "f16 rounds to nearest even", f16_rounding },
	{ "arena honours its budget", arena_budget },
	{ "buffer appends", buf_appends },
	CU_TEST_INFO_NULL,
};
