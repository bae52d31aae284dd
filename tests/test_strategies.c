/* Tests: the per-op strategy plugins (all but dot) through the host, PROPAGATE and ENUMERATE. */
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "host.h"
#include "plan.h"
#include "test_util.h"

enum {
	TEXT_MAX = 16384,   /* the formatted candidates of one instruction */
	SPEC_TEXT = 256,    /* one formatted spec */
	MAX_LEAVES = 8      /* leaves of the hints a test passes */
};

/* The plugins under test (dot.so is tested by its own suite). */
static const char *const rule_plugins[] = {
	"elementwise.so", "reduce.so", "movement.so", "gather.so", "control.so", "param.so",
	"custom_call.so", NULL
};

/* ---- Fixture ---- */

typedef struct fixture {
	shs_host *host;
	shs_module *m;
	shs_mesh mesh;
	shs_cands cands;
	int warnings;           /* warnings other than "no strategy" */
	char text[TEXT_MAX];    /* the candidates, one line each */
} fixture;

static void on_warn(void *user, const char *msg)
{
	fixture *f = user;

	if (strstr(msg, "no strategy"))
		return;
	f->warnings++;
	fprintf(stderr, "\n  host warning: %s\n", msg);
}

/* Loads the rule plugins and parses text; mesh_text like "data=2,tensor=4". */
static void fx_init(fixture *f, const char *text, const char *mesh_text)
{
	static char names[SHS_MESH_MAX_AXES][32];
	const char *p = mesh_text;
	shs_err e = { 0 };

	memset(f, 0, sizeof(*f));
	f->host = shs_host_new(on_warn, f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f->host);
	for (size_t k = 0; rule_plugins[k]; k++) {
		char path[1024];

		snprintf(path, sizeof(path), "%s/%s", SHS_STRATEGY_DIR, rule_plugins[k]);
		SHS_ASSERT_OK(shs_host_load(f->host, path, &e), &e);
	}
	while (*p) {
		uint32_t a = f->mesh.n_axes++;
		size_t len = strcspn(p, "=");

		snprintf(names[a], sizeof(names[a]), "%.*s", (int)len, p);
		f->mesh.names[a] = names[a];
		f->mesh.sizes[a] = strtoll(p + len + 1, NULL, 10);
		p += len + 1 + strcspn(p + len + 1, ",");
		if (*p == ',')
			p++;
	}
	f->m = text ? shs_test_parse(text) : NULL;
}

static void fx_free(fixture *f)
{
	shs_cands_free(&f->cands);
	shs_module_free(f->m);
	shs_host_free(f->host);
	CU_ASSERT_EQUAL(f->warnings, 0);
}

/* The instruction named name in any computation (fails the test when there is none). */
static const shs_instr *fx_find(const fixture *f, const char *name, const shs_computation **comp)
{
	for (uint32_t c = 0; c < f->m->n_comps; c++) {
		const shs_computation *cc = f->m->comps[c];

		for (uint32_t k = 0; k < cc->n_instrs; k++) {
			if (!strcmp(cc->instrs[k]->name, name)) {
				*comp = cc;
				return cc->instrs[k];
			}
		}
	}
	fprintf(stderr, "\n  no instruction %s\n", name);
	CU_FAIL_FATAL("instruction not found");
	return NULL;
}

/* "[data,-,fsdp+tensor]" for s ("p" appended when padded). */
static void spec_fmt(char *buf, size_t cap, const shs_mesh *mesh, const shs_pspec *s)
{
	size_t len = (size_t)snprintf(buf, cap, "[");

	for (uint32_t d = 0; d < s->rank && len < cap; d++) {
		if (d)
			len += (size_t)snprintf(buf + len, cap - len, ",");
		if (!s->dims[d].n)
			len += (size_t)snprintf(buf + len, cap - len, "-");
		for (uint32_t k = 0; k < s->dims[d].n && len < cap; k++)
			len += (size_t)snprintf(buf + len, cap - len, "%s%s", k ? "+" : "",
						mesh->names[s->dims[d].axes[k]]);
	}
	if (len < cap)
		snprintf(buf + len, cap - len, "]%s", s->padded ? "p" : "");
}

/* The spec written as spec_fmt writes it (without "p"). */
static shs_pspec spec_parse(const shs_mesh *mesh, const char *text)
{
	shs_pspec s;
	const char *p = text + 1;

	memset(&s, 0, sizeof(s));
	if (*p == ']')
		return s;
	for (;;) {
		shs_pdim *d = &s.dims[s.rank++];
		size_t len = strcspn(p, ",]");

		if (*p != '-') {
			const char *q = p;

			while (q < p + len) {
				size_t n = strcspn(q, "+,]");
				uint32_t a = 0;

				while (a < mesh->n_axes && (strlen(mesh->names[a]) != n ||
							    strncmp(mesh->names[a], q, n)))
					a++;
				CU_ASSERT_FATAL(a < mesh->n_axes);
				d->axes[d->n++] = (uint8_t)a;
				q += n + (q[n] == '+');
			}
		}
		p += len;
		if (*p++ != ',')
			break;
	}
	return s;
}

/* Appends the axes of mask ("data+tensor"). */
static size_t mask_fmt(char *buf, size_t cap, const shs_mesh *mesh, uint32_t mask)
{
	size_t len = 0;

	buf[0] = 0;
	for (uint32_t a = 0; a < mesh->n_axes && len < cap; a++)
		if (mask & (1u << a))
			len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? "+" : "",
						mesh->names[a]);
	return len;
}

/* Formats candidate c: "RESULT LEAVES <- OPERAND LEAVES [ar(axes)|rs(axes)[cm]]". */
static size_t cand_fmt(char *buf, size_t cap, const fixture *f, const shs_cand *c,
		       uint32_t n_operand_leaves)
{
	char spec[SPEC_TEXT];
	size_t len = 0;

	for (uint32_t k = 0; k < c->n_result && len < cap; k++) {
		spec_fmt(spec, sizeof(spec), &f->mesh, &c->result[k]);
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", k ? " " : "", spec);
	}
	if (len < cap)
		len += (size_t)snprintf(buf + len, cap - len, " <-");
	for (uint32_t k = 0; k < n_operand_leaves && len < cap; k++) {
		spec_fmt(spec, sizeof(spec), &f->mesh, &c->operands[k]);
		len += (size_t)snprintf(buf + len, cap - len, " %s", spec);
	}
	for (uint32_t k = 0; k < c->n_colls && len < cap; k++) {
		static const char *const kinds[SHS_PCOLL_COUNT] = { "ar", "rs", "ag", "a2a", "pm" };
		const shs_coll *cl = &c->colls[k];
		char axes[SPEC_TEXT];

		mask_fmt(axes, sizeof(axes), &f->mesh, cl->axes_mask);
		/* overlappable: a collective matmul's, or a ring's (a permute) */
		len += (size_t)snprintf(buf + len, cap - len, " %s(%s)%s",
					cl->kind >= 0 && cl->kind < SHS_PCOLL_COUNT ?
					kinds[cl->kind] : "?", axes,
					!cl->overlappable ? "" :
					cl->kind == SHS_PCOLL_PERMUTE ? "ring" : "cm");
	}
	if (len < cap)
		len += (size_t)snprintf(buf + len, cap - len, "\n");
	return len;
}

/* Asks for the candidates of instruction name (hints: one leaf array per operand, or NULL) and
 * formats them into f->text. */
static void fx_ask(fixture *f, const char *name, const shs_pspec *const *hints,
		   const shs_pspec *result_hint, int mode)
{
	const shs_computation *c = NULL;
	const shs_instr *i = fx_find(f, name, &c);
	uint32_t n_op_leaves = 0;
	shs_err e = { 0 };
	size_t len = 0;

	for (uint32_t k = 0; k < i->n_operands; k++)
		n_op_leaves += shs_shape_leaves(&c->instrs[i->operands[k]]->shape);
	shs_cands_free(&f->cands);
	SHS_ASSERT_OK(shs_host_candidates(f->host, f->m, c, i, &f->mesh, hints, result_hint, mode,
					  &f->cands, &e), &e);
	CU_ASSERT_TRUE(f->cands.served);
	f->text[0] = 0;
	for (uint32_t k = 0; k < f->cands.n && len < sizeof(f->text); k++)
		len += cand_fmt(f->text + len, sizeof(f->text) - len, f, &f->cands.v[k],
				n_op_leaves);
}

/* Asks in PROPAGATE mode with hint texts per operand ("" or NULL: undecided). */
static void ask(fixture *f, const char *name, const char *const *hint_text,
		const char *result_hint)
{
	shs_pspec leaves[MAX_LEAVES], rh;
	const shs_pspec *hints[MAX_LEAVES] = { NULL };

	for (uint32_t k = 0; hint_text && hint_text[k] && k < MAX_LEAVES; k++) {
		if (!*hint_text[k])
			continue;
		leaves[k] = spec_parse(&f->mesh, hint_text[k]);
		hints[k] = &leaves[k];
	}
	if (result_hint)
		rh = spec_parse(&f->mesh, result_hint);
	fx_ask(f, name, hints, result_hint ? &rh : NULL, SHS_PMODE_PROPAGATE);
}

/* Asks in PROPAGATE mode with hint texts per operand and compares. */
static void expect(fixture *f, const char *name, const char *const *hint_text,
		   const char *result_hint, const char *want)
{
	ask(f, name, hint_text, result_hint);
	SHS_ASSERT_STR_EQ(f->text, want);
}

