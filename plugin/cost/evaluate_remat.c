/* Remat policies: which saved activations a step keeps, and the forward work it then redoes.
 *
 * A forward layer is a computation whose results beyond the first are saved for a later layer
 * call or loop (the backward pass): called from the entry (an unrolled layer), or called from a
 * loop body that writes those results into stacks the loop starts from zeros (a scanned layer).
 * Under `full` only the saved values that are the layer's own input are kept; under `dots` only
 * matmul outputs (through reshapes, transposes, converts and copies) and the input; under
 * `attention` all but the attention core (Korthikanti et al. 2022, "Reducing Activation
 * Recomputation in Large Transformer Models", section 4.2, selective recomputation): the values
 * that lie between a matmul of two activations (the scores QK^T) and the next matmul of two
 * activations they feed (the softmax's product with V), without a matmul between: the scores,
 * the mask and scale, the softmax (and its dropout where a model has one). The rest is dropped
 * from memory and recomputed in the backward pass, once per execution: in a compiled step
 * what the dropped values are made from, back to the layer's input and what the policy keeps
 * (JAX stages only the residuals' ancestors: a layer's last matmul, whose product only leaves
 * the layer, does not run again), in an eager framework (--fusion kernels) the checkpointed
 * layer whole (torch.utils.checkpoint reruns the function): the whole forward layer (`full`),
 * its instructions other than matmuls (`dots`) or the attention core with its scores matmul
 * (`attention`). A flash attention kernel is a custom call that keeps
 * only its statistics, no [T, T] value: `attention` then drops and recomputes nothing. A
 * scanned layer also no longer stores what it drops: the dynamic-update-slices that would copy
 * those values into their stacks on every trip are taken off the recomputation's seconds (an
 * unrolled layer keeps its saved values where it made them and has no such copy). The
 * recomputed instructions' collectives run again (repeated_comm). `offload` drops what `full`
 * drops from HBM but recomputes nothing: the dropped values' bytes (per device, as the plan
 * splits them) go to host memory and back (host_bytes; evaluate.c costs the transfers). */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "evaluate_internal.h"

enum { MAX_CHAIN = 64 };

/* The instruction a chain of reshapes, transposes, converts, copies and bitcasts starts from. */
static uint32_t source(const shs_computation *c, uint32_t v)
{
	for (uint32_t n = 0; n < MAX_CHAIN; n++) {
		const shs_instr *i = c->instrs[v];
		bool view = i->op == SHS_OP_RESHAPE || i->op == SHS_OP_TRANSPOSE ||
			    i->op == SHS_OP_CONVERT || i->op == SHS_OP_COPY ||
			    i->op == SHS_OP_BITCAST;
		if (!view || !i->n_operands)
			return v;
		v = i->operands[0];
	}
	return v;
}

static bool is_matmul(const shs_instr *i)
{
	return i->op == SHS_OP_DOT || i->op == SHS_OP_CONVOLUTION;
}

/* Whether instruction i of c is a matmul of two activations (attention's QK^T or its product
 * with V): neither operand is, through views, a parameter or constant (a weight). */
static bool activation_matmul(const shs_computation *c, uint32_t i)
{
	const shs_instr *in = c->instrs[i];

	if (in->op != SHS_OP_DOT || in->n_operands < 2)
		return false;
	for (uint32_t k = 0; k < 2; k++) {
		shs_opcode op = c->instrs[source(c, in->operands[k])]->op;
		if (op == SHS_OP_PARAMETER || op == SHS_OP_CONSTANT)
			return false;
	}
	return true;
}

/* The attention core of computation c, one flag per instruction (caller frees; NULL when out of
 * memory): an instruction reached from a matmul of two activations through instructions that
 * are not matmuls (that matmul included), or made from constants and iotas alone (the causal
 * mask, a dropout mask's random bits), which reaches a matmul of two activations the same
 * way. Instructions come after their operands. */
