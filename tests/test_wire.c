/* Shared helpers of the protobuf suites: a small wire writer and reader, hand-encoded modules,
 * and a module built with the IR API that sets every attribute. */
#include <stdlib.h>
#include <string.h>

#include "sharding.h"
#include "test_wire.h"

/* ---- A small wire writer and reader, independent of the library's ---------------------- */

void w_varint(shs_buf *b, uint64_t v)
{
	while (v >= 0x80) {
		shs_buf_putc(b, (char)((v & 0x7f) | 0x80));
		v >>= 7;
	}
	shs_buf_putc(b, (char)v);
}

static void w_tag(shs_buf *b, uint32_t field, int wire)
{
	w_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

void w_uint(shs_buf *b, uint32_t field, uint64_t v)
{
	w_tag(b, field, W_VARINT);
	w_varint(b, v);
}

void w_bytes(shs_buf *b, uint32_t field, const void *p, size_t n)
{
	w_tag(b, field, W_LEN);
	w_varint(b, n);
	shs_buf_put(b, p, n);
}

void w_str(shs_buf *b, uint32_t field, const char *s)
{
	w_bytes(b, field, s, strlen(s));
}

void w_msg(shs_buf *b, uint32_t field, const shs_buf *inner)
{
	w_bytes(b, field, inner->data, inner->len);
}

void w_packed(shs_buf *b, uint32_t field, const int64_t *v, size_t n)
{
	shs_buf tmp = { 0 };

	for (size_t i = 0; i < n; i++)
		w_varint(&tmp, (uint64_t)v[i]);
	w_msg(b, field, &tmp);
	shs_buf_free(&tmp);
}

static bool r_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *pos < len && shift < 64; shift += 7) {
		uint8_t c = p[(*pos)++];

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/* The nth (0-based) occurrence of field in msg: its varint value or its payload. */
bool r_field(const uint8_t *p, size_t len, uint32_t field, int nth, uint64_t *val,
	     const uint8_t **payload, size_t *plen)
{
	size_t pos = 0;

	while (pos < len) {
		uint64_t tag, v = 0, n = 0;
		const uint8_t *at = NULL;

		if (!r_varint(p, len, &pos, &tag))
			return false;
		switch (tag & 7) {
		case 0:
			if (!r_varint(p, len, &pos, &v))
				return false;
			break;
		case 1:
			pos += 8;
			break;
		case 2:
			if (!r_varint(p, len, &pos, &n) || n > len - pos)
				return false;
			at = p + pos;
			pos += n;
			break;
		case 5:
			pos += 4;
			break;
		default:
			return false;
		}
		if (tag >> 3 == field && nth-- == 0) {
			if (val)
				*val = v;
			if (payload) {
				*payload = at;
				*plen = (size_t)n;
			}
			return true;
		}
	}
	return false;
}

/* ---- Hand-encoded modules ------------------------------------------------------------------ */

/* ShapeProto of type t with dims, with a {rank-1,...,0} layout when rank > 0. */
void shape_msg(shs_buf *b, int t, const int64_t *dims, size_t rank)
{
	shs_buf layout = { 0 };
	int64_t m2m[8];

	w_uint(b, SHAPE_TYPE, (uint64_t)t);
	if (!rank)
		return;
	w_packed(b, SHAPE_DIMS, dims, rank);
	for (size_t i = 0; i < rank; i++)
		m2m[i] = (int64_t)(rank - 1 - i);
	w_packed(&layout, LAYOUT_M2M, m2m, rank);
	w_msg(b, SHAPE_LAYOUT, &layout);
	shs_buf_free(&layout);
}

void instr_msg(shs_buf *b, const char *name, const char *opcode, int64_t id,
	       const int64_t *operands, size_t n_operands)
{
	shs_buf shape = { 0 };
	const int64_t dims[] = { 4 };

	w_str(b, INSTR_NAME, name);
	w_str(b, INSTR_OPCODE, opcode);
	shape_msg(&shape, T_F32, dims, 1);
	w_msg(b, INSTR_SHAPE, &shape);
	w_uint(b, INSTR_ID, (uint64_t)id);
	if (n_operands)
		w_packed(b, INSTR_OPERANDS, operands, n_operands);
	shs_buf_free(&shape);
}

/* What the test module carries beyond the schema, to find again after a save. */
const uint8_t cdl_payload[CDL_PAYLOAD_LEN] = { 0x0a, 0x04, 0x0a, 0x02, 0x00, 0x01 };
const uint8_t profile_payload[PROFILE_PAYLOAD_LEN] = { 0x0a, 0x04, 'p', 'r', 'o', 'f' };
const uint8_t buffer_payload[BUFFER_PAYLOAD_LEN] = { 0x08, 0x09, 0x12, 0x01, 'x' };

void module_msg(shs_buf *mod, const mod_opts *o)
{
	shs_buf p0 = { 0 }, neg = { 0 }, comp = { 0 }, cdl = { 0 };
	int64_t operand = o->neg_operand ? o->neg_operand : 1;

	instr_msg(&p0, "p0", "parameter", 1, NULL, 0);
	if (o->unknown) {
		w_uint(&p0, INSTR_ALL_REDUCE_ID, 77);
		w_uint(&p0, INSTR_HOST_TRANSFER, 1);
		shs_buf_put(&cdl, cdl_payload, sizeof(cdl_payload));
		w_msg(&p0, INSTR_DEVICE_LIST, &cdl);
	}
	instr_msg(&neg, "neg", o->neg_opcode ? o->neg_opcode : "negate",
		  o->neg_id ? o->neg_id : 2, &operand, 1);
	if (o->called)
		w_packed(&neg, INSTR_CALLED, &o->called, 1);
	w_str(&comp, COMP_NAME, "main");
	w_msg(&comp, COMP_INSTRS, &p0);
	w_msg(&comp, COMP_INSTRS, &neg);
	w_uint(&comp, COMP_ID, 10);
	w_uint(&comp, COMP_ROOT, o->neg_id ? (uint64_t)o->neg_id : 2);
	if (o->unknown)
		w_uint(&comp, COMP_IS_FUSION, 1);
	w_str(mod, MOD_NAME, o->name ? o->name : "m");
	w_str(mod, MOD_ENTRY_NAME, "main");
	w_msg(mod, MOD_COMPS, &comp);
	w_uint(mod, MOD_ENTRY_ID, 10);
	if (o->unknown) {
		w_uint(mod, MOD_AUTO_SPMD, 1);
		w_bytes(mod, MOD_PROFILE_INFO, profile_payload, sizeof(profile_payload));
	}
	shs_buf_free(&p0);
	shs_buf_free(&neg);
	shs_buf_free(&comp);
	shs_buf_free(&cdl);
}

void wrap_msg(shs_buf *out, const shs_buf *mod, bool unknown)
{
	w_msg(out, HLO_MODULE, mod);
	if (unknown)
		w_bytes(out, HLO_BUFFER_ASSIGNMENT, buffer_payload, sizeof(buffer_payload));
}

/* A module whose one instruction has the given shape and literal messages. */
void module_with(shs_buf *mod, const char *name, const char *opcode, const shs_buf *shape,
		 const shs_buf *lit)
{
	shs_buf in = { 0 }, comp = { 0 };

	w_str(&in, INSTR_NAME, name);
	w_str(&in, INSTR_OPCODE, opcode);
	w_msg(&in, INSTR_SHAPE, shape);
	if (lit)
		w_msg(&in, INSTR_LITERAL, lit);
	w_uint(&in, INSTR_ID, 1);
	w_str(&comp, COMP_NAME, "main");
	w_msg(&comp, COMP_INSTRS, &in);
	w_uint(&comp, COMP_ROOT, 1);
	w_str(mod, MOD_NAME, "m");
	w_msg(mod, MOD_COMPS, &comp);
	shs_buf_free(&in);
	shs_buf_free(&comp);
}

/* A module of one computation "main" holding the given instruction messages; root id 1. */
void module_of(shs_buf *mod, const shs_buf *instrs, size_t n)
{
	shs_buf comp = { 0 };

	w_str(&comp, COMP_NAME, "main");
	for (size_t i = 0; i < n; i++)
		w_msg(&comp, COMP_INSTRS, &instrs[i]);
	w_uint(&comp, COMP_ROOT, 1);
	w_str(mod, MOD_NAME, "m");
	w_msg(mod, MOD_COMPS, &comp);
	shs_buf_free(&comp);
}

shs_module *load_ok(const shs_buf *b)
{
	shs_module *m = NULL;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_proto_load((const uint8_t *)b->data, b->len, "test.pb", &m, &e), &e);
	return m;
}