/* The candidate labels of f->cands, one a line. */
static const char *labels(const fixture *f)
{
	static char buf[TEXT_MAX];
	size_t len = 0;

	buf[0] = 0;
	for (uint32_t k = 0; k < f->cands.n && len < sizeof(buf); k++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s\n", f->cands.v[k].label);
	return buf;
}

/* ---- Modules ---- */

static const char add_hlo[] =
	"HloModule m\n\nsum {\n  sx = f32[] parameter(0)\n  sy = f32[] parameter(1)\n"
	"  ROOT ss = f32[] add(sx, sy)\n}\n\n";

#define ENTRY_OPEN "ENTRY e {\n"

/* ---- Elementwise ---- */

static void ew_one_candidate_per_hint(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  p0 = f32[8,16] parameter(0)\n"
		    "  p1 = f32[8,16] parameter(1)\n  ROOT a = f32[8,16] add(p0, p1)\n}\n",
		"data=2,tensor=4");
	/* each hint, their merge (one's axes added where the other leaves a dim whole), and
	 * replicated */
	expect(&f, "a", (const char *[]){ "[data,-]", "[-,tensor]", NULL }, NULL,
	       "[data,-] <- [data,-] [data,-]\n"
	       "[-,tensor] <- [-,tensor] [-,tensor]\n"
	       "[data,tensor] <- [data,tensor] [data,tensor]\n"
	       "[-,-] <- [-,-] [-,-]\n");
	SHS_ASSERT_STR_EQ(labels(&f), "same [data,-]\nsame [-,tensor]\nsame [data,tensor]\n"
				      "same [-,-]\n");
	/* Equal hints give one candidate, the result hint another; an axis that meets the
	 * other's on one dim goes to the next whole dim. */
	expect(&f, "a", (const char *[]){ "[data,-]", "[data,-]", NULL }, "[tensor,-]",
	       "[data,-] <- [data,-] [data,-]\n"
	       "[tensor,-] <- [tensor,-] [tensor,-]\n"
	       "[data,tensor] <- [data,tensor] [data,tensor]\n"
	       "[tensor,data] <- [tensor,data] [tensor,data]\n"
	       "[-,-] <- [-,-] [-,-]\n");
	fx_free(&f);
}

static void ew_pads_axes_that_do_not_divide(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  p0 = f32[6,16] parameter(0)\n"
		    "  q0 = f32[3,16] parameter(1)\n  n = f32[6,16] negate(p0)\n"
		    "  ROOT m = f32[3,16] negate(q0)\n}\n", "data=2,tensor=4");
	/* tensor (4) does not divide 6 but shrinks its piece (6 -> 2), and so does data after it
	 * (2 -> 1): both kept, padded, as XLA pads them (never silently replicated). */
	expect(&f, "n", (const char *[]){ "[tensor+data,-]", NULL }, NULL,
	       "[tensor+data,-]p <- [tensor+data,-]p\n[-,-] <- [-,-]\n");
	/* 3 over tensor: 1 each (kept, padded); data after it leaves 1: it shrinks nothing and
	 * is dropped. */
	expect(&f, "m", (const char *[]){ "[tensor+data,-]", NULL }, NULL,
	       "[tensor,-]p <- [tensor,-]p\n[-,-] <- [-,-]\n");
	fx_free(&f);
}

static void ew_scalar_operands_stay_replicated(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  lo = f32[] parameter(0)\n"
		    "  x = f32[8,16] parameter(1)\n  hi = f32[] parameter(2)\n"
		    "  ROOT c = f32[8,16] clamp(lo, x, hi)\n}\n",
		"data=2,tensor=4");
	expect(&f, "c", (const char *[]){ "", "[data,tensor]", "", NULL }, NULL,
	       "[data,tensor] <- [] [data,tensor] []\n[-,-] <- [] [-,-] []\n");
	fx_free(&f);
}

static void ew_costs_are_local(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  p0 = f32[8,16] parameter(0)\n"
		    "  p1 = f32[8,16] parameter(1)\n  ROOT a = f32[8,16] add(p0, p1)\n}\n",
		"data=2,tensor=4");
	expect(&f, "a", (const char *[]){ "[data,tensor]", NULL }, NULL,
	       "[data,tensor] <- [data,tensor] [data,tensor]\n[-,-] <- [-,-] [-,-]\n");
	/* 8*16/8 = 16 local elements; three f32 arrays of 16. */
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].flops, 16, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].bytes, 3 * 16 * 4, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[1].flops, 128, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[1].bytes, 3 * 128 * 4, 1e-9);
	fx_free(&f);
}

/* Valid specs of an array [d0, d1] on a 2-axis mesh of sizes s[0], s[1], counted by brute force:
 * each axis on no dim or one dim; two axes on one dim in either order. */
static uint32_t count_2d_specs(const int64_t *dims, const int64_t *s)
{
	uint32_t n = 0;

	for (int a = -1; a < 2; a++) {
		for (int b = -1; b < 2; b++) {
			int64_t prod[2] = { 1, 1 };

			if (a >= 0)
				prod[a] *= s[0];
			if (b >= 0)
				prod[b] *= s[1];
			if (dims[0] % prod[0] || dims[1] % prod[1])
				continue;
			n += (a >= 0 && a == b) ? 2 : 1;
		}
	}
	return n;
}

static void ew_enumerate_counts(void)
{
	static const int64_t shapes[][2] = { { 8, 12 }, { 6, 4 }, { 16, 16 }, { 3, 5 } };
	static const int64_t sizes[2] = { 2, 4 };
	fixture f;

	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		char text[512];

		snprintf(text, sizeof(text),
			 "HloModule m\nENTRY e {\n  p0 = f32[%lld,%lld] parameter(0)\n"
			 "  ROOT x = f32[%lld,%lld] exponential(p0)\n}\n",
			 (long long)shapes[k][0], (long long)shapes[k][1], (long long)shapes[k][0],
			 (long long)shapes[k][1]);
		fx_init(&f, text, "data=2,tensor=4");
		fx_ask(&f, "x", NULL, NULL, SHS_PMODE_ENUMERATE);
		SHS_ASSERT_INT_EQ(f.cands.n, count_2d_specs(shapes[k], sizes));
		/* All distinct, result and operand alike. */
		for (uint32_t a = 0; a < f.cands.n; a++) {
			const shs_cand *c = &f.cands.v[a];

			CU_ASSERT_EQUAL(memcmp(c->result[0].dims, c->operands[0].dims,
					       sizeof(c->result[0].dims)), 0);
			for (uint32_t b = 0; b < a; b++)
				CU_ASSERT_NOT_EQUAL(memcmp(c->result[0].dims,
							   f.cands.v[b].result[0].dims,
							   sizeof(c->result[0].dims)), 0);
		}
		fx_free(&f);
	}
}

/* ---- Data movement ---- */

static void transpose_permutes(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  p = f32[8,4,16] parameter(0)\n"
		    "  ROOT t = f32[16,8,4] transpose(p), dimensions={2,0,1}\n}\n",
		"data=2,tensor=4");
	expect(&f, "t", (const char *[]){ "[data,-,tensor]", NULL }, "[-,-,tensor]",
	       "[tensor,data,-] <- [data,-,tensor]\n"
	       "[-,-,tensor] <- [-,tensor,-]\n"
	       "[-,-,-] <- [-,-,-]\n");
	fx_free(&f);
}

static void reshape_merge_keeps_major_axes(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  p = f32[8,4,16] parameter(0)\n"
		    "  ROOT r = f32[32,16] reshape(p)\n}\n", "data=2,tensor=4");
	expect(&f, "r", (const char *[]){ "[data,-,tensor]", NULL }, NULL,
	       "[data,tensor] <- [data,-,tensor]\n[-,-] <- [-,-,-]\n");
	/* The minor dim of a merged group sharded: that group is replicated. */
	expect(&f, "r", (const char *[]){ "[-,data,tensor]", NULL }, NULL,
	       "[-,tensor] <- [-,-,tensor]\n[-,-] <- [-,-,-]\n");
	fx_free(&f);
}

static void reshape_split_moves_axes_to_major(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  p = f32[8,4,24] parameter(0)\n"
		    "  ROOT r = f32[8,4,6,4] reshape(p)\n}\n", "data=2,tensor=2,fsdp=4");
	/* [B,T,N*H] -> [B,T,N,H]: tensor moves to N; fsdp (4) does not divide N=6: dropped. */
	expect(&f, "r", (const char *[]){ "[data,-,tensor]", NULL }, NULL,
	       "[data,-,tensor,-] <- [data,-,tensor]\n[-,-,-,-] <- [-,-,-]\n");
	expect(&f, "r", (const char *[]){ "[-,-,fsdp]", NULL }, NULL, "[-,-,-,-] <- [-,-,-]\n");
	/* Backwards from a result hint. */
	expect(&f, "r", NULL, "[-,data,tensor,-]",
	       "[-,data,tensor,-] <- [-,data,tensor]\n[-,-,-,-] <- [-,-,-]\n");
	fx_free(&f);
}

static void reshape_enumerate_round_trips(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  p = f32[8,4,16] parameter(0)\n"
		    "  ROOT r = f32[32,16] reshape(p)\n}\n", "data=2");
	fx_ask(&f, "r", NULL, NULL, SHS_PMODE_ENUMERATE);
	SHS_ASSERT_STR_EQ(f.text, "[-,-] <- [-,-,-]\n[data,-] <- [data,-,-]\n"
				  "[-,data] <- [-,-,data]\n");
	fx_free(&f);
}

static void broadcast_maps_dims(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  p = f32[16] parameter(0)\n"
		    "  ROOT b = f32[8,16] broadcast(p), dimensions={1}\n}\n", "data=2,tensor=4");
	/* New dims stay unsharded from the operand; the result hint may split them. */
	expect(&f, "b", (const char *[]){ "[tensor]", NULL }, "[data,tensor]",
	       "[-,tensor] <- [tensor]\n[data,tensor] <- [tensor]\n[-,-] <- [-]\n");
	/* ENUMERATE: every valid spec of [8,16]. */
	fx_ask(&f, "b", NULL, NULL, SHS_PMODE_ENUMERATE);
	SHS_ASSERT_INT_EQ(f.cands.n, count_2d_specs((const int64_t[]){ 8, 16 },
						    (const int64_t[]){ 2, 4 }));
	fx_free(&f);
}