static bool *attention_core(const shs_computation *c)
{
	bool *from = calloc(c->n_instrs + 1, sizeof(*from));
	bool *to = calloc(c->n_instrs + 1, sizeof(*to));
	bool *made = calloc(c->n_instrs + 1, sizeof(*made)); /* of constants and iotas alone */

	for (uint32_t i = 0; from && to && made && i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		from[i] = activation_matmul(c, i);
		for (uint32_t k = 0; !from[i] && !is_matmul(in) && k < in->n_operands; k++)
			from[i] = from[in->operands[k]];
		made[i] = in->op == SHS_OP_CONSTANT || in->op == SHS_OP_IOTA ||
			  (in->n_operands && !is_matmul(in) && in->op != SHS_OP_PARAMETER);
		for (uint32_t k = 0; made[i] && in->op != SHS_OP_CONSTANT &&
				     in->op != SHS_OP_IOTA && k < in->n_operands; k++)
			made[i] = made[in->operands[k]];
	}
	for (uint32_t i = c->n_instrs; from && to && made && i-- > 0;) {
		const shs_instr *in = c->instrs[i];
		bool feeds = activation_matmul(c, i) || (!is_matmul(in) && to[i]);
		for (uint32_t k = 0; feeds && k < in->n_operands; k++)
			to[in->operands[k]] = true;
	}
	for (uint32_t i = 0; from && to && made && i < c->n_instrs; i++)
		from[i] = (from[i] || made[i]) && to[i];
	if (from && (!to || !made)) {
		free(from);
		from = NULL;
	}
	free(to);
	free(made);
	return from;
}

/* Whether saved value v of forward layer f stays under policy (core: f's attention core). */
static bool kept(const shs_module *m, uint32_t f, uint32_t v, shs_remat policy,
		 const bool *core)
{
	const shs_computation *c = m->comps[f];
	uint32_t from = source(c, v);
	const shs_instr *s = c->instrs[from];

	if (policy == SHS_REMAT_NONE || s->op == SHS_OP_PARAMETER)
		return true;
	if (policy == SHS_REMAT_ATTENTION)
		return !core || !core[from];
	return policy == SHS_REMAT_DOTS && is_matmul(s);
}

/* Whether policy keeps instruction i's value where the forward made it (core: f's attention
 * core): dots keeps matmuls, attention all but the core, full nothing. */
static bool policy_keeps(const shs_instr *in, uint32_t i, shs_remat policy, const bool *core)
{
	return (policy == SHS_REMAT_DOTS && is_matmul(in)) ||
	       (policy == SHS_REMAT_ATTENTION && (!core || !core[i]));
}

/* Which instructions of forward layer c a compiled step recomputes: what the dropped saved
 * values (drop, per instruction) are made from, back to the layer's parameters and to what
 * the policy keeps; a calloc'ed flag per instruction, NULL when out of memory. The backward
 * pass reads the saved values, not the layer's result: JAX stages only the residuals'
 * ancestors for recomputation (jax/_src/ad_checkpoint.py, remat_partial_eval's dce_jaxpr), so
 * a layer's last matmul, whose product only leaves the layer, does not run again. */
static bool *recomputed(const shs_computation *c, const bool *drop, shs_remat policy,
			const bool *core)
{
	bool *need = calloc(c->n_instrs + 1, sizeof(*need));

	for (uint32_t i = c->n_instrs; need && i-- > 0;) {
		const shs_instr *in = c->instrs[i];
		need[i] = (need[i] || drop[i]) && in->op != SHS_OP_PARAMETER &&
			  !policy_keeps(in, i, policy, core);
		for (uint32_t k = 0; need[i] && k < in->n_operands; k++)
			need[in->operands[k]] = true;
	}
	return need;
}

/* Seconds of the instructions of computation f that policy recomputes, per run: those
 * recomputed() finds from the dropped saved values drop, or, when drop is NULL (an eager
 * framework reruns the checkpointed function whole: torch.utils.checkpoint, Megatron-LM's
 * CheckpointFunction), all that the policy does not keep (full: all; dots: those that are not
 * matmuls; attention: the core's). Flags them in redo[f]. False when out of memory. */
static bool compute_of(const shs_module *m, const shs_plan *p, const shs_cluster *cl,
		       const shs__fusion *fused, uint32_t f, shs_remat policy, const bool *core,
		       const bool *drop, double *t, double *flops, bool **redo)
{
	const shs_computation *c = m->comps[f];
	bool *need = drop ? recomputed(c, drop, policy, core) : NULL;

	if (drop && !need)
		return false;
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_decision *d = &p->d[f][i];
		double tf, tb;
		if (need ? !need[i] : policy_keeps(c->instrs[i], i, policy, core))
			continue;
		tf = shs__flop_seconds(&cl->hw, p, &cl->mesh, m, f, i);
		tb = shs__hbm_seconds(&cl->hw, p, &cl->mesh, m, f, i,
				      shs__fused_bytes(m, p, fused, f, i));
		*t += tf > tb ? tf : tb;
		*flops += d->flops;
		redo[f][i] = true;
	}
	free(need);
	return true;
}

