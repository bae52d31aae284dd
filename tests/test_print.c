/* Tests: the HLO text printer (attributes, styles, shapes, literals, floats), the corpus round
 * trip and shs_module_equal. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_build.h"
#include "test_util.h"

/* ---- helpers --------------------------------------------------------------------------- */

/* The text of m in style (NULL: the style it was read in). Caller frees. */
static char *print_text(const shs_module *m, const shs_text_style *style)
{
	shs_buf b = { 0 };

	shs_text_print(&b, m, style);
	CU_ASSERT_FALSE_FATAL(b.oom);
	return shs_buf_take(&b);
}

/* Parses text, prints it in its own style and checks that gives text again, byte for byte. */
static void assert_prints_back(const char *text)
{
	shs_module *m = shs_test_parse(text);
	char *out = print_text(m, NULL);

	SHS_ASSERT_STR_EQ(out, text);
	free(out);
	shs_module_free(m);
}

/* Parses text and checks that printing it in style gives want. */
static void assert_prints_as(const char *text, const shs_text_style *style, const char *want)
{
	shs_module *m = shs_test_parse(text);
	char *out = print_text(m, style);

	SHS_ASSERT_STR_EQ(out, want);
	free(out);
	shs_module_free(m);
}

static shs_instr *entry_instr(const shs_module *m, const char *name)
{
	return tb_find(shs_module_entry(m), name);
}

static void assert_why_contains(const shs_buf *why, const char *want)
{
	bool found = why->data && strstr(why->data, want);

	if (!found)
		fprintf(stderr, "\n  why: \"%s\"\n  want it to contain \"%s\"\n",
			why->data ? why->data : "(empty)", want);
	CU_ASSERT_TRUE_FATAL(found);
}

/* ---- attributes, new style ------------------------------------------------------------- */

static void prints_dimension_attributes(void)
{
	assert_prints_back(
		"HloModule dims, entry_computation_layout={(f32[4,8]{1,0}, s32[])->(f32[8,4]{0,1}, f32[4]{0})}\n"
		"\n"
		"add.1 {\n"
		"  x.1 = f32[] parameter(0)\n"
		"  y.1 = f32[] parameter(1)\n"
		"  ROOT add.2 = f32[] add(x.1, y.1)\n"
		"}\n"
		"\n"
		"ENTRY main.1 {\n"
		"  p.1 = f32[4,8]{1,0} parameter(0)\n"
		"  i.1 = s32[] parameter(1)\n"
		"  transpose.1 = f32[8,4]{0,1} transpose(p.1), dimensions={1,0}\n"
		"  zero.1 = f32[] constant(0)\n"
		"  broadcast.1 = f32[4,8]{1,0} broadcast(zero.1), dimensions={}\n"
		"  reduce.1 = f32[4]{0} reduce(p.1, zero.1), dimensions={1}, to_apply=add.1\n"
		"  concatenate.1 = f32[8,8]{1,0} concatenate(p.1, broadcast.1), dimensions={0}\n"
		"  reverse.1 = f32[4,8]{1,0} reverse(p.1), dimensions={0,1}\n"
		"  iota.1 = s32[4]{0} iota(), iota_dimension=0\n"
		"  tuple.1 = (f32[4,8]{1,0}, s32[]) tuple(p.1, i.1)\n"
		"  get-tuple-element.1 = s32[] get-tuple-element(tuple.1), index=1\n"
		"  dynamic-slice.1 = f32[2,8]{1,0} dynamic-slice(p.1, i.1, i.1), dynamic_slice_sizes={2,8}\n"
		"  slice.1 = f32[2,8]{1,0} slice(p.1), slice={[0:2], [0:8]}\n"
		"  slice.2 = f32[2,3]{1,0} slice(p.1), slice={[0:4:2], [1:7:2]}\n"
		"  reduce-precision.1 = f32[4,8]{1,0} reduce-precision(p.1), exponent_bits=8, mantissa_bits=7\n"
		"  pad.1 = f32[6,9]{1,0} pad(p.1, zero.1), padding=1_1x0_1\n"
		"  pad.2 = f32[7,21]{1,0} pad(p.1, zero.1), padding=0_0_1x-1_0_2\n"
		"  compare.1 = pred[4,8]{1,0} compare(p.1, broadcast.1), direction=LT\n"
		"  compare.2 = pred[4,8]{1,0} compare(p.1, broadcast.1), direction=GE, type=TOTALORDER\n"
		"  ROOT tuple.2 = (f32[8,4]{0,1}, f32[4]{0}) tuple(transpose.1, reduce.1)\n"
		"}\n"
		"\n");
}

static void prints_dot_convolution_and_window(void)
{
	assert_prints_back(
		"HloModule conv, entry_computation_layout={(f32[2,3]{1,0}, f32[3,4]{1,0}, f32[1,8,8,2]{3,2,1,0}, f32[3,3,1,4]{3,2,1,0}, f32[5,2,3]{2,1,0})->f32[2,4]{1,0}}\n"
		"\n"
		"max.1 {\n"
		"  x.1 = f32[] parameter(0)\n"
		"  y.1 = f32[] parameter(1)\n"
		"  ROOT maximum.1 = f32[] maximum(x.1, y.1)\n"
		"}\n"
		"\n"
		"ENTRY main.2 {\n"
		"  a.1 = f32[2,3]{1,0} parameter(0)\n"
		"  b.1 = f32[3,4]{1,0} parameter(1)\n"
		"  img.1 = f32[1,8,8,2]{3,2,1,0} parameter(2)\n"
		"  k.1 = f32[3,3,1,4]{3,2,1,0} parameter(3)\n"
		"  c.1 = f32[5,2,3]{2,1,0} parameter(4)\n"
		"  dot.2 = f32[5,2,2]{2,1,0} dot(c.1, c.1), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}\n"
		"  convolution.1 = f32[1,8,8,4]{3,2,1,0} convolution(img.1, k.1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2\n"
		"  convolution.2 = f32[1,4,8,4]{3,2,1,0} convolution(img.1, k.1), window={size=3x3 stride=2x1 pad=1_1x1_1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01oi->bf01, batch_group_count=2, operand_precision={high,default}\n"
		"  convolution.3 = f32[1,8,8,4]{3,2,1,0} custom-call(img.1, k.1), window={size=3x3}, dim_labels=0bf1_io01->01bf, custom_call_target=\"DynamicConvolutionForward\"\n"
		"  lo.1 = f32[] constant(-inf)\n"
		"  reduce-window.1 = f32[1,4,4,2]{3,2,1,0} reduce-window(img.1, lo.1), window={size=1x2x2x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0}, to_apply=max.1\n"
		"  ROOT dot.1 = f32[2,4]{1,0} dot(a.1, b.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,default}\n"
		"}\n"
		"\n");
}

