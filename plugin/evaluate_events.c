/* The step as an event schedule: one compute stream and one link stream per mesh axis.
 *
 * Instructions run on the compute stream in program order (loops iteration by iteration, calls
 * inline), each as soon as the stream is free and its operands are ready. A reshard on an
 * operand edge is a collective on the links of its axes that starts when the operand is ready
 * and the links are free; a weight's gather may start earlier, as soon as the stream reaches the
 * start of the layer `prefetch_depth` layers before (FSDP prefetch). A gather into a matmul
 * and a matmul's own reduce-scatter or all-reduce run under the matmul (collective matmul: the
 * matmul cannot end before they do); other collectives make their consumer wait. The makespan
 * is the step time; the stream's waits are the exposed communication, charged to the axes of
 * the collective waited for. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "evaluate.h"
#include "plan_internal.h"

enum { MAX_LEAVES = 4096, MAX_DEPTH = 64, MAX_LAYERS_BACK = 17 };

typedef struct sim {
	const shs_module *m;
	const shs_plan *p;
	const shs_cluster *c;
	double peak, hbm_bw;
	uint32_t depth;
	double now;                      /* the compute stream's clock */
	double link[SHS_MESH_MAX_AXES];  /* when each axis's links are free */
	double **ready;                  /* per computation and instruction: value ready time */
	double layer_start[MAX_LAYERS_BACK]; /* stream clock at the start of the last layers */
	double exposed[SHS_MESH_MAX_AXES];
	double **waits;                  /* per instruction: the stream's waits it caused */
	bool *const *fused;              /* values fused into their reader, or NULL */
	shs_eval *ev;
	int rc;
	shs_err *e;
} sim;

/* Runs a collective over axes mask of v bytes (the book's V), not before t; returns its end. */
static double collective(sim *s, int kind, uint32_t mask, double v, double t)
{
	double start = t, dur = shs_coll_time(s->c, (shs_coll_kind)kind, mask, v);

	for (uint32_t a = 0; a < s->c->mesh.n_axes; a++)
		if ((mask & (1u << a)) && s->link[a] > start)
			start = s->link[a];
	for (uint32_t a = 0; a < s->c->mesh.n_axes; a++)
		if (mask & (1u << a))
			s->link[a] = start + dur;
	return start + dur;
}

/* Waits the stream until t, charging the wait to the axes in mask and to instruction i of
 * computation c (whose collective it waits for). */
static void wait_until(sim *s, double t, uint32_t mask, uint32_t c, uint32_t i)
{
	if (t <= s->now)
		return;
	for (uint32_t a = 0; a < s->c->mesh.n_axes; a++)
		if (mask & (1u << a))
			s->exposed[a] += t - s->now;
	s->waits[c][i] += t - s->now;
	s->now = t;
}

static void run(sim *s, uint32_t c, const double *args, uint32_t n_args, uint32_t depth);

/* The reshards of operand k of instruction i: returns when the operand is usable, and raises
 * *floor to when a collective matmul may end; *mask gets the axes waited on. */
static double operand_ready(sim *s, uint32_t c, uint32_t i, uint32_t k, double *floor,
			    uint32_t *mask, uint32_t *floor_mask)
{
	const shs_computation *comp = s->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	const shs_decision *d = &s->p->d[c][i], *od = &s->p->d[c][in->operands[k]];
	double r = s->ready[c][in->operands[k]];
	bool matmul = in->op == SHS_OP_DOT || in->op == SHS_OP_CONVOLUTION;
	const shs_shape *shapes[MAX_LEAVES];
	uint32_t n;

	if (!d->set || !d->n_req || !od->set)
		return r;
	n = shs__shape_leaves(&comp->instrs[in->operands[k]]->shape, shapes, MAX_LEAVES);
	for (uint32_t j = 0; j < n && j < od->n_leaves && d->req_first[k] + j < d->n_req; j++) {
		uint32_t gathered, moved;
		double local = shs__reshard_masks(&s->c->mesh, shapes[j], &od->leaves[j],
						  &d->req[d->req_first[k] + j], &gathered, &moved);
		double t = r, end = r;
		if (gathered) {
			/* a weight is ready from the start: its gather waits only for the prefetch
			 * window, the start of the layer `depth` layers back */
			if (shs__is_weight(comp, in->operands[k])) {
				double window = s->layer_start[s->depth < MAX_LAYERS_BACK ?
							       s->depth : MAX_LAYERS_BACK - 1];
				t = window > r ? window : r;
			}
			end = collective(s, SHS_COLL_ALL_GATHER, gathered,
					 local * (double)shs_mesh_group(&s->c->mesh, gathered), t);
		}
		if (moved)
			end = collective(s, SHS_COLL_ALL_TO_ALL, moved,
					 local * (double)shs_mesh_group(&s->c->mesh, moved), end);
		if (matmul && !moved) {
			*floor = end > *floor ? end : *floor;
			*floor_mask |= gathered;
		} else if (end > r) {
			*mask |= gathered | moved;
			r = end;
		}
	}
	return r;
}