/* Leaf *l of shape s, depth first (counting *l down), or NULL. */
static const shs_shape *nth_leaf(const shs_shape *s, uint32_t *l)
{
	if (s->type != SHS_TUPLE)
		return (*l)-- == 0 ? s : NULL;
	for (uint32_t k = 0; k < s->n_tuple; k++) {
		const shs_shape *r = nth_leaf(&s->tuple[k], l);
		if (r)
			return r;
	}
	return NULL;
}

/* Bytes per device of leaf l of instruction i of computation c under plan p. */
static double leaf_bytes(const shs_module *m, const shs_plan *p, const shs_cluster *cl,
			 uint32_t c, uint32_t i, uint32_t l)
{
	const shs_decision *d = &p->d[c][i];
	uint32_t at = l;
	const shs_shape *a = nth_leaf(&m->comps[c]->instrs[i]->shape, &at);

	if (!a)
		return 0;
	if (d->set && l < d->n_leaves)
		return shs_spec_local_bytes(&d->leaves[l], a, &cl->mesh);
	return (double)shs_shape_bytes(a);
}

/* The communication the recomputation repeats: each collective site of base at a recomputed
 * instruction runs again as it ran in the forward pass, exposed as much (a tensor-parallel
 * all-reduce of a recomputed layer is made again: Megatron-LM's and JAX's checkpointed forward
 * contain their collectives). A weight's gather is not: the backward pass gathers the weight
 * for its own matmuls, and the recomputed forward reads that copy (one gather per backward
 * layer, the book's "re-AllGather the weights"). */
static void repeated_comm(const shs_cluster *cl, const shs_eval *base, bool *const *redo,
			  shs__remat *out)
{
	for (uint32_t k = 0; k < base->n_colls; k++) {
		const shs_eval_coll *s = &base->colls[k];
		uint32_t a;
		if (s->weight || !redo[s->comp][s->instr])
			continue;
		out->comm_s += s->time_s;
		out->comm_exposed_s += s->exposed_s;
		a = shs__wait_axis(cl, s->kind, s->axes_mask, s->bytes, SHS_MESH_MAX_AXES);
		if (a < SHS_MESH_MAX_AXES)
			out->comm_exposed_by_axis[a] += s->exposed_s;
	}
}

/* The forward layer computation and the value inside it that body value v of a loop stores:
 * v reshaped from get-tuple-element k of a call of f. False when it is not that. */
static bool stored_value(const shs_module *m, uint32_t body, uint32_t v, uint32_t *f,
			 uint32_t *inner)
{
	const shs_computation *b = m->comps[body];
	const shs_instr *g = b->instrs[source(b, v)], *call;
	const shs_computation *fc;

	if (g->op != SHS_OP_GET_TUPLE_ELEMENT)
		return false;
	call = b->instrs[g->operands[0]];
	if (call->op != SHS_OP_CALL || !call->n_called)
		return false;
	fc = m->comps[call->called[0]];
	if (fc->instrs[fc->root]->op != SHS_OP_TUPLE ||
	    g->tuple_index >= fc->instrs[fc->root]->n_operands)
		return false;
	*f = call->called[0];
	*inner = fc->instrs[fc->root]->operands[g->tuple_index];
	return true;
}

/* Per value of the entry e: whether some element of it (beyond the first) goes into a later
 * call or loop, or into a tuple that is a loop's init. NULL when out of memory. */
static bool *feeds_layers(const shs_computation *e)
{
	bool *feeds = calloc(e->n_instrs + 1, sizeof(*feeds));
	bool *init = calloc(e->n_instrs + 1, sizeof(*init));

	for (uint32_t t = 0; feeds && init && t < e->n_instrs; t++)
		if (e->instrs[t]->op == SHS_OP_WHILE && e->instrs[t]->n_operands)
			init[e->instrs[t]->operands[0]] = true;
	for (uint32_t j = 0; feeds && init && j < e->n_instrs; j++) {
		const shs_instr *u = e->instrs[j];
		if (u->op != SHS_OP_CALL && u->op != SHS_OP_WHILE &&
		    !(u->op == SHS_OP_TUPLE && init[j]))
			continue;
		for (uint32_t k = 0; k < u->n_operands; k++) {
			const shs_instr *g = e->instrs[u->operands[k]];
			if (g->op == SHS_OP_GET_TUPLE_ELEMENT && g->tuple_index && g->n_operands &&
			    g->operands[0] < j)
				feeds[g->operands[0]] = true;
		}
	}
	free(init);
	if (!init) {
		free(feeds);
		return NULL;
	}
	return feeds;
}

/* A scanned forward loop w: its zero-started stacks written by a dynamic-update-slice of a
 * forward layer's saved value; drops the ones the policy does not keep (the stack's buffer, the
 * broadcast it starts from: the loops that carry it are views of it). False when out of
 * memory. */
