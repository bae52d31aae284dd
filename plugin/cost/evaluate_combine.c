/* XLA's AllReduceCombiner on the event schedule: independent all-reduces over the same devices
 * share one collective's latency.
 *
 * The combiner (xla/service/all_reduce_combiner.cc) merges all-reduces that reduce over the
 * same devices and do not depend on one another into one, up to the hardware's
 * all_reduce_combine_bytes together (hardware_rates.c). On the program-order schedule each
 * member still runs where it stands, but takes the link time it adds to its group's combined
 * collective: the time of the group's bytes with it less the time without. So a group pays one
 * collective's latency and all of its bandwidth: the gradient norm's scalar all-reduces, one a
 * weight, cost the unrolled step's many layers what they cost the scanned step's stacked
 * weights.
 *
 * A group lives in one run of one computation (the entry, a layer's call, a loop's trip). An
 * all-reduce that depends on an earlier one of its group, through any chain of instructions of
 * the run, starts a new group, as the combiner combines only independent ones; so does one that
 * depends on any other group's member from the group's first on (what an instruction depends on
 * is kept as the last member it reaches, shs__sim.after_reduce). */
#include "evaluate_sim.h"

/* 1 + the last instruction with an all-reduce of its own that instruction i of computation c
 * depends on through its operands (0: none). */
static uint32_t depends_on(const shs__sim *s, uint32_t c, uint32_t i)
{
	const shs_instr *in = s->m->comps[c]->instrs[i];
	uint32_t after = 0;

	for (uint32_t k = 0; k < in->n_operands; k++)
		if (s->after_reduce[c][in->operands[k]] > after)
			after = s->after_reduce[c][in->operands[k]];
	return after;
}

void shs__combine_mark(shs__sim *s, uint32_t c, uint32_t i)
{
	s->after_reduce[c][i] = depends_on(s, c, i);
}

/* The open group of computation c's current run over axes mask, or NULL. */
static shs__combined *open_group(shs__sim *s, uint32_t c, uint32_t mask)
{
	for (uint32_t g = 0; g < SHS__COMBINE_OPEN; g++) {
		shs__combined *x = &s->combined[g];
		if (x->mask == mask && x->comp == c && x->run == s->stamp[c])
			return x;
	}
	return NULL;
}

double shs__combine_time(shs__sim *s, uint32_t c, uint32_t i, const shs_coll *cl, double v)
{
	double limit = s->c->hw.all_reduce_combine_bytes, before = 0;
	shs__combined *g;

	if (cl->kind != SHS_PCOLL_ALL_REDUCE || !(limit > 0) || v > limit || !cl->axes_mask)
		return shs_coll_time(s->c, cl->kind, cl->axes_mask, v);
	g = open_group(s, c, cl->axes_mask);
	if (g && depends_on(s, c, i) <= g->first && g->bytes + v <= limit) {
		before = shs_coll_time(s->c, cl->kind, cl->axes_mask, g->bytes);
	} else {
		if (!g)
			g = &s->combined[s->next_combined++ % SHS__COMBINE_OPEN];
		*g = (shs__combined){ .comp = c, .run = s->stamp[c], .mask = cl->axes_mask,
				      .first = i };
	}
	g->bytes += v;
	s->after_reduce[c][i] = i + 1;
	return shs_coll_time(s->c, cl->kind, cl->axes_mask, g->bytes) - before;
}