/* Loads b, expecting failure with every needle in the message. */
void load_fails(const shs_buf *b, int code, const char *const *needles)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc = shs_proto_load((const uint8_t *)b->data, b->len, "bad.pb", &m, &e);

	SHS_ASSERT_INT_EQ(rc, code);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_EQUAL(strncmp(e.msg, "bad.pb: ", 8), 0);
	for (; *needles; needles++) {
		if (!strstr(e.msg, *needles))
			fprintf(stderr, "\n  message \"%s\" lacks \"%s\"\n", e.msg, *needles);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, *needles));
	}
}

void save_ok(const shs_module *m, bool wrapped, uint8_t **out, size_t *len)
{
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_proto_save(m, wrapped, out, len, &e), &e);
}

/* ---- Building modules with the IR API ------------------------------------------------------ */

typedef struct builder {
	shs_module *m;
	int64_t next_id;
} builder;

static void *b_alloc(builder *b, size_t n)
{
	void *p = shs_arena_calloc(b->m->arena, 1, n);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	return p;
}

static int64_t *b_i64(builder *b, const int64_t *v, uint32_t n)
{
	return n ? shs_arena_memdup(b->m->arena, v, n * sizeof(*v)) : NULL;
}

static shs_i64s b_list(builder *b, const int64_t *v, uint32_t n)
{
	shs_i64s l = { n, b_i64(b, v, n) };

	return l;
}