static void prints_gather_and_scatter(void)
{
	assert_prints_back(
		"HloModule gs, entry_computation_layout={(f32[8,3]{1,0}, s32[5,1]{1,0}, f32[5,3]{1,0}, f32[4,6]{1,0}, s32[4,1]{1,0})->f32[8,3]{1,0}}\n"
		"\n"
		"add.1 {\n"
		"  x.1 = f32[] parameter(0)\n"
		"  y.1 = f32[] parameter(1)\n"
		"  ROOT add.2 = f32[] add(x.1, y.1)\n"
		"}\n"
		"\n"
		"ENTRY main.3 {\n"
		"  op.1 = f32[8,3]{1,0} parameter(0)\n"
		"  idx.1 = s32[5,1]{1,0} parameter(1)\n"
		"  upd.1 = f32[5,3]{1,0} parameter(2)\n"
		"  op.2 = f32[4,6]{1,0} parameter(3)\n"
		"  idx.2 = s32[4,1]{1,0} parameter(4)\n"
		"  gather.1 = f32[5,3]{1,0} gather(op.1, idx.1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}, indices_are_sorted=true\n"
		"  gather.2 = f32[4,1]{1,0} gather(op.2, idx.2), offset_dims={1}, collapsed_slice_dims={}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}\n"
		"  scatter.2 = f32[4,6]{1,0} scatter(op.2, idx.2, gather.2), update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=1, to_apply=add.1\n"
		"  ROOT scatter.1 = f32[8,3]{1,0} scatter(op.1, idx.1, upd.1), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, indices_are_sorted=true, unique_indices=true, to_apply=add.1\n"
		"}\n"
		"\n");
}

static void prints_called_computations(void)
{
	assert_prints_back(
		"HloModule calls, entry_computation_layout={(s32[], f32[4]{0}, pred[])->f32[4]{0}}\n"
		"\n"
		"cond.1 {\n"
		"  cp.1 = (s32[], f32[4]{0}) parameter(0)\n"
		"  cv.1 = s32[] get-tuple-element(cp.1), index=0\n"
		"  ten.1 = s32[] constant(10)\n"
		"  ROOT lt.1 = pred[] compare(cv.1, ten.1), direction=LT\n"
		"}\n"
		"\n"
		"body.1 {\n"
		"  bp.1 = (s32[], f32[4]{0}) parameter(0)\n"
		"  bi.1 = s32[] get-tuple-element(bp.1), index=0\n"
		"  one.1 = s32[] constant(1)\n"
		"  bn.1 = s32[] add(bi.1, one.1)\n"
		"  bx.1 = f32[4]{0} get-tuple-element(bp.1), index=1\n"
		"  ROOT bt.1 = (s32[], f32[4]{0}) tuple(bn.1, bx.1)\n"
		"}\n"
		"\n"
		"neg.1 {\n"
		"  np.1 = f32[4]{0} parameter(0)\n"
		"  ROOT negate.1 = f32[4]{0} negate(np.1)\n"
		"}\n"
		"\n"
		"id.1 {\n"
		"  ip.1 = f32[4]{0} parameter(0)\n"
		"  ROOT copy.1 = f32[4]{0} copy(ip.1)\n"
		"}\n"
		"\n"
		"add.1 {\n"
		"  x.1 = f32[] parameter(0)\n"
		"  y.1 = f32[] parameter(1)\n"
		"  ROOT add.2 = f32[] add(x.1, y.1)\n"
		"}\n"
		"\n"
		"less.1 {\n"
		"  l.1 = f32[] parameter(0)\n"
		"  r.1 = f32[] parameter(1)\n"
		"  ROOT lt.2 = pred[] compare(l.1, r.1), direction=LT\n"
		"}\n"
		"\n"
		"fused.1 {\n"
		"  fp.1 = f32[4]{0} parameter(0)\n"
		"  ROOT exponential.1 = f32[4]{0} exponential(fp.1)\n"
		"}\n"
		"\n"
		"ENTRY main.4 {\n"
		"  n.1 = s32[] parameter(0)\n"
		"  x.2 = f32[4]{0} parameter(1)\n"
		"  flag.1 = pred[] parameter(2)\n"
		"  init.1 = (s32[], f32[4]{0}) tuple(n.1, x.2)\n"
		"  while.1 = (s32[], f32[4]{0}) while(init.1), condition=cond.1, body=body.1\n"
		"  conditional.1 = f32[4]{0} conditional(flag.1, x.2, x.2), true_computation=neg.1, false_computation=id.1\n"
		"  conditional.2 = f32[4]{0} conditional(n.1, x.2, x.2, x.2), branch_computations={neg.1, id.1, neg.1}\n"
		"  call.1 = f32[4]{0} call(x.2), to_apply=neg.1\n"
		"  map.1 = f32[4]{0} map(x.2, x.2), dimensions={0}, to_apply=add.1\n"
		"  sort.1 = f32[4]{0} sort(x.2), dimensions={0}, is_stable=true, to_apply=less.1\n"
		"  fusion.1 = f32[4]{0} fusion(x.2), kind=kLoop, calls=fused.1\n"
		"  custom-call.1 = f32[4]{0} custom-call(x.2), custom_call_target=\"my\\\"target\", custom_call_has_side_effect=true, called_computations={neg.1}\n"
		"  custom-call.2 = f32[4]{0} custom-call(x.2), custom_call_target=\"cfg\", backend_config={\"k\": {\"v\": \"}\"}}\n"
		"  ROOT custom-call.3 = f32[4]{0} custom-call(x.2), custom_call_target=\"cfg\", backend_config=\"opaque \\\"bytes\\\"\"\n"
		"}\n"
		"\n");
}