/* One instruction on the stream, with its reshards and its own collectives. */
static void step_instr(sim *s, uint32_t c, uint32_t i)
{
	const shs_computation *comp = s->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	const shs_decision *d = &s->p->d[c][i];
	bool matmul = in->op == SHS_OP_DOT || in->op == SHS_OP_CONVOLUTION;
	double tf = d->flops / s->peak, need = 0, floor = 0, end;
	double tb = shs__fused_bytes(s->m, s->p, s->fused, &s->c->mesh, c, i) / s->hbm_bw;
	uint32_t mask = 0, floor_mask = 0;

	for (uint32_t k = 0; k < in->n_operands; k++) {
		double r = operand_ready(s, c, i, k, &floor, &mask, &floor_mask);
		need = r > need ? r : need;
	}
	wait_until(s, need, mask, c, i);
	end = s->now + (tf > tb ? tf : tb);
	s->ready[c][i] = end;
	for (uint32_t k = 0; k < d->n_colls; k++) {
		const shs_coll *cl = &d->colls[k];
		double v = cl->bytes, done;
		if (cl->kind == SHS_COLL_ALL_GATHER || cl->kind == SHS_COLL_ALL_TO_ALL)
			v *= (double)shs_mesh_group(&s->c->mesh, cl->axes_mask);
		if (matmul || cl->overlappable) {
			done = collective(s, cl->kind, cl->axes_mask, v, s->now);
			floor = done > floor ? done : floor;
			floor_mask |= cl->axes_mask;
		} else {
			done = collective(s, cl->kind, cl->axes_mask, v, end);
			s->ready[c][i] = done > s->ready[c][i] ? done : s->ready[c][i];
		}
	}
	if (floor > end) {
		/* the matmul waits for the collective it overlaps */
		for (uint32_t a = 0; a < s->c->mesh.n_axes; a++)
			if (floor_mask & (1u << a))
				s->exposed[a] += floor - end;
		s->waits[c][i] += floor - end;
		end = floor;
		s->ready[c][i] = end > s->ready[c][i] ? end : s->ready[c][i];
	}
	s->now = end;
}

/* A new layer starts: remembers the stream's clock for prefetching. */
static void layer_starts(sim *s)
{
	memmove(&s->layer_start[1], &s->layer_start[0],
		(MAX_LAYERS_BACK - 1) * sizeof(s->layer_start[0]));
	s->layer_start[0] = s->now;
}

static double max_ready(const sim *s, uint32_t c, const shs_instr *in)
{
	double r = 0;

	for (uint32_t k = 0; k < in->n_operands; k++)
		r = s->ready[c][in->operands[k]] > r ? s->ready[c][in->operands[k]] : r;
	return r;
}

static void flow(sim *s, uint32_t c, uint32_t i, uint32_t depth)
{
	const shs_computation *comp = s->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	double args[1] = { 0 }, *argv;
	int64_t trips = 1;

	switch (in->op) {
	case SHS_OP_WHILE:
		if (!shs_while_trip_count(s->m, comp, in, &trips))
			trips = 1;
		args[0] = max_ready(s, c, in);
		for (int64_t t = 0; t < trips && s->rc == SHS_OK; t++) {
			const shs_computation *body = s->m->comps[in->called[0]];
			layer_starts(s);
			run(s, in->called[0], args, 1, depth + 1);
			args[0] = s->ready[in->called[0]][body->root];
		}
		s->ready[c][i] = args[0];
		return;
	default: /* call, conditional: the first callee inline */
		argv = malloc((in->n_operands + 1) * sizeof(*argv));
		if (!argv) {
			s->rc = shs_seterr(s->e, SHS_ENOMEM, "evaluate: out of memory");
			return;
		}
		for (uint32_t k = 0; k < in->n_operands; k++)
			argv[k] = s->ready[c][in->operands[k]];
		layer_starts(s);
		run(s, in->called[0], argv + (in->op == SHS_OP_CONDITIONAL),
		    in->n_operands - (in->op == SHS_OP_CONDITIONAL), depth + 1);
		s->ready[c][i] = s->ready[in->called[0]][s->m->comps[in->called[0]]->root];
		free(argv);
	}
}

