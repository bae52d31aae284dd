/* XLA's NamedSharding (shs_mesh_sharding, sharding.h): text and protobuf. Private to hlo/. */
#ifndef SHS_SHARDING_MESH_H
#define SHS_SHARDING_MESH_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/xla_hlo.pb-c.h"
#include "sharding.h"

/* Whether s[pos..len) (after blanks) opens a named sharding's mesh: `mesh[`, `maximal_mesh[`
 * or the older `@mesh<`. s: borrowed, valid until this returns. */
bool shs__at_mesh_sharding(const char *s, size_t len, size_t pos);

/* Parses a named sharding's body at s[*pos..len) (just past its '{', up to and past its '}')
 * into sh (kind NAMED), allocating in a; *pos moves past it. On error *err_off is where and e
 * says what. Returns SHS_OK, SHS_EPARSE or SHS_ENOMEM. s: borrowed, valid until this returns. */
int shs__mesh_sharding_parse(shs_arena *a, const char *s, size_t len, size_t *pos,
			     shs_sharding *sh, size_t *err_off, shs_err *e);

/* Whether m's device order (explicit or iota, m->n_device_ids or m->n_iota set) holds as many
 * devices as the mesh. m: borrowed, valid until this returns. */
bool shs__mesh_order_fits(const shs_mesh_sharding *m);

/* Settles m as XLA's NamedSharding reads it (IsReplicated, IsUnreduced, IsManual): with no
 * dimension split and no replicated axes, nothing else, every axis whole unreduced or every axis
 * whole manual is the whole value replicated, unreduced or manual; a whole value or a maximal
 * sharding keeps no dimensions or axis lists. m: borrowed, valid until this returns. */
void shs__mesh_sharding_settle(shs_mesh_sharding *m);

/* Appends sh (kind NAMED) as XLA prints it, its names quoted when it was read so. */
void shs__mesh_sharding_print(shs_buf *b, const shs_sharding *sh);

/* Whether x and y are the same sharding (the quoting of names aside; device orders compared
 * device by device). */
bool shs__mesh_sharding_equal(const shs_mesh_sharding *x, const shs_mesh_sharding *y);

/* A deep copy of m in a; NULL when out of memory. */
shs_mesh_sharding *shs__mesh_sharding_clone(shs_arena *a, const shs_mesh_sharding *m);

/* sh (kind NAMED) into p's named_sharding (field 14), alone, as XLA writes it. What p gains:
 * caller frees with a. Returns SHS_OK or SHS_ENOMEM. */
int shs__mesh_sharding_to_proto(shs_arena *a, const shs_sharding *sh, Xla__OpSharding *p,
				shs_err *e);

/* p's named_sharding into sh (kind NAMED), allocating in a. Returns SHS_OK, SHS_EPARSE (an axis
 * index out of range, a bad mesh) or SHS_ENOMEM. */
int shs__mesh_sharding_from_proto(shs_arena *a, const Xla__OpSharding *p, shs_sharding *sh,
				  shs_err *e);

#endif
