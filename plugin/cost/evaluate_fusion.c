/* Fusion: which values never reach HBM because the compiler fuses them, as XLA's passes do.
 *
 * The rules, each with the XLA pass it models (xla/service/instruction_fusion.cc,
 * xla/service/gpu/transforms/priority_fusion.cc, multi_output_fusion.cc, gemm_fusion.cc,
 * layout_assignment.cc, algebraic_simplifier.cc; the TPU compiler is closed, but its fusion
 * kinds are XLA's: loop, input (reduction), output (matmul epilogue) fusions):
 *
 *  F1 producer-consumer (instruction_fusion, priority_fusion): a value made by elementwise
 *     work, a convert, a broadcast, an iota, a constant, a reshape, a bitcast, a transpose, a
 *     slice or a dynamic-slice is computed inside every consumer when each of its users can
 *     take it (elementwise work, reductions as the fusion's root, data movement, a matmul's
 *     operand, an in-place update's update): it is never written and never read. With several
 *     users it is duplicated into each, which reads its materialised operands once per user
 *     (operands fused into it are computed again, not read); priority fusion does that only
 *     when it saves traffic, so it is done when the duplicated reads ((k - 1) x those input
 *     bytes) cost less than the write and the k reads it saves.
 *  F2 matmul epilogues (TPU output fusion; GPU cuBLAS epilogues and gemm_fusion): a matmul whose
 *     only user is elementwise (a bias add, a convert, an activation) writes that user's result
 *     instead of its own. The user is then the fusion's root and materialised: a matmul is never
 *     duplicated into consumers.
 *  F3 matmul prologues (TPU operand fusion; GPU gemm_fusion): F1 lets converts, broadcasts,
 *     transposes (a layout the matmul reads directly: layout_assignment) and elementwise work
 *     fuse into a matmul's operands.
 *  F4 views (algebraic_simplifier's ReshapeIsBitcast, layout_assignment): a reshape or bitcast
 *     of a materialised value, itself materialised, is a bitcast of the same buffer and moves
 *     no bytes.
 *  F5 multi-output fusion (gpu/transforms/multi_output_fusion.cc, priority_fusion's
 *     multi-output producers; TPU loop fusions with several outputs): a value F1 leaves
 *     materialised only because the computation's root returns it (the new weight and Adam
 *     moments, a layer's saved value) is an extra output of the fusion of its other users:
 *     written once, as the root needs it, and not read back by them (Adam's update of one
 *     tensor is one fusion reading g, w, m, v and writing w, m, v).
 *  F6 across calls (call_inliner runs before fusion): a dynamic-update-slice whose update is,
 *     through reshapes, a called layer's result that elementwise work makes for the root only
 *     (a scanned layer's gradient, converted) writes it in place: that work's fusion writes the
 *     stack's slot, and the update costs nothing more.
 *  The root, tuple-shaped values, parameters, collectives, loops, calls, custom calls,
 *  gathers, scatters and sorts are never fused. GPU and TPU differ in the details (GPU priority
 *  fusion also duplicates expensive elementwise work; TPU fuses larger prologues into matmuls);
 *  at the level of HBM bytes per step the rules above hold for both.
 *
 * Kernels (--fusion kernels): an eager framework's runtime (PyTorch; Megatron-LM, whose 2021
 * code fuses by hand a scale+mask+softmax kernel, bias+GeLU and bias+dropout+add in
 * TorchScript, and its own layer norm, and runs the attention dropout, baddbmm / bmm and every
 * GEMM as kernels of their own: megatron/model/fused_softmax.py, fused_bias_gelu.py,
 * transformer.py, fused_layer_norm.py). One operation is one kernel: F1 only between
 * instructions of the same operation (the same op_name but its last component, as a framework
 * names an operation's steps), and constants, iotas and broadcasts everywhere (scalars and
 * expanded views, never materialised); no F2 and no F3 (a matmul reads its operands from HBM and
 * writes its result). F4 to F6 as above. */
#include <stdlib.h>
#include <string.h>

#include "evaluate_internal.h"

/* What fusion does to one value. */
typedef struct fuse {
	bool fused;    /* computed inside its consumers: never written, never read */
	bool view;     /* a bitcast of a materialised buffer: moves no bytes itself */
	bool extra;    /* an extra output of its users' fusion (F5): written, not read back */
	bool in_place; /* an update its producer writes into the slot (F6): no bytes itself */
	bool root;     /* a matmul epilogue's root: materialised (F2) */
	uint32_t dups; /* further consumers it is duplicated into (F1) */
	double out;    /* its local bytes under the plan */
} fuse;

