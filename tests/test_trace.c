/* The predicted step's timeline (--trace): its events add up to the step the evaluator
 * reports, and it is written as Chrome trace JSON. */
#include <CUnit/CUnit.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace_json.h"
#include "test_util.h"

/* A small GPT of the given layers, scanned or unrolled (model: 4 layers). */
static shs_module *model_of(bool scan, const char *layers)
{
	const char *const set[] = { "layers", layers, "d_model", "1024", "d_ff", "4096", "heads",
				    "8", "kv_heads", "8", "head_dim", "128", "vocab", "1024",
				    "seq", "1024", "batch", "32", "scan", scan ? "true" : "false",
				    NULL };

	return shs_test_generate("gpt3-175b", set);
}

static shs_module *model(bool scan)
{
	return model_of(scan, "4");
}

/* What one traced evaluation keeps. */
typedef struct traced {
	shs_host *h;
	shs_hw_catalog cat;
	shs_cluster c;
	shs_plan *p;
	shs_eval ev;
	shs_trace t;
} traced;

/* Plan `plan` of m on devices of hardware over mesh, evaluated with options o and a trace of
 * at most limit events (0: the default). */
static void trace_of(const shs_module *m, const char *hardware, int64_t devices,
		     const char *mesh, const char *plan, shs_eval_options o, size_t limit,
		     traced *x)
{
	shs_cluster_spec spec = { .hardware = hardware, .devices = devices, .mesh = mesh,
				  .slices = 1 };

	memset(x, 0, sizeof(*x));
	x->h = shs_test_host();
	shs_hw_catalog_builtin(&x->cat);
	x->t.limit = limit;
	o.trace = &x->t;
	shs_test_plan_evaluate(x->h, &x->cat, &spec, m, plan, &o, &x->c, &x->p, &x->ev);
	CU_ASSERT_EQUAL_FATAL(x->t.rc, SHS_OK);
}

static void traced_free(traced *x)
{
	shs_trace_free(&x->t);
	shs_eval_free(&x->ev);
	shs_plan_free(x->p);
	shs_host_free(x->h);
}

static void assert_close(double got, double want, double rel)
{
	if (!(fabs(got - want) <= rel * fabs(want) + 1e-15))
		fprintf(stderr, "\n  got %.12g, want %.12g", got, want);
	CU_ASSERT_TRUE(fabs(got - want) <= rel * fabs(want) + 1e-15);
}

/* The time the events of kind k take, and when the last event of any kind ends. */
static double total(const shs_trace *t, shs_trace_kind k, double *last_end)
{
	double sum = 0;

	*last_end = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i].kind == k)
			sum += t->v[i].dur;
		*last_end = fmax(*last_end, t->v[i].start + t->v[i].dur);
	}
	return sum;
}

/* The timeline is the step: it ends at the step time; the stream runs the schedule's compute
 * (the compute less recomputation, drawn after it) one instruction after the other; its waits
 * are the exposed communication (less the recomputation's, drawn after it); every collective
 * is on the links of one of its axes; the memory counter peaks at the reported peak. */
