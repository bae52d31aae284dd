/* annotate --export megatron|maxtext|jax: the plan as Megatron-LM's arguments, MaxText's config
 * or JAX's mesh and PartitionSpecs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cluster.h"
#include "export.h"
#include "microbatch.h"
#include "report.h"
#include "report_sequence.h"

/* The size of the mesh axis named name, 1 when there is none. */
static int64_t axis(const shs_mesh *mesh, const char *name)
{
	int a = shs_mesh_axis(mesh, name);

	return a >= 0 ? mesh->sizes[a] : 1;
}

/* The step's sequences: the search's count, or m's data's (a search called directly). */
static int64_t global_batch(const shs_module *m, const shs_search_result *r)
{
	return r->sequences > 0 ? r->sequences : shs_microbatch_batch(m);
}

/* The recomputation arguments of a remat policy (megatron/training/arguments.py:
 * --recompute-granularity full|selective, --recompute-method, --recompute-num-layers). */
static void recompute(FILE *f, shs_remat remat)
{
	switch (remat) {
	case SHS_REMAT_FULL:
		fputs("--recompute-granularity full\n--recompute-method uniform\n"
		      "--recompute-num-layers 1\n", f);
		break;
	case SHS_REMAT_ATTENTION:
		fputs("--recompute-granularity selective\n", f);
		break;
	case SHS_REMAT_DOTS:
		fputs("# remat dots (matmul outputs kept, the rest recomputed) has no Megatron-LM "
		      "argument; the nearest:\n--recompute-granularity selective\n", f);
		break;
	case SHS_REMAT_OFFLOAD:
		fputs("# remat offload (saved activations in host memory) has no Megatron-LM "
		      "argument here\n", f);
		break;
	default:
		break;
	}
}

int shs_export_megatron(const shs_module *m, const shs_search_result *r, char **text,
			shs_err *e)
{
	const shs_mesh *mesh = &r->cluster.mesh;
	int64_t t = axis(mesh, "tensor"), p = axis(mesh, "stage"), cp = axis(mesh, "context");
	int64_t ep = axis(mesh, "expert"), fsdp = axis(mesh, "fsdp");
	int64_t dp = axis(mesh, "data") * fsdp * ep;
	int64_t g = global_batch(m, r);
	int64_t micro = r->eval.pipe.stages ? r->eval.pipe.microbatches :
					      (r->microbatches > 1 ? r->microbatches : 1);
	size_t len = 0;
	FILE *f;

	*text = NULL;
	if (p > 1 && r->zero_stage >= 3)
		return shs_seterr(e, SHS_EINVAL, "export megatron: the plan shards weights over "
				  "fsdp beside pipeline stages, which Megatron-LM refuses "
				  "(--use-torch-fsdp2 is not supported with pipeline parallelism)");
	if (g <= 0 || g % (dp * micro))
		return shs_seterr(e, SHS_EINVAL, "export megatron: %lld sequences do not split "
				  "into %lld data-parallel replicas of %lld micro-batches",
				  (long long)g, (long long)dp, (long long)micro);
	if (!(f = open_memstream(text, &len)))
		return shs_seterr(e, SHS_ENOMEM, "export megatron: out of memory");
	fprintf(f, "# Megatron-LM arguments for the plan shardsearch found: %s (%s), %.4g s a "
		"step predicted; data parallelism %lld (world size / (tensor x pipeline x "
		"context))\n", r->best.mesh, r->best.plan, r->eval.step_time_s, (long long)dp);
	fprintf(f, "--tensor-model-parallel-size %lld\n--pipeline-model-parallel-size %lld\n",
		(long long)t, (long long)p);
	if (p > 1 && r->eval.pipe.chunks > 1)
		fprintf(f, "--num-layers-per-virtual-pipeline-stage %u\n",
			r->eval.pipe.layers_per_stage / r->eval.pipe.chunks);
	if (cp > 1)
		fprintf(f, "--context-parallel-size %lld\n", (long long)cp);
	if (ep > 1)
		fprintf(f, "--expert-model-parallel-size %lld\n", (long long)ep);
	fprintf(f, "--micro-batch-size %lld\n--global-batch-size %lld\n",
		(long long)(g / (dp * micro)), (long long)g);
	if (t > 1 && (shs_sequence_axes(m, r->plan) & (1u << shs_mesh_axis(mesh, "tensor"))))
		fputs("--sequence-parallel\n", f);
	recompute(f, r->best.remat);
	if (r->zero_stage >= 3)
		fputs("--use-torch-fsdp2\n", f);
	else if (r->zero_stage >= 1)
		fputs("--use-distributed-optimizer\n", f);
	if (fclose(f)) {
		free(*text);
		*text = NULL;
		return shs_seterr(e, SHS_ENOMEM, "export megatron: out of memory");
	}
	return SHS_OK;
}

/* Of mesh axis k's size, the part over the data-center network or the GPU scale-out network
 * (MaxText's dcn_* parallelism); the rest is over ICI or NVLink (ici_*). */
/* Where export jax writes, and the plan's mesh (its axis names). */
typedef struct jax_ctx {
	FILE *f;
	const shs_mesh *mesh;
} jax_ctx;

