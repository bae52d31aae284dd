/* The searched plan in a framework's own words (Megatron-LM's arguments, a MaxText config
 * fragment, a JAX mesh and PartitionSpecs), for annotate --export. */
#ifndef SHS_EXPORT_H
#define SHS_EXPORT_H

#include "ir.h"
#include "search.h"
#include "status.h"

/* Megatron-LM's command-line arguments for search result r on module m: the parallel sizes
 * (tensor, pipeline with its virtual stages, context, expert; data parallelism is what the
 * world size leaves), micro- and global batch (r->sequences, else m's data: shs_microbatch_batch),
 * sequence parallelism, recomputation and the
 * optimizer's sharding, one per line after a comment that names the plan. *text is malloc'ed
 * (caller frees). SHS_OK; SHS_EINVAL with the reason when Megatron-LM cannot run the plan
 * (FSDP beside pipeline stages, which its arguments.py refuses; a batch the data parallelism
 * does not divide); SHS_ENOMEM. */
int shs_export_megatron(const shs_module *m, const shs_search_result *r, char **text,
			shs_err *e);

/* A MaxText config fragment (YAML, MaxText/configs/base.yml's keys) for search result r on
 * module m: ici_* and dcn_* parallelism for data, fsdp, sequence (the context axis), tensor,
 * expert and pipeline (the stage axis), each axis's part over DCN or the GPU scale-out network
 * as dcn_*; per_device_batch_size; remat_policy; gradient_accumulation_steps; and with stages
 * num_pipeline_microbatches, num_layers_per_pipeline_stage and num_pipeline_repeats (the
 * chunks). *text is malloc'ed (caller frees). SHS_OK or SHS_ENOMEM. */
int shs_export_maxtext(const shs_module *m, const shs_search_result *r, char **text,
		       shs_err *e);

/* A Python snippet for JAX for search result r on module m: the device mesh
 * (mesh_utils.create_device_mesh, or create_hybrid_device_mesh with the part of each axis that
 * crosses slices or nodes) named as the plan's axes, and a PartitionSpec per weight path
 * (param_specs) with their NamedShardings. *text is malloc'ed (caller frees). SHS_OK or
 * SHS_ENOMEM. */
int shs_export_jax(const shs_module *m, const shs_search_result *r, char **text, shs_err *e);

/* A torchtitan config fragment (TOML, its JobConfig's keys) for search result r on module m:
 * [parallelism] degrees (data -> replicate, fsdp and expert -> shard, as torchtitan carves
 * expert parallelism out of it; tensor, context, stage -> pipeline with its schedule), the
 * activation checkpointing mode, and [training] batch sizes and seq_len. *text is malloc'ed
 * (caller frees). SHS_OK or SHS_ENOMEM. */
int shs_export_torchtitan(const shs_module *m, const shs_search_result *r, char **text,
			  shs_err *e);

#endif