static void run(sim *s, uint32_t c, const double *args, uint32_t n_args, uint32_t depth)
{
	const shs_computation *comp = s->m->comps[c];

	if (depth > MAX_DEPTH || s->rc != SHS_OK)
		return;
	for (uint32_t i = 0; i < comp->n_instrs && s->rc == SHS_OK; i++) {
		const shs_instr *in = comp->instrs[i];
		switch (in->op) {
		case SHS_OP_PARAMETER:
			s->ready[c][i] = in->parameter_number < n_args ?
						 args[in->parameter_number] : 0;
			break;
		case SHS_OP_TUPLE: case SHS_OP_GET_TUPLE_ELEMENT:
			s->ready[c][i] = max_ready(s, c, in);
			break;
		case SHS_OP_WHILE: case SHS_OP_CALL: case SHS_OP_CONDITIONAL:
			if (in->n_called)
				flow(s, c, i, depth);
			break;
		default:
			step_instr(s, c, i);
		}
	}
}

/* Splits each instruction's waits over its collective sites in ev->colls, by their times. */
static int site_exposure(const sim *s, shs_eval *ev, shs_err *e)
{
	double **total = calloc(s->m->n_comps + 1, sizeof(*total));
	int rc = SHS_OK;

	for (uint32_t k = 0; total && k < s->m->n_comps && rc == SHS_OK; k++)
		if (!(total[k] = calloc(s->m->comps[k]->n_instrs + 1, sizeof(double))))
			rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	if (!total)
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	for (uint32_t k = 0; rc == SHS_OK && k < ev->n_colls; k++)
		total[ev->colls[k].comp][ev->colls[k].instr] += ev->colls[k].time_s;
	for (uint32_t k = 0; rc == SHS_OK && k < ev->n_colls; k++) {
		shs_eval_coll *site = &ev->colls[k];
		double t = total[site->comp][site->instr];
		site->exposed_s = t > 0 ? s->waits[site->comp][site->instr] * site->time_s / t : 0;
	}
	for (uint32_t k = 0; total && k < s->m->n_comps; k++)
		free(total[k]);
	free(total);
	return rc;
}

int shs__eval_events(const shs_module *m, const shs_plan *p, const shs_cluster *c,
		     const shs_eval_options *o, bool *const *fused, shs_eval *ev, shs_err *e)
{
	sim s = { .m = m, .p = p, .c = c, .ev = ev, .e = e, .fused = fused };
	double end;
	int rc = SHS_OK;

	s.peak = c->hw.flops[SHS_HW_BF16];
	s.hbm_bw = c->hw.hbm_bw;
	s.depth = o && o->prefetch_depth ? o->prefetch_depth : 1;
	s.ready = calloc(m->n_comps + 1, sizeof(*s.ready));
	s.waits = calloc(m->n_comps + 1, sizeof(*s.waits));
	for (uint32_t k = 0; s.ready && s.waits && k < m->n_comps; k++) {
		s.ready[k] = calloc(m->comps[k]->n_instrs + 1, sizeof(double));
		s.waits[k] = calloc(m->comps[k]->n_instrs + 1, sizeof(double));
		if (!s.ready[k] || !s.waits[k])
			rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	}
	if (!s.ready || !s.waits)
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	if (rc == SHS_OK) {
		run(&s, m->entry, NULL, 0, 0);
		rc = s.rc;
	}
	if (rc == SHS_OK) {
		end = s.now;
		for (uint32_t a = 0; a < c->mesh.n_axes; a++) {
			if (s.link[a] > end)
				end = s.link[a];
			ev->exposed_by_axis[a] = s.exposed[a];
		}
		ev->step_time_s = end + ev->remat_s;
		ev->exposed_comm_s = ev->step_time_s - ev->compute_s;
		if (ev->exposed_comm_s < 0)
			ev->exposed_comm_s = 0;
		rc = site_exposure(&s, ev, e);
	}
	for (uint32_t k = 0; k < m->n_comps; k++) {
		if (s.ready)
			free(s.ready[k]);
		if (s.waits)
			free(s.waits[k]);
	}
	free(s.ready);
	free(s.waits);
	return rc;
}