static void dynamic_slice_drops_stacked_dim(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  w = f32[4,8,16] parameter(0)\n"
		    "  i = s32[] parameter(1)\n  z = s32[] constant(0)\n"
		    "  ROOT d = f32[1,8,16] dynamic-slice(w, i, z, z), "
		    "dynamic_slice_sizes={1,8,16}\n}\n",
		"fsdp=2,tensor=4");
	expect(&f, "d", (const char *[]){ "[fsdp,-,tensor]", NULL }, NULL,
	       "[-,-,tensor] <- [-,-,tensor] [] [] []\n[-,-,-] <- [-,-,-] [] [] []\n");
	/* it moves no byte of its own, whatever the stack (4 layers): XLA fuses it into its
	 * readers, which read the slice in place */
	fx_ask(&f, "d", NULL, NULL, SHS_PMODE_ENUMERATE);
	for (uint32_t k = 0, seen = 0; k < f.cands.n || seen != 2; k++) {
		const shs_cand *c = &f.cands.v[k];
		CU_ASSERT_TRUE_FATAL(k < f.cands.n); /* both labels below are among them */
		if (!strcmp(c->label, "out [-,-,-]") || !strcmp(c->label, "out [-,-,tensor]")) {
			CU_ASSERT_DOUBLE_EQUAL(c->bytes, 0, 1e-9);
			seen++;
		}
	}
	fx_free(&f);
}

static void dynamic_update_slice_shares_spec(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  w = f32[4,8,16] parameter(0)\n"
		    "  u = f32[1,8,16] parameter(1)\n  i = s32[] parameter(2)\n"
		    "  z = s32[] constant(0)\n"
		    "  ROOT d = f32[4,8,16] dynamic-update-slice(w, u, i, z, z)\n}\n",
		"fsdp=2,tensor=4");
	expect(&f, "d", (const char *[]){ "[fsdp,tensor,-]", "[-,-,tensor]", NULL }, NULL,
	       "[-,tensor,-] <- [-,tensor,-] [-,tensor,-] [] [] []\n"
	       "[-,-,tensor] <- [-,-,tensor] [-,-,tensor] [] [] []\n"
	       "[-,-,-] <- [-,-,-] [-,-,-] [] [] []\n");
	fx_free(&f);
}

static void slice_pad_concatenate_keep_whole_dims(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  p = f32[8,16] parameter(0)\n"
		    "  q = f32[8,16] parameter(1)\n  v = f32[] constant(0)\n"
		    "  s = f32[8,8] slice(p), slice={[0:8], [4:12]}\n"
		    "  d = f32[8,20] pad(p, v), padding=0_0x2_2\n"
		    "  ROOT c = f32[8,32] concatenate(p, q), dimensions={1}\n}\n",
		"data=2,tensor=4");
	expect(&f, "s", (const char *[]){ "[data,tensor]", NULL }, NULL,
	       "[data,-] <- [data,-]\n[-,-] <- [-,-]\n");
	expect(&f, "d", (const char *[]){ "[data,tensor]", NULL }, NULL,
	       "[data,-] <- [data,-] []\n[-,-] <- [-,-] []\n");
	expect(&f, "c", (const char *[]){ "[tensor,data]", "[data,-]", NULL }, NULL,
	       "[tensor,-] <- [tensor,-] [tensor,-]\n[data,-] <- [data,-] [data,-]\n"
	       "[-,-] <- [-,-] [-,-]\n");
	fx_free(&f);
}

static void iota_and_constant_follow_result_hint(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  i = s32[8,16] iota(), iota_dimension=1\n"
		    "  ROOT k = f32[8,16] constant({...})\n}\n", "data=2,tensor=4");
	expect(&f, "i", NULL, "[data,tensor]", "[data,tensor] <-\n[-,-] <-\n");
	expect(&f, "k", NULL, NULL, "[-,-] <-\n");
	fx_ask(&f, "i", NULL, NULL, SHS_PMODE_ENUMERATE);
	SHS_ASSERT_INT_EQ(f.cands.n, count_2d_specs((const int64_t[]){ 8, 16 },
						    (const int64_t[]){ 2, 4 }));
	fx_free(&f);
}

/* ---- Reduce ---- */

static void reduce_over_sharded_dim_is_partial(void)
{
	char text[1024];
	fixture f;

	snprintf(text, sizeof(text), "%s" ENTRY_OPEN "  p = f32[8,16] parameter(0)\n"
		 "  z = f32[] constant(0)\n"
		 "  ROOT r = f32[8] reduce(p, z), dimensions={1}, to_apply=sum\n}\n", add_hlo);
	fx_init(&f, text, "data=2,tensor=4");
	expect(&f, "r", (const char *[]){ "[data,tensor]", NULL }, NULL,
	       "[data] <- [data,tensor] [] ar(tensor)\n"
	       "[data+tensor] <- [data,tensor] [] rs(tensor)\n"
	       "[-] <- [-,-] []\n");
	SHS_ASSERT_STR_EQ(labels(&f), "in [data,tensor] ar\nin [data,tensor] rs0\nin [-,-]\n");
	/* The partial result is [8/2] f32 per device; the reduce reads 8*16/8 elements. */
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].colls[0].bytes, 4 * 4, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].flops, 16, 1e-9);
	/* Kept dims carry their axes without a collective. */
	expect(&f, "r", (const char *[]){ "[data,-]", NULL }, "[tensor]",
	       "[data] <- [data,-] []\n[tensor] <- [tensor,-] []\n[-] <- [-,-] []\n");
	fx_free(&f);
}

static void reduce_variadic_shards_every_leaf(void)
{
	char text[1024];
	fixture f;

	snprintf(text, sizeof(text),
		 "HloModule m\n\nmx {\n  a0 = f32[] parameter(0)\n  a1 = s32[] parameter(1)\n"
		 "  b0 = f32[] parameter(2)\n  b1 = s32[] parameter(3)\n"
		 "  c0 = f32[] maximum(a0, b0)\n  c1 = s32[] maximum(a1, b1)\n"
		 "  ROOT t = (f32[], s32[]) tuple(c0, c1)\n}\n\n" ENTRY_OPEN
		 "  p = f32[8,16] parameter(0)\n  q = s32[8,16] parameter(1)\n"
		 "  z = f32[] constant(0)\n  y = s32[] constant(0)\n"
		 "  ROOT r = (f32[16], s32[16]) reduce(p, q, z, y), dimensions={0}, "
		 "to_apply=mx\n}\n");
	fx_init(&f, text, "data=2,tensor=4");
	expect(&f, "r", (const char *[]){ "[-,tensor]", NULL }, NULL,
	       "[tensor] [tensor] <- [-,tensor] [-,tensor] [] []\n"
	       "[-] [-] <- [-,-] [-,-] [] []\n");
	fx_free(&f);
}

static void reduce_enumerate_covers_operand_specs(void)
{
	char text[1024];
	fixture f;

	snprintf(text, sizeof(text), "%s" ENTRY_OPEN "  p = f32[8,12] parameter(0)\n"
		 "  z = f32[] constant(0)\n"
		 "  ROOT r = f32[8] reduce(p, z), dimensions={1}, to_apply=sum\n}\n", add_hlo);
	fx_init(&f, text, "data=2,tensor=4");
	fx_ask(&f, "r", NULL, NULL, SHS_PMODE_ENUMERATE);
	{
		/* One candidate per operand spec without axes on dim 1, two (ar, rs0 when 8
		 * still divides) per spec with some. */
		uint32_t want = 0, distinct = 0;
		const int64_t dims[2] = { 8, 12 }, sizes[2] = { 2, 4 };

		for (int a = -1; a < 2; a++) {
			for (int b = -1; b < 2; b++) {
				int64_t prod[2] = { 1, 1 };
				uint32_t orders = (a >= 0 && a == b) ? 2 : 1;
				int64_t all = 1;

				if (a >= 0)
					prod[a] *= sizes[0];
				if (b >= 0)
					prod[b] *= sizes[1];
				if (dims[0] % prod[0] || dims[1] % prod[1])
					continue;
				distinct += orders;
				all = prod[0] * prod[1];
				if (prod[1] == 1)
					want += orders;
				else
					want += orders * (dims[0] % all ? 1 : 2);
			}
		}
		SHS_ASSERT_INT_EQ(f.cands.n, want);
		CU_ASSERT_TRUE(distinct < want);
	}
	fx_free(&f);
}

/* ---- Gather / scatter ---- */

static const char gather_hlo[] =
	"HloModule m\nENTRY e {\n  t = f32[32,16] parameter(0)\n  i = s32[8,4,1] parameter(1)\n"
	"  ROOT g = f32[8,4,16] gather(t, i), offset_dims={2}, collapsed_slice_dims={0}, "
	"start_index_map={0}, index_vector_dim=2, slice_sizes={1,16}\n}\n";

static void gather_vocab_sharded_all_reduces(void)
{
	fixture f;

	fx_init(&f, gather_hlo, "data=2,tensor=4");
	expect(&f, "g", (const char *[]){ "[tensor,-]", "[data,-,-]", NULL }, NULL,
	       "[data,-,-] <- [tensor,-] [data,-,-] ar(tensor)\n"
	       "[-,-,-] <- [tensor,-] [-,-,-] ar(tensor)\n"
	       "[data,-,-] <- [-,-] [data,-,-]\n"
	       "[-,-,-] <- [-,-] [-,-,-]\n");
	SHS_ASSERT_STR_EQ(f.cands.v[0].label, "out [data,-,-] psum=tensor ar");
	/* The partial result before the all-reduce: 8*4*16/2 f32 per device. */
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].colls[0].bytes, 8 * 4 * 16 / 2 * 4, 1e-9);
	fx_free(&f);
}