static void test_timeline_is_the_step(void)
{
	shs_module *m = model(false);
	shs_eval_options o = { .remat = SHS_REMAT_FULL };
	traced x;
	double end, runs, waits, added, last = -1, peak = 0;

	trace_of(m, "h100", 16, "data=2,tensor=8", "tp", o, 0, &x);
	runs = total(&x.t, SHS_TRACE_RUN, &end);
	waits = total(&x.t, SHS_TRACE_WAIT, &end);
	added = total(&x.t, SHS_TRACE_ADDED, &end);
	CU_ASSERT_TRUE(x.ev.remat_s > 0 && x.ev.exposed_comm_s > 0);
	assert_close(end, x.ev.step_time_s, 1e-12);
	assert_close(runs, x.ev.compute_s - x.ev.remat_s, 1e-9);
	assert_close(waits + x.ev.remat_comm_s, x.ev.exposed_comm_s, 1e-9);
	assert_close(added, x.ev.remat_s + x.ev.remat_comm_s, 1e-9);
	for (size_t i = 0; i < x.t.n; i++) {
		const shs_trace_event *e = &x.t.v[i];
		if (e->kind == SHS_TRACE_COLL)
			CU_ASSERT_TRUE(e->axes & (1u << e->track));
		if (e->kind != SHS_TRACE_RUN && e->kind != SHS_TRACE_WAIT)
			continue;
		CU_ASSERT_TRUE(e->start >= last - 1e-12 * x.ev.step_time_s);
		last = e->start + e->dur;
	}
	for (uint32_t i = 0; i < x.t.n_entry; i++)
		peak = fmax(peak, x.t.entry_live[i]);
	assert_close(peak, x.ev.memory_bytes, 1e-12);
	CU_ASSERT_EQUAL(x.t.dropped, 0);
	traced_free(&x);
	shs_module_free(m);
}

/* A scanned loop's trips in steady state are drawn as the trip before; past the event limit
 * they are one slice, and the timeline still ends at the step time. */
static void test_loop_trips(void)
{
	shs_module *m = model_of(true, "8"); /* its first trips differ: it waits for gathers */
	shs_eval_options o = { 0 };
	traced whole, cut;
	double end, runs;
	size_t trips = 0;

	trace_of(m, "v5p", 64, "fsdp=64", "fsdp", o, 0, &whole);
	runs = total(&whole.t, SHS_TRACE_RUN, &end);
	CU_ASSERT_TRUE(whole.ev.trips_skipped > 0);
	assert_close(end, whole.ev.step_time_s, 1e-12);
	assert_close(runs, whole.ev.compute_s, 1e-6);
	trace_of(m, "v5p", 64, "fsdp=64", "fsdp", o, whole.t.n / 2, &cut);
	total(&cut.t, SHS_TRACE_RUN, &end);
	for (size_t i = 0; i < cut.t.n; i++)
		trips += cut.t.v[i].kind == SHS_TRACE_TRIPS;
	CU_ASSERT_TRUE(trips >= 1);
	CU_ASSERT_TRUE(cut.t.dropped > 0);
	assert_close(end, cut.ev.step_time_s, 1e-12);
	assert_close(cut.ev.step_time_s, whole.ev.step_time_s, 1e-12);
	traced_free(&whole);
	traced_free(&cut);
	shs_module_free(m);
}

/* A pipelined step is its stages' passes: 2 m a stage (1F1B, one chunk), one after the other
 * on each stage, the forward before the backward of each micro-batch; it ends at the step. */
static void test_pipeline_passes(void)
{
	shs_module *m = model(false);
	shs_eval_options o = { .microbatches = 8 };
	traced x;
	double end, stage_end[4] = { 0 }, fwd_end[4][8];
	uint32_t passes[4] = { 0 };

	trace_of(m, "h100", 16, "stage=4,data=4", "dp", o, 0, &x);
	CU_ASSERT_EQUAL_FATAL(x.ev.pipe.stages, 4);
	CU_ASSERT_EQUAL_FATAL(x.ev.pipe.microbatches, 8);
	total(&x.t, SHS_TRACE_PASS, &end);
	assert_close(end, x.ev.step_time_s, 1e-12);
	for (size_t i = 0; i < x.t.n; i++) {
		const shs_trace_event *e = &x.t.v[i];
		if (e->kind != SHS_TRACE_PASS)
			continue;
		CU_ASSERT_FATAL(e->track < 4 && e->comp < 8);
		CU_ASSERT_TRUE(e->start >= stage_end[e->track] - 1e-12);
		stage_end[e->track] = e->start + e->dur;
		if (!e->coll)
			fwd_end[e->track][e->comp] = stage_end[e->track];
		else
			CU_ASSERT_TRUE(e->start >= fwd_end[e->track][e->comp]);
		passes[e->track]++;
	}
	for (uint32_t s = 0; s < 4; s++)
		SHS_ASSERT_INT_EQ(passes[s], 16);
	traced_free(&x);
	shs_module_free(m);
}

