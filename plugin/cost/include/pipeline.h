/* Pipeline schedules (GPipe, 1F1B, interleaved 1F1B): the makespan of micro-batches over stages. */
#ifndef SHS_PIPELINE_H
#define SHS_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"
#include "trace.h"

/* The order each device runs its micro-batches' forward and backward passes in. */
typedef enum shs_pipe_schedule {
	SHS_PIPE_1F1B = 0,        /* p - s - 1 forwards, then one forward one backward, then the
				   * remaining backwards (PipeDream-Flush; Megatron-LM's
				   * forward_backward_pipelining_without_interleaving) */
	SHS_PIPE_GPIPE = 1,       /* every forward, then every backward (Huang et al. 2019) */
	SHS_PIPE_INTERLEAVED = 2, /* 1F1B over v model chunks per device, micro-batches in groups
				   * of p (Narayanan et al. 2021; Megatron-LM's
				   * forward_backward_pipelining_with_interleaving) */
	SHS_PIPE_COUNT
} shs_pipe_schedule;

/* The schedule's name ("1f1b", "gpipe", "interleaved"), and the schedule of a name (false when
 * it names none). */
const char *shs_pipe_schedule_name(shs_pipe_schedule s);
bool shs_pipe_schedule_from_name(const char *name, shs_pipe_schedule *out);

/* One pipeline: p devices (stages), v chunks each, m micro-batches. Virtual stage k = c p + s is
 * chunk c of device s; the model's layers run through virtual stages 0 .. p v - 1 in order.
 * Arrays are borrowed for the call. */
typedef struct shs_pipe_in {
	shs_pipe_schedule schedule;
	uint32_t stages;        /* p >= 1 */
	uint32_t chunks;        /* v >= 1 (1 unless interleaved) */
	uint32_t microbatches;  /* m >= 1; interleaved: a multiple of p */
	const double *fwd;      /* per virtual stage (p v): one micro-batch's forward seconds */
	const double *bwd;      /* ... and backward seconds (with any recomputation) */
	const double *send_fwd; /* per boundary k -> k + 1 (p v - 1; NULL: free): seconds to move
				 * one micro-batch's activation to the next virtual stage */
	const double *send_bwd; /* ... and its gradient back from k + 1 to k (NULL: free) */
	bool blocking;          /* a device waits for its send to finish before its next pass
				 * (synchronous point-to-point: Megatron-LM's batch_isend_irecv,
				 * then wait and torch.cuda.synchronize, p2p_communication.py) */
	shs_trace *trace;       /* receives each pass and transfer (appended), or NULL */
	double send_bytes;      /* the bytes of one transfer, for the trace */
	bool lockstep;          /* GPipe as one program on every device (XLA's SPMD: a loop
				 * over m + p - 1 trips each way): a trip runs every device's pass
				 * (on zeros where it has no micro-batch), then moves every
				 * activation on by one collective-permute the next trip waits
				 * for; a trip takes the slowest pass and the transfer */
} shs_pipe_in;

/* What the schedule gives, per device where an array (p entries each, malloc'ed: free with
 * shs_pipe_out_free). Transfers run on their own links (one per boundary and direction, one
 * transfer at a time), asynchronous to the compute unless in->blocking: a pass waits only for
 * its input. */
typedef struct shs_pipe_out {
	double makespan;        /* the first forward's start to the last backward's end */
	double ideal;           /* the busiest device's compute: m times its chunks' fwd + bwd */
	double bubble;          /* makespan / ideal - 1: the idle share the schedule adds */
	double wait_s;          /* the makespan less the makespan with free transfers: the
				 * transfer time the schedule does not hide */
	double *end;            /* per device: when its last backward ends */
	double *last_bwd;       /* ... that backward's seconds (its gradients come during it) */
	uint32_t *peak_chunks;  /* ... the most chunk activations it holds at once (forward run,
				 * backward not yet): a chunk of one micro-batch each */
} shs_pipe_out;

/* Simulates the schedule. SHS_OK; SHS_EINVAL with the problem in e (a count of 0, an
 * interleaved m that is no multiple of p, chunks with GPipe or 1F1B, lockstep with another
 * schedule than GPipe, a negative time);
 * SHS_ENOMEM. */
int shs_pipe_simulate(const shs_pipe_in *in, shs_pipe_out *out, shs_err *e);

/* Frees what shs_pipe_simulate allocated in out (not out itself). */
void shs_pipe_out_free(shs_pipe_out *out);

#endif
