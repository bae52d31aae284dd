/* The predicted step's timeline written as Chrome trace event JSON (trace_json.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster.h"
#include "trace_json.h"

/* Track ids: the compute stream, then one per mesh axis; with pipeline stages, one per stage
 * and one per stage's sends. */
enum { TID_STREAM = 0, TID_AXIS = 1, TID_STAGE = 100, TID_SENDS = 10000 };

#define US 1e6 /* the format's microseconds per second */

/* One collective site's exposure per execution, for the events on its links. */
typedef struct site {
	uint32_t comp, instr;
	double exposed_s, count;
} site;

static int cmp_site(const void *a, const void *b)
{
	const site *x = a, *y = b;

	if (x->comp != y->comp)
		return x->comp < y->comp ? -1 : 1;
	return x->instr < y->instr ? -1 : x->instr > y->instr;
}

typedef struct writer {
	const shs_trace *t;
	const shs_module *m;
	const shs_cluster *c;
	const shs_eval *ev;
	site *sites;      /* by (comp, instr) */
	uint32_t n_sites;
	FILE *f;
	bool first;       /* no event written yet */
	int rc;
} writer;

/* Appends event o (taken) to the traceEvents array. */
static void put(writer *w, json_t *o)
{
	if (!o) {
		w->rc = SHS_ENOMEM;
		return;
	}
	if (w->rc == SHS_OK) {
		fputs(w->first ? "\n" : ",\n", w->f);
		if (json_dumpf(o, w->f, JSON_COMPACT | JSON_REAL_PRECISION(12)))
			w->rc = SHS_ENOMEM;
		w->first = false;
	}
	json_decref(o);
}

static void name_track(writer *w, uint32_t tid, const char *name)
{
	put(w, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M",
			 "pid", 1, "tid", (int)tid, "args", "name", name));
	put(w, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "thread_sort_index", "ph",
			 "M", "pid", 1, "tid", (int)tid, "args", "sort_index",
			 (int)tid));
}

static const shs_instr *instr_at(const writer *w, uint32_t c, uint32_t i)
{
	if (c >= w->m->n_comps || i >= w->m->comps[c]->n_instrs)
		return NULL;
	return w->m->comps[c]->instrs[i];
}

/* The names of the mesh axes in mask, comma-separated, into buf. */
static void axes_text(const writer *w, uint32_t mask, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t a = 0; a < w->c->mesh.n_axes && n < cap; a++)
		if (mask & (1u << a))
			n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "",
					      w->c->mesh.names[a]);
}

static const site *find_site(const writer *w, uint32_t c, uint32_t i)
{
	site key = { .comp = c, .instr = i };

	return w->n_sites ? bsearch(&key, w->sites, w->n_sites, sizeof(key), cmp_site) : NULL;
}

/* A complete ("X") event: name, category, track, from start for dur seconds, with args
 * (taken; may be NULL). */
static void slice(writer *w, const char *name, const char *cat, uint32_t tid, double start,
		  double dur, json_t *args)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i}", "name", name, "cat", cat,
			      "ph", "X", "ts", start * US, "dur", dur * US, "pid", 1, "tid",
			      (int)tid);

	if (o && args)
		json_object_set_new(o, "args", args);
	else
		json_decref(args);
	put(w, o);
}

/* An instruction on the compute stream: its name, opcode and where the model has it. */
static void run_event(writer *w, const shs_trace_event *e)
{
	const shs_instr *in = instr_at(w, e->comp, e->instr);
	json_t *args;

	if (!in)
		return;
	args = json_pack("{s:s, s:s}", "computation", w->m->comps[e->comp]->name, "opcode",
			 shs_opcode_name(in->op));
	if (args && in->metadata && in->metadata->op_name)
		json_object_set_new(args, "op_name", json_string(in->metadata->op_name));
	slice(w, in->name, shs_opcode_name(in->op), TID_STREAM, e->start, e->dur, args);
}