/* The JSON is Chrome's trace event format: traceEvents, each with ph and pid; complete
 * events with name, ts, dur and tid; the last ends at the step time (microseconds). */
static void test_chrome_json(void)
{
	shs_module *m = model(false);
	shs_eval_options o = { 0 };
	traced x;
	char *text = NULL;
	shs_err e = { 0 };
	json_error_t je;
	json_t *root, *events, *ev;
	size_t k, slices = 0, counters = 0;
	double end = 0;

	trace_of(m, "v5p", 64, "fsdp=16,tensor=4", "fsdp+tp", o, 0, &x);
	SHS_ASSERT_OK(shs_trace_json(&x.t, m, &x.c, &x.ev, &text, &e), &e);
	root = json_loads(text, 0, &je);
	CU_ASSERT_PTR_NOT_NULL_FATAL(root);
	events = json_object_get(root, "traceEvents");
	CU_ASSERT_TRUE_FATAL(json_is_array(events) && json_array_size(events) > 0);
	json_array_foreach(events, k, ev) {
		const char *ph = json_string_value(json_object_get(ev, "ph"));
		CU_ASSERT_PTR_NOT_NULL_FATAL(ph);
		CU_ASSERT_TRUE(json_is_integer(json_object_get(ev, "pid")));
		if (!strcmp(ph, "X")) {
			CU_ASSERT_TRUE(json_is_string(json_object_get(ev, "name")));
			CU_ASSERT_TRUE(json_is_integer(json_object_get(ev, "tid")));
			CU_ASSERT_TRUE(json_is_number(json_object_get(ev, "ts")));
			CU_ASSERT_TRUE(json_number_value(json_object_get(ev, "dur")) >= 0);
			end = fmax(end, json_number_value(json_object_get(ev, "ts")) +
						json_number_value(json_object_get(ev, "dur")));
			slices++;
		}
		counters += !strcmp(ph, "C");
	}
	CU_ASSERT_EQUAL(slices, x.t.n);
	CU_ASSERT_EQUAL(counters, x.t.n_entry);
	assert_close(end * 1e-6, x.ev.step_time_s, 1e-9);
	assert_close(json_number_value(json_object_get(json_object_get(root, "otherData"),
						       "step_time_s")), x.ev.step_time_s, 1e-12);
	json_decref(root);
	free(text);
	traced_free(&x);
	shs_module_free(m);
}

/* The timeline is the event schedule's: an evaluation without one refuses to trace. */
static void test_needs_the_event_schedule(void)
{
	shs_module *m = model(false);
	shs_host *h = shs_test_host();
	shs_eval_options o = { 0 };
	shs_hw_catalog cat;
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval ev;
	shs_trace t = { 0 };
	shs_err e = { 0 };
	shs_cluster_spec spec = { .hardware = "v5p", .devices = 8, .mesh = "data=8",
				  .slices = 1 };

	shs_hw_catalog_builtin(&cat);
	shs_test_plan_evaluate(h, &cat, &spec, m, "dp", &o, &c, &p, &ev);
	shs_eval_free(&ev);
	o.no_overlap = true;
	o.trace = &t;
	CU_ASSERT_EQUAL(shs_evaluate(m, p, &c, &o, &ev, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "event schedule"));
	shs_trace_free(&t);
	shs_plan_free(p);
	shs_host_free(h);
	shs_module_free(m);
}

CU_TestInfo trace_tests[] = {
	{ "the timeline is the step", test_timeline_is_the_step },
	{ "loop trips repeat, one slice past the limit", test_loop_trips },
	{ "a pipeline's passes per stage", test_pipeline_passes },
	{ "Chrome trace event JSON", test_chrome_json },
	{ "only the event schedule has a timeline", test_needs_the_event_schedule },
	CU_TEST_INFO_NULL,
};
