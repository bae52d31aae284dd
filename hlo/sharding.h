/* Shardings: XLA's form (tile assignment, iota or explicit devices) and the named-axis form. */
#ifndef SHS_SHARDING_H
#define SHS_SHARDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "buf.h"
#include "metadata.h"
#include "shs_limits.h"
#include "status.h"

/* The kinds, numbered as XLA's OpSharding.Type. */
typedef enum shs_sharding_kind {
	SHS_SHARDING_REPLICATED = 0,
	SHS_SHARDING_MAXIMAL = 1,
	SHS_SHARDING_TUPLE = 2,
	SHS_SHARDING_TILED = 3, /* OpSharding.OTHER */
	SHS_SHARDING_MANUAL = 4,
	SHS_SHARDING_UNKNOWN = 5,
	SHS_SHARDING_UNREDUCED = 6,
	SHS_SHARDING_NAMED = 7  /* XLA's NamedSharding (OpSharding.named_sharding): mesh set */
} shs_sharding_kind;

/* A mesh axis, or the sub-axis `axis:(pre_size)size` of it (size 0: the whole axis). */
typedef struct shs_axis_ref {
	uint32_t axis;
	int64_t pre_size, size;
} shs_axis_ref;

/* The axes one dimension is split over, major first; open (`?`): more may be added. */
typedef struct shs_mesh_dim {
	uint32_t n;
	shs_axis_ref *axes;
	bool open;
} shs_mesh_dim;

/* XLA's NamedSharding: a mesh of named axes, the axes each dimension is split over and the axes
 * the value is replicated, unreduced or manual over; or the whole value replicated, unreduced or
 * manual over the mesh (whole), or maximal on one device (maximal_mesh[device_id=N]). */
typedef struct shs_mesh_sharding {
	bool quoted;              /* axis names printed 'quoted' (newer XLA) rather than bare */
	bool maximal;
	int64_t device;           /* maximal: the device */
	uint32_t n_axes;
	const char **names;
	int64_t *sizes;
	uint32_t n_device_ids;    /* the device order: explicit, or iota over iota_dims, permuted */
	int64_t *device_ids;
	uint32_t n_iota;          /* 0 with no device_ids: the mesh's own order */
	int64_t *iota_dims;
	int32_t *iota_perm;
	shs_sharding_kind whole;  /* REPLICATED, UNREDUCED or MANUAL; TILED: by the lists below */
	uint32_t rank;
	shs_mesh_dim *dims;
	uint32_t n_replicated, n_unreduced, n_manual;
	shs_axis_ref *replicated, *unreduced, *manual;
} shs_mesh_sharding;

/* XLA's sharding of one value.
 * - TILED: tile_dims is the tile-assignment array shape (data rank, plus one trailing dim when
 *   replicate_on_last_tile_dim, plus one per entry of last_tile_dims). The device array is either
 *   explicit (devices, n_devices == product of tile_dims) or iota (n_devices == 0):
 *   iota(prod(iota_dims)).reshape(iota_dims).transpose(iota_perm).reshape(tile_dims), kept in
 *   XLA's canonical form (size-1 dims dropped, runs already in order merged).
 * - MAXIMAL: the single device is devices[0] (tile_dims is what the proto said, usually [1]).
 * - TUPLE: one element per leaf of the tuple shape, pre-order.
 * - the others carry no tile assignment.
 * All arrays live in the arena the sharding was made in. */
typedef struct shs_sharding {
	shs_sharding_kind kind;
	uint32_t n_tile_dims;
	int64_t *tile_dims;
	uint32_t n_devices;
	int64_t *devices;
	uint32_t n_iota;
	int64_t *iota_dims;
	int32_t *iota_perm;
	bool replicate_on_last_tile_dim;
	uint32_t n_last_tile_dims;
	int32_t *last_tile_dims; /* shs_sharding_kind values: MANUAL, REPLICATED, UNREDUCED */
	bool is_shard_group;
	bool shard_like;          /* false: shard_as */
	int64_t shard_group_id;
	uint32_t n_metadata;
	shs_metadata *metadata;
	uint32_t n_tuple;
	struct shs_sharding *tuple;
	shs_mesh_sharding *mesh; /* kind NAMED */
} shs_sharding;

/* Parses XLA's text form starting at the '{' of s[0..len): `{replicated}`,
 * `{devices=[2,1,4]<=[8] last_tile_dim_replicate}`, `{{replicated}, (index comments) {...}}`, ...
 * On success *out is new in a and *consumed the bytes read. On error *err_off is the offset of
 * the fault and e says what is wrong. Returns SHS_OK, SHS_EPARSE or SHS_ENOMEM. */