static void gather_embed_sharded_carries_through(void)
{
	fixture f;

	fx_init(&f, gather_hlo, "data=2,tensor=4");
	expect(&f, "g", (const char *[]){ "[-,tensor]", "[data,-,-]", NULL }, NULL,
	       "[data,-,tensor] <- [-,tensor] [data,-,-]\n"
	       "[-,-,tensor] <- [-,tensor] [-,-,-]\n"
	       "[data,-,-] <- [-,-] [data,-,-]\n"
	       "[-,-,-] <- [-,-] [-,-,-]\n");
	/* ENUMERATE: each axis on one of the 3 result dims or the vocab dim, or nowhere; the
	 * offset dim 16 and vocab 32 take both, 8 both, 4 one of them. Check a few. */
	fx_ask(&f, "g", NULL, NULL, SHS_PMODE_ENUMERATE);
	CU_ASSERT_PTR_NOT_NULL(strstr(f.text, "[-,-,tensor+data] <- [-,tensor+data] [-,-,-]\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(f.text,
				      "[-,-,-] <- [data+tensor,-] [-,-,-] ar(data+tensor)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(f.text, "[-,tensor,data] <- [-,data] [-,tensor,-]\n"));
	CU_ASSERT_PTR_NULL(strstr(f.text, "[-,data+tensor,"));
	fx_free(&f);
}

static void gather_with_implicit_index_vector(void)
{
	fixture f;

	/* index_vector_dim == the indices' rank: every indices dim is a batch dim. */
	fx_init(&f, "HloModule m\nENTRY e {\n  t = f32[32,16] parameter(0)\n"
		    "  i = s32[8,4] parameter(1)\n"
		    "  ROOT g = f32[8,4,16] gather(t, i), offset_dims={2}, "
		    "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, "
		    "slice_sizes={1,16}\n}\n",
		"data=2,tensor=4");
	expect(&f, "g", (const char *[]){ "[tensor,-]", "[data,tensor]", NULL }, NULL,
	       "[data,-,-] <- [tensor,-] [data,-] ar(tensor)\n"
	       "[-,-,-] <- [tensor,-] [-,-] ar(tensor)\n"
	       "[data,tensor,-] <- [-,-] [data,tensor]\n"
	       "[-,-,-] <- [-,-] [-,-]\n");
	fx_free(&f);
}

static void scatter_batch_sharded_updates_reduce(void)
{
	char text[1024];
	fixture f;

	snprintf(text, sizeof(text), "%s" ENTRY_OPEN "  z = f32[32,16] parameter(0)\n"
		 "  i = s32[8,4,1] parameter(1)\n  u = f32[8,4,16] parameter(2)\n"
		 "  ROOT s = f32[32,16] scatter(z, i, u), update_window_dims={2}, "
		 "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2, "
		 "to_apply=sum\n}\n", add_hlo);
	fx_init(&f, text, "data=2,tensor=4");
	expect(&f, "s", (const char *[]){ "", "", "[data,-,tensor]", NULL }, NULL,
	       "[-,tensor] <- [-,tensor] [data,-,-] [data,-,tensor] ar(data)\n"
	       "[data,tensor] <- [-,tensor] [data,-,-] [data,-,tensor] rs(data)\n"
	       "[-,tensor+data] <- [-,tensor] [data,-,-] [data,-,tensor] rs(data)\n"
	       "[-,-] <- [-,-] [-,-,-] [-,-,-]\n");
	fx_free(&f);
}

/* ---- Control flow ---- */

static const char while_hlo[] =
	"HloModule m\n\ncond {\n  c = (s32[], f32[8,16]) parameter(0)\n"
	"  ci = s32[] get-tuple-element(c), index=0\n  cn = s32[] constant(4)\n"
	"  ROOT lt = pred[] compare(ci, cn), direction=LT\n}\n\n"
	"body {\n  b = (s32[], f32[8,16]) parameter(0)\n"
	"  bi = s32[] get-tuple-element(b), index=0\n"
	"  bx = f32[8,16] get-tuple-element(b), index=1\n  one = s32[] constant(1)\n"
	"  bj = s32[] add(bi, one)\n  by = f32[8,16] multiply(bx, bx)\n"
	"  ROOT bt = (s32[], f32[8,16]) tuple(bj, by)\n}\n\n"
	"ENTRY e {\n  p = f32[8,16] parameter(0)\n  z = s32[] constant(0)\n"
	"  t = (s32[], f32[8,16]) tuple(z, p)\n"
	"  w = (s32[], f32[8,16]) while(t), condition=cond, body=body\n"
	"  ROOT r = f32[8,16] get-tuple-element(w), index=1\n}\n";

static void tuple_and_gte_pass_leaves(void)
{
	shs_pspec leaves[2];
	const shs_pspec *hints[1];
	fixture f;

	fx_init(&f, while_hlo, "data=2,tensor=4");
	expect(&f, "t", (const char *[]){ "", "[data,tensor]", NULL }, NULL,
	       "[] [data,tensor] <- [] [data,tensor]\n[] [-,-] <- [] [-,-]\n");
	leaves[0] = spec_parse(&f.mesh, "[]");
	leaves[1] = spec_parse(&f.mesh, "[-,tensor]");
	hints[0] = leaves;
	fx_ask(&f, "r", hints, NULL, SHS_PMODE_PROPAGATE);
	SHS_ASSERT_STR_EQ(f.text, "[-,tensor] <- [] [-,tensor]\n[-,-] <- [] [-,-]\n");
	/* A result hint changes only the element read. */
	{
		shs_pspec rh = spec_parse(&f.mesh, "[data,-]");

		fx_ask(&f, "r", hints, &rh, SHS_PMODE_PROPAGATE);
		SHS_ASSERT_STR_EQ(f.text, "[-,tensor] <- [] [-,tensor]\n[data,-] <- [] [data,-]\n"
					  "[-,-] <- [] [-,-]\n");
	}
	/* ENUMERATE: every valid spec of the element read, the operand's leaf alike. */
	fx_ask(&f, "r", hints, NULL, SHS_PMODE_ENUMERATE);
	SHS_ASSERT_INT_EQ(f.cands.n, count_2d_specs((const int64_t[]){ 8, 16 },
						    (const int64_t[]){ 2, 4 }));
	CU_ASSERT_EQUAL(strncmp(f.text, "[-,-] <- [] [-,-]\n", strlen("[-,-] <- [] [-,-]\n")), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(f.text, "\n[data,-] <- [] [data,-]\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(f.text, "\n[tensor,data] <- [] [tensor,data]\n"));
	fx_free(&f);
}

static void while_threads_operand_leaves(void)
{
	shs_pspec leaves[2];
	const shs_pspec *hints[1];
	fixture f;

	fx_init(&f, while_hlo, "data=2,tensor=4");
	leaves[0] = spec_parse(&f.mesh, "[]");
	leaves[1] = spec_parse(&f.mesh, "[data,-]");
	hints[0] = leaves;
	fx_ask(&f, "w", hints, NULL, SHS_PMODE_PROPAGATE);
	SHS_ASSERT_STR_EQ(f.text, "[] [data,-] <- [] [data,-]\n[] [-,-] <- [] [-,-]\n");
	SHS_ASSERT_STR_EQ(labels(&f), "operands\nreplicated\n");
	/* The body's parameter takes what it is asked (the loop's operand). */
	{
		shs_pspec rh[2] = { spec_parse(&f.mesh, "[]"),
				    spec_parse(&f.mesh, "[data,tensor]") };

		fx_ask(&f, "b", NULL, rh, SHS_PMODE_PROPAGATE);
		SHS_ASSERT_STR_EQ(f.text, "[] [data,tensor] <-\n[] [-,-] <-\n");
	}
	fx_free(&f);
}

static void call_takes_called_root_and_hints(void)
{
	fixture f;

	fx_init(&f, "HloModule m\n\nf {\n  fa = f32[8,16] parameter(0)\n"
		    "  ROOT fb = f32[8,16] negate(fa)\n}\n\n"
		    "ENTRY e {\n  p = f32[8,16] parameter(0)\n"
		    "  ROOT c = f32[8,16] call(p), to_apply=f\n}\n", "data=2,tensor=4");
	/* No called root known yet: the result is replicated; operands keep their hints. */
	expect(&f, "c", (const char *[]){ "[data,-]", NULL }, "[-,tensor]",
	       "[-,-] <- [data,-]\n[-,tensor] <- [data,-]\n[-,-] <- [-,-]\n");
	fx_free(&f);
}

/* ---- Parameters and custom calls ---- */

static void parameter_takes_hint_or_anything(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  ROOT p = f32[8,12] parameter(0)\n}\n",
		"data=2,tensor=4");
	expect(&f, "p", NULL, "[data+tensor,-]", "[data+tensor,-] <-\n[-,-] <-\n");
	/* A hint that does not divide keeps its axes, padded (12 over 8: 2 each), as XLA pads. */
	expect(&f, "p", NULL, "[-,tensor+data]", "[-,tensor+data]p <-\n[-,-] <-\n");
	fx_ask(&f, "p", NULL, NULL, SHS_PMODE_ENUMERATE);
	SHS_ASSERT_INT_EQ(f.cands.n, count_2d_specs((const int64_t[]){ 8, 12 },
						    (const int64_t[]){ 2, 4 }));
	fx_free(&f);
}

static void sharding_custom_call_follows_hint(void)
{
	fixture f;

	fx_init(&f, "HloModule m\nENTRY e {\n  p = f32[8,16] parameter(0)\n"
		    "  q = f32[6,16] parameter(1)\n"
		    "  s = f32[8,16] custom-call(p), custom_call_target=\"Sharding\", "
		    "sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}\n"
		    "  u = f32[6,16] custom-call(q), custom_call_target=\"Sharding\", "
		    "sharding={devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}\n"
		    "  ROOT o = f32[8,16] custom-call(s), custom_call_target=\"my_kernel\"\n}\n",
		"data=2,tensor=4");
	/* The module's hint (the result hint) pins operand and result, whatever the operand has. */
	expect(&f, "s", (const char *[]){ "[-,tensor]", NULL }, "[data,-]",
	       "[data,-] <- [data,-]\n");
	SHS_ASSERT_STR_EQ(labels(&f), "hint [data,-]\n");
	/* A hint that does not divide is kept, padded, as XLA pads it. */
	expect(&f, "u", NULL, "[tensor,-]", "[tensor,-]p <- [tensor,-]p\n");
	/* Without a hint it passes the operand's sharding on. */
	expect(&f, "s", (const char *[]){ "[-,tensor]", NULL }, NULL,
	       "[-,tensor] <- [-,tensor]\n[-,-] <- [-,-]\n");
	/* ENUMERATE without a hint: every valid spec; with one: the hint alone. */
	fx_ask(&f, "s", NULL, NULL, SHS_PMODE_ENUMERATE);
	SHS_ASSERT_INT_EQ(f.cands.n, count_2d_specs((const int64_t[]){ 8, 16 },
						    (const int64_t[]){ 2, 4 }));
	/* Other targets: replicated, under the label the plan warns about */
	expect(&f, "o", (const char *[]){ "[data,-]", NULL }, NULL, "[-,-] <- [-,-]\n");
	SHS_ASSERT_STR_EQ(f.cands.v[0].label, SHS_PLUGIN_UNKNOWN_CALL);
	fx_free(&f);
}

/* ---- Flash attention ---- */

/* B=4, N=8 query heads, K=4 KV heads, T=S=16, H=32 (layout BNTH), as tools/gen/flash.c emits
 * them: cuDNN's forward and backward (causal) and splash attention's forward on TPU. */
static const char flash_hlo[] =
	"HloModule m\nENTRY e {\n"
	"  q = bf16[4,8,16,32] parameter(0)\n  k = bf16[4,4,16,32] parameter(1)\n"
	"  v = bf16[4,4,16,32] parameter(2)\n  do = bf16[4,8,16,32] parameter(3)\n"
	"  fwd = (bf16[4,8,16,32], f32[4,8,16], u8[0]) custom-call(q, k, v), "
	"custom_call_target=\"__cudnn$fmhaSoftmax\", "
	"backend_config={\"cudnn_fmha_backend_config\": {\"mask_type\": \"CAUSAL\"}}\n"
	"  o = bf16[4,8,16,32] get-tuple-element(fwd), index=0\n"
	"  st = f32[4,8,16] get-tuple-element(fwd), index=1\n"
	"  bwd = (bf16[4,8,16,32], bf16[4,4,16,32], bf16[4,4,16,32], u8[0]) custom-call(q, k, v, "
	"st, do, o), custom_call_target=\"__cudnn$fmhaSoftmaxBackward\", "
	"backend_config={\"cudnn_fmha_backend_config\": {\"mask_type\": \"NO_MASK\"}}\n"
	"  ROOT tpu = (bf16[4,8,16,32], f32[4,8,16]) custom-call(q, k, v), "
	"custom_call_target=\"tpu_custom_call\", "
	"metadata={op_name=\"attention/splash_mha_fwd_residuals/custom_call\"}, "
	"backend_config={\"custom_call_config\": {\"body\": \"\", \"cost_estimate\": "
	"{\"bytes_accessed\":1,\"flops\":4096,\"transcendentals\":1}}}\n}\n";

/* Propagating a flash call: the candidates first follow the operands' shardings (want_first,
 * its first lines), then every other assignment of batch, heads and sequence (n in all, none
 * twice); an assignment with the sequence twice, as a ring and as a gather. */
static void expect_flash(fixture *f, const char *name, const char *const *hint_text,
			 const char *want_first, uint32_t n)
{
	ask(f, name, hint_text, NULL);
	CU_ASSERT_EQUAL(strncmp(f->text, want_first, strlen(want_first)), 0);
	if (strncmp(f->text, want_first, strlen(want_first)))
		fprintf(stderr, "\n  got %s  want first %s", f->text, want_first);
	SHS_ASSERT_INT_EQ(f->cands.n, n);
	for (uint32_t k = 0; k < f->cands.n; k++) {
		bool seq = f->cands.v[k].result[0].dims[2].n > 0;

		CU_ASSERT_EQUAL(seq, strncmp(f->cands.v[k].label, "flash-", 6) == 0);
		for (uint32_t j = 0; j < k; j++)
			CU_ASSERT_FALSE(!strcmp(f->cands.v[j].label, f->cands.v[k].label));
	}
}

static void flash_attention_shards_batch_heads_and_sequence(void)
{
	static const char want_fwd[] =
		"[data,tensor,-,-] [data,tensor,-] [-] <- [data,tensor,-,-] [data,tensor,-,-] "
		"[data,tensor,-,-]\n";
	static const char replicated[] =
		"[-,-,-,-] [-,-,-] [-] <- [-,-,-,-] [-,-,-,-] [-,-,-,-]\n";
	fixture f;

	/* data and tensor each on no slot, batch or heads, never both on one slot (8 does not
	 * divide 4): 3 x 3 - 2 assignments; tensor never on the sequence (no context axis) */
	fx_init(&f, flash_hlo, "data=2,tensor=4");
	expect_flash(&f, "fwd", (const char *[]){ "[data,tensor,-,-]", NULL }, want_fwd, 7);
	/* a hint on K alone is enough; the same candidate is not offered twice */
	expect_flash(&f, "fwd", (const char *[]){ "", "[data,tensor,-,-]", "[data,tensor,-,-]",
						  NULL }, want_fwd, 7);
	/* a query sequence sharded over tensor (Megatron's sequence parallelism) is not
	 * followed: the assignments alone, the replicated one first */
	expect_flash(&f, "fwd", (const char *[]){ "[-,-,tensor,-]", NULL }, replicated, 7);
	/* heads split 8 ways do not divide the 4 KV heads: tensor is dropped, data kept; tensor
	 * divides neither 4 sequences nor 4 heads: data on no slot, batch or heads */
	fx_free(&f);
	fx_init(&f, flash_hlo, "data=2,tensor=8");
	expect_flash(&f, "fwd", (const char *[]){ "[-,data+tensor,-,-]", NULL },
		     "[-,data,-,-] [-,data,-] [-] <- [-,data,-,-] [-,data,-,-] [-,data,-,-]\n", 3);
	fx_free(&f);
	/* a context axis also splits the 16 tokens (data never does): data on no slot, batch or
	 * heads, context on those or the sequence (3 x 4), less both on batch or on heads (8 does
	 * not divide 4): 10 assignments, the 3 with the sequence twice (ring, gather) */
	fx_init(&f, flash_hlo, "data=2,context=4");
	expect_flash(&f, "fwd", (const char *[]){ "[-,-,context,-]", NULL },
		     "[-,-,context,-] [-,-,context] [-] <- [-,-,context,-] [-,-,context,-] "
		     "[-,-,context,-] pm(context)ring\n"
		     "[-,-,context,-] [-,-,context] [-] <- [-,-,context,-] [-,-,-,-] [-,-,-,-]\n",
		     13);
	SHS_ASSERT_STR_EQ(f.cands.v[0].label, "flash-ring [-,-,context,-]");
	SHS_ASSERT_STR_EQ(f.cands.v[1].label, "flash-gather [-,-,context,-]");
	fx_free(&f);
	/* the backward: the six operands and three gradients alike */
	fx_init(&f, flash_hlo, "data=2,tensor=4");
	expect_flash(&f, "bwd", (const char *[]){ "[tensor,data,-,-]", NULL },
		     "[tensor,data,-,-] [tensor,data,-,-] [tensor,data,-,-] [-] <- "
		     "[tensor,data,-,-] [tensor,data,-,-] [tensor,data,-,-] [tensor,data,-] "
		     "[tensor,data,-,-] [tensor,data,-,-]\n", 7);
	fx_ask(&f, "fwd", NULL, NULL, SHS_PMODE_ENUMERATE);
	SHS_ASSERT_INT_EQ(f.cands.n, 7);
	fx_free(&f);
}

/* FLOPs: 4 B N T S H forward, halved by a causal mask, 2.5x for the backward, or the Pallas
 * kernel's own cost_estimate; divided by the shards. Bytes: the operands and results only. */
static void flash_attention_costs(void)
{
	const double qb = 4.0 * 8 * 16 * 32 * 2, kb = 4.0 * 4 * 16 * 32 * 2, sb = 4.0 * 8 * 16 * 4;
	const double fwd = 4.0 * 4 * 8 * 16 * 16 * 32;
	fixture f;

	fx_init(&f, flash_hlo, "data=2,tensor=4");
	/* the hint's candidate, then the replicated one (the first assignment) */
	expect_flash(&f, "fwd", (const char *[]){ "[data,tensor,-,-]", NULL },
		     "[data,tensor,-,-] [data,tensor,-] [-] <- [data,tensor,-,-] [data,tensor,-,-] "
		     "[data,tensor,-,-]\n"
		     "[-,-,-,-] [-,-,-] [-] <- [-,-,-,-] [-,-,-,-] [-,-,-,-]\n", 7);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].flops, fwd * 0.5 / 8, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].bytes, (2 * qb + 2 * kb + sb) / 8, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[1].flops, fwd * 0.5, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[1].bytes, 2 * qb + 2 * kb + sb, 1e-6);
	/* the backward here has no mask: 2.5 x the whole forward; reads Q, K, V, stats, dO, O,
	 * writes dQ, dK, dV */
	fx_ask(&f, "bwd", NULL, NULL, SHS_PMODE_PROPAGATE);
	SHS_ASSERT_INT_EQ(f.cands.n, 7);
	SHS_ASSERT_STR_EQ(f.cands.v[0].label, "flash [-,-,-,-]");
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].flops, 2.5 * fwd, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].bytes, 4 * qb + 4 * kb + sb, 1e-6);
	/* splash on TPU: its declared 4096 FLOPs over 2 x 4 shards */
	expect_flash(&f, "tpu", (const char *[]){ "[data,tensor,-,-]", NULL },
		     "[data,tensor,-,-] [data,tensor,-] <- [data,tensor,-,-] [data,tensor,-,-] "
		     "[data,tensor,-,-]\n"
		     "[-,-,-,-] [-,-,-] <- [-,-,-,-] [-,-,-,-] [-,-,-,-]\n", 7);
	SHS_ASSERT_STR_EQ(f.cands.v[0].label, "flash [data,tensor,-,-]");
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].flops, 4096.0 / 8, 1e-9);
	fx_free(&f);
	/* the sequence over context (4): a quarter of the work; the ring sends the local K and
	 * V 3 times under it (one overlappable permute), the backward also dK and dV, and those
	 * once more home; the gather has no collective of its own forward (the host gathers K
	 * and V), its backward reduce-scatters dK and dV from the whole sequence */
	fx_init(&f, flash_hlo, "data=2,context=4");
	ask(&f, "fwd", (const char *[]){ "[-,-,context,-]", NULL }, NULL);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].flops, fwd * 0.5 / 4, 1e-6);
	SHS_ASSERT_INT_EQ(f.cands.v[0].n_colls, 1);
	SHS_ASSERT_INT_EQ(f.cands.v[0].colls[0].kind, SHS_PCOLL_PERMUTE);
	SHS_ASSERT_INT_EQ(f.cands.v[0].colls[0].axes_mask, 2);
	CU_ASSERT_TRUE(f.cands.v[0].colls[0].overlappable);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].colls[0].bytes, 2 * kb / 4, 1e-9);
	SHS_ASSERT_INT_EQ(f.cands.v[1].n_colls, 0);
	ask(&f, "bwd", (const char *[]){ "[-,-,context,-]", NULL }, NULL);
	SHS_ASSERT_STR_EQ(f.cands.v[0].label, "flash-ring [-,-,context,-]");
	SHS_ASSERT_INT_EQ(f.cands.v[0].n_colls, 2);
	CU_ASSERT_TRUE(f.cands.v[0].colls[0].overlappable);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].colls[0].bytes, 4 * kb / 4, 1e-9);
	CU_ASSERT_FALSE(f.cands.v[0].colls[1].overlappable);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].colls[1].bytes, 2 * kb / 4, 1e-9);
	SHS_ASSERT_INT_EQ(f.cands.v[1].n_colls, 1);
	SHS_ASSERT_INT_EQ(f.cands.v[1].colls[0].kind, SHS_PCOLL_REDUCE_SCATTER);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[1].colls[0].bytes, 2 * kb, 1e-9);
	fx_free(&f);
}