static void b_shape(builder *b, shs_shape *s, int type, const int64_t *dims, uint32_t rank,
		    const int64_t *m2m)
{
	memset(s, 0, sizeof(*s));
	s->type = type;
	s->rank = rank;
	s->dims = b_i64(b, dims, rank);
	if (m2m) {
		s->layout = b_alloc(b, sizeof(*s->layout));
		s->layout->minor_to_major = b_list(b, m2m, rank);
	}
}

static shs_computation *b_comp(builder *b, const char *name)
{
	shs_computation *c = b_alloc(b, sizeof(*c));

	c->name = shs_arena_strdup(b->m->arena, name);
	c->id = b->next_id++;
	SHS_ASSERT_INT_EQ(shs_module_add_comp(b->m, c), SHS_OK);
	return c;
}

static shs_instr *b_instr(builder *b, shs_computation *c, const char *name, shs_opcode op,
			  int type, const int64_t *dims, uint32_t rank)
{
	shs_instr *in = b_alloc(b, sizeof(*in));

	in->name = shs_arena_strdup(b->m->arena, name);
	in->op = op;
	in->id = b->next_id++;
	b_shape(b, &in->shape, type, dims, rank, NULL);
	SHS_ASSERT_INT_EQ(shs_comp_add_instr(b->m, c, in), SHS_OK);
	return in;
}

static void b_operands(builder *b, shs_instr *in, const uint32_t *idx, uint32_t n)
{
	in->operands = shs_arena_memdup(b->m->arena, idx, n * sizeof(*idx));
	in->n_operands = n;
}

static shs_sharding *b_sharding(builder *b, const char *text)
{
	shs_sharding *s = NULL;
	size_t used = 0, off = 0;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_sharding_parse(b->m->arena, text, strlen(text), &used, &s, &off, &e),
		      &e);
	return s;
}

static shs_literal *b_literal(builder *b, const void *data, size_t size)
{
	shs_literal *l = b_alloc(b, sizeof(*l));

	l->size = size;
	l->data = shs_arena_memdup(b->m->arena, data, size);
	return l;
}