static void prints_late_attributes_in_xla_order(void)
{
	assert_prints_back(
		"HloModule late, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n"
		"\n"
		"ENTRY main.5 {\n"
		"  x.1 = f32[4]{0} parameter(0), sharding={replicated}\n"
		"  collective-permute.1 = f32[4]{0} collective-permute(x.1), channel_id=3, source_target_pairs={{0,1},{1,0}}\n"
		"  ROOT custom-call.1 = f32[4]{0} custom-call(x.1), custom_call_target=\"Sharding\", sharding={devices=[2]<=[2]}, frontend_attributes={a=\"1\",b=\"two words\",c={n = 1 : i32, s = \"}\"}}, control-predecessors={collective-permute.1}, statistics={visualizing_index=1,stat-1=33}, metadata={op_name=\"jit(f)/x\" source_file=\"f.py\" source_line=3}, backend_config=\"cfg\"\n"
		"}\n"
		"\n");
}

static void prints_verbatim_attributes_where_xla_does(void)
{
	assert_prints_back(
		"HloModule raw, entry_computation_layout={(f32[8]{0}, f32[10,10]{0,1})->f32[8]{0}}\n"
		"\n"
		"add.1 {\n"
		"  x.1 = f32[] parameter(0)\n"
		"  y.1 = f32[] parameter(1)\n"
		"  ROOT add.2 = f32[] add(x.1, y.1)\n"
		"}\n"
		"\n"
		"neg.1 {\n"
		"  np.1 = f32[8]{0} parameter(0)\n"
		"  ROOT negate.1 = f32[8]{0} negate(np.1)\n"
		"}\n"
		"\n"
		"ENTRY main.9 {\n"
		"  input.1 = f32[8]{0} parameter(0), parameter_replication={true}, sharding={replicated}\n"
		"  m.1 = f32[10,10]{0,1} parameter(1)\n"
		"  all-reduce.1 = f32[8]{0} all-reduce(input.1), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=add.1\n"
		"  all-gather.1 = f32[16]{0} all-gather(input.1), channel_id=2, replica_groups={{0,1}}, constrain_layout=true, dimensions={0}, use_global_device_ids=true\n"
		"  reduce-scatter.1 = f32[4]{0} reduce-scatter(input.1), replica_groups=[1,2]<=[2], dimensions={0}, to_apply=add.1\n"
		"  topk.1 = (f32[10,2]{0,1}, s32[10,2]{0,1}) topk(m.1), k=2, largest=true\n"
		"  call.1 = f32[8]{0} call(input.1), to_apply=neg.1, is_composite=true, frontend_attributes={composite.name=\"foo.bar\"}\n"
		"  custom-call.1 = f32[8]{0} custom-call(input.1), custom_call_target=\"foo\", custom_call_has_side_effect=true, api_version=API_VERSION_STATUS_RETURNING\n"
		"  ROOT fusion.1 = f32[8]{0} fusion(input.1), kind=kLoop, output_to_operand_aliasing={{}: (0, {})}, calls=neg.1\n"
		"}\n"
		"\n");
}

static void prints_module_header_and_threads(void)
{
	assert_prints_back(
		"HloModule header, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {1}, must-alias) }, entry_computation_layout={(f32[4]{0}, (f32[], f32[2]{0}))->(f32[4]{0}, f32[2]{0})}, allow_spmd_sharding_propagation_to_parameters={false,true}, replica_count=2, num_partitions=4, frontend_attributes={key=\"value\"}\n"
		"\n"
		"side.1 {\n"
		"  s.1 = f32[4]{0} parameter(0)\n"
		"  ROOT negate.1 = f32[4]{0} negate(s.1)\n"
		"}, execution_thread=\"host\"\n"
		"\n"
		"ENTRY main.6 {\n"
		"  a.1 = f32[4]{0} parameter(0)\n"
		"  b.1 = (f32[], f32[2]{0}) parameter(1)\n"
		"  c.1 = f32[2]{0} get-tuple-element(b.1), index=1\n"
		"  ROOT tuple.1 = (f32[4]{0}, f32[2]{0}) tuple(a.1, c.1)\n"
		"}\n"
		"\n");
}

/* ---- styles ---------------------------------------------------------------------------- */

static const char old_style_text[] =
	"HloModule old, entry_computation_layout={(f32[2]{0}, f32[2]{0})->(f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0})}\n"
	"\n"
	"%add.1 (x.1: f32[], y.1: f32[]) -> f32[] {\n"
	"  %x.1 = f32[] parameter(0)\n"
	"  %y.1 = f32[] parameter(1)\n"
	"  ROOT %add.2 = f32[] add(f32[] %x.1, f32[] %y.1)\n"
	"}\n"
	"\n"
	"ENTRY %main.7 (a.1: f32[2], b.1: f32[2]) -> (f32[2], f32[2], f32[2], f32[2], f32[2], /*index=5*/f32[2]) {\n"
	"  %b.1 = f32[2]{0} parameter(1)\n"
	"  %a.1 = f32[2]{0} parameter(0)\n"
	"  %zero.1 = f32[] constant(0)\n"
	"  %reduce.1 = f32[] reduce(f32[2]{0} %a.1, f32[] %zero.1), dimensions={0}, to_apply=%add.1\n"
	"  %copy.1 = f32[2]{0} copy(f32[2]{0} %a.1), control-predecessors={%reduce.1}\n"
	"  ROOT %tuple.1 = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0}) tuple(f32[2]{0} %a.1, f32[2]{0} %b.1, f32[2]{0} %copy.1, f32[2]{0} %b.1, f32[2]{0} %a.1, /*index=5*/f32[2]{0} %b.1)\n"
	"}\n"
	"\n";