int shs_sharding_parse(shs_arena *a, const char *s, size_t len, size_t *consumed,
		       shs_sharding **out, size_t *err_off, shs_err *e);

/* Appends the text form exactly as XLA's HloSharding::ToString prints it. */
void shs_sharding_print(shs_buf *b, const shs_sharding *s);

bool shs_sharding_equal(const shs_sharding *x, const shs_sharding *y);

/* A deep copy into a; NULL when out of memory. */
shs_sharding *shs_sharding_clone(shs_arena *a, const shs_sharding *s);

/* Checks s against a value of the given rank and device count (0: unknown): the tile dims
 * match the rank plus subgroup dims, devices are a permutation, iota sizes agree.
 * Returns SHS_OK or SHS_EVERIFY with the reason in e. */
int shs_sharding_check(const shs_sharding *s, uint32_t rank, int64_t num_devices, shs_err *e);

/* Device id at flat (row-major) position i of the tile-assignment array. */
int64_t shs_sharding_device(const shs_sharding *s, int64_t i);

/* ---- The named-axis form ---------------------------------------------------------------- */

/* A logical device mesh: named axes with sizes; device d sits at the row-major position of its
 * coordinates over the axes in order (devices are iota over the mesh). */
typedef struct shs_mesh {
	uint32_t n_axes;
	const char *names[SHS_MESH_MAX_AXES];
	int64_t sizes[SHS_MESH_MAX_AXES];
} shs_mesh;

/* For each tensor dim, the mesh axes it is split over, major first (like a JAX PartitionSpec).
 * Axes not used by any dim replicate the value. dim_axes[d][k] are indices into the mesh. */
typedef struct shs_named_sharding {
	uint32_t rank;
	uint8_t n_dim_axes[SHS_NAMED_MAX_RANK];
	uint8_t dim_axes[SHS_NAMED_MAX_RANK][SHS_MESH_MAX_AXES];
} shs_named_sharding;

/* XLA's form of named on mesh, new in a: iota devices with the transpose that orders the mesh
 * axes as the dims use them, and last_tile_dim_replicate when some axes are unused; all axes
 * unused gives {replicated}. Returns SHS_OK, SHS_EINVAL (an axis used twice, bad index) or
 * SHS_ENOMEM. */
int shs_sharding_from_named(shs_arena *a, const shs_mesh *mesh, const shs_named_sharding *named,
			    shs_sharding **out, shs_err *e);

/* The same in a region manual over the mesh axes of manual (a mask; 0: as above): those axes
 * are a trailing subgroup typed manual, the other unused ones replication after it
 * (last_tile_dims={manual} or {manual, replicated}), as shard_map with auto axes writes it.
 * SHS_EINVAL also when a manual axis splits a dim. */
int shs_sharding_from_named_manual(shs_arena *a, const shs_mesh *mesh,
				   const shs_named_sharding *named, uint32_t manual,
				   shs_sharding **out, shs_err *e);

/* The coordinate of device dev along axis k of mesh (devices are row-major over the axes). */
int64_t shs_mesh_coord(const shs_mesh *mesh, int64_t dev, uint32_t k);

/* The named form of an XLA sharding on mesh, when there is one: SHS_OK, or SHS_EINVAL when the
 * device order cannot be expressed by axes of this mesh (e, why). */
int shs_sharding_to_named(const shs_mesh *mesh, const shs_sharding *s, uint32_t rank,
			  shs_named_sharding *out, shs_err *e);

/* The same for a sharding manual over some of the mesh's axes (shard_map with auto axes: its
 * trailing tile dims typed by last_tile_dims, {manual} or {manual, replicated}): *out the named
 * form of its auto axes (the manual and replicated subgroups read as replication), *manual the
 * mask of the mesh axes the manual subgroup runs over (0 for a sharding without one, read as
 * shs_sharding_to_named reads it). SHS_EINVAL (why in e) for an unreduced subgroup, a manual
 * subgroup over part of an axis, or what shs_sharding_to_named refuses. */
int shs_sharding_to_named_manual(const shs_mesh *mesh, const shs_sharding *s, uint32_t rank,
				 shs_named_sharding *out, uint32_t *manual, shs_err *e);

/* Appends the named form like a JAX PartitionSpec, one brace group of axis names per dim:
 * `[{fsdp,tensor}, {}, {expert}]`. */
void shs_named_sharding_print(shs_buf *b, const shs_mesh *mesh, const shs_named_sharding *n);

#endif