/* Annotating a generated flash module (LLaMA-3 8B, 2 layers, scanned and unrolled) with the
 * fsdp+tp plan on fsdp=2,tensor=4 shards every attention kernel's operands and results over
 * batch (fsdp) and heads (tensor). */
static void flash_attention_annotated_over_batch_and_heads(void)
{
	for (int scan = 0; scan < 2; scan++) {
		shs_gen_config c = shs_test_preset("llama3-8b");
		shs_plan_request *r = calloc(1, sizeof(*r));
		shs_host *h = shs_test_host();
		shs_module *m = NULL;
		shs_plan *p = NULL;
		shs_err e = { 0 };
		uint32_t calls = 0;

		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		SHS_ASSERT_OK(shs_gen_config_set(&c, "layers", "2", &e), &e);
		SHS_ASSERT_OK(shs_gen_config_set(&c, "seq", "256", &e), &e);
		SHS_ASSERT_OK(shs_gen_config_set(&c, "batch", "8", &e), &e);
		SHS_ASSERT_OK(shs_gen_config_set(&c, "vocab", "1024", &e), &e);
		c.scan = scan;
		SHS_ASSERT_OK(shs_gen_module(&c, &m, NULL, &e), &e);
		r->chip = (shs_plan_chip){ .flops = 4.59e14, .hbm_bw = 2.765e12, .link_bw = 9e10 };
		SHS_ASSERT_OK(shs_plan_parse_mesh(r, "fsdp=2,tensor=4", &e), &e);
		SHS_ASSERT_OK(shs_plan_parse_kind(r, "fsdp+tp", &e), &e);
		SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
		SHS_ASSERT_OK(shs_plan_annotate(p, m, &e), &e);
		for (uint32_t j = 0; j < m->n_comps; j++) {
			for (uint32_t i = 0; i < m->comps[j]->n_instrs; i++) {
				const shs_instr *in = m->comps[j]->instrs[i];
				const shs_sharding *s = in->sharding;

				if (in->op != SHS_OP_CUSTOM_CALL)
					continue;
				calls++;
				CU_ASSERT_PTR_NOT_NULL_FATAL(s);
				SHS_ASSERT_INT_EQ(s->n_tuple, in->shape.n_tuple);
				/* every array: [batch over fsdp=2, heads over tensor=4, 1...] */
				for (uint32_t k = 0; k < s->n_tuple; k++) {
					const shs_sharding *l = &s->tuple[k];

					SHS_ASSERT_INT_EQ(l->n_tile_dims, in->shape.tuple[k].rank);
					CU_ASSERT_FALSE(l->replicate_on_last_tile_dim);
					SHS_ASSERT_INT_EQ(l->tile_dims[0], 2);
					SHS_ASSERT_INT_EQ(l->tile_dims[1], 4);
					for (uint32_t d = 2; d < l->n_tile_dims; d++)
						SHS_ASSERT_INT_EQ(l->tile_dims[d], 1);
				}
			}
		}
		SHS_ASSERT_INT_EQ(calls, scan ? 2 : 4);
		shs_plan_free(p);
		shs_module_free(m);
		shs_host_free(h);
		free(r);
	}
}

