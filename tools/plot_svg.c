/* shardsearch plot's SVG: two panels (step time, memory) over the tensor degree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_svg.h"

enum { WIDTH = 760, PANEL_H = 260, LEFT = 80, RIGHT = 150, TOP = 70, GAP = 70 };

static const char *const colours[] = { "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
				       "#17becf", "#bcbd22", "#7f7f7f" };
#define N_COLOURS (sizeof(colours) / sizeof(colours[0]))
#define GIB (1024.0 * 1024.0 * 1024.0)

/* A panel: its top, the value range it maps (log: log10 of the values, whole decades) and,
 * linear, its tick step. */
typedef struct panel {
	double top, lo, hi, step;
	bool log;
} panel;

/* Writes s escaped for XML text. */
static void text_escaped(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

static double plot_w(void)
{
	return WIDTH - LEFT - RIGHT;
}

/* The x of tensor degree t, of the degrees from 1 to max_t on a log2 scale. */
static double x_of(double t, double max_t)
{
	double span = max_t > 1 ? log2(max_t) : 1;

	return LEFT + 20 + (plot_w() - 40) * log2(t) / span;
}

static double y_of(const panel *p, double v)
{
	double u = p->log ? log10(v > 0 ? v : 1e-30) : v;
	double f = p->hi > p->lo ? (u - p->lo) / (p->hi - p->lo) : 0.5;

	return p->top + PANEL_H - f * PANEL_H;
}

/* A round tick step (1, 2, 2.5 or 5 times a power of ten) of about a quarter of span. */
static double nice_step(double span)
{
	double raw = span > 0 ? span / 4 : 1, unit = pow(10, floor(log10(raw)));
	double f = raw / unit;

	return unit * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10);
}

/* The panel at top for values lo..hi: log decades when they span over 20x (allow_log), else
 * from 0 up to a round tick past hi. */
static panel make_panel(double top, double lo, double hi, bool allow_log)
{
	panel p = { .top = top };

	if (allow_log && lo > 0 && hi / lo > 20) {
		p.log = true;
		p.lo = floor(log10(lo));
		p.hi = ceil(log10(hi));
		p.step = 1;
	} else {
		p.step = nice_step(hi * 1.05);
		p.hi = p.step * ceil(hi * 1.05 / p.step);
	}
	return p;
}

/* The frame, the y ticks (unit appended) and the axis title of panel p. */
static void frame(FILE *f, const panel *p, const char *title, const char *unit)
{
	fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"none\" "
		   "stroke=\"#444\"/>\n", LEFT, p->top, plot_w(), PANEL_H);
	fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">", LEFT,
		p->top - 8);
	text_escaped(f, title);
	fputs("</text>\n", f);
	for (double u = p->lo; u <= p->hi + p->step / 2; u += p->step) {
		double y = y_of(p, p->log ? pow(10, u) : u);
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			   "stroke=\"#ddd\"/>\n", LEFT, y, LEFT + plot_w(), y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.3g%s"
			   "</text>\n", LEFT - 6, y + 4, p->log ? pow(10, u) : u, unit);
	}
}

/* The x ticks (tensor degrees 1, 2, 4, ... max_t) under panel p. */
static void x_ticks(FILE *f, const panel *p, double max_t)
{
	for (double t = 1; t <= max_t; t *= 2)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%g"
			   "</text>\n", x_of(t, max_t), p->top + PANEL_H + 16, t);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">tensor "
		   "degree (fsdp = devices / (tensor x stage))</text>\n", LEFT + plot_w() / 2,
		p->top + PANEL_H + 34);
}

/* Points and lines of one stage degree on panel p (memory: the memory panel). */
static void series(FILE *f, const shs_plot *pl, const panel *p, int64_t stage, double max_t,
		   const char *colour, bool memory)
{
	bool first = true;

	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colour);
	for (uint32_t k = 0; k < pl->n; k++) {
		const shs_plot_point *q = &pl->v[k];
		if (q->stage != stage)
			continue;
		fprintf(f, "%s%.1f,%.1f", first ? "" : " ", x_of((double)q->tensor, max_t),
			y_of(p, memory ? q->memory_bytes / GIB : q->step_s));
		first = false;
	}
	fputs("\"/>\n", f);
	for (uint32_t k = 0; k < pl->n; k++) {
		const shs_plot_point *q = &pl->v[k];
		if (q->stage != stage)
			continue;
		fprintf(f, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" "
			   "stroke=\"%s\" stroke-width=\"2\"><title>stage=%lld fsdp=%lld "
			   "tensor=%lld: %.4g s, %.2f GiB, remat %s, %s</title></circle>\n",
			memory ? "memory" : "point", x_of((double)q->tensor, max_t),
			y_of(p, memory ? q->memory_bytes / GIB : q->step_s),
			q->fits ? colour : "white", q->fits ? colour : "#d62728",
			(long long)q->stage, (long long)q->fsdp, (long long)q->tensor, q->step_s,
			q->memory_bytes / GIB, q->remat, q->fits ? "fits" : "does not fit");
	}
}

