/* shardsearch plot's picture: step time and memory per device against the parallelism degrees,
 * as an SVG document. */
#ifndef SHS_PLOT_SVG_H
#define SHS_PLOT_SVG_H

#include <stdbool.h>
#include <stdint.h>

/* One plan evaluated: its degrees (stage 1: no pipeline), step time, peak memory, and whether it
 * fits in HBM (with the remat policy named, static text). */
typedef struct shs_plot_point {
	int64_t stage, fsdp, tensor;
	double step_s, memory_bytes;
	bool fits;
	const char *remat;
} shs_plot_point;

/* The picture: its points (borrowed), the chip's HBM per device, and a title and subtitle
 * (borrowed; plain text, escaped when drawn). */
typedef struct shs_plot {
	const shs_plot_point *v;
	uint32_t n;
	double hbm_bytes;
	const char *title, *subtitle;
} shs_plot;

/* Draws p: two panels over the tensor degree (one line per stage degree), step time above
 * (a log scale when it spans over 20x) and memory below with the HBM as the fits / does-not-fit
 * boundary; a fitting plan is a filled circle, one that does not a hollow red one (each plan is
 * one <circle class="point"> above and one <circle class="memory"> below, titled with it).
 * Returns the document (malloc'ed: the caller frees it), or NULL when out of memory. */
char *shs_plot_svg(const shs_plot *p);

#endif
