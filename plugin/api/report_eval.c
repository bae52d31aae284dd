/* The evaluation of a plan as evaluate prints it and the search's report includes it: text
 * lines and the one JSON writer of an evaluation. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

enum { TEXT_CAP = 256 };

void shs_pipeline_print(FILE *out, const shs_eval *ev)
{
	const shs_eval_pipeline *p = &ev->pipe;
	double gib = 1024.0 * 1024.0 * 1024.0;

	if (!p->stages)
		return;
	fprintf(out, "pipeline        %u stages of %u layers", p->stages, p->layers_per_stage);
	if (p->chunks > 1)
		fprintf(out, " (%u chunks each)", p->chunks);
	fprintf(out, ", %s, %lld micro-batches: bubble %.1f %% (%.4g s); stage to stage %.4g s "
		"per transfer (%.4g bytes), %.4g s exposed; first stage %.2f GiB (%u micro-batch "
		"chunks in flight), last %.2f GiB\n", shs_pipe_schedule_name(p->schedule),
		(long long)p->microbatches, 100 * p->bubble, p->bubble_s, p->p2p_s, p->p2p_bytes,
		p->p2p_exposed_s, p->first_memory_bytes / gib, p->first_in_flight,
		p->last_memory_bytes / gib);
}

static json_t *pipeline_json(const shs_eval_pipeline *p)
{
	json_t *o = json_object();

	if (!p->stages) {
		json_decref(o);
		return json_null();
	}
	json_object_set_new(o, "stages", json_integer(p->stages));
	json_object_set_new(o, "chunks", json_integer(p->chunks));
	json_object_set_new(o, "layers_per_stage", json_integer(p->layers_per_stage));
	json_object_set_new(o, "microbatches", json_integer(p->microbatches));
	json_object_set_new(o, "schedule", json_string(shs_pipe_schedule_name(p->schedule)));
	json_object_set_new(o, "bubble", json_real(p->bubble));
	json_object_set_new(o, "bubble_s", json_real(p->bubble_s));
	json_object_set_new(o, "p2p_bytes", json_real(p->p2p_bytes));
	json_object_set_new(o, "p2p_s", json_real(p->p2p_s));
	json_object_set_new(o, "p2p_exposed_s", json_real(p->p2p_exposed_s));
	json_object_set_new(o, "stage_post_s", json_real(p->stage_post_s));
	json_object_set_new(o, "first_stage_memory_bytes", json_real(p->first_memory_bytes));
	json_object_set_new(o, "last_stage_memory_bytes", json_real(p->last_memory_bytes));
	json_object_set_new(o, "first_stage_in_flight", json_integer(p->first_in_flight));
	return o;
}

void shs_eval_report_print(FILE *out, const shs_cluster *c, const shs_eval *ev,
			   uint32_t max_colls)
{
	char describe[TEXT_CAP] = "", axes[TEXT_CAP];
	double gib = 1024.0 * 1024.0 * 1024.0;

	shs_cluster_describe(c, describe, sizeof(describe));
	fprintf(out, "cluster         %s\n", describe);
	fprintf(out, "step time       %.4g s (%s-bound), MFU %.1f %%, HFU %.1f %% (with "
		"recomputation)\n", ev->step_time_s, ev->bound, 100 * ev->mfu, 100 * ev->hfu);
	fprintf(out, "compute         %.4g s (FLOPs %.4g s, HBM %.4g s, recomputation %.4g s)\n",
		ev->compute_s, ev->flops_s, ev->hbm_s, ev->remat_s);
	fprintf(out, "communication   %.4g s in all, %.4g s exposed", ev->comm_s,
		ev->exposed_comm_s);
	if (ev->remat_comm_s > 0)
		fprintf(out, " (%.4g s of it recomputation's)", ev->remat_comm_s);
	fputc(':', out);
	for (uint32_t a = 0; a < c->mesh.n_axes; a++)
		fprintf(out, " %s %.4g s", c->mesh.names[a], ev->exposed_by_axis[a]);
	fprintf(out, "\nmemory          %.2f GiB peak of %.2f GiB HBM (%s); weights %.2f GiB, "
		"gradients %.2f GiB, Adam state %.2f GiB\n", ev->memory_bytes / gib,
		ev->hbm_bytes / gib, shs_eval_fit_text(ev), ev->params_bytes / gib,
		ev->grads_bytes / gib, ev->optimizer_bytes / gib);
	shs_offload_print(out, ev);
	shs_pipeline_print(out, ev);
	for (uint32_t k = 0; k < ev->n_colls && k < max_colls; k++) {
		const shs_eval_coll *s = &ev->colls[k];
		shs_axes_text(&c->mesh, s->axes_mask, axes, sizeof(axes));
		fprintf(out, "  %-14s over {%s} at %s%s: %.4g s (%.4g exposed), %.4g bytes x "
			"%.0f\n", shs_coll_name(s->kind), axes, s->where, s->reshard ? " (reshard)" : "",
			s->time_s, s->exposed_s, s->bytes, s->count);
	}
}

#define GIB_F (1024.0 * 1024.0 * 1024.0)

void shs_offload_print(FILE *out, const shs_eval *ev)
{
	if (ev->offload_bytes > 0)
		fprintf(out, "offload         %.2f GiB of saved activations to host memory and back "
			"per step (%.2f GiB held at once, of %.2f GiB host memory per chip): %.4g s "
			"each way over the host link, %.4g s of it exposed\n",
			ev->offload_bytes / GIB_F, ev->offload_held_bytes / GIB_F,
			ev->host_mem_bytes / GIB_F, ev->offload_s, ev->offload_exposed_s);
}

/* The peak per device and its parts: the model state (weights, optimizer state, the other
 * inputs), the gradients (at the weights' size), the resharded copies live at the peak, and
 * the rest (saved activations and temporaries). */