static int64_t dcn_part(const shs_cluster *c, uint32_t k)
{
	int64_t n = 1;

	for (uint32_t p = 0; p < c->n_phys; p++)
		if ((c->phys[p].kind == SHS_PHYS_DCN || c->phys[p].kind == SHS_PHYS_NET) &&
		    (c->span[k] & (1u << p)) && c->part[k][p] > 0)
			n *= c->part[k][p];
	return n;
}

/* MaxText's remat_policy for a remat policy (base.yml's list: minimal saves the matmuls'
 * outputs, minimal_offloaded offloads them, full recomputes). */
static const char *maxtext_remat(shs_remat remat)
{
	switch (remat) {
	case SHS_REMAT_DOTS:
		return "'minimal'";
	case SHS_REMAT_OFFLOAD:
		return "'minimal_offloaded'";
	case SHS_REMAT_FULL:
		return "'full'";
	default:
		return "'minimal' # nothing recomputed: MaxText has no such policy; minimal is "
		       "nearest";
	}
}

int shs_export_maxtext(const shs_module *m, const shs_search_result *r, char **text,
		       shs_err *e)
{
	static const char *const ours[] = { "data", "fsdp", "context", "tensor", "expert",
					    "stage" };
	static const char *const theirs[] = { "data", "fsdp", "sequence", "tensor", "expert",
					      "pipeline" };
	const shs_cluster *c = &r->cluster;
	size_t len = 0;
	FILE *f;

	*text = NULL;
	if (!(f = open_memstream(text, &len)))
		return shs_seterr(e, SHS_ENOMEM, "export maxtext: out of memory");
	fprintf(f, "# MaxText config for the plan shardsearch found: %s (%s), %.4g s a step "
		"predicted\n", r->best.mesh, r->best.plan, r->eval.step_time_s);
	for (size_t k = 0; k < sizeof(ours) / sizeof(ours[0]); k++) {
		int a = shs_mesh_axis(&c->mesh, ours[k]);
		int64_t size = a >= 0 ? c->mesh.sizes[a] : 1, dcn = a >= 0 ? dcn_part(c, a) : 1;
		fprintf(f, "ici_%s_parallelism: %lld\ndcn_%s_parallelism: %lld\n", theirs[k],
			(long long)(size / dcn), theirs[k], (long long)dcn);
	}
	int64_t g = global_batch(m, r);
	if (g > 0)
		fprintf(f, "per_device_batch_size: %g\n", (double)g / (double)c->devices);
	fprintf(f, "remat_policy: %s\n", maxtext_remat(r->best.remat));
	if (!r->eval.pipe.stages && r->microbatches > 1)
		fprintf(f, "gradient_accumulation_steps: %lld\n", (long long)r->microbatches);
	if (r->eval.pipe.stages && r->eval.pipe.chunks)
		fprintf(f, "num_pipeline_microbatches: %lld\nnum_layers_per_pipeline_stage: %u\n"
			"num_pipeline_repeats: %u\n", (long long)r->eval.pipe.microbatches,
			r->eval.pipe.layers_per_stage / r->eval.pipe.chunks, r->eval.pipe.chunks);
	if (fclose(f)) {
		free(*text);
		*text = NULL;
		return shs_seterr(e, SHS_ENOMEM, "export maxtext: out of memory");
	}
	return SHS_OK;
}

/* One weight's entry of param_specs: 'path': P(None, 'fsdp', ('data', 'tensor')). */
static void jax_spec(void *user, const char *path, const char *shape, const char *spec,
		     const shs_pspec *ps)
{
	jax_ctx *x = user;

	(void)spec;
	fprintf(x->f, "    '%s': P(", path);
	for (uint32_t d = 0; d < (ps ? ps->rank : 0); d++) {
		const shs_pdim *dim = &ps->dims[d];

		fputs(d ? ", " : "", x->f);
		if (!dim->n)
			fputs("None", x->f);
		for (uint32_t k = 0; k < dim->n; k++)
			fprintf(x->f, "%s'%s'%s", k ? ", " : dim->n > 1 ? "(" : "",
				x->mesh->names[dim->axes[k]],
				k + 1 == dim->n && dim->n > 1 ? ")" : "");
	}
	fprintf(x->f, "),  # %s\n", shape);
}