/* The stage degrees' legend and the fits key, right of the panels. */
static void legend(FILE *f, const int64_t *stages, uint32_t n)
{
	double x = LEFT + plot_w() + 16, y = TOP + 10;

	for (uint32_t k = 0; k < n; k++, y += 18) {
		char what[32] = "no pipeline";
		if (stages[k] > 1)
			snprintf(what, sizeof(what), "stage=%lld", (long long)stages[k]);
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/><text x=\"%.1f\" "
			   "y=\"%.1f\" font-size=\"11\">%s</text>\n", x, y,
			colours[k % N_COLOURS], x + 10, y + 4, what);
	}
	fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"white\" stroke=\"#d62728\" "
		   "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">does not fit"
		   "</text>\n", x, y + 8, x + 10, y + 12);
}

char *shs_plot_svg(const shs_plot *pl)
{
	double lo = INFINITY, hi = 0, mem_hi = pl->hbm_bytes / GIB, max_t = 1;
	int64_t stages[16];
	uint32_t n_stages = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	for (uint32_t k = 0; k < pl->n; k++) {
		const shs_plot_point *q = &pl->v[k];
		bool seen = false;
		lo = fmin(lo, q->step_s);
		hi = fmax(hi, q->step_s);
		mem_hi = fmax(mem_hi, q->memory_bytes / GIB);
		max_t = fmax(max_t, (double)q->tensor);
		for (uint32_t j = 0; j < n_stages; j++)
			seen |= stages[j] == q->stage;
		if (!seen && n_stages < sizeof(stages) / sizeof(stages[0]))
			stages[n_stages++] = q->stage;
	}
	panel time = make_panel(TOP, lo, hi, true);
	panel mem = make_panel(TOP + PANEL_H + GAP, 0, mem_hi, false);
	double height = mem.top + PANEL_H + 50;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/"
		   "2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
		   "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" "
		   "fill=\"white\"/>\n<text x=\"%d\" y=\"24\" font-size=\"15\" "
		   "font-weight=\"bold\">", WIDTH, height, WIDTH, height, LEFT);
	text_escaped(f, pl->title);
	fprintf(f, "</text>\n<text x=\"%d\" y=\"42\" font-size=\"12\" fill=\"#444\">", LEFT);
	text_escaped(f, pl->subtitle);
	fputs("</text>\n", f);
	frame(f, &time, "step time (predicted)", " s");
	frame(f, &mem, "memory per device (peak)", " GiB");
	x_ticks(f, &time, max_t);
	x_ticks(f, &mem, max_t);
	/* the boundary: above the HBM line a plan does not fit */
	fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#d62728\" "
		   "fill-opacity=\"0.08\"/>\n<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		   "stroke=\"#d62728\" stroke-dasharray=\"6,4\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
		   "font-size=\"11\" fill=\"#d62728\" text-anchor=\"end\">HBM %.4g GiB: does not "
		   "fit above</text>\n", LEFT, mem.top, plot_w(),
		y_of(&mem, pl->hbm_bytes / GIB) - mem.top, LEFT, y_of(&mem, pl->hbm_bytes / GIB),
		LEFT + plot_w(), y_of(&mem, pl->hbm_bytes / GIB), LEFT + plot_w() - 4,
		y_of(&mem, pl->hbm_bytes / GIB) - 5, pl->hbm_bytes / GIB);
	for (uint32_t k = 0; k < n_stages; k++) {
		series(f, pl, &time, stages[k], max_t, colours[k % N_COLOURS], false);
		series(f, pl, &mem, stages[k], max_t, colours[k % N_COLOURS], true);
	}
	legend(f, stages, n_stages);
	fputs("</svg>\n", f);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}
