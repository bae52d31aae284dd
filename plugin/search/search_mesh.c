/* The meshes the search tries: pipeline stages dividing the layers, and on each stage's
 * devices every split over data, fsdp and tensor (tensor
 * dividing the attention heads, the batch axes not splitting the token batch into twice as many
 * shards as it has sequences), with a context axis (the sequence split: context parallelism)
 * when the token batch has fewer sequences than devices, and an expert axis when the model has
 * experts (with fsdp, in both orders: which of them takes the faster links). */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "evaluate.h"
#include "search_internal.h"

static const char fa_cudnn[] = "__cudnn$fmhaSoftmax", fa_tpu[] = "tpu_custom_call";

/* The query heads of a flash-attention forward kernel in computation c (Q [B, N, T, H] as
 * operand 0: cuDNN's, or splash attention's tpu_custom_call, as strategies/custom_call.c
 * recognises them); 0 for any other instruction. */
static int64_t flash_heads(const shs_computation *c, const shs_instr *in)
{
	const char *t = in->custom_call_target;
	const char *op_name = in->metadata ? in->metadata->op_name : NULL;
	const shs_shape *q;

	if (in->op != SHS_OP_CUSTOM_CALL || !t || !in->n_operands)
		return 0;
	if (strcmp(t, fa_cudnn) && !(!strcmp(t, fa_tpu) && op_name &&
				     strstr(op_name, "splash_mha_fwd")))
		return 0;
	q = &c->instrs[in->operands[0]]->shape;
	return q->type != SHS_TUPLE && q->rank == 4 ? q->dims[1] : 0;
}

shs__search_model shs__search_model_of(const shs_module *m)
{
	const shs_computation *entry = shs_module_entry(m);
	shs__search_model out = { 0 };
	char path[SHS_PATH_CAP];
	uint32_t tokens = shs_token_param(m);

	if (tokens != UINT32_MAX) {
		out.batch = entry->instrs[tokens]->shape.dims[0];
		out.seq = entry->instrs[tokens]->shape.dims[1];
	}
	for (uint32_t i = 0; i < entry->n_instrs; i++) {
		const shs_instr *in = entry->instrs[i];
		if (in->op != SHS_OP_PARAMETER || in->shape.type == SHS_TUPLE || !in->shape.rank)
			continue;
		shs_param_path(in, path, sizeof(path));
		if (!out.experts && shs_param_path_has_segment(path, "moe") &&
		    shs_param_path_has_segment(path, "gate") &&
		    !shs_param_path_is_optimizer_state(path))
			out.experts = in->shape.dims[in->shape.rank - 1];
	}
	for (uint32_t k = 0; k < m->n_comps && !out.heads; k++)
		for (uint32_t i = 0; i < m->comps[k]->n_instrs && !out.heads; i++)
			out.heads = flash_heads(m->comps[k], m->comps[k]->instrs[i]);
	out.layers = shs_eval_pipeline_layers(m);
	return out;
}

/* Writes "stage=p,data=d,fsdp=f,context=s,expert=e,tensor=t" without the size-1 axes (all
 * size 1: "data=1"); expert_major: expert before fsdp ("stage=p,data=d,expert=e,fsdp=f,..."),
 * which lays the experts on the slower links and the weights' gathers on the faster ones. */
static void mesh_text(const int64_t sizes[SHS_SEARCH_AXES], bool expert_major, char *buf,
		      size_t cap)
{
	static const char *const names[SHS_SEARCH_AXES] = { "data", "fsdp", "context", "expert",
							    "tensor", "stage" };
	static const int usual[SHS_SEARCH_AXES] = { 5, 0, 1, 2, 3, 4 };
	static const int swapped[SHS_SEARCH_AXES] = { 5, 0, 3, 1, 2, 4 };
	const int *order = expert_major ? swapped : usual;
	size_t used = 0;

	buf[0] = '\0';
	for (int j = 0; j < SHS_SEARCH_AXES && used < cap; j++) {
		int k = order[j];
		if (sizes[k] > 1)
			used += (size_t)snprintf(buf + used, cap - used, "%s%s=%lld",
						 used ? "," : "", names[k], (long long)sizes[k]);
	}
	if (!used)
		snprintf(buf, cap, "data=1");
}