/* The FLOPs and bytes of every candidate of every attention kernel of the generated module
 * with attention_kernel=kernel, in module order, into out (n at most cap); returns n. */
static uint32_t kernel_costs(const char *kernel, double *out, uint32_t cap)
{
	shs_gen_config c = shs_test_preset("llama3-8b");
	shs_module *m = NULL;
	shs_err e = { 0 };
	uint32_t n = 0;
	fixture f;

	SHS_ASSERT_OK(shs_gen_config_set(&c, "layers", "2", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "seq", "256", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "batch", "8", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "attention_kernel", kernel, &e), &e);
	SHS_ASSERT_OK(shs_gen_module(&c, &m, NULL, &e), &e);
	fx_init(&f, NULL, "data=2,tensor=4");
	f.m = m;
	for (uint32_t j = 0; j < m->n_comps; j++) {
		for (uint32_t i = 0; i < m->comps[j]->n_instrs; i++) {
			const shs_instr *in = m->comps[j]->instrs[i];

			if (in->op != SHS_OP_CUSTOM_CALL)
				continue;
			shs_cands_free(&f.cands);
			SHS_ASSERT_OK(shs_host_candidates(f.host, m, m->comps[j], in, &f.mesh, NULL,
							  NULL, SHS_PMODE_ENUMERATE, &f.cands, &e),
				      &e);
			/* 7 assignments of data and tensor to batch 8 and 8 KV heads, plus
			 * data+tensor or tensor+data on one of them: 11 */
			SHS_ASSERT_INT_EQ(f.cands.n, 11);
			for (uint32_t k = 0; k < f.cands.n && n + 2 <= cap; k++) {
				out[n++] = f.cands.v[k].flops;
				out[n++] = f.cands.v[k].bytes;
			}
		}
	}
	fx_free(&f);
	return n;
}

/* The cuDNN and the Pallas forms of one model cost the same, candidate by candidate. */
static void flash_attention_kernels_cost_alike(void)
{
	enum { CAP = 256 };
	double pallas[CAP], cudnn[CAP];
	uint32_t np = kernel_costs("pallas", pallas, CAP), nc = kernel_costs("cudnn", cudnn, CAP);

	SHS_ASSERT_INT_EQ(np, nc);
	SHS_ASSERT_INT_EQ(np, 4 * 11 * 2);
	for (uint32_t k = 0; k < np && k < nc; k++)
		CU_ASSERT_DOUBLE_EQUAL(pallas[k], cudnn[k], 1e-9 * pallas[k]);
	CU_ASSERT_TRUE(pallas[0] > 0);
}

/* ---- No candidate is ever refused ---- */

/* Specs for the leaves of shape with dim 0 on mesh axis 0 where it divides (what an
 * instruction no plugin here serves, like dot, is taken to produce in sweep). */
static uint32_t split_leaves(const fixture *f, const shs_shape *shape, shs_pspec *out)
{
	uint32_t n = 0;

	if (shape->type == SHS_TUPLE) {
		for (uint32_t k = 0; k < shape->n_tuple; k++)
			n += split_leaves(f, &shape->tuple[k], out + n);
		return n;
	}
	memset(out, 0, sizeof(*out));
	out->rank = shape->rank;
	if (shape->rank && shape->dims[0] % f->mesh.sizes[0] == 0) {
		out->dims[0].n = 1;
		out->dims[0].axes[0] = 0;
	}
	return 1;
}