struct shs__fusion {
	uint32_t n_comps;
	fuse **v; /* per computation and instruction */
};

static bool is_view_op(shs_opcode op)
{
	return op == SHS_OP_RESHAPE || op == SHS_OP_BITCAST;
}

/* Whether a value made by op can be computed inside its consumers (F1). */
static bool producer(shs_opcode op)
{
	return shs_opcode_is_elementwise(op) || is_view_op(op) || op == SHS_OP_BROADCAST ||
	       op == SHS_OP_IOTA || op == SHS_OP_CONSTANT || op == SHS_OP_TRANSPOSE ||
	       op == SHS_OP_SLICE || op == SHS_OP_DYNAMIC_SLICE;
}

/* Whether operand k of u can take a fused producer (F1, F3; an eager framework's matmul
 * reads its operands from HBM). */
static bool consumer(const shs_instr *u, uint32_t k, bool kernels)
{
	switch (u->op) {
	case SHS_OP_DOT: case SHS_OP_CONVOLUTION:
		return !kernels;
	case SHS_OP_BROADCAST: case SHS_OP_REDUCE: case SHS_OP_RESHAPE: case SHS_OP_BITCAST:
	case SHS_OP_TRANSPOSE: case SHS_OP_SLICE: case SHS_OP_DYNAMIC_SLICE:
	case SHS_OP_CONCATENATE: case SHS_OP_PAD:
		return true;
	case SHS_OP_DYNAMIC_UPDATE_SLICE:
		return k != 0; /* operand 0 is the buffer updated in place */
	default:
		return shs_opcode_is_elementwise(u->op);
	}
}

/* The op_name of in without its last component (the framework operation it is part of,
 * "train_step/layers/mlp" for ".../mlp/multiply") in *scope; its length (0 without one). */
static size_t scope_of(const shs_instr *in, const char **scope)
{
	const char *name = in->metadata ? in->metadata->op_name : NULL;
	const char *slash = name ? strrchr(name, '/') : NULL;

	*scope = name;
	return slash ? (size_t)(slash - name) : 0;
}

/* Whether an eager framework computes v inside u's kernel: v is a scalar or an expanded view
 * (constants, iotas and broadcasts are never materialised), or both belong to the same
 * operation, whose hand-fused kernel (a layer norm, a softmax, an activation) does all of
 * it. */
static bool same_kernel(const shs_instr *v, const shs_instr *u)
{
	const char *a, *b;
	size_t n = scope_of(v, &a);

	if (v->op == SHS_OP_CONSTANT || v->op == SHS_OP_IOTA || v->op == SHS_OP_BROADCAST)
		return true;
	return n && n == scope_of(u, &b) && !memcmp(a, b, n);
}

/* Whether operand k of u can take its producer fused (F1, F3), under the kernels of an eager
 * framework when kernels. */
static bool takes(const shs_computation *comp, const shs_instr *u, uint32_t k, bool kernels)
{
	return consumer(u, k, kernels) &&
	       (!kernels || same_kernel(comp->instrs[u->operands[k]], u));
}

static bool is_matmul(shs_opcode op)
{
	return op == SHS_OP_DOT || op == SHS_OP_CONVOLUTION;
}

/* Local bytes of value v under its decision (replicated leaves where it has none). */
static double value_bytes(const shs_computation *comp, const shs_decision *dec, uint32_t v,
			  const shs_mesh *mesh)
{
	const shs_shape *shapes[SHS_MAX_VALUE_LEAVES];
	uint32_t n = shs_shape_leaf_list(&comp->instrs[v]->shape, shapes, SHS_MAX_VALUE_LEAVES);
	double b = 0;

	for (uint32_t j = 0; j < n; j++) {
		shs_pspec rep;
		shs_spec_replicated(&rep, shapes[j]->rank);
		b += shs_spec_local_bytes(dec->set && j < dec->n_leaves ? &dec->leaves[j] : &rep,
					  shapes[j], mesh);
	}
	return b;
}

/* Users of each value of comp: users[v] counts them, each_ok[v] whether all can fuse it,
 * rooted[v] whether all but the root tuple can (and the root returns it), at_root[v] how many
 * of its uses are the root's. */