static const char new_style_text[] =
	"HloModule old, entry_computation_layout={(f32[2]{0}, f32[2]{0})->(f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0})}\n"
	"\n"
	"add.1 {\n"
	"  x.1 = f32[] parameter(0)\n"
	"  y.1 = f32[] parameter(1)\n"
	"  ROOT add.2 = f32[] add(x.1, y.1)\n"
	"}\n"
	"\n"
	"ENTRY main.7 {\n"
	"  b.1 = f32[2]{0} parameter(1)\n"
	"  a.1 = f32[2]{0} parameter(0)\n"
	"  zero.1 = f32[] constant(0)\n"
	"  reduce.1 = f32[] reduce(a.1, zero.1), dimensions={0}, to_apply=add.1\n"
	"  copy.1 = f32[2]{0} copy(a.1), control-predecessors={reduce.1}\n"
	"  ROOT tuple.1 = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0}) tuple(a.1, b.1, copy.1, b.1, a.1, b.1)\n"
	"}\n"
	"\n";

static void prints_old_style_with_percent_shapes_and_signatures(void)
{
	shs_module *m = shs_test_parse(old_style_text);

	CU_ASSERT_TRUE(m->style.percent);
	CU_ASSERT_TRUE(m->style.operand_shapes);
	CU_ASSERT_TRUE(m->style.signatures);
	shs_module_free(m);
	assert_prints_back(old_style_text);
}

static void prints_in_a_style_given_by_the_caller(void)
{
	const shs_text_style old = { .percent = true, .operand_shapes = true, .signatures = true };
	const shs_text_style plain = { 0 };

	assert_prints_as(new_style_text, &old, old_style_text);
	assert_prints_as(old_style_text, &plain, new_style_text);
}

static void prints_compact_entry_layout_without_spaces(void)
{
	const shs_text_style compact = { .compact_entry_layout = true };
	const char *text =
		"HloModule c, entry_computation_layout={(s8[],s8[],s8[],s8[],s8[],s8[])->(s8[])}\n"
		"\n"
		"ENTRY main.8 {\n"
		"  a.1 = s8[] parameter(0)\n"
		"  b.1 = s8[] parameter(1)\n"
		"  c.1 = s8[] parameter(2)\n"
		"  d.1 = s8[] parameter(3)\n"
		"  e.1 = s8[] parameter(4)\n"
		"  f.1 = s8[] parameter(5)\n"
		"  ROOT tuple.1 = (s8[]) tuple(f.1)\n"
		"}\n"
		"\n";
	shs_module *m = shs_test_parse(text);
	char *out = print_text(m, &compact);

	SHS_ASSERT_STR_EQ(out, text);
	free(out);
	out = print_text(m, &(shs_text_style){ 0 });
	CU_ASSERT_PTR_NOT_NULL_FATAL(strstr(out, "{(s8[], s8[], s8[], s8[], s8[], /*index=5*/s8[])->(s8[])}"));
	free(out);
	shs_module_free(m);
}

/* ---- shapes ---------------------------------------------------------------------------- */

static char *shape_text(const shs_shape *s, bool with_layout)
{
	shs_buf b = { 0 };

	shs_shape_print(&b, s, with_layout);
	return shs_buf_take(&b);
}

static void assert_shape(const shs_shape *s, bool with_layout, const char *want)
{
	char *got = shape_text(s, with_layout);

	SHS_ASSERT_STR_EQ(got, want);
	free(got);
}

static shs_layout *layout_of(shs_module *m, const char *m2m)
{
	shs_layout *l = shs_arena_calloc(m->arena, 1, sizeof(*l));

	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	l->minor_to_major = tb_list(m, m2m);
	return l;
}

static void prints_shapes_with_layouts(void)
{
	shs_module *m = tb_module("shapes");
	shs_shape s = tb_shape(m, "f32[2,3]");
	shs_shape scalar = tb_shape(m, "f32[]");
	shs_i64s tiles[2] = { tb_list(m, "8,128"), tb_list(m, "2,1") };

	assert_shape(&s, true, "f32[2,3]");
	s.layout = layout_of(m, "1,0");
	assert_shape(&s, true, "f32[2,3]{1,0}");
	assert_shape(&s, false, "f32[2,3]");
	s.layout->n_tiles = 2;
	s.layout->tiles = tiles;
	tiles[1].v[0] = INT64_MIN;
	s.layout->element_size_in_bits = 4;
	s.layout->memory_space = 2;
	assert_shape(&s, true, "f32[2,3]{1,0:T(8,128)(*,1)E(4)S(2)}");
	scalar.layout = layout_of(m, "");
	assert_shape(&scalar, true, "f32[]");
	scalar.layout->memory_space = 1;
	assert_shape(&scalar, true, "f32[]{:S(1)}");
	shs_module_free(m);
}

static void prints_dynamic_and_unbounded_dimensions(void)
{
	shs_module *m = tb_module("shapes");
	shs_shape s = tb_shape(m, "s32[4,3,2]");
	bool dynamic[3] = { true, false, true };

	s.dynamic = dynamic;
	s.dims[2] = INT64_MIN;
	assert_shape(&s, true, "s32[<=4,3,?]");
	shs_module_free(m);
}

static void prints_tuples_with_index_comments(void)
{
	shs_module *m = tb_module("shapes");
	shs_shape big = tb_shape(m, "(s32[], s32[], s32[], s32[], s32[], s32[], s32[], s32[], "
				    "s32[], s32[], s32[])");
	shs_shape nested = tb_shape(m, "((f32[], pred[2]), token[])");
	shs_shape empty = tb_shape(m, "()");

	assert_shape(&big, true,
		     "(s32[], s32[], s32[], s32[], s32[], /*index=5*/s32[], s32[], s32[], s32[], "
		     "s32[], /*index=10*/s32[])");
	assert_shape(&nested, true, "((f32[], pred[2]), token[])");
	assert_shape(&empty, true, "()");
	shs_module_free(m);
}