static json_t *memory_json(const shs_eval *ev)
{
	double inputs = ev->state_bytes - ev->params_bytes - ev->optimizer_bytes;
	double rest = ev->memory_bytes - ev->state_bytes - ev->grads_bytes - ev->gathered_bytes;

	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:b}", "peak_bytes",
			 ev->memory_bytes, "weights_bytes", ev->params_bytes, "gradients_bytes",
			 ev->grads_bytes, "optimizer_bytes", ev->optimizer_bytes, "inputs_bytes",
			 inputs > 0 ? inputs : 0.0, "gathered_bytes", ev->gathered_bytes,
			 "activations_and_temporaries_bytes", rest > 0 ? rest : 0.0, "hbm_bytes",
			 ev->hbm_bytes, "fits", (int)ev->fits);
}

json_t *shs_eval_report_json(const shs_cluster *c, const shs_eval *ev)
{
	json_t *o = json_object(), *by_axis = json_object(), *colls = json_array();
	char axes[TEXT_CAP], layout[TEXT_CAP] = "";

	for (uint32_t a = 0; a < c->mesh.n_axes; a++)
		json_object_set_new(by_axis, c->mesh.names[a], json_real(ev->exposed_by_axis[a]));
	for (uint32_t k = 0; k < ev->n_colls; k++) {
		const shs_eval_coll *s = &ev->colls[k];
		json_t *j = json_object();
		shs_axes_text(&c->mesh, s->axes_mask, axes, sizeof(axes));
		json_object_set_new(j, "kind", json_string(shs_coll_name(s->kind)));
		json_object_set_new(j, "axes", json_string(axes));
		json_object_set_new(j, "where", json_string(s->where));
		json_object_set_new(j, "reshard", json_boolean(s->reshard));
		json_object_set_new(j, "overlapped", json_boolean(s->overlapped));
		json_object_set_new(j, "bytes", json_real(s->bytes));
		json_object_set_new(j, "count", json_real(s->count));
		json_object_set_new(j, "time_s", json_real(s->time_s));
		json_object_set_new(j, "exposed_s", json_real(s->exposed_s));
		json_array_append_new(colls, j);
	}
	shs_cluster_describe(c, layout, sizeof(layout));
	layout[strcspn(layout, " ")] = '\0'; /* without the hardware */
	json_object_set_new(o, "mesh", shs_mesh_json_of(layout));
	json_object_set_new(o, "layout", json_string(layout));
	json_object_set_new(o, "step_time_s", json_real(ev->step_time_s));
	json_object_set_new(o, "compute_s", json_real(ev->compute_s));
	json_object_set_new(o, "remat_s", json_real(ev->remat_s));
	json_object_set_new(o, "remat_comm_s", json_real(ev->remat_comm_s));
	json_object_set_new(o, "offload_bytes", json_real(ev->offload_bytes));
	json_object_set_new(o, "offload_s", json_real(ev->offload_s));
	json_object_set_new(o, "offload_held_bytes", json_real(ev->offload_held_bytes));
	json_object_set_new(o, "offload_exposed_s", json_real(ev->offload_exposed_s));
	json_object_set_new(o, "comm_s", json_real(ev->comm_s));
	json_object_set_new(o, "exposed_comm_s", by_axis);
	json_object_set_new(o, "exposed_comm_total_s", json_real(ev->exposed_comm_s));
	json_object_set_new(o, "bound", json_string(ev->bound));
	json_object_set_new(o, "mfu", json_real(ev->mfu));
	json_object_set_new(o, "hfu", json_real(ev->hfu));
	json_object_set_new(o, "model_flops_per_device", json_real(ev->model_flops));
	json_object_set_new(o, "flops_per_device", json_real(ev->flops));
	json_object_set_new(o, "memory_bytes_per_device", json_real(ev->memory_bytes));
	json_object_set_new(o, "params_bytes", json_real(ev->params_bytes));
	json_object_set_new(o, "grads_bytes", json_real(ev->grads_bytes));
	json_object_set_new(o, "optimizer_bytes", json_real(ev->optimizer_bytes));
	json_object_set_new(o, "hbm_bytes", json_real(ev->hbm_bytes));
	json_object_set_new(o, "memory", memory_json(ev));
	json_object_set_new(o, "fits", json_boolean(ev->fits));
	json_object_set_new(o, "tight", json_boolean(shs_eval_tight(ev)));
	json_object_set_new(o, "pipeline", pipeline_json(&ev->pipe));
	json_object_set_new(o, "collectives", colls);
	return o;
}