static void count_users(const shs_computation *comp, bool kernels, uint32_t *users,
			bool *each_ok, bool *rooted, uint32_t *at_root)
{
	for (uint32_t i = 0; i < comp->n_instrs; i++)
		each_ok[i] = true;
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *u = comp->instrs[i];
		for (uint32_t k = 0; k < u->n_operands; k++) {
			uint32_t v = u->operands[k];
			users[v]++;
			at_root[v] += i == comp->root;
			if (takes(comp, u, k, kernels))
				continue;
			if (each_ok[v])
				rooted[v] = i == comp->root && u->op == SHS_OP_TUPLE;
			else
				rooted[v] = rooted[v] && i == comp->root;
			each_ok[v] = false;
		}
	}
}

/* F2: a matmul whose only user is elementwise hands its result to that user. */
static void epilogues(const shs_computation *comp, const uint32_t *users, fuse *f)
{
	for (uint32_t u = 0; u < comp->n_instrs; u++) {
		const shs_instr *in = comp->instrs[u];
		if (!shs_opcode_is_elementwise(in->op))
			continue;
		for (uint32_t k = 0; k < in->n_operands; k++) {
			uint32_t d = in->operands[k];
			if (is_matmul(comp->instrs[d]->op) && users[d] == 1 && d != comp->root &&
			    !f[d].fused) {
				f[d].fused = true;
				f[u].root = true;
				break;
			}
		}
	}
}

/* The bytes of the operands fused into instruction i (computed in place, not read; or made in
 * the same fusion as an extra output). */
static double fused_in(const shs_instr *in, const fuse *f)
{
	double b = 0;

	for (uint32_t k = 0; k < in->n_operands; k++)
		if (f[in->operands[k]].fused || f[in->operands[k]].extra)
			b += f[in->operands[k]].out;
	return b;
}

/* Bytes instruction i reads from HBM when it is fused into its users: its own (dec) less its
 * output and the operands fused into it. */
static double hbm_reads(const shs_instr *in, const shs_decision *dec, const fuse *f, uint32_t i)
{
	double reads = dec->bytes - f[i].out - fused_in(in, f);

	return reads > 0 ? reads : 0;
}

/* F1 for value v of computation comp with k users that can all take it: fused when the
 * duplicated reads cost less than what not writing it saves. */
static void producer_consumer(const shs_instr *in, const shs_decision *dec, uint32_t v,
			      uint32_t k, fuse *f)
{
	double out = f[v].out, reads = hbm_reads(in, dec, f, v);

	if (k > 1 && (double)(k - 1) * reads >= (double)(k + 1) * out)
		return;
	f[v].fused = true;
	f[v].dups = k - 1;
}

/* F6: whether update-slice v's update is, through reshapes and bitcasts, a call's result that
 * elementwise work in the callee makes for its root alone. */
static bool written_by_callee(const shs_module *m, const shs_computation *comp, uint32_t v)
{
	const shs_instr *in = comp->instrs[v], *call, *root;
	const shs_computation *callee;
	uint32_t src, uses = 0;

	if (in->op != SHS_OP_DYNAMIC_UPDATE_SLICE || in->n_operands < 2)
		return false;
	in = comp->instrs[in->operands[1]];
	while (is_view_op(in->op) && in->n_operands == 1)
		in = comp->instrs[in->operands[0]];
	if (in->op != SHS_OP_GET_TUPLE_ELEMENT || in->n_operands != 1)
		return false;
	call = comp->instrs[in->operands[0]];
	if (call->op != SHS_OP_CALL || call->n_called != 1)
		return false;
	callee = m->comps[call->called[0]];
	root = callee->instrs[callee->root];
	if (root->op != SHS_OP_TUPLE || in->tuple_index < 0 ||
	    in->tuple_index >= root->n_operands)
		return false;
	src = root->operands[in->tuple_index];
	if (!shs_opcode_is_elementwise(callee->instrs[src]->op))
		return false;
	for (uint32_t i = 0; i < callee->n_instrs; i++)
		for (uint32_t k = 0; k < callee->instrs[i]->n_operands; k++)
			uses += callee->instrs[i]->operands[k] == src;
	return uses == 1;
}