/* Whether a context axis of size s is worth a mesh on n devices: the batch has fewer sequences
 * than there are devices (else the batch axes split it whole), s splits the sequence and the
 * batch axes (data, fsdp, expert: b of them) split the batch. */
static bool sequence_fits(int64_t n, int64_t s, int64_t b, int64_t batch, int64_t seq)
{
	return s == 1 || (batch > 0 && batch < n && seq > 0 && seq % s == 0 && batch % b == 0);
}

/* Whether batch axes of b shards over-split a token batch of batch sequences: at least two
 * shards per sequence, so that half of them or more hold none (the plan idles those devices, or
 * lays every activation out anew around the batch; a context or tensor axis splits that work
 * instead). */
static bool over_split(int64_t b, int64_t batch)
{
	return batch > 0 && b >= 2 * batch;
}

/* shs__search_meshes on the n devices of each of p stages, without the meshes whose batch
 * axes over-split the batch when prune. */
static uint32_t meshes_of(int64_t n, int64_t p, const shs__search_model *model, bool prune,
			  char (*out)[SHS_SEARCH_TEXT], int64_t (*sizes)[SHS_SEARCH_AXES],
			  uint32_t cap, uint32_t count)
{
	int64_t batch = model->batch, seq = model->seq, experts = model->experts;

	/* tensor first (the fastest links), then context, expert (dividing the experts), fsdp;
	 * data takes the rest */
	for (int64_t t = 1; t <= n; t++) {
		if (n % t || (model->heads > 0 && model->heads % t))
			continue;
		for (int64_t s = 1; s <= n / t; s++) {
			for (int64_t e = 1; (n / t) % s == 0 && e <= n / t / s; e++) {
				int64_t rest = n / t / s / e;
				if ((n / t / s) % e || (e > 1 && (experts < 2 || experts % e)))
					continue;
				if (prune && over_split(rest * e, batch))
					continue;
				for (int64_t f = 1; f <= rest; f++) {
					int64_t mesh[SHS_SEARCH_AXES] = { rest / f, f, s, e, t, p };
					if (rest % f || !sequence_fits(n, s, rest * e, batch, seq))
						continue;
					/* with both fsdp and expert axes, each of them major */
					for (int major = 0; major < 1 + (e > 1 && f > 1); major++) {
						if (count < cap)
							mesh_text(mesh, major, out[count],
								  SHS_SEARCH_TEXT);
						if (count < cap && sizes)
							memcpy(sizes[count], mesh, sizeof(mesh));
						count++;
					}
				}
			}
		}
	}
	return count;
}

/* Every stage count: the divisors p of n and of the model's layers (1: no pipeline); for each,
 * the meshes whose batch axes do not over-split the batch, or, a batch too small for any
 * split, all of them. */
static uint32_t staged(int64_t n, const shs__search_model *model, char (*out)[SHS_SEARCH_TEXT],
		       int64_t (*sizes)[SHS_SEARCH_AXES], uint32_t cap)
{
	uint32_t count = 0;

	for (int64_t p = 1; p <= n; p++) {
		uint32_t before = count;
		if (n % p || (p > 1 && !(model->layers > 0 && model->layers % p == 0)))
			continue;
		count = meshes_of(n / p, p, model, true, out, sizes, cap, count);
		if (count == before)
			count = meshes_of(n / p, p, model, false, out, sizes, cap, count);
	}
	return count;
}

uint32_t shs__search_meshes(int64_t n, const shs__search_model *model,
			    char (*out)[SHS_SEARCH_TEXT], int64_t (*sizes)[SHS_SEARCH_AXES],
			    uint32_t cap)
{
	return staged(n, model, out, sizes, cap);
}