static bool scanned(const shs_module *m, const shs_plan *p, const shs_cluster *cl,
		    const shs__fusion *fused, shs_remat policy, bool whole, uint32_t w,
		    const bool *feeds, bool **redo, shs__remat *out)
{
	const shs_computation *e = m->comps[out->comp];
	const shs_instr *wi = e->instrs[w], *init = e->instrs[wi->operands[0]];
	const shs_computation *body = m->comps[wi->called[0]];
	const shs_instr *root = body->instrs[body->root];
	uint32_t f = 0, layer = 0;
	bool any = false, *core = NULL, *drop = NULL, ok = true;
	int64_t trips = 1;
	double stores = 0; /* seconds per trip of copying dropped values into their stacks */
	double t = 0, flops = 0;

	if (init->op != SHS_OP_TUPLE || root->op != SHS_OP_TUPLE || !feeds[w])
		return true;
	for (uint32_t k = 0; k < init->n_operands && k < root->n_operands; k++) {
		uint32_t z = init->operands[k], inner;
		const shs_instr *dus = body->instrs[root->operands[k]];
		if (e->instrs[z]->op == SHS_OP_BROADCAST &&
		    dus->op == SHS_OP_DYNAMIC_UPDATE_SLICE && dus->n_operands > 1 &&
		    stored_value(m, wi->called[0], dus->operands[1], &f, &inner)) {
			if (!any || f != layer) {
				free(core);
				free(drop);
				core = NULL;
				drop = whole ? NULL : calloc(m->comps[f]->n_instrs + 1, 1);
				if ((policy == SHS_REMAT_ATTENTION &&
				     !(core = attention_core(m->comps[f]))) || (!whole && !drop)) {
					free(drop);
					return false;
				}
			}
			layer = f;
			any = true;
			if (kept(m, f, inner, policy, core))
				continue;
			if (drop)
				drop[inner] = true;
			for (uint32_t j = out->first[z]; j < out->first[z + 1]; j++)
				out->dropped[j] = true;
			if (policy == SHS_REMAT_OFFLOAD) /* the whole stack, every layer's */
				out->host_bytes += leaf_bytes(m, p, cl, out->comp, z, 0);
			stores += shs__fused_bytes(m, p, fused, wi->called[0],
						   root->operands[k]) / shs_hw_hbm_rate(&cl->hw);
		}
	}
	if (any && policy != SHS_REMAT_NONE && policy != SHS_REMAT_OFFLOAD) {
		if (!shs_while_trip_count(m, e, wi, &trips))
			trips = 1;
		ok = compute_of(m, p, cl, fused, layer, policy, core, drop, &t, &flops, redo);
		out->extra_s += (double)trips * (t - stores);
		out->extra_flops += (double)trips * flops;
	}
	free(core);
	free(drop);
	return ok;
}

/* An unrolled forward layer: a call whose results beyond the first feed a later call. False
 * when out of memory. */
static bool unrolled(const shs_module *m, const shs_plan *p, const shs_cluster *cl,
		     const shs__fusion *fused, shs_remat policy, bool whole, uint32_t ci,
		     const bool *feeds, bool **redo, shs__remat *out)
{
	const shs_computation *e = m->comps[out->comp];
	const shs_instr *call = e->instrs[ci];
	const shs_computation *fc = m->comps[call->called[0]];
	const shs_instr *root = fc->instrs[fc->root];
	bool *core = NULL, *drop = NULL, ok = true;
	double t = 0, flops = 0;

	if (root->op != SHS_OP_TUPLE || root->n_operands < 2 || !feeds[ci] ||
	    policy == SHS_REMAT_NONE)
		return true;
	if ((policy == SHS_REMAT_ATTENTION && !(core = attention_core(fc))) ||
	    (!whole && !(drop = calloc(fc->n_instrs + 1, sizeof(*drop))))) {
		free(core);
		return false;
	}
	for (uint32_t k = 1, leaf = shs_shape_leaves(&fc->instrs[root->operands[0]]->shape);
	     k < root->n_operands; k++) {
		uint32_t n = shs_shape_leaves(&fc->instrs[root->operands[k]]->shape);
		bool dropped = !kept(m, call->called[0], root->operands[k], policy, core);
		for (uint32_t j = 0; dropped && j < n &&
				     out->first[ci] + leaf + j < out->first[ci + 1]; j++) {
			out->dropped[out->first[ci] + leaf + j] = true;
			if (policy == SHS_REMAT_OFFLOAD)
				out->host_bytes += leaf_bytes(m, p, cl, out->comp, ci, leaf + j);
		}
		if (drop && dropped)
			drop[root->operands[k]] = true;
		leaf += n;
	}
	if (policy != SHS_REMAT_OFFLOAD) {
		ok = compute_of(m, p, cl, fused, call->called[0], policy, core, drop, &t, &flops,
				redo);
		out->extra_s += t;
		out->extra_flops += flops;
	}
	free(core);
	free(drop);
	return ok;
}