/* add(x, y) over f32 scalars. */
static shs_computation *b_adder(builder *b)
{
	shs_computation *c = b_comp(b, "add");
	shs_instr *y, *s;
	const uint32_t xy[] = { 0, 1 };

	b_instr(b, c, "x", SHS_OP_PARAMETER, SHS_F32, NULL, 0);
	y = b_instr(b, c, "y", SHS_OP_PARAMETER, SHS_F32, NULL, 0);
	y->parameter_number = 1;
	s = b_instr(b, c, "s", SHS_OP_ADD, SHS_F32, NULL, 0);
	b_operands(b, s, xy, 2);
	c->root = 2;
	c->execution_thread = "host";
	return c;
}

/* Literal-holding constants of several element types and layouts. */
static void b_constants(builder *b, shs_computation *c)
{
	static const int64_t d23[] = { 2, 3 }, d3[] = { 3 }, d2[] = { 2 }, m2m01[] = { 0, 1 };
	static const int32_t s32v[] = { 1, 2, 3, 4, 5, 6 };
	static const uint16_t bf16v[] = { 0x3f80, 0x4000, 0xc040 };
	static const uint8_t predv[] = { 1, 0 };
	static const float c64v[] = { 1.5f, -2.0f, 0.25f, 8.0f };
	shs_instr *in;

	in = b_instr(b, c, "c_s32", SHS_OP_CONSTANT, SHS_S32, d23, 2);
	b_shape(b, &in->shape, SHS_S32, d23, 2, m2m01);
	in->literal = b_literal(b, s32v, sizeof(s32v));
	in = b_instr(b, c, "c_bf16", SHS_OP_CONSTANT, SHS_BF16, d3, 1);
	in->literal = b_literal(b, bf16v, sizeof(bf16v));
	in = b_instr(b, c, "c_pred", SHS_OP_CONSTANT, SHS_PRED, d2, 1);
	in->literal = b_literal(b, predv, sizeof(predv));
	in = b_instr(b, c, "c_c64", SHS_OP_CONSTANT, SHS_C64, d2, 1);
	in->literal = b_literal(b, c64v, sizeof(c64v));
	in = b_instr(b, c, "c_elided", SHS_OP_CONSTANT, SHS_F32, d3, 1);
	in->literal = b_alloc(b, sizeof(*in->literal));
	in->literal->elided = true;
	in = b_instr(b, c, "c_tuple", SHS_OP_CONSTANT, SHS_TUPLE, NULL, 0);
	in->shape.n_tuple = 2;
	in->shape.tuple = b_alloc(b, 2 * sizeof(*in->shape.tuple));
	b_shape(b, &in->shape.tuple[0], SHS_S32, NULL, 0, NULL);
	b_shape(b, &in->shape.tuple[1], SHS_S32, d2, 1, NULL);
	in->literal = b_alloc(b, sizeof(*in->literal));
	in->literal->n_tuple = 2;
	in->literal->tuple = b_alloc(b, 2 * sizeof(*in->literal->tuple));
	in->literal->tuple[0] = *b_literal(b, s32v, sizeof(int32_t));
	in->literal->tuple[1] = *b_literal(b, s32v + 2, 2 * sizeof(int32_t));
}

