/* Conversions between shs_sharding / shs_metadata and the protobuf-c OpSharding / OpMetadata. */
#ifndef SHS_SHARDING_PROTO_H
#define SHS_SHARDING_PROTO_H

#include "proto/xla_hlo.pb-c.h"
#include "sharding.h"

/* Converts p as HloSharding::FromProto does: iota kept canonical, "one device in field 4" and
 * "field 9 all ones" read as maximal, tuple elements (bytes of OpSharding, see
 * proto/xla_hlo.proto) unpacked and converted at most SHS_MAX_NESTING deep. *out and everything
 * it points to is new in a (the unpacked tuple elements too); p is only read. Returns SHS_OK,
 * SHS_EPARSE (a malformed OpSharding, reason in e) or SHS_ENOMEM. */
int shs_sharding_from_proto(shs_arena *a, const Xla__OpSharding *p, shs_sharding **out,
			    shs_err *e);

/* Fills *p (zero-initialised here with xla__op_sharding__init first) as HloSharding::ToProto
 * does; tuple elements are packed to their bytes. Arrays, strings and sub-messages are new in a
 * (free *p by freeing a, never with protobuf-c's free_unpacked). Returns SHS_OK, SHS_EINVAL (a
 * sharding nested deeper than SHS_MAX_NESTING or of an unknown kind) or SHS_ENOMEM. */
int shs_sharding_to_proto(shs_arena *a, const shs_sharding *s, Xla__OpSharding *p, shs_err *e);

/* Copies p into *out; strings new in a, empty strings become NULL. SHS_OK or SHS_ENOMEM. */
int shs_metadata_from_proto(shs_arena *a, const Xla__OpMetadata *p, shs_metadata *out,
			    shs_err *e);

/* Fills *p (initialised here); strings copied into a, NULL ones left as protobuf-c's empty
 * string. SHS_OK or SHS_ENOMEM. */
int shs_metadata_to_proto(shs_arena *a, const shs_metadata *m, Xla__OpMetadata *p, shs_err *e);

#endif
