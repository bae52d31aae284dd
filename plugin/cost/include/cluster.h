/* A cluster: chips on physical axes (torus axes, NVLink node, scale-out, DCN), a logical mesh laid
 * on them, and what collectives over mesh axes cost there. */
#ifndef SHS_CLUSTER_H
#define SHS_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "hardware.h"
#include "sharding.h"
#include "shardsearch_plugin.h"
#include "status.h"

enum { SHS_PHYS_MAX = 6 };

/* Kinds of physical axes. */
typedef enum shs_phys_kind {
	SHS_PHYS_ICI = 0,   /* a torus axis of a TPU slice: x, y, z */
	SHS_PHYS_NODE = 1,  /* GPUs of one NVLink domain */
	SHS_PHYS_NET = 2,   /* GPU nodes over the scale-out network */
	SHS_PHYS_DCN = 3    /* slices over the data-center network */
} shs_phys_kind;

typedef struct shs_phys_axis {
	char name[8];        /* "x", "y", "z", "node", "net", "dcn" */
	shs_phys_kind kind;
	int64_t size;
	bool wraps;          /* ICI: the axis is a ring (wraparound), else a line */
} shs_phys_axis;

/* The chips and the mesh. Each logical axis k spans the physical axes in span[k] (bit p: axis
 * p), major first in order of the physical axes; several logical axes may share one physical
 * axis (each then takes a factor of it: part[k][p] chips along p, 0 when not spanned). */
typedef struct shs_cluster {
	shs_hardware hw;
	int64_t devices;
	uint32_t n_phys;
	shs_phys_axis phys[SHS_PHYS_MAX];
	shs_mesh mesh;
	char axis_names[SHS_MESH_MAX_AXES][32];   /* storage for mesh.names */
	uint32_t span[SHS_MESH_MAX_AXES];
	int64_t part[SHS_MESH_MAX_AXES][SHS_PHYS_MAX];
} shs_cluster;

/* What the command line says about the cluster. topology: "16x20x28" (TPU) or NULL; devices: 0
 * when topology gives it (GPUs: the GPU count; TPUs without topology: the standard slice of that
 * many chips); slices: 1 or more TPU slices over DCN; mesh: "fsdp=16@xy,tensor=4@z" (physical
 * axis letters after @; without @ the default layout: the mesh's axes take the physical axes in
 * order, minor mesh axes on the fastest links). */
typedef struct shs_cluster_spec {
	const char *hardware;
	const char *topology;
	int64_t devices;
	int64_t slices;
	const char *mesh;
} shs_cluster_spec;

/* Builds *out from spec and the catalog. Errors (one line each, naming the bad part): unknown
 * hardware (lists the names), a topology the hardware cannot have, mesh sizes whose product is
 * not the device count, a physical axis named twice or unknown, an axis laid on physical axes
 * whose sizes do not match. Returns SHS_OK or SHS_EINVAL. */
int shs_cluster_make(const shs_hw_catalog *cat, const shs_cluster_spec *spec, shs_cluster *out,
		     shs_err *e);

/* Appends "fsdp=16@xy,tensor=4@z (v5p 4x4x4, wraparound on x y z)" to buf (cap bytes). */
void shs_cluster_describe(const shs_cluster *c, char *buf, size_t cap);

/* Seconds one collective takes over the mesh axes in axes_mask (bit k: mesh axis k), with
 * bytes the book's V: the full array the collective works on within one group (all-gather:
 * the gathered result; reduce-scatter and all-reduce: the unreduced input; all-to-all: the
 * array; permute: the bytes each device sends). Follows the book: on ICI rings V/W per axis
 * bidirectional, spanning M physical axes divides by M, the latency-bound regime
 * max(T_min * hops, ...), no wraparound doubling the time; on GPUs bytes * (N-1)/(N W) per
 * level with the NVLink and scale-out levels taken hierarchically (max over levels); on DCN the
 * per-chip DCN bandwidth. 0 when the axes span one device. */
double shs_coll_time(const shs_cluster *c, int kind, uint32_t axes_mask, double bytes);

/* "fsdp=16,tensor=4": the mesh's axes and sizes without their layout, into buf (cap bytes). */
void shs_mesh_text(const shs_mesh *m, char *buf, size_t cap);

/* "fsdp,tensor": the names of the mesh axes in mask, into buf (cap bytes). */
void shs_axes_text(const shs_mesh *mesh, uint32_t mask, char *buf, size_t cap);

/* "all-gather", "reduce-scatter", ... for a collective kind (enum shs_pcollective). */
const char *shs_coll_name(int kind);

/* Devices in one group of the axes in axes_mask (product of their sizes). */
int64_t shs_mesh_group(const shs_mesh *m, uint32_t axes_mask);

#endif