static void decide(const shs_module *m, const shs_plan *p, const shs_mesh *mesh, uint32_t c,
		   bool kernels, const uint32_t *users, const bool *each_ok, const bool *rooted,
		   const uint32_t *at_root, fuse *f)
{
	const shs_computation *comp = m->comps[c];

	for (uint32_t v = 0; v < comp->n_instrs; v++)
		f[v].out = value_bytes(comp, &p->d[c][v], v, mesh);
	if (!kernels)
		epilogues(comp, users, f);
	for (uint32_t v = 0; v < comp->n_instrs; v++) {
		const shs_instr *in = comp->instrs[v];
		if (v == comp->root || f[v].root || f[v].fused || in->shape.type == SHS_TUPLE ||
		    !producer(in->op) || !users[v] || !each_ok[v])
			continue;
		producer_consumer(in, &p->d[c][v], v, users[v], f);
	}
	/* F5: returned by the root and taken by fusions otherwise: an extra output of theirs */
	for (uint32_t v = 0; v < comp->n_instrs; v++) {
		const shs_instr *in = comp->instrs[v];
		f[v].extra = !f[v].fused && !f[v].root && rooted[v] && v != comp->root &&
			     in->shape.type != SHS_TUPLE && producer(in->op) &&
			     !is_view_op(in->op) && users[v] > at_root[v];
	}
	for (uint32_t v = 0; v < comp->n_instrs; v++)
		f[v].in_place = written_by_callee(m, comp, v);
	/* F4: a reshape of a materialised value that is itself materialised is a bitcast */
	for (uint32_t v = 0; v < comp->n_instrs; v++) {
		const shs_instr *in = comp->instrs[v];
		f[v].view = is_view_op(in->op) && !f[v].fused && in->n_operands == 1 &&
			    !f[in->operands[0]].fused;
	}
}

int shs__fusion_make(const shs_module *m, const shs_plan *p, const shs_mesh *mesh,
		     bool kernels, shs__fusion **out, shs_err *e)
{
	shs__fusion *x = calloc(1, sizeof(*x));
	int rc = SHS_OK;

	*out = NULL;
	if (x)
		x->v = calloc(m->n_comps + 1, sizeof(*x->v));
	if (!x || !x->v) {
		free(x);
		return shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	}
	x->n_comps = m->n_comps;
	for (uint32_t c = 0; c < m->n_comps && rc == SHS_OK; c++) {
		const shs_computation *comp = m->comps[c];
		uint32_t *users = calloc(comp->n_instrs + 1, sizeof(*users));
		bool *each_ok = calloc(comp->n_instrs + 1, sizeof(*each_ok));
		bool *rooted = calloc(comp->n_instrs + 1, sizeof(*rooted));
		uint32_t *at_root = calloc(comp->n_instrs + 1, sizeof(*at_root));
		x->v[c] = calloc(comp->n_instrs + 1, sizeof(fuse));
		if (!users || !each_ok || !rooted || !at_root || !x->v[c]) {
			rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
		} else {
			count_users(comp, kernels, users, each_ok, rooted, at_root);
			decide(m, p, mesh, c, kernels, users, each_ok, rooted, at_root, x->v[c]);
		}
		free(users);
		free(each_ok);
		free(rooted);
		free(at_root);
	}
	if (rc != SHS_OK)
		shs__fusion_free(x);
	else
		*out = x;
	return rc;
}

void shs__fusion_free(shs__fusion *x)
{
	for (uint32_t c = 0; x && c < x->n_comps; c++)
		free(x->v[c]);
	if (x)
		free(x->v);
	free(x);
}

double shs__fused_bytes(const shs_module *m, const shs_plan *p, const shs__fusion *x,
			uint32_t c, uint32_t i)
{
	const shs_instr *in = m->comps[c]->instrs[i];
	const fuse *f;
	double b;

	if (!x || c >= x->n_comps)
		return p->d[c][i].bytes;
	f = x->v[c];
	if (f[i].view || f[i].in_place)
		return 0;
	/* a fused value is written nowhere and read again by each copy of it */
	if (f[i].fused)
		return (double)(1 + f[i].dups) * hbm_reads(in, &p->d[c][i], f, i);
	/* (an in-place update's own bytes are its update's, less than its output) */
	b = p->d[c][i].bytes - fused_in(in, f);
	return b > 0 ? b : 0;
}

bool shs__update_in_place(const shs__fusion *x, uint32_t c, uint32_t i)
{
	return x && c < x->n_comps && x->v[c][i].in_place;
}

bool shs__fused_away(const shs__fusion *x, uint32_t c, uint32_t i)
{
	return x && c < x->n_comps && x->v[c][i].fused;
}