/* A forward pass over computation c: every instruction asks with its operands' chosen leaves as
 * hints (parameters: split_leaves as result hint) and keeps its first candidate's
 * result (unserved ones: split_leaves); ENUMERATE is asked too when enumerate. Counts
 * candidates into *n. */
static void sweep(fixture *f, const shs_computation *c, bool enumerate, uint64_t *n)
{
	shs_pspec **chosen = calloc(c->n_instrs, sizeof(*chosen));

	CU_ASSERT_PTR_NOT_NULL_FATAL(chosen);
	for (uint32_t k = 0; k < c->n_instrs; k++) {
		const shs_instr *i = c->instrs[k];
		const shs_pspec **hints = calloc(i->n_operands + 1, sizeof(*hints));
		uint32_t leaves = shs_shape_leaves(&i->shape);
		shs_pspec *rh = calloc(leaves + 1, sizeof(*rh));
		shs_err e = { 0 };

		CU_ASSERT_PTR_NOT_NULL_FATAL(hints);
		CU_ASSERT_PTR_NOT_NULL_FATAL(rh);
		for (uint32_t o = 0; o < i->n_operands; o++)
			hints[o] = chosen[i->operands[o]];
		split_leaves(f, &i->shape, rh);
		shs_cands_free(&f->cands);
		SHS_ASSERT_OK(shs_host_candidates(f->host, f->m, c, i, &f->mesh, hints,
						  i->op == SHS_OP_PARAMETER ? rh : NULL,
						  SHS_PMODE_PROPAGATE, &f->cands, &e), &e);
		free(rh);
		*n += f->cands.n;
		if (f->cands.served)
			CU_ASSERT_TRUE(f->cands.n > 0);
		chosen[k] = malloc(sizeof(shs_pspec) * (leaves + 1));
		CU_ASSERT_PTR_NOT_NULL_FATAL(chosen[k]);
		if (f->cands.n && f->cands.v[0].n_result == leaves)
			memcpy(chosen[k], f->cands.v[0].result, sizeof(shs_pspec) * leaves);
		else
			split_leaves(f, &i->shape, chosen[k]);
		if (enumerate) {
			shs_cands_free(&f->cands);
			SHS_ASSERT_OK(shs_host_candidates(f->host, f->m, c, i, &f->mesh, NULL, NULL,
							  SHS_PMODE_ENUMERATE, &f->cands, &e), &e);
			*n += f->cands.n;
		}
		free(hints);
	}
	for (uint32_t k = 0; k < c->n_instrs; k++)
		free(chosen[k]);
	free(chosen);
}

static void real_modules_have_no_refused_candidate(void)
{
	static const char *const files[] = {
		"mha_block_1x12x128x64_bf16.hlo",
		"nv_maxtext_1n1g_jit_train_step_before_optimization.hlo",
	};
	static const char *const meshes[] = { "data=2,fsdp=2,tensor=2", "fsdp=4,tensor=2" };

	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		for (size_t j = 0; j < sizeof(meshes) / sizeof(meshes[0]); j++) {
			shs_module *m = NULL;
			shs_err e = { 0 };
			uint64_t n = 0;
			fixture f;

			fx_init(&f, NULL, meshes[j]);
			SHS_ASSERT_OK(shs_module_load_file(shs_test_hlo_path(files[k]),
							   SHS_FORMAT_AUTO, &m, &e), &e);
			f.m = m;
			for (uint32_t c = 0; c < m->n_comps; c++)
				sweep(&f, m->comps[c], true, &n);
			CU_ASSERT_TRUE(n > m->comps[m->entry]->n_instrs);
			fx_free(&f);
		}
	}
}

static void corpus_modules_have_no_refused_candidate(void)
{
	size_t n_files = 0;
	char **files = shs_test_corpus(&n_files);

	CU_ASSERT_TRUE_FATAL(n_files > 0);
	for (size_t k = 0; k < n_files; k++) {
		shs_module *m = NULL;
		shs_err e = { 0 };
		uint64_t n = 0;
		fixture f;

		/* Some corpus files are not loadable on purpose; the rest must sweep cleanly. */
		if (shs_module_load_file(files[k], SHS_FORMAT_AUTO, &m, &e) == SHS_OK) {
			fx_init(&f, NULL, "data=2,tensor=3");
			f.m = m;
			for (uint32_t c = 0; c < m->n_comps; c++)
				sweep(&f, m->comps[c], true, &n);
			fx_free(&f);
		}
		free(files[k]);
	}
	free(files);
}

static void generated_modules_have_no_refused_candidate(void)
{
	static const char *const meshes[] = { "data=2,fsdp=4,tensor=8", "expert=2,tensor=4" };

	for (const char *const *name = shs_gen_preset_names(); *name; name++) {
		for (int scan = 1; scan >= 0; scan--) {
			shs_gen_config cfg = shs_test_preset(*name);
			shs_module *m = NULL;
			shs_err e = { 0 };
			uint64_t n = 0;
			fixture f;

			/* Unrolled, only the small model: the others repeat the same layers. */
			if (!scan && strcmp(*name, "mlp-only"))
				continue;
			cfg.scan = scan;
			SHS_ASSERT_OK(shs_gen_module(&cfg, &m, NULL, &e), &e);
			fx_init(&f, NULL, meshes[scan]);
			f.m = m;
			for (uint32_t c = 0; c < m->n_comps; c++)
				sweep(&f, m->comps[c], scan, &n);
			CU_ASSERT_TRUE(n >= m->comps[m->entry]->n_instrs);
			fx_free(&f);
		}
	}
}

/* Transformer Engine's fused attention as transformer_engine/jax emits it: Q [B,S,H,D] =
 * [4,16,8,32], K and V packed [B,S,2,Hkv,D] with 4 KV heads, a bias and the sequence offsets;
 * O, the softmax statistics [B,H,S,1], the RNG state and a workspace out; a causal mask. The
 * backward takes Q, K/V, bias, statistics, RNG state, O, dO and the offsets. */
static const char te_hlo[] =
	"HloModule m\nENTRY e {\n"
	"  q = bf16[4,16,8,32] parameter(0)\n  kv = bf16[4,16,2,4,32] parameter(1)\n"
	"  b = bf16[0] parameter(2)\n  sq = s32[5] parameter(3)\n"
	"  fwd = (bf16[4,16,8,32], f32[4,8,16,1], u32[2,4], u8[16]) custom-call(q, kv, b, sq), "
	"custom_call_target=\"te_fused_attn_forward_ffi\", backend_config={mask_type = 2 : i64}\n"
	"  o = bf16[4,16,8,32] get-tuple-element(fwd), index=0\n"
	"  st = f32[4,8,16,1] get-tuple-element(fwd), index=1\n"
	"  rng = u32[2,4] get-tuple-element(fwd), index=2\n"
	"  bwd = (bf16[4,16,8,32], bf16[4,16,2,4,32], bf16[0], u8[16]) custom-call(q, kv, b, st, "
	"rng, o, o, sq), custom_call_target=\"te_fused_attn_backward_ffi\", "
	"backend_config={mask_type = 0 : i64}\n"
	"  ROOT r = bf16[4,16,8,32] get-tuple-element(bwd), index=0\n}\n";

/* Its arrays are mapped by shape: batch on every one's dim 0, heads on Q's dim 2, the packed
 * K/V's dim 3 and the statistics' dim 1; the offsets, bias, RNG state and workspace stay
 * whole; no sequence split. FLOPs: 4 B S H D S, halved by the causal mask, 2.5x backward. */
static void te_attention_shards_batch_and_heads(void)
{
	static const char want_fwd[] = "[data,-,tensor,-] [data,tensor,-,-] [-,-] [-] <- "
				       "[data,-,tensor,-] [data,-,-,tensor,-] [-] [-]\n";
	static const char want_bwd[] =
		"[data,-,tensor,-] [data,-,-,tensor,-] [-] [-] <- [data,-,tensor,-] "
		"[data,-,-,tensor,-] [-] [data,tensor,-,-] [-,-] [data,-,tensor,-] "
		"[data,-,tensor,-] [-]\n";
	const double fwd = 4.0 * 4 * 16 * 8 * 32 * 16;
	fixture f;

	fx_init(&f, te_hlo, "data=2,tensor=4");
	ask(&f, "fwd", (const char *[]){ "[data,-,tensor,-]", NULL }, NULL);
	if (strncmp(f.text, want_fwd, strlen(want_fwd)))
		fprintf(stderr, "\n  got %s  want first %s", f.text, want_fwd);
	CU_ASSERT_EQUAL(strncmp(f.text, want_fwd, strlen(want_fwd)), 0);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].flops, fwd * 0.5 / 8, 1e-6);
	/* the assignments: data and tensor each on no slot, batch or heads, not both on heads
	 * (8 does not divide the 4 KV heads) nor both on batch: 3 x 3 - 2 */
	SHS_ASSERT_INT_EQ(f.cands.n, 7);
	ask(&f, "bwd", (const char *[]){ "", "[data,-,-,tensor,-]", NULL }, NULL);
	if (strncmp(f.text, want_bwd, strlen(want_bwd)))
		fprintf(stderr, "\n  got %s  want first %s", f.text, want_bwd);
	CU_ASSERT_EQUAL(strncmp(f.text, want_bwd, strlen(want_bwd)), 0);
	CU_ASSERT_DOUBLE_EQUAL(f.cands.v[0].flops, 2.5 * fwd / 8, 1e-6);
	fx_free(&f);
	/* the calls of the partitioned MaxText module (13 and 16 operands, KV packed) too */
	{
		size_t len = 0;
		char *text = (char *)shs_test_read_file(
			shs_test_hlo_path("partitioned/hlo_llama3_8b_cp_bf16_1x4.hlo"), &len);

		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		fx_init(&f, text, "data=2,tensor=2");
		fx_ask(&f, "te_fused_attn_forward_ffi.10", NULL, NULL, SHS_PMODE_ENUMERATE);
		CU_ASSERT_TRUE(f.cands.n > 1);
		CU_ASSERT_EQUAL(strncmp(f.cands.v[0].label, "flash", 5), 0);
		fx_ask(&f, "te_fused_attn_backward_ffi.12", NULL, NULL, SHS_PMODE_ENUMERATE);
		CU_ASSERT_TRUE(f.cands.n > 1);
		fx_free(&f);
		free(text);
	}
}