/* ---- literals -------------------------------------------------------------------------- */

/* A module whose entry is `ROOT c = <shape> constant(...)` holding size bytes of data. */
static shs_module *constant_module(const char *shape, const void *data, size_t size)
{
	shs_module *m = tb_module("consts");
	shs_computation *c = tb_comp(m, "main");
	shs_instr *k = tb_add(m, c, "c", SHS_OP_CONSTANT, shape, NULL);
	shs_literal *l = shs_arena_calloc(m->arena, 1, sizeof(*l));

	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	l->size = size;
	l->data = shs_arena_memdup(m->arena, data, size);
	k->literal = l;
	return m;
}

/* What m prints between `constant(` and the end of its line. Caller frees. */
static char *constant_text(const shs_module *m)
{
	char *all = print_text(m, NULL), *start, *end, *out;

	start = strstr(all, "constant(");
	CU_ASSERT_PTR_NOT_NULL_FATAL(start);
	start += strlen("constant(");
	end = strstr(start, ")\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(end);
	out = strndup(start, (size_t)(end - start));
	free(all);
	return out;
}

static void assert_constant(const char *shape, const void *data, size_t size, const char *want)
{
	shs_module *m = constant_module(shape, data, size);
	char *got = constant_text(m);

	SHS_ASSERT_STR_EQ(got, want);
	free(got);
	shs_module_free(m);
}

static void prints_array_literals_on_one_line(void)
{
	const int32_t v[24] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
				13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24 };
	const uint8_t pred[6] = { 0, 1, 0, 1, 0, 1 };

	assert_constant("s32[]", v, 4, "1");
	assert_constant("s32[3]", v, 12, "{1, 2, 3}");
	assert_constant("s32[0]", v, 0, "{}");
	assert_constant("s32[2,2]", v, 16, "{ { 1, 2 }, { 3, 4 } }");
	assert_constant("s32[1,3]", v, 12, "{ { 1, 2, 3 } }");
	assert_constant("s32[1,1]", v, 4, "{ {1} }");
	assert_constant("s32[2,1,2]", v, 16, "{ { { 1, 2 } }, { { 3, 4 } } }");
	assert_constant("s32[2,2,1,2]", v, 32,
			"{ { /*i0=0*/ { /*i1=0*/ { 1, 2 } }, { /*i1=1*/ { 3, 4 } } }, "
			"{ /*i0=1*/ { /*i1=0*/ { 5, 6 } }, { /*i1=1*/ { 7, 8 } } } }");
	assert_constant("s32[2,0,4,3]", v, 0, "{ { /*i0=0*/ }, { /*i0=1*/ } }");
	assert_constant("pred[2,3]", pred, 6, "{ { 0, 1, 0 }, { 1, 0, 1 } }");
	assert_constant("pred[]", pred + 1, 1, "true");
	assert_constant("pred[]", pred, 1, "false");
}

static void prints_tuple_elided_and_complex_literals(void)
{
	const float c64[4] = { 1, 2, -INFINITY, NAN };
	const float f[4] = { 1, 2, 2, 42 };
	shs_module *m = constant_module("(f32[2,1], f32[2])", f, 0);
	shs_literal *l = entry_instr(m, "c")->literal;
	char *got;

	assert_constant("c64[2]", c64, sizeof(c64), "{(1, 2), (-inf, nan)}");
	l->n_tuple = 2;
	l->tuple = shs_arena_calloc(m->arena, 2, sizeof(*l->tuple));
	l->tuple[0] = (shs_literal){ .size = 8, .data = (const uint8_t *)f };
	l->tuple[1] = (shs_literal){ .size = 8, .data = (const uint8_t *)(f + 2) };
	got = constant_text(m);
	SHS_ASSERT_STR_EQ(got, "( { {1}, {2} }, {2, 42} )");
	free(got);
	l->n_tuple = 0;
	l->elided = true;
	got = constant_text(m);
	SHS_ASSERT_STR_EQ(got, "{...}");
	free(got);
	shs_module_free(m);
}

static void never_reads_past_short_literal_data(void)
{
	const int32_t v[2] = { 1, 2 };

	assert_constant("s32[3]", v, sizeof(v), "{...}");
	assert_constant("s32[4000000000,0]", v, 0, "{...}");
}

static void prints_broken_references_without_crashing(void)
{
	shs_module *m = tb_module("broken");
	shs_computation *c = tb_comp(m, "main");
	shs_instr *p = tb_param(m, c, "p", "f32[2]", 0);
	shs_instr *k = tb_add(m, c, "k", SHS_OP_CALL, "f32[2]", "p", NULL);
	uint32_t bad = 99;
	char *out;

	p->shape.type = 200;
	k->operands[0] = bad;
	k->n_called = 1;
	k->called = &bad;
	k->n_control = 1;
	k->control = &bad;
	c->root = bad;
	m->entry = bad;
	out = print_text(m, &(shs_text_style){ .signatures = true, .operand_shapes = true });
	SHS_ASSERT_STR_EQ(out, "HloModule broken\n"
			       "\n"
			       "main (p: invalid[2]) ->  {\n"
			       "  p = invalid[2] parameter(0)\n"
			       "  k = f32[2] call(null), to_apply=?, control-predecessors={?}\n"
			       "}\n"
			       "\n");
	free(out);
	shs_module_free(m);
}

/* ---- floats ---------------------------------------------------------------------------- */

typedef struct fp_case {
	const char *shape;
	uint64_t bits;
	const char *text;
	bool parses; /* the text parser reads this type */
} fp_case;

