/* Private to the cost room's cluster code: limits, a parsed mesh, and what cluster.c,
 * topology.c, mesh_parse.c, mesh_layout.c and cluster_text.c lend one another. */
#ifndef SHS_CLUSTER_INTERNAL_H
#define SHS_CLUSTER_INTERNAL_H

#include "cluster.h"

enum {
	SHS__AXIS_NAME_CAP = 32,            /* axis names, as shs_cluster stores them */
	SHS__TOPO_DIM_MAX = 1 << 20,   /* a topology side or mesh size above this is a typo */
	SHS__TOPO_TEXT_MAX = 64,
	SHS__CHIPS_MAX = 1 << 24,      /* the largest standard slice searched for */
	SHS__WRAP_UNIT_MAX = 1 << 10,
	SHS__NAMES_CAP = 512,          /* the catalog's names, for messages */
	SHS__RANK_MAX = 3,
	SHS__DECIMAL = 10
};

/* One logical axis of a mesh text, and the whole text (mesh_parse.c). */
typedef struct shs__mesh_item {
	char name[SHS__AXIS_NAME_CAP];
	int64_t size;
	uint32_t claim;   /* physical axes after @ (bit p), 0 for the default layout */
} shs__mesh_item;

typedef struct shs__mesh_text {
	const char *text;
	uint32_t n;
	shs__mesh_item items[SHS_MESH_MAX_AXES];
} shs__mesh_text;

/* Sets e to SHS_EINVAL and "mesh 'TEXT': " and the formatted message; returns SHS_EINVAL
 * (mesh_parse.c). */
int shs__mesh_err(shs_err *e, const shs__mesh_text *m, const char *fmt, ...) SHS_PRINTF(3, 4);

/* a * b, or -1 when it would exceed limit (both positive) (cluster.c). */
int64_t shs__mul_capped(int64_t a, int64_t b, int64_t limit);

/* Parses a positive decimal of at most SHS__TOPO_DIM_MAX at *p, advancing *p; -1 when there is
 * none (cluster.c). */
int64_t shs__parse_size(const char **p);

/* Appends the formatted text to buf (cap bytes), truncating (cluster_text.c). */
void shs__appendf(char *buf, size_t cap, const char *fmt, ...) SHS_PRINTF(3, 4);

/* "16x20x28": dims joined by 'x', into buf (cap bytes) (cluster_text.c). */
void shs__shape_text(const int64_t *dims, uint32_t rank, char *buf, size_t cap);

/* The physical axes of c's hardware (c->hw set) as spec describes the slices or nodes, into c
 * (topology.c). SHS_OK or SHS_EINVAL. */
int shs__cluster_phys(const shs_cluster_spec *spec, shs_cluster *c, shs_err *e);

/* The mesh text (NULL or "": one axis per physical axis of size > 1) parsed against c's
 * physical axes into *m (mesh_parse.c). SHS_OK or SHS_EINVAL naming the bad part. */
int shs__mesh_parse(const shs_cluster *c, const char *text, shs__mesh_text *m, shs_err *e);

/* Parses text and lays its axes on c's physical axes: c->mesh, span and part (mesh_layout.c).
 * SHS_OK or SHS_EINVAL. */
int shs__mesh_lay(const char *text, shs_cluster *c, shs_err *e);

#endif