int shs_export_jax(const shs_module *m, const shs_search_result *r, char **text, shs_err *e)
{
	const shs_cluster *c = &r->cluster;
	jax_ctx x = { .mesh = &r->plan->mesh };
	bool hybrid = false;
	size_t len = 0;

	*text = NULL;
	if (!(x.f = open_memstream(text, &len)))
		return shs_seterr(e, SHS_ENOMEM, "export jax: out of memory");
	for (uint32_t k = 0; k < c->mesh.n_axes; k++)
		hybrid |= dcn_part(c, k) > 1;
	fprintf(x.f, "# JAX sharding for the plan shardsearch found: %s (%s), %.4g s a step "
		"predicted\nfrom jax.experimental import mesh_utils\n"
		"from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n\n",
		r->best.mesh, r->best.plan, r->eval.step_time_s);
	/* the devices ordered as the plan lays its axes out: over ICI (NVLink), and over DCN (the
	 * scale-out network) for the part of each axis that crosses slices (nodes) */
	fputs(hybrid ? "devices = mesh_utils.create_hybrid_device_mesh(\n    (" :
		       "devices = mesh_utils.create_device_mesh((", x.f);
	for (uint32_t k = 0; k < c->mesh.n_axes; k++)
		fprintf(x.f, "%s%lld", k ? ", " : "",
			(long long)(c->mesh.sizes[k] / dcn_part(c, k)));
	fputs(c->mesh.n_axes == 1 ? ",)" : ")", x.f);
	if (hybrid) {
		fputs(",\n    (", x.f);
		for (uint32_t k = 0; k < c->mesh.n_axes; k++)
			fprintf(x.f, "%s%lld", k ? ", " : "", (long long)dcn_part(c, k));
		fputs(c->mesh.n_axes == 1 ? ",))" : "))", x.f);
	} else {
		fputc(')', x.f);
	}
	fputs("\nmesh = Mesh(devices, (", x.f);
	for (uint32_t k = 0; k < c->mesh.n_axes; k++)
		fprintf(x.f, "%s'%s'", k ? ", " : "", c->mesh.names[k]);
	fputs(c->mesh.n_axes == 1 ? ",))\n\n" : "))\n\n", x.f);
	fputs("# each weight's PartitionSpec, by its path in the module (its op_name)\n"
	      "param_specs = {\n", x.f);
	shs_report_weights(m, r, jax_spec, &x);
	fputs("}\nparam_shardings = {k: NamedSharding(mesh, v) for k, v in param_specs.items()}\n",
	      x.f);
	if (fclose(x.f)) {
		free(*text);
		*text = NULL;
		return shs_seterr(e, SHS_ENOMEM, "export jax: out of memory");
	}
	return SHS_OK;
}

/* torchtitan's activation_checkpoint.mode for a remat policy (none, selective or full). */
static const char *torchtitan_ac(shs_remat remat)
{
	switch (remat) {
	case SHS_REMAT_FULL:
		return "\"full\"";
	case SHS_REMAT_ATTENTION: case SHS_REMAT_DOTS:
		return "\"selective\"";
	case SHS_REMAT_OFFLOAD:
		return "\"full\"  # offload has no torchtitan mode: full recomputes what it "
		       "offloads";
	default:
		return "\"none\"";
	}
}

int shs_export_torchtitan(const shs_module *m, const shs_search_result *r, char **text,
			  shs_err *e)
{
	static const char *const schedules[] = { "1F1B", "GPipe", "Interleaved1F1B" };
	const shs_mesh *mesh = &r->cluster.mesh;
	int64_t expert = axis(mesh, "expert"), shard = axis(mesh, "fsdp") * expert;
	int64_t replicate = axis(mesh, "data"), g = global_batch(m, r), seq = 0;
	uint32_t t = shs_token_param(m);
	size_t len = 0;
	FILE *f;

	*text = NULL;
	if (t != UINT32_MAX)
		for (uint32_t i = 0; i < shs_module_entry(m)->n_instrs; i++)
			if (shs_module_entry(m)->instrs[i]->op == SHS_OP_PARAMETER &&
			    shs_module_entry(m)->instrs[i]->parameter_number == (int64_t)t)
				seq = shs_module_entry(m)->instrs[i]->shape.dims[1];
	if (!(f = open_memstream(text, &len)))
		return shs_seterr(e, SHS_ENOMEM, "export torchtitan: out of memory");
	fprintf(f, "# torchtitan config for the plan shardsearch found: %s (%s), %.4g s a step "
		"predicted\n[parallelism]\ndata_parallel_replicate_degree = %lld\n"
		"# torchtitan carves expert parallelism out of the sharded data parallelism\n"
		"data_parallel_shard_degree = %lld\ntensor_parallel_degree = %lld\n"
		"context_parallel_degree = %lld\npipeline_parallel_degree = %lld\n"
		"expert_parallel_degree = %lld\n", r->best.mesh, r->best.plan,
		r->eval.step_time_s, (long long)replicate, (long long)shard,
		(long long)axis(mesh, "tensor"), (long long)axis(mesh, "context"),
		(long long)axis(mesh, "stage"), (long long)expert);
	if (r->eval.pipe.stages)
		fprintf(f, "pipeline_parallel_schedule = \"%s\"\n",
			schedules[r->eval.pipe.schedule % 3]);
	fprintf(f, "\n[activation_checkpoint]\nmode = %s\n\n[training]\n",
		torchtitan_ac(r->best.remat));
	if (g > 0)
		fprintf(f, "global_batch_size = %lld\nlocal_batch_size = %lld\n", (long long)g,
			(long long)(g / (replicate * shard)));
	if (seq > 0)
		fprintf(f, "seq_len = %lld\n", (long long)seq);
	if (fclose(f)) {
		free(*text);
		*text = NULL;
		return shs_seterr(e, SHS_ENOMEM, "export torchtitan: out of memory");
	}
	return SHS_OK;
}