static const fp_case fp_cases[] = {
	{ "f32[]", 0x3e000000, "0.125", true },
	{ "f32[]", 0x3f800000, "1", true },
	{ "f32[]", 0x80000000, "-0", true },
	{ "f32[]", 0x3dcccccd, "0.1", true },
	{ "f32[]", 0x3727c5ac, "1e-05", true },
	{ "f32[]", 0x34000000, "1.1920929e-07", true },
	{ "f32[]", 0x40490fdb, "3.14159274", true },
	{ "f32[]", 0xc2b17218, "-88.7228394", true },
	{ "f32[]", 0xff333332, "-2.38197633e+38", true },
	{ "f32[]", 0x7f7fffff, "3.40282347e+38", true },
	{ "f32[]", 0x00000001, "1.4013e-45", true },
	{ "f32[]", 0x3dcccccc, "0.099999994", true },
	{ "f32[]", 0x7f800000, "inf", true },
	{ "f32[]", 0xff800000, "-inf", true },
	{ "f32[]", 0x7fc00000, "nan", true },
	{ "f32[]", 0xffc00000, "-nan", true },
	{ "f32[]", 0x7fc00001, "nan(0x400001)", true },
	{ "f32[]", 0x7f800001, "nan(0x1)", true },
	{ "f64[]", 0x3fb999999999999aull, "0.1", true },
	{ "f64[]", 0x3fd5555555555555ull, "0.33333333333333331", true },
	{ "f64[]", 0x7fefffffffffffffull, "1.7976931348623157e+308", true },
	{ "f64[]", 0x3fb999999999999bull, "0.10000000000000002", true },
	{ "f64[]", 0x0000000000000001ull, "4.94065645841247e-324", true },
	{ "f64[]", 0xbff0000000000000ull, "-1", true },
	{ "f64[]", 0x7ff8000000000000ull, "nan", true },
	{ "f64[]", 0xfff0000000000000ull, "-inf", true },
	{ "bf16[]", 0x4049, "3.141", true },
	{ "bf16[]", 0x3c00, "0.007812", true },
	{ "bf16[]", 0x3e00, "0.125", true },
	{ "bf16[]", 0x424a, "50.5", true },
	{ "bf16[]", 0xbf80, "-1", true },
	{ "bf16[]", 0x7f7f, "3.39e+38", true },
	{ "bf16[]", 0xff80, "-inf", true },
	{ "bf16[]", 0x7fc0, "nan", true },
	{ "bf16[]", 0x7fc1, "nan(0x41)", true },
	{ "f16[]", 0x2000, "0.0078125", true },
	{ "f16[]", 0x3e00, "1.5", true },
	{ "f16[]", 0xbe00, "-1.5", true },
	{ "f16[]", 0x3555, "0.33325", true },
	{ "f16[]", 0x7bff, "65504", true },
	{ "f16[]", 0x0001, "5.9605e-08", true },
	{ "f16[]", 0x7c00, "inf", true },
	{ "f16[]", 0x7e00, "nan", true },
	{ "f16[]", 0xfe01, "-nan(0x201)", true },
	{ "f8e4m3fn[]", 0x38, "1", false },
	{ "f8e4m3fn[]", 0x7e, "448", false },
	{ "f8e4m3fn[]", 0x01, "0.00195", false },
	{ "f8e4m3fn[]", 0x7f, "nan", false },
	{ "f8e4m3fn[]", 0xff, "-nan", false },
	{ "f8e5m2[]", 0x3c, "1", false },
	{ "f8e5m2[]", 0x7b, "5.7e+04", false },
	{ "f8e5m2[]", 0x7c, "inf", false },
	{ "f8e5m2[]", 0x7e, "nan", false },
	{ "f8e5m2[]", 0x7d, "nan(0x1)", false },
	{ "f8e4m3b11fnuz[]", 0x58, "1", false },
	{ "f8e4m3b11fnuz[]", 0x80, "-nan", false },
	{ "f8e5m2fnuz[]", 0x40, "1", false },
	{ "f8e4m3fnuz[]", 0x40, "1", false },
	{ "f8e4m3[]", 0x78, "inf", false },
	{ "f8e3m4[]", 0x30, "1", false },
	{ "f4e2m1fn[]", 0x07, "6", false },
	{ "f4e2m1fn[]", 0x09, "-0.5", false },
	{ "f8e8m0fnu[]", 0x7f, "1", false },
	{ "f8e8m0fnu[]", 0x80, "2", false },
	{ "f8e8m0fnu[]", 0xff, "nan", false },
	{ "s4[]", 0xf8, "-8", true },
	{ "s4[]", 0x07, "7", true },
	{ "u4[]", 0x0f, "15", true },
	{ "s8[]", 0x80, "-128", true },
	{ "s64[]", 0x8000000000000000ull, "-9223372036854775808", true },
	{ "u64[]", 0xffffffffffffffffull, "18446744073709551615", true },
};

static size_t case_bytes(const fp_case *c)
{
	shs_module *m = tb_module("sizes");
	shs_shape s = tb_shape(m, c->shape);
	size_t n = (size_t)shs_elem_bytes(s.type);

	shs_module_free(m);
	return n;
}

static void formats_floats_as_xla_does(void)
{
	for (size_t k = 0; k < sizeof(fp_cases) / sizeof(fp_cases[0]); k++) {
		const fp_case *c = &fp_cases[k];
		uint8_t le[8];

		for (int b = 0; b < 8; b++)
			le[b] = (uint8_t)(c->bits >> (8 * b));
		assert_constant(c->shape, le, case_bytes(c), c->text);
	}
}

static void printed_numbers_parse_back_to_the_same_bits(void)
{
	for (size_t k = 0; k < sizeof(fp_cases) / sizeof(fp_cases[0]); k++) {
		const fp_case *c = &fp_cases[k];
		size_t n = case_bytes(c);
		uint8_t le[8];
		shs_module *m, *back;
		const shs_literal *l;
		char *text;

		if (!c->parses)
			continue;
		for (int b = 0; b < 8; b++)
			le[b] = (uint8_t)(c->bits >> (8 * b));
		m = constant_module(c->shape, le, n);
		text = print_text(m, NULL);
		back = shs_test_parse(text);
		l = entry_instr(back, "c")->literal;
		CU_ASSERT_PTR_NOT_NULL_FATAL(l);
		if (l->size != n || memcmp(l->data, le, n))
			fprintf(stderr, "\n  %s %s did not read back to 0x%llx\n", c->shape, c->text,
				(unsigned long long)c->bits);
		SHS_ASSERT_INT_EQ(l->size, n);
		CU_ASSERT_EQUAL_FATAL(memcmp(l->data, le, n), 0);
		free(text);
		shs_module_free(back);
		shs_module_free(m);
	}
}