/* The stream waiting for a collective: named by the instruction whose collective it is. */
static void wait_event(writer *w, const shs_trace_event *e)
{
	const shs_instr *in = instr_at(w, e->comp, e->instr);
	char name[160];

	snprintf(name, sizeof(name), "wait: %s", in ? in->name : "collective");
	slice(w, name, "exposed communication", TID_STREAM, e->start, e->dur,
	      json_pack("{s:s, s:s}", "collective_of", in ? in->name : "?", "axis",
			e->track < w->c->mesh.n_axes ? w->c->mesh.names[e->track] : "?"));
}

/* A collective's piece on one axis's links, with its bytes and its site's exposure. */
static void coll_event(writer *w, const shs_trace_event *e)
{
	const shs_instr *in = instr_at(w, e->comp, e->instr);
	const site *s = find_site(w, e->comp, e->instr);
	char name[160], axes[128];

	snprintf(name, sizeof(name), "%s %s", shs_coll_name(e->coll), in ? in->name : "?");
	axes_text(w, e->axes, axes, sizeof(axes));
	slice(w, name, "collective", TID_AXIS + e->track, e->start, e->dur,
	      json_pack("{s:s, s:s, s:f, s:f}", "instruction", in ? in->name : "?", "axes", axes,
			"bytes", e->bytes, "exposed_s_per_execution",
			s && s->count > 0 ? s->exposed_s / s->count : 0.0));
}

/* A pipeline stage's pass, or its send to the next (or, backward, the previous) stage. */
static void stage_event(writer *w, const shs_trace_event *e)
{
	char name[96];
	bool send = e->kind == SHS_TRACE_SEND;

	snprintf(name, sizeof(name), "%s%s micro-batch %u", send ? "send " : "",
		 send ? (e->coll ? "gradient" : "activation") : (e->coll ? "backward" : "forward"),
		 e->comp);
	if (w->ev->pipe.chunks > 1)
		snprintf(name + strlen(name), sizeof(name) - strlen(name), " chunk %u", e->instr);
	slice(w, name, send ? "pipeline send" : "pipeline pass",
	      (send ? TID_SENDS : TID_STAGE) + e->track, e->start, e->dur,
	      send ? json_pack("{s:f}", "bytes", e->bytes) : NULL);
}

static void event(writer *w, const shs_trace_event *e)
{
	const shs_instr *in;
	char name[192];

	switch (e->kind) {
	case SHS_TRACE_RUN:
		run_event(w, e);
		break;
	case SHS_TRACE_WAIT:
		wait_event(w, e);
		break;
	case SHS_TRACE_COLL:
		coll_event(w, e);
		break;
	case SHS_TRACE_PASS: case SHS_TRACE_SEND:
		stage_event(w, e);
		break;
	case SHS_TRACE_TRIPS:
		in = instr_at(w, e->comp, e->instr);
		snprintf(name, sizeof(name), "%s: %lld %s", in ? in->name : "loop",
			 (long long)e->count, e->label);
		slice(w, name, "loop", TID_STREAM, e->start, e->dur, NULL);
		break;
	case SHS_TRACE_ADDED: case SHS_TRACE_CUT:
		slice(w, e->label, e->kind == SHS_TRACE_CUT ? "not drawn" : "added to the schedule",
		      TID_STREAM, e->start, e->dur, NULL);
		break;
	}
}

/* The memory counter: live bytes as the stream reaches each entry instruction, beside the
 * HBM; the peak sample is the reported peak. */
static void memory(writer *w)
{
	const shs_trace *t = w->t;
	double gib = 1024.0 * 1024 * 1024;

	for (uint32_t i = 0; i < t->n_entry && !w->ev->pipe.stages; i++)
		put(w, json_pack("{s:s, s:s, s:f, s:i, s:{s:f, s:f}}", "name", "memory (GiB)",
				 "ph", "C", "ts", t->entry_at[i] * US, "pid", 1, "args", "live",
				 t->entry_live[i] / gib, "HBM", w->ev->hbm_bytes / gib));
}