/* feeds_layers(c) when some instruction of c feeds a layer; else NULL (also when out of
 * memory: *oom then). Caller frees. */
static bool *layers_fed(const shs_computation *c, bool *oom)
{
	bool *feeds = feeds_layers(c), any = false;

	*oom |= !feeds;
	for (uint32_t i = 0; feeds && i < c->n_instrs; i++)
		any |= feeds[i];
	if (!any) {
		free(feeds);
		feeds = NULL;
	}
	return feeds;
}

/* The computation whose layers remat works on, with feeds_layers of it in *feeds (caller
 * frees; NULL when out of memory), and how many times it runs per step: the entry, or, when
 * the entry's own instructions feed no layer, the body of an entry loop that holds them
 * (gradient accumulation: the layers run once per micro-batch). */
static uint32_t step_comp(const shs_module *m, int64_t *runs, bool **feeds)
{
	const shs_computation *e = shs_module_entry(m);
	bool oom = false;

	*runs = 1;
	if ((*feeds = layers_fed(e, &oom)) || oom)
		return m->entry;
	for (uint32_t i = 0; i < e->n_instrs && !oom; i++) {
		const shs_instr *in = e->instrs[i];
		if (in->op != SHS_OP_WHILE || in->n_called < 2 || in->called[0] >= m->n_comps ||
		    !(*feeds = layers_fed(m->comps[in->called[0]], &oom)))
			continue;
		if (!shs_while_trip_count(m, e, in, runs))
			*runs = 1;
		return in->called[0];
	}
	*feeds = oom ? NULL : feeds_layers(e); /* no layers anywhere: the entry's, all false */
	return m->entry;
}

int shs__remat_plan(const shs_module *m, const shs_plan *p, const shs_cluster *cl,
		    shs_remat policy, bool whole, const shs__fusion *fused, const shs_eval *base,
		    shs__remat *out, shs_err *e)
{
	bool **redo = (bool **)shs__per_instr(m, sizeof(bool), false, NULL);
	int64_t runs = 1;
	bool *feeds = NULL;
	uint32_t step = step_comp(m, &runs, &feeds);
	const shs_computation *c = m->comps[step];
	bool ok = feeds && redo;

	memset(out, 0, sizeof(*out));
	out->comp = step;
	out->first = shs__leaf_layout(c);
	out->dropped = out->first ? calloc(out->first[c->n_instrs] + 1, sizeof(*out->dropped)) :
				    NULL;
	ok = ok && out->dropped;
	for (uint32_t i = 0; ok && i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		if (in->op == SHS_OP_CALL && in->n_called)
			ok = unrolled(m, p, cl, fused, policy, whole, i, feeds, redo, out);
		else if (in->op == SHS_OP_WHILE && in->n_called >= 2 && in->n_operands == 1)
			ok = scanned(m, p, cl, fused, policy, whole, i, feeds, redo, out);
	}
	/* the collectives' counts already hold the runs; the recomputed compute is per run */
	out->extra_s *= (double)runs;
	out->extra_flops *= (double)runs;
	out->host_held = out->host_bytes;
	out->host_bytes *= (double)runs;
	if (ok)
		repeated_comm(cl, base, redo, out);
	free(feeds);
	shs__per_instr_free(m, (void **)redo);
	if (!ok) {
		shs__remat_free(out);
		return shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	}
	return SHS_OK;
}

void shs__remat_free(shs__remat *r)
{
	free(r->first);
	free(r->dropped);
	r->first = NULL;
	r->dropped = NULL;
}

static const char *const remat_names[SHS_REMAT_COUNT] = { "none", "attention", "dots",
								   "offload", "full" };

const char *shs_remat_name(shs_remat r)
{
	return (unsigned)r < SHS_REMAT_COUNT ? remat_names[r] : "?";
}

bool shs_remat_from_name(const char *name, shs_remat *out)
{
	for (int k = 0; k < SHS_REMAT_COUNT; k++)
		if (!strcmp(name, remat_names[k])) {
			*out = (shs_remat)k;
			return true;
		}
	return false;
}
