/* Pipeline schedules: bubbles, exposed transfers and activations in flight, from the simulation. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "test_util.h"

enum { MAX_VIRTUAL = 64 };

/* Simulates schedule s over p stages of v chunks and m micro-batches, each chunk's forward
 * taking f / v and backward b / v, each transfer send (0: free), in lockstep or not;
 * CU-asserts it ran. */
static shs_pipe_out simulate_in(shs_pipe_schedule s, uint32_t p, uint32_t v, uint32_t m,
				double f, double b, double send, bool lockstep)
{
	double fwd[MAX_VIRTUAL], bwd[MAX_VIRTUAL], sends[MAX_VIRTUAL];
	shs_pipe_out out;
	shs_err e = { 0 };

	CU_ASSERT_FATAL(p * v <= MAX_VIRTUAL);
	for (uint32_t k = 0; k < p * v; k++) {
		fwd[k] = f / v;
		bwd[k] = b / v;
		sends[k] = send;
	}
	shs_pipe_in in = { s, p, v, m, fwd, bwd, send > 0 ? sends : NULL,
			   send > 0 ? sends : NULL, false, NULL, 0, lockstep };
	int rc = shs_pipe_simulate(&in, &out, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	CU_ASSERT_FATAL(rc == SHS_OK);
	return out;
}

/* The same, as the devices run their own programs. */
static shs_pipe_out simulate(shs_pipe_schedule s, uint32_t p, uint32_t v, uint32_t m, double f,
			     double b, double send)
{
	return simulate_in(s, p, v, m, f, b, send, false);
}

/* The bubble every schedule's simulation gives on uniform stages with free transfers is the
 * closed form (p - 1) / (m v) of the ideal step, within 2 %. */
static void test_bubble_closed_form(void)
{
	static const struct {
		shs_pipe_schedule s;
		uint32_t p, v, m;
	} cases[] = {
		{ SHS_PIPE_GPIPE, 2, 1, 4 },        { SHS_PIPE_GPIPE, 4, 1, 8 },
		{ SHS_PIPE_GPIPE, 8, 1, 32 },       { SHS_PIPE_1F1B, 2, 1, 2 },
		{ SHS_PIPE_1F1B, 4, 1, 16 },        { SHS_PIPE_1F1B, 8, 1, 64 },
		{ SHS_PIPE_1F1B, 16, 1, 48 },       { SHS_PIPE_INTERLEAVED, 4, 2, 8 },
		{ SHS_PIPE_INTERLEAVED, 4, 4, 16 }, { SHS_PIPE_INTERLEAVED, 8, 3, 24 },
		{ SHS_PIPE_INTERLEAVED, 8, 2, 8 },  { SHS_PIPE_INTERLEAVED, 2, 5, 12 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t p = cases[i].p, v = cases[i].v, m = cases[i].m;
		shs_pipe_out out = simulate(cases[i].s, p, v, m, 1.0, 2.0, 0);
		double want = (double)(p - 1) / ((double)m * v);
		CU_ASSERT_DOUBLE_EQUAL(out.ideal, m * 3.0, 1e-9);
		if (fabs(out.bubble - want) > 0.02 * want)
			fprintf(stderr, "%s p=%u v=%u m=%u: bubble %.4f, closed form %.4f\n",
				shs_pipe_schedule_name(cases[i].s), p, v, m, out.bubble, want);
		CU_ASSERT(fabs(out.bubble - want) <= 0.02 * want);
		CU_ASSERT_DOUBLE_EQUAL(out.wait_s, 0, 1e-12);
		shs_pipe_out_free(&out);
		if (cases[i].s != SHS_PIPE_GPIPE)
			continue;
		out = simulate_in(cases[i].s, p, v, m, 1.0, 2.0, 0, true); /* one program */
		CU_ASSERT(fabs(out.bubble - want) <= 0.02 * want);
		CU_ASSERT_EQUAL(out.peak_chunks[0], m);
		shs_pipe_out_free(&out);
	}
}

/* In lockstep every trip ends with the transfer the next one waits for: all 2 (m + p - 1) of
 * them exposed, where the devices' own programs hide all but the fill's and the drain's; and
 * every trip takes the slowest stage's pass (the others wait for the collective). */
static void test_lockstep(void)
{
	shs_pipe_out one = simulate_in(SHS_PIPE_GPIPE, 4, 1, 16, 1.0, 2.0, 0.25, true);
	shs_pipe_out own = simulate(SHS_PIPE_GPIPE, 4, 1, 16, 1.0, 2.0, 0.25);
	double fwd[4] = { 1, 1, 2, 1 }, bwd[4] = { 2, 2, 4, 2 };
	shs_pipe_in slow = { SHS_PIPE_GPIPE, 4, 1, 16, fwd, bwd, NULL, NULL, false, NULL, 0,
			     true };
	shs_pipe_in f1b = slow;
	shs_pipe_out out;
	shs_err e = { 0 };

	CU_ASSERT_DOUBLE_EQUAL(one.wait_s, 2 * 19 * 0.25, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(one.makespan, 19 * 3.0 + one.wait_s, 1e-9);
	CU_ASSERT(one.wait_s > 5 * own.wait_s);
	CU_ASSERT_FATAL(shs_pipe_simulate(&slow, &out, &e) == SHS_OK);
	CU_ASSERT_DOUBLE_EQUAL(out.makespan, 19 * (2.0 + 4.0), 1e-9);
	shs_pipe_out_free(&out);
	f1b.schedule = SHS_PIPE_1F1B;
	CU_ASSERT_EQUAL(shs_pipe_simulate(&f1b, &out, &e), SHS_EINVAL);
	CU_ASSERT(strstr(e.msg, "lockstep") != NULL);
	shs_pipe_out_free(&one);
	shs_pipe_out_free(&own);
}

/* GPipe hides a transfer shorter than a pass under the passes of the micro-batches behind it:
 * only where the pipeline fills (the first micro-batch's activation, p - 1 hops) and drains (the
 * last gradient, p - 1 hops) does it wait. 1F1B's steady state waits for each gradient's round
 * trip as well (a backward needs the next stage's, which ran after its own forward): more. */
static void test_transfers_fill_and_drain(void)
{
	shs_pipe_out gpipe = simulate(SHS_PIPE_GPIPE, 4, 1, 16, 1.0, 2.0, 0.25);
	shs_pipe_out none = simulate(SHS_PIPE_GPIPE, 4, 1, 16, 1.0, 2.0, 0);
	shs_pipe_out f1b = simulate(SHS_PIPE_1F1B, 4, 1, 16, 1.0, 2.0, 0.25);

	CU_ASSERT_DOUBLE_EQUAL(gpipe.wait_s, 3 * 2 * 0.25, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(gpipe.makespan, none.makespan + gpipe.wait_s, 1e-9);
	CU_ASSERT(f1b.wait_s > gpipe.wait_s + 1);
	CU_ASSERT(f1b.wait_s < 16 * 2 * 0.25); /* the warm-up's forwards still hide some */
	shs_pipe_out_free(&gpipe);
	shs_pipe_out_free(&none);
	shs_pipe_out_free(&f1b);
}

/* A transfer longer than a pass cannot hide: the link runs behind the compute and every
 * micro-batch waits for it. */
static void test_transfers_exposed(void)
{
	shs_pipe_out out = simulate(SHS_PIPE_1F1B, 4, 1, 16, 1.0, 2.0, 3.0);
	shs_pipe_out none = simulate(SHS_PIPE_1F1B, 4, 1, 16, 1.0, 2.0, 0);
	CU_ASSERT(out.wait_s > 0.5 * none.makespan);
	/* the link between two stages carries 16 transfers of 3 s each way: at least 48 s */
	CU_ASSERT(out.makespan >= 48.0);
	shs_pipe_out_free(&out);
	shs_pipe_out_free(&none);
}

/* A synchronous send keeps its device: a middle stage pays each of its 2 m sends on top of its
 * passes, where asynchronous ones hide in the steady state. */
static void test_blocking_sends(void)
{
	double f[4] = { 1, 1, 1, 1 }, b[4] = { 2, 2, 2, 2 }, t[4] = { 0.25, 0.25, 0.25, 0.25 };
	shs_pipe_in in = { SHS_PIPE_GPIPE, 4, 1, 16, f, b, t, t, true, NULL, 0, false };
	shs_pipe_out sync, async;
	shs_err e = { 0 };

	CU_ASSERT_FATAL(shs_pipe_simulate(&in, &sync, &e) == SHS_OK);
	in.blocking = false;
	CU_ASSERT_FATAL(shs_pipe_simulate(&in, &async, &e) == SHS_OK);
	CU_ASSERT(sync.makespan >= 16 * 3.0 + 2 * 16 * 0.25 - 1e-9);
	CU_ASSERT(sync.makespan > async.makespan + 16 * 0.25);
	shs_pipe_out_free(&sync);
	shs_pipe_out_free(&async);
}

/* 1F1B holds at most p micro-batches' activations on the first stage (and one on the last);
 * GPipe holds all m; interleaved 1F1B's first device holds its warm-up's chunks and one more:
 * 2 (p - 1) + (v - 1) p + 1. */
static void test_activations_in_flight(void)
{
	shs_pipe_out f1b = simulate(SHS_PIPE_1F1B, 4, 1, 16, 1.0, 2.0, 0);
	shs_pipe_out gpipe = simulate(SHS_PIPE_GPIPE, 4, 1, 16, 1.0, 2.0, 0);
	shs_pipe_out inter = simulate(SHS_PIPE_INTERLEAVED, 4, 2, 16, 1.0, 2.0, 0);
	shs_pipe_out few = simulate(SHS_PIPE_1F1B, 8, 1, 3, 1.0, 2.0, 0);

	CU_ASSERT_EQUAL(f1b.peak_chunks[0], 4);
	CU_ASSERT_EQUAL(f1b.peak_chunks[3], 1);
	CU_ASSERT_EQUAL(gpipe.peak_chunks[0], 16);
	CU_ASSERT_EQUAL(gpipe.peak_chunks[3], 16);
	CU_ASSERT_EQUAL(inter.peak_chunks[0], 2 * 3 + 1 * 4 + 1);
	CU_ASSERT_EQUAL(few.peak_chunks[0], 3); /* never more than the micro-batches */
	shs_pipe_out_free(&f1b);
	shs_pipe_out_free(&gpipe);
	shs_pipe_out_free(&inter);
	shs_pipe_out_free(&few);
}

/* The slowest stage sets the pace: one stage twice as slow makes the step at least its compute
 * plus the forwards before its first and the backwards after its last, and the bubble is
 * counted against the busiest device. */
static void test_slowest_stage(void)
{
	double fwd[4] = { 1, 1, 2, 1 }, bwd[4] = { 2, 2, 4, 2 };
	shs_pipe_in in = { SHS_PIPE_1F1B, 4, 1, 16, fwd, bwd, NULL, NULL, false, NULL, 0, false };
	shs_pipe_out out;
	shs_err e = { 0 };

	CU_ASSERT_FATAL(shs_pipe_simulate(&in, &out, &e) == SHS_OK);
	CU_ASSERT_DOUBLE_EQUAL(out.ideal, 16 * 6.0, 1e-9);
	CU_ASSERT(out.makespan >= 16 * 6.0 + 2 * 1.0 + 2 * 2.0 - 1e-9);
	CU_ASSERT(out.bubble > 0 && out.bubble < 0.25);
	shs_pipe_out_free(&out);
}

/* Inputs no schedule can run are refused with the reason. */
static void test_refused(void)
{
	double t[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, neg[8] = { 1, 1, -1, 1, 1, 1, 1, 1 };
	shs_pipe_out out;
	shs_err e = { 0 };
	shs_pipe_in odd = { .schedule = SHS_PIPE_INTERLEAVED, 4, 2, 6, t, t };
	shs_pipe_in chunks = { .schedule = SHS_PIPE_1F1B, 4, 2, 8, t, t };
	shs_pipe_in negative = { .schedule = SHS_PIPE_GPIPE, 8, 1, 8, t, neg };
	shs_pipe_in none = { .schedule = SHS_PIPE_GPIPE, 0, 1, 8, t, t };
	shs_pipe_schedule s;

	CU_ASSERT_EQUAL(shs_pipe_simulate(&odd, &out, &e), SHS_EINVAL);
	CU_ASSERT(strstr(e.msg, "no multiple") != NULL);
	CU_ASSERT_EQUAL(shs_pipe_simulate(&chunks, &out, &e), SHS_EINVAL);
	CU_ASSERT(strstr(e.msg, "interleaved") != NULL);
	CU_ASSERT_EQUAL(shs_pipe_simulate(&negative, &out, &e), SHS_EINVAL);
	CU_ASSERT(strstr(e.msg, "virtual stage 2") != NULL);
	CU_ASSERT_EQUAL(shs_pipe_simulate(&none, &out, &e), SHS_EINVAL);
	CU_ASSERT(shs_pipe_schedule_from_name("1f1b", &s) && s == SHS_PIPE_1F1B);
	CU_ASSERT(!shs_pipe_schedule_from_name("zb", &s));
}

CU_TestInfo pipeline_tests[] = {
	{ "bubble = (p-1)/(m v) of the ideal step", test_bubble_closed_form },
	{ "GPipe waits for short transfers only to fill and drain; 1F1B more",
	  test_transfers_fill_and_drain },
	{ "long transfers exposed", test_transfers_exposed },
	{ "synchronous sends keep their device", test_blocking_sends },
	{ "activations in flight: 1F1B p, GPipe m", test_activations_in_flight },
	{ "the slowest stage sets the pace", test_slowest_stage },
	{ "one program in lockstep: every transfer exposed", test_lockstep },
	{ "impossible schedules refused", test_refused },
	CU_TEST_INFO_NULL,
};