static void tracks(writer *w)
{
	char name[160];

	put(w, json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", "process_name", "ph", "M", "pid", 1,
			 "args", "name", "one device's predicted step (shardsearch)"));
	if (w->ev->pipe.stages) {
		for (uint32_t s = 0; s < w->ev->pipe.stages; s++) {
			snprintf(name, sizeof(name), "stage %u: passes", s);
			name_track(w, TID_STAGE + s, name);
			snprintf(name, sizeof(name), "stage %u: sends", s);
			name_track(w, TID_SENDS + s, name);
		}
		name_track(w, TID_STREAM, "after the passes");
		return;
	}
	name_track(w, TID_STREAM, "compute stream");
	for (uint32_t a = 0; a < w->c->mesh.n_axes; a++) {
		snprintf(name, sizeof(name), "links: %s (%lld devices)", w->c->mesh.names[a],
			 (long long)w->c->mesh.sizes[a]);
		name_track(w, TID_AXIS + a, name);
	}
}

/* The collective sites by instruction: their exposure summed, their executions. */
static int make_sites(writer *w)
{
	uint32_t n = 0;

	w->sites = calloc(w->ev->n_colls + 1, sizeof(*w->sites));
	if (!w->sites)
		return SHS_ENOMEM;
	for (uint32_t k = 0; k < w->ev->n_colls; k++) {
		const shs_eval_coll *c = &w->ev->colls[k];
		w->sites[k] = (site){ c->comp, c->instr, c->exposed_s, c->count };
	}
	qsort(w->sites, w->ev->n_colls, sizeof(*w->sites), cmp_site);
	for (uint32_t k = 0; k < w->ev->n_colls; k++) {
		site *last = n ? &w->sites[n - 1] : NULL;
		if (last && !cmp_site(last, &w->sites[k])) {
			last->exposed_s += w->sites[k].exposed_s;
			if (w->sites[k].count > last->count)
				last->count = w->sites[k].count;
		} else {
			w->sites[n++] = w->sites[k];
		}
	}
	w->n_sites = n;
	return SHS_OK;
}

int shs_trace_json(const shs_trace *t, const shs_module *m, const shs_cluster *c,
		   const shs_eval *ev, char **text, shs_err *e)
{
	writer w = { .t = t, .m = m, .c = c, .ev = ev, .first = true };
	size_t len = 0;
	char mesh[256] = ""; /* shs_cluster_describe appends */

	*text = NULL;
	if (make_sites(&w) != SHS_OK || !(w.f = open_memstream(text, &len))) {
		free(w.sites);
		return shs_seterr(e, SHS_ENOMEM, "trace: out of memory");
	}
	shs_cluster_describe(c, mesh, sizeof(mesh));
	fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", w.f);
	tracks(&w);
	for (size_t k = 0; k < t->n && w.rc == SHS_OK; k++)
		event(&w, &t->v[k]);
	memory(&w);
	fputs("\n], \"otherData\": ", w.f);
	json_t *other = json_pack("{s:s, s:f, s:f, s:I, s:s}", "cluster", mesh, "step_time_s",
				  ev->step_time_s, "memory_bytes", ev->memory_bytes,
				  "events_not_drawn", (json_int_t)t->dropped, "generator",
				  "shardsearch");
	if (!other || json_dumpf(other, w.f, JSON_COMPACT | JSON_REAL_PRECISION(15)))
		w.rc = SHS_ENOMEM;
	json_decref(other);
	fputs("}\n", w.f);
	if (fclose(w.f) || w.rc != SHS_OK) {
		free(*text);
		*text = NULL;
		free(w.sites);
		return shs_seterr(e, SHS_ENOMEM, "trace: out of memory");
	}
	free(w.sites);
	return SHS_OK;
}