/* ---- the corpus ------------------------------------------------------------------------ */

static char *read_corpus_file(const char *path)
{
	size_t len;
	char *text = (char *)shs_test_read_file(path, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	return text;
}

static shs_module *parse_file_text(const char *text, const char *path)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc = shs_text_load(text, strlen(text), path, &m, &e);

	SHS_ASSERT_OK(rc, &e);
	return m;
}

/* print(m) in style, parsed again, equals m. */
static void assert_reparses_equal(const shs_module *m, const shs_text_style *style,
				  const char *path)
{
	char *text = print_text(m, style);
	shs_module *back = parse_file_text(text, path);
	shs_buf why = { 0 };
	bool same = shs_module_equal(m, back, &why);

	if (!same)
		fprintf(stderr, "\n  %s: %s\n", path, why.data);
	CU_ASSERT_TRUE(same);
	shs_buf_free(&why);
	shs_module_free(back);
	free(text);
}

static void every_corpus_file_reparses_to_an_equal_module(void)
{
	size_t n;
	char **files = shs_test_corpus(&n);

	CU_ASSERT_TRUE_FATAL(n >= 3);
	for (size_t k = 0; k < n; k++) {
		char *text = read_corpus_file(files[k]);
		shs_module *m = parse_file_text(text, files[k]);
		shs_text_style other = m->style;

		assert_reparses_equal(m, NULL, files[k]);
		other.percent = !other.percent;
		other.operand_shapes = !other.operand_shapes;
		other.signatures = !other.signatures;
		assert_reparses_equal(m, &other, files[k]);
		shs_module_free(m);
		free(text);
		free(files[k]);
	}
	free(files);
}

/* The text XLA wrote, without the generator's leading comment line. */
static const char *skip_autogen_comment(const char *text)
{
	const char *nl;

	if (strncmp(text, "/* This file is autogenerated", strlen("/* This file is autogenerated")))
		return text;
	nl = strchr(text, '\n');
	return nl ? nl + 1 : text;
}

/* First line where a and b differ, for the message. */
static void report_first_difference(const char *path, const char *want, const char *got)
{
	size_t line = 1, k = 0;

	while (want[k] && want[k] == got[k])
		line += want[k++] == '\n';
	fprintf(stderr, "\n  %s prints differently from line %zu\n", path, line);
}

static void new_style_corpus_files_print_byte_for_byte(void)
{
	size_t n, checked = 0, differ = 0;
	char **files = shs_test_corpus(&n);

	for (size_t k = 0; k < n; k++) {
		char *text = read_corpus_file(files[k]);
		shs_module *m = parse_file_text(text, files[k]);

		if (!m->style.percent) {
			char *out = print_text(m, NULL);
			const char *want = skip_autogen_comment(text);

			if (strcmp(out, want)) {
				report_first_difference(files[k], want, out);
				differ++;
			}
			checked++;
			free(out);
		}
		shs_module_free(m);
		free(text);
		free(files[k]);
	}
	free(files);
	CU_ASSERT_TRUE(checked >= 2);
	SHS_ASSERT_INT_EQ(differ, 0);
}

/* Number of lines of a that differ from b, line by line; trailing blank lines ignored. */
static size_t count_differing_lines(const char *a, const char *b)
{
	size_t diff = 0;

	while (*a || *b) {
		size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");

		if (la != lb || memcmp(a, b, la)) {
			if (diff < 3)
				fprintf(stderr, "\n  want: %.*s\n  got:  %.*s\n", (int)(la > 300 ? 300 : la),
					a, (int)(lb > 300 ? 300 : lb), b);
			diff++;
		}
		a += la + (a[la] == '\n');
		b += lb + (b[lb] == '\n');
		if (!a[strspn(a, "\n")] && !b[strspn(b, "\n")])
			break;
	}
	return diff;
}

static void maxtext_prints_with_no_differing_lines(void)
{
	const char *path = shs_test_hlo_path("nv_maxtext_1n1g_jit_train_step_before_optimization.hlo");
	char *text = read_corpus_file(path);
	shs_module *m = parse_file_text(text, path);
	char *out = print_text(m, NULL);
	size_t diff = count_differing_lines(text, out);

	fprintf(stderr, "\n  MaxText: %zu differing lines\n", diff);
	SHS_ASSERT_INT_EQ(diff, 0);
	free(out);
	shs_module_free(m);
	free(text);
}

/* ---- shs_module_equal ------------------------------------------------------------------ */

static void equal_modules_compare_equal_whatever_their_style(void)
{
	shs_module *x = shs_test_parse(new_style_text), *y = shs_test_parse(old_style_text);
	shs_buf why = { 0 };

	CU_ASSERT_TRUE(shs_module_equal(x, x, &why));
	y->num_partitions = 8;
	y->replica_count = 2;
	if (!shs_module_equal(x, y, &why))
		fprintf(stderr, "\n  why: %s\n", why.data);
	CU_ASSERT_TRUE(shs_module_equal(x, y, &why));
	CU_ASSERT_EQUAL(why.len, 0);
	shs_buf_free(&why);
	shs_module_free(x);
	shs_module_free(y);
}

/* Parses new_style_text twice and hands back the second copy for changing. */
static shs_module *two_copies(shs_module **x)
{
	*x = shs_test_parse(new_style_text);
	return shs_test_parse(new_style_text);
}

