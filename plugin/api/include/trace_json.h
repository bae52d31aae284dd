/* The predicted step's timeline (trace.h) as a Chrome / Perfetto trace: the JSON object format
 * of the Trace Event Format (traceEvents with ph, ts, dur, pid, tid; times in microseconds). */
#ifndef SHS_TRACE_JSON_H
#define SHS_TRACE_JSON_H

#include "cluster.h"
#include "evaluate.h"
#include "ir.h"
#include "trace.h"

/* Writes trace t of step ev (module m, cluster c; all borrowed) into *text (malloc'ed: the
 * caller frees it): one track for the compute stream (instructions, and the waits for
 * collectives named by their site), one per mesh axis (its links' collectives with their
 * bytes and exposure), a memory counter (live bytes against the HBM), or, for a pipelined
 * step, one track per stage (its passes) and one for its sends. SHS_OK or SHS_ENOMEM. */
int shs_trace_json(const shs_trace *t, const shs_module *m, const shs_cluster *c,
		   const shs_eval *ev, char **text, shs_err *e);

#endif