/* Kernels with a factor rule: a Pallas kernel stating Shardy's rule (a matmul, j reduced)
 * with its cost estimate, a cuBLAS GEMM (result and workspace), Transformer Engine's norm
 * forward and backward. */
static const char rule_hlo[] =
	"HloModule m\nENTRY e {\n"
	"  a = f32[8,16] parameter(0)\n  b = f32[16,8] parameter(1)\n"
	"  x = bf16[4,16,64] parameter(2)\n  g = bf16[64] parameter(3)\n"
	"  be = bf16[64] parameter(4)\n"
	"  k = f32[8,8] custom-call(a, b), custom_call_target=\"my_pallas_kernel\", "
	"frontend_attributes={xla.sdy.sharding_rule=\"#sdy.op_sharding_rule<([i, j], [j, k])"
	"->([i, k]) {i=8, j=16, k=8}, reduction={j}, custom>\"}, "
	"backend_config={\"custom_call_config\": {\"body\": \"\", \"cost_estimate\": "
	"{\n\"bytes_accessed\":1536,\n\"flops\":2048,\n\"transcendentals\":0\n}}}\n"
	"  gm = (f32[8,8], s8[1024]) custom-call(a, b), custom_call_target=\"__cublas$gemm\", "
	"backend_config={\"gemm_backend_config\":{\"alpha_real\":1,\"beta\":0,"
	"\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],"
	"\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],"
	"\"rhs_batch_dimensions\":[]}}}\n"
	"  nf = (bf16[4,16,64], f32[4,16], f32[4,16]) custom-call(x, g, be), "
	"custom_call_target=\"te_layernorm_forward_ffi\"\n"
	"  mu = f32[4,16] get-tuple-element(nf), index=1\n"
	"  rs = f32[4,16] get-tuple-element(nf), index=2\n"
	"  nb = (bf16[4,16,64], bf16[64], bf16[64]) custom-call(x, x, mu, rs, g), "
	"custom_call_target=\"te_layernorm_backward_ffi\"\n"
	"  ROOT t = (f32[8,8], (f32[8,8], s8[1024]), (bf16[4,16,64], bf16[64], bf16[64])) "
	"tuple(k, gm, nb)\n}\n";

/* The candidate labelled label (NULL when none is). */
static const shs_cand *cand_labelled(const fixture *f, const char *label)
{
	for (uint32_t k = 0; k < f->cands.n; k++)
		if (!strcmp(f->cands.v[k].label, label))
			return &f->cands.v[k];
	return NULL;
}

static void kernels_shard_by_their_rules(void)
{
	fixture f;
	const shs_cand *c;

	fx_init(&f, rule_hlo, "data=2,tensor=2");
	/* the Pallas kernel: data and tensor each on no factor or on one of i, j, k (every
	 * placement divides): 4 x 4, and both on one factor in the other order too: + 3 */
	fx_ask(&f, "k", NULL, NULL, SHS_PMODE_ENUMERATE);
	SHS_ASSERT_INT_EQ(f.cands.n, 19);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c = cand_labelled(&f, "rule i:data k:tensor"));
	CU_ASSERT_DOUBLE_EQUAL(c->flops, 2048.0 / 4, 1e-9); /* its cost estimate, a quarter */
	CU_ASSERT_EQUAL(c->n_colls, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c = cand_labelled(&f, "rule i:data j:tensor"));
	SHS_ASSERT_INT_EQ(c->n_colls, 1); /* j is reduced: the result all-reduced over tensor */
	CU_ASSERT_EQUAL(c->colls[0].kind, SHS_PCOLL_ALL_REDUCE);
	CU_ASSERT_EQUAL(c->colls[0].axes_mask, 2u);
	/* propagating, the operand's split is followed: i on data, or nothing */
	ask(&f, "k", (const char *[]){ "[data,-]", NULL }, NULL);
	SHS_ASSERT_INT_EQ(f.cands.n, 2);
	CU_ASSERT_PTR_NOT_NULL(cand_labelled(&f, "rule i:data"));
	/* the GEMM: m, n and the contracted k; 2 M N K FLOPs; the workspace whole */
	fx_ask(&f, "gm", NULL, NULL, SHS_PMODE_ENUMERATE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c = cand_labelled(&f, "gemm m0:data n0:tensor"));
	CU_ASSERT_DOUBLE_EQUAL(c->flops, 2.0 * 8 * 16 * 8 / 4, 1e-9);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c = cand_labelled(&f, "gemm k0:data"));
	SHS_ASSERT_INT_EQ(c->n_colls, 1);
	/* the norm: never the hidden dim; its backward's dgamma and dbeta summed over rows */
	fx_ask(&f, "nf", NULL, NULL, SHS_PMODE_ENUMERATE);
	for (uint32_t k = 0; k < f.cands.n; k++)
		CU_ASSERT_EQUAL(f.cands.v[k].operands[0].dims[2].n, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c = cand_labelled(&f, "norm r0:data r1:tensor"));
	CU_ASSERT_EQUAL(c->result[1].dims[0].axes[0], 0); /* mu [4,16] follows the rows */
	CU_ASSERT_EQUAL(c->result[1].dims[1].axes[0], 1);
	fx_ask(&f, "nb", NULL, NULL, SHS_PMODE_ENUMERATE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c = cand_labelled(&f, "norm r0:data"));
	SHS_ASSERT_INT_EQ(c->n_colls, 2); /* dgamma and dbeta */
	CU_ASSERT_EQUAL(c->colls[0].axes_mask, 1u);
	fx_free(&f);
}

CU_TestInfo strategies_tests[] = {
	{ "kernels shard by their factor rules (Shardy's, GEMM, norm)",
	  kernels_shard_by_their_rules },
	{ "Transformer Engine's attention: batch and heads, mapped by shape",
	  te_attention_shards_batch_and_heads },
	{ "elementwise: one candidate per distinct hint", ew_one_candidate_per_hint },
	{ "elementwise: hint axes that do not divide are padded when they shrink it",
	  ew_pads_axes_that_do_not_divide },
	{ "elementwise: scalar operands stay replicated", ew_scalar_operands_stay_replicated },
	{ "elementwise: local flops and bytes", ew_costs_are_local },
	{ "elementwise: ENUMERATE gives every valid spec", ew_enumerate_counts },
	{ "transpose permutes the spec", transpose_permutes },
	{ "reshape merge keeps the major dim's axes", reshape_merge_keeps_major_axes },
	{ "reshape split moves axes to the major dim", reshape_split_moves_axes_to_major },
	{ "reshape ENUMERATE round-trips", reshape_enumerate_round_trips },
	{ "broadcast maps operand dims", broadcast_maps_dims },
	{ "dynamic-slice drops the stacked dim", dynamic_slice_drops_stacked_dim },
	{ "dynamic-update-slice shares one spec", dynamic_update_slice_shares_spec },
	{ "slice, pad, concatenate keep whole dims", slice_pad_concatenate_keep_whole_dims },
	{ "iota and constant follow the result hint", iota_and_constant_follow_result_hint },
	{ "reduce over a sharded dim: all-reduce, reduce-scatter",
	  reduce_over_sharded_dim_is_partial },
	{ "variadic reduce shards every leaf", reduce_variadic_shards_every_leaf },
	{ "reduce ENUMERATE covers operand specs and variants",
	  reduce_enumerate_covers_operand_specs },
	{ "gather on a vocab-sharded table all-reduces", gather_vocab_sharded_all_reduces },
	{ "gather on an embed-sharded table carries through",
	  gather_embed_sharded_carries_through },
	{ "gather with an implicit index vector dim", gather_with_implicit_index_vector },
	{ "scatter of batch-sharded updates reduces", scatter_batch_sharded_updates_reduce },
	{ "tuple and get-tuple-element pass leaves", tuple_and_gte_pass_leaves },
	{ "while threads its operand's leaves", while_threads_operand_leaves },
	{ "call takes the called root and operand hints", call_takes_called_root_and_hints },
	{ "parameter takes its hint, or any spec", parameter_takes_hint_or_anything },
	{ "Sharding custom-call follows the module's hint", sharding_custom_call_follows_hint },
	{ "flash attention: batch, heads and the sequence (ring or gather)",
	  flash_attention_shards_batch_heads_and_sequence },
	{ "flash attention: kernel FLOPs and bytes per device", flash_attention_costs },
	{ "flash attention: the cuDNN and Pallas forms cost the same",
	  flash_attention_kernels_cost_alike },
	{ "flash attention: annotate fsdp+tp shards the kernels over batch and heads",
	  flash_attention_annotated_over_batch_and_heads },
	{ "real modules: no candidate refused", real_modules_have_no_refused_candidate },
	{ "generated modules: no candidate refused", generated_modules_have_no_refused_candidate },
	{ "corpus modules: no candidate refused", corpus_modules_have_no_refused_candidate },
	CU_TEST_INFO_NULL,
};