/* Instructions with dimension numbers, windows, slices, padding. */
static void b_structured(builder *b, shs_computation *c, uint32_t adder)
{
	static const int64_t d48[] = { 4, 8 }, d816[] = { 8, 16 }, d416[] = { 4, 16 },
		d28[] = { 2, 8 }, one[] = { 1 }, zero[] = { 0 }, two[] = { 2 };
	static const int32_t prec[] = { SHS_PRECISION_DEFAULT, SHS_PRECISION_HIGHEST };
	const uint32_t p0p1[] = { 0, 1 }, p0[] = { 0 };
	shs_instr *in;

	in = b_instr(b, c, "dot", SHS_OP_DOT, SHS_F32, d416, 2);
	b_operands(b, in, p0p1, 2);
	in->dot = b_alloc(b, sizeof(*in->dot));
	in->dot->lhs_contracting = b_list(b, one, 1);
	in->dot->rhs_contracting = b_list(b, zero, 1);
	in->precision = shs_arena_memdup(b->m->arena, prec, sizeof(prec));
	in->n_precision = 2;
	in = b_instr(b, c, "sl", SHS_OP_SLICE, SHS_F32, d28, 2);
	b_operands(b, in, p0, 1);
	in->slice = b_alloc(b, 2 * sizeof(*in->slice));
	in->slice[0] = (shs_slice_dim){ 0, 2, 1 };
	in->slice[1] = (shs_slice_dim){ 0, 8, 1 };
	in->n_slice = 2;
	in = b_instr(b, c, "rw", SHS_OP_REDUCE_WINDOW, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->window = b_alloc(b, 2 * sizeof(*in->window));
	in->window[0] = (shs_window_dim){ 2, 1, 0, 1, 1, 1, false };
	in->window[1] = (shs_window_dim){ 1, 1, 0, 0, 1, 2, true };
	in->n_window = 2;
	in->called = shs_arena_memdup(b->m->arena, &adder, sizeof(adder));
	in->n_called = 1;
	in = b_instr(b, c, "pad", SHS_OP_PAD, SHS_F32, d816, 2);
	b_operands(b, in, p0, 1);
	in->padding = b_alloc(b, 2 * sizeof(*in->padding));
	in->padding[0] = (shs_pad_dim){ 1, 3, 0 };
	in->padding[1] = (shs_pad_dim){ 0, 0, 1 };
	in->n_padding = 2;
	in = b_instr(b, c, "g", SHS_OP_GATHER, SHS_F32, d48, 2);
	b_operands(b, in, p0p1, 2);
	in->gather = b_alloc(b, sizeof(*in->gather));
	in->gather->offset_dims = b_list(b, one, 1);
	in->gather->start_index_map = b_list(b, zero, 1);
	in->gather->index_vector_dim = 1;
	in->gather_slice_sizes = b_list(b, d48, 2);
	in->indices_are_sorted = true;
	in = b_instr(b, c, "sc", SHS_OP_SCATTER, SHS_F32, d48, 2);
	b_operands(b, in, p0p1, 2);
	in->scatter = b_alloc(b, sizeof(*in->scatter));
	in->scatter->update_window_dims = b_list(b, one, 1);
	in->scatter->inserted_window_dims = b_list(b, zero, 1);
	in->scatter->index_vector_dim = 1;
	in->unique_indices = true;
	in = b_instr(b, c, "conv", SHS_OP_CONVOLUTION, SHS_F32, d48, 2);
	b_operands(b, in, p0p1, 2);
	in->conv = b_alloc(b, sizeof(*in->conv));
	in->conv->input_feature = 1;
	in->conv->kernel_output_feature = 1;
	in->conv->output_feature = 1;
	/* each part names each dim once, as dim_labels can say: b f 0, i o 0, b f 0 */
	in->conv->input_spatial = b_list(b, two, 1);
	in->conv->kernel_spatial = b_list(b, two, 1);
	in->conv->output_spatial = b_list(b, two, 1);
	in->feature_group_count = 1;
	in->batch_group_count = 1;
	in->window = b_alloc(b, sizeof(*in->window));
}

/* Strings, flags, metadata, sharding, attributes, control edges and unknown bytes. */
static void b_misc(builder *b, shs_computation *c)
{
	static const int64_t d48[] = { 4, 8 }, sizes[] = { 2, 2 };
	static const uint8_t unknown45[] = { 0xe8, 0x02, 0x4d }; /* field 45 = 77 */
	const uint32_t p0[] = { 0 }, ctl[] = { 1 };
	shs_instr *in;

	in = b_instr(b, c, "cmp", SHS_OP_COMPARE, SHS_PRED, d48, 2);
	b_operands(b, in, p0, 1);
	in->comparison_direction = "LT";
	in->comparison_type = "TOTALORDER";
	in = b_instr(b, c, "cc", SHS_OP_CUSTOM_CALL, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->custom_call_target = "Sharding";
	in->custom_call_has_side_effect = true;
	in->backend_config = (shs_bytes){ 5, (const uint8_t *)"cfg\0x" };
	in->frontend_attrs = b_alloc(b, sizeof(*in->frontend_attrs));
	in->frontend_attrs[0] = (shs_attr_kv){ "xla.sdy.sharding", "#sdy.sharding<@mesh, []>" };
	in->n_frontend_attrs = 1;
	in->sharding = b_sharding(b, "{devices=[2,1]<=[2]}");
	in->metadata = b_alloc(b, sizeof(*in->metadata));
	in->metadata->op_name = "jit(f)/dot";
	in->metadata->source_file = "model.py";
	in->metadata->source_line = 42;
	in->control = shs_arena_memdup(b->m->arena, ctl, sizeof(ctl));
	in->n_control = 1;
	in->unknown = (shs_bytes){ sizeof(unknown45), unknown45 };
	in = b_instr(b, c, "ds", SHS_OP_DYNAMIC_SLICE, SHS_F32, sizes, 2);
	b_operands(b, in, p0, 1);
	in->dynamic_slice_sizes = b_list(b, sizes, 2);
	in = b_instr(b, c, "rp", SHS_OP_REDUCE_PRECISION, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->exponent_bits = 5;
	in->mantissa_bits = 10;
	in = b_instr(b, c, "ar", SHS_OP_ALL_REDUCE, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->channel_id = 5;
	in = b_instr(b, c, "fu", SHS_OP_FUSION, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->fusion_kind = "kLoop";
	in = b_instr(b, c, "srt", SHS_OP_SORT, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->is_stable = true;
	in->dimensions = b_list(b, sizes, 1);
	in = b_instr(b, c, "gte", SHS_OP_GET_TUPLE_ELEMENT, SHS_S32, sizes, 1);
	in->tuple_index = 1;
	in->largest = true;
}

/* A module that sets every attribute the proto schema carries. */
shs_module *rich_module(void)
{
	static const int64_t d48[] = { 4, 8 }, d816[] = { 8, 16 }, m2m10[] = { 1, 0 };
	builder b = { shs_module_new(0), 100 };
	shs_computation *main_c;
	shs_instr *p0, *p1, *root;
	shs_program_shape *ps;
	static const uint8_t unknown16[] = { 0x80, 0x01, 0x01 }; /* field 16 = true */

	CU_ASSERT_PTR_NOT_NULL_FATAL(b.m);
	b.m->name = "rich";
	b.m->id = 7;
	b_adder(&b);
	main_c = b_comp(&b, "main");
	p0 = b_instr(&b, main_c, "p0", SHS_OP_PARAMETER, SHS_F32, d48, 2);
	b_shape(&b, &p0->shape, SHS_F32, d48, 2, m2m10);
	p1 = b_instr(&b, main_c, "p1", SHS_OP_PARAMETER, SHS_F32, d816, 2);
	p1->parameter_number = 1;
	b_constants(&b, main_c);
	b_structured(&b, main_c, 0);
	b_misc(&b, main_c);
	root = b_instr(&b, main_c, "root", SHS_OP_TUPLE, SHS_TUPLE, NULL, 0);
	root->shape.n_tuple = 1;
	root->shape.tuple = b_alloc(&b, sizeof(*root->shape.tuple));
	root->shape.tuple[0] = p0->shape;
	b_operands(&b, root, (const uint32_t[]){ 0 }, 1);
	main_c->root = main_c->n_instrs - 1;
	b.m->entry = 1;

	ps = b_alloc(&b, sizeof(*ps));
	ps->n_params = 2;
	ps->params = b_alloc(&b, 2 * sizeof(*ps->params));
	ps->params[0] = p0->shape;
	ps->params[1] = p1->shape;
	ps->param_names = b_alloc(&b, 2 * sizeof(*ps->param_names));
	ps->param_names[0] = "p0";
	ps->param_names[1] = "p1";
	ps->result = root->shape;
	b.m->entry_layout = ps;
	b.m->aliases = b_alloc(&b, sizeof(*b.m->aliases));
	b.m->aliases[0].output_index = b_list(&b, (const int64_t[]){ 0 }, 1);
	b.m->aliases[0].kind = 1;
	b.m->n_aliases = 1;
	b.m->frontend_attrs = b_alloc(&b, sizeof(*b.m->frontend_attrs));
	b.m->frontend_attrs[0] = (shs_attr_kv){ "xla.sdy.meshes", "{mesh = #sdy.mesh<[\"x\"=2]>}" };
	b.m->n_frontend_attrs = 1;
	b.m->unknown = (shs_bytes){ sizeof(unknown16), unknown16 };
	return b.m;
}
