/* Conversions between shs_sharding / shs_metadata and the protobuf-c OpSharding / OpMetadata. */
#ifndef SHS_SHARDING_PROTO_H
#define SHS_SHARDING_PROTO_H

#include "proto/xla_hlo.pb-c.h"
#include "sharding.h"

/* Converts p as HloSharding::FromProto does: iota kept canonical, "one device in field 4" and
 * "field 9 all ones" read as maximal, tuple elements (bytes of OpSharding, see
 * proto/xla_hlo.proto) unpacked and converted at most SHS_MAX_NESTING deep. *out and everything
 * it points to (the unpacked tuple elements too): caller frees with shs_arena_free(a) (or a's
 * owner, e.g. shs_module_free). p: borrowed, valid until this returns. Returns SHS_OK, SHS_EPARSE
 * (a
 * malformed OpSharding, reason in e) or SHS_ENOMEM. */
int shs_sharding_from_proto(shs_arena *a, const Xla__OpSharding *p, shs_sharding **out,
			    shs_err *e);

/* Fills *p (zero-initialised here with xla__op_sharding__init first) as HloSharding::ToProto
 * does; tuple elements are packed to their bytes. The arrays, strings and sub-messages of *p:
 * copied; caller frees with shs_arena_free(a), never with protobuf-c's free_unpacked. s: borrowed,
 * valid until this returns. Returns SHS_OK, SHS_EINVAL (a sharding nested deeper than
 * SHS_MAX_NESTING or of an unknown kind) or SHS_ENOMEM. */
int shs_sharding_to_proto(shs_arena *a, const shs_sharding *s, Xla__OpSharding *p, shs_err *e);

/* Copies p into *out; empty strings become NULL. The strings of *out: copied; caller frees with
 * shs_arena_free(a). p: borrowed, valid until this returns. SHS_OK or SHS_ENOMEM. */
int shs_metadata_from_proto(shs_arena *a, const Xla__OpMetadata *p, shs_metadata *out,
			    shs_err *e);

/* Fills *p (initialised here); NULL strings left as protobuf-c's empty string. The strings of
 * *p: copied; caller frees with shs_arena_free(a). m: borrowed, valid until this returns. SHS_OK or
 * SHS_ENOMEM. */
int shs_metadata_to_proto(shs_arena *a, const shs_metadata *m, Xla__OpMetadata *p, shs_err *e);

#endif