static void assert_differs(const shs_module *x, const shs_module *y, const char *want)
{
	shs_buf why = { 0 };

	CU_ASSERT_FALSE(shs_module_equal(x, y, &why));
	assert_why_contains(&why, want);
	shs_buf_free(&why);
	CU_ASSERT_FALSE(shs_module_equal(x, y, NULL));
}

static void finds_a_changed_dimension(void)
{
	shs_module *x, *y = two_copies(&x);

	entry_instr(y, "a.1")->shape.dims[0] = 3;
	assert_differs(x, y,
		       "computation 'main.7', instruction 'a.1': shapes differ (f32[2]{0} vs f32[3]{0})");
	shs_module_free(x);
	shs_module_free(y);
}

static void finds_a_changed_layout(void)
{
	shs_module *x, *y = two_copies(&x);
	shs_instr *a = entry_instr(y, "a.1");

	a->shape.layout = NULL;
	assert_differs(x, y, "instruction 'a.1': shapes differ (f32[2]{0} vs f32[2]; layouts");
	shs_module_free(x);
	shs_module_free(y);
}

static void finds_a_changed_name(void)
{
	shs_module *x, *y = two_copies(&x);

	entry_instr(y, "copy.1")->name = "copy.2";
	assert_differs(x, y, "computation 'main.7', instruction 'copy.1': names differ ('copy.1' vs 'copy.2')");
	shs_module_free(x);
	shs_module_free(y);
}

static void finds_a_changed_attribute(void)
{
	shs_module *x, *y = two_copies(&x);
	shs_instr *r = entry_instr(y, "reduce.1");

	r->dimensions = tb_list(y, "1");
	assert_differs(x, y, "instruction 'reduce.1': dimensions differ ({0} vs {1})");
	r->dimensions = tb_list(y, "0");
	r->n_control = 1;
	r->control = shs_arena_calloc(y->arena, 1, sizeof(*r->control));
	assert_differs(x, y, "instruction 'reduce.1': control predecessors differ (0 vs 1)");
	shs_module_free(x);
	shs_module_free(y);
}

static void finds_a_changed_literal_byte(void)
{
	shs_module *x, *y = two_copies(&x);
	shs_literal *l = entry_instr(y, "zero.1")->literal;
	uint8_t *data = shs_arena_memdup(y->arena, l->data, l->size);

	CU_ASSERT_FATAL(l->size == 4);
	data[3] ^= 0x80;
	l->data = data;
	assert_differs(x, y,
		       "instruction 'zero.1': literal bytes differ at byte 3 (0x00 vs 0x80)");
	shs_module_free(x);
	shs_module_free(y);
}

static void finds_changes_in_built_modules(void)
{
	shs_module *x = tb_module("b"), *y = tb_module("b");
	shs_buf why = { 0 };

	tb_param(x, tb_comp(x, "main"), "p", "f32[2]", 0);
	tb_param(y, tb_comp(y, "main"), "p", "f32[2]", 0);
	CU_ASSERT_TRUE(shs_module_equal(x, y, &why));
	entry_instr(y, "p")->parameter_number = 1;
	CU_ASSERT_FALSE(shs_module_equal(x, y, &why));
	assert_why_contains(&why, "instruction 'p': parameter_number differ (0 vs 1)");
	shs_buf_free(&why);
	shs_module_free(x);
	shs_module_free(y);
}

CU_TestInfo print_tests[] = {
	{ "prints dimensions, index, slice, padding, compare attributes", prints_dimension_attributes },
	{ "prints dot, convolution and window attributes", prints_dot_convolution_and_window },
	{ "prints gather and scatter attributes", prints_gather_and_scatter },
	{ "prints called computations and custom-call attributes", prints_called_computations },
	{ "prints sharding, frontend attributes, control, raw, metadata, backend_config in XLA order",
	  prints_late_attributes_in_xla_order },
	{ "prints verbatim attributes where XLA prints them", prints_verbatim_attributes_where_xla_does },
	{ "prints the module header and execution threads", prints_module_header_and_threads },
	{ "prints the old style: %names, operand shapes, signatures",
	  prints_old_style_with_percent_shapes_and_signatures },
	{ "prints in a style given by the caller", prints_in_a_style_given_by_the_caller },
	{ "prints a compact entry layout without spaces", prints_compact_entry_layout_without_spaces },
	{ "prints shapes with layouts, tiles, element size, memory space", prints_shapes_with_layouts },
	{ "prints dynamic and unbounded dimensions", prints_dynamic_and_unbounded_dimensions },
	{ "prints tuples with an index comment before every fifth element",
	  prints_tuples_with_index_comments },
	{ "prints array literals on one line as XLA does", prints_array_literals_on_one_line },
	{ "prints tuple, elided and complex literals", prints_tuple_elided_and_complex_literals },
	{ "never reads past short literal data", never_reads_past_short_literal_data },
	{ "prints broken references without crashing", prints_broken_references_without_crashing },
	{ "formats every float type as XLA's RoundTripFpToString", formats_floats_as_xla_does },
	{ "printed numbers parse back to the same bits", printed_numbers_parse_back_to_the_same_bits },
	{ "every corpus file re-parses to an equal module, in both styles",
	  every_corpus_file_reparses_to_an_equal_module },
	{ "new-style corpus files print byte for byte", new_style_corpus_files_print_byte_for_byte },
	{ "MaxText prints with no differing lines", maxtext_prints_with_no_differing_lines },
	{ "equal modules compare equal whatever their style",
	  equal_modules_compare_equal_whatever_their_style },
	{ "module_equal finds a changed dimension", finds_a_changed_dimension },
	{ "module_equal finds a changed layout", finds_a_changed_layout },
	{ "module_equal finds a changed name", finds_a_changed_name },
	{ "module_equal finds a changed attribute", finds_a_changed_attribute },
	{ "module_equal finds a changed literal byte", finds_a_changed_literal_byte },
	{ "module_equal works on modules built through the IR API", finds_changes_in_built_modules },
	CU_TEST_INFO_NULL,
};
