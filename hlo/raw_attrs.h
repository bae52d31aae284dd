/* Text attributes the IR keeps verbatim that XLA's protobuf has fields for: their values parsed,
 * printed as XLA prints them, and put in XLA's order. Private to hlo/. */
#ifndef SHS_RAW_ATTRS_H
#define SHS_RAW_ATTRS_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "buf.h"
#include "ir.h"
#include "status.h"

/* The raw attributes with a protobuf field (see shs__raw_kind_of). */
typedef enum shs__raw_kind {
	SHS__RAW_OTHER = -1,         /* no field: kept as text only */
	SHS__RAW_REPLICA_GROUPS,     /* collective_device_list (87; 49 read too) */
	SHS__RAW_CONSTRAIN_LAYOUT,   /* constrain_layout (56), collectives */
	SHS__RAW_USE_GLOBAL_IDS,     /* use_global_device_ids (71) */
	SHS__RAW_SOURCE_TARGET,      /* source_target_pairs (52) */
	SHS__RAW_API_VERSION,        /* custom_call_api_version (77) */
	SHS__RAW_IS_COMPOSITE,       /* is_composite (89) */
	SHS__RAW_STATISTICS,         /* statistics_viz (82) */
	SHS__RAW_RESULT_ACCURACY,    /* result_accuracy (91) */
	SHS__RAW_ORIGIN,             /* original_value (88) */
	SHS__RAW_KINDS
} shs__raw_kind;

/* Groups of device ids: replica_groups in the list form {{0,1},{2,3}} or XLA's iota form
 * [G,S]<=[d0,d1,...]T(p0,p1,...) (iota over the product of d, reshaped to d, transposed by p,
 * read as G groups of S), or the {source,target} pairs of a collective-permute. */
typedef struct shs__groups {
	bool iota;
	uint32_t n;           /* list form: groups (pairs) */
	shs_i64s *groups;
	int64_t n_groups;     /* iota form */
	int64_t group_size;
	shs_i64s reshape;
	shs_i64s perm;        /* empty: no transpose */
} shs__groups;

/* The kind of the attribute named name. name: borrowed, valid until this returns. */
shs__raw_kind shs__raw_kind_of(const char *name);

/* The name of kind k (static). */
const char *shs__raw_name(shs__raw_kind k);

/* Whether XLA prints replica_groups on every instruction of opcode op (its collectives:
 * all-gather, all-reduce, their -start forms, reduce-scatter, all-to-all, ragged-all-to-all,
 * collective-broadcast). */
bool shs__op_has_replica_groups(shs_opcode op);

/* Whether XLA prints source_target_pairs on every instruction of opcode op (collective-permute
 * and its -start form). */
bool shs__op_has_pairs(shs_opcode op);

/* Parses value as the groups of a replica_groups (iota allowed) or source_target_pairs (pairs
 * of two, iota refused) attribute into *out, allocated in a. Returns SHS_OK, or SHS_EPARSE with
 * the reason in why (cap bytes), or SHS_ENOMEM. value: borrowed, valid until this returns;
 * *out: caller frees with a. */
int shs__groups_parse(shs_arena *a, const char *value, bool pairs, shs__groups *out, char *why,
		      size_t cap);

/* Appends g as XLA prints it. */
void shs__groups_print(shs_buf *b, const shs__groups *g);

/* The CustomCallApiVersion number of an api_version name, or -1. name: borrowed. */
int shs__api_version_of(const char *name);

/* The name of CustomCallApiVersion v, or NULL. */
const char *shs__api_version_name(int v);

/* Checks the value of the raw attribute (name, value) of kind k and sets *canonical to the
 * text XLA prints for it (value itself when already so, else a copy in a). Returns SHS_OK, or
 * SHS_EPARSE with the reason in why, or SHS_ENOMEM. name and value: borrowed, valid until this
 * returns. */
int shs__raw_canonical(shs_arena *a, shs__raw_kind k, const char *value, const char **canonical,
		       char *why, size_t cap);

/* shs__raw_canonical for the attribute named name (a shs__canonical_fn of the text parser). */
int shs__instr_canonical(shs_arena *a, const char *name, const char *value,
			 const char **canonical, char *why, size_t cap);

/* Sets *canonical to the text printed in b when it differs from value (a copy in a; value
 * itself otherwise) and frees b. Returns SHS_OK or SHS_ENOMEM (b ran out of memory). */
int shs__raw_keep_text(shs_arena *a, shs_buf *b, const char *value, const char **canonical);

/* shs__raw_canonical for statistics, result_accuracy and origin (raw_extra.c); *canonical is ""
 * for a value XLA does not print (no statistics, the default accuracy). */
int shs__extra_canonical(shs_arena *a, shs__raw_kind k, const char *value,
			 const char **canonical, char *why, size_t cap);

/* After an instruction's attributes are read: gives a collective without replica_groups the
 * empty list XLA prints ({}), a collective-permute without source_target_pairs likewise, drops
 * what XLA never prints (a false flag, api_version=API_VERSION_ORIGINAL, empty statistics, the
 * default accuracy), and orders the raw attributes as XLA prints them (those of no
 * kind last, in their order). Returns SHS_OK or SHS_ENOMEM. in: borrowed, valid until this
 * returns; the attributes it adds: caller frees with a. */
int shs__raw_finish(shs_arena *a, shs_instr *in);

/* ---- Header attributes ----------------------------------------------------------------------- */

/* One buffer donor: parameter param's buffer at index. */
typedef struct shs__donor {
	int64_t param;
	shs_i64s index;
} shs__donor;

/* Parses buffer_donor's value `{ (0, {}), (2, {1}) }` into *out[0..*n), allocated in a. Returns
 * SHS_OK, SHS_EPARSE with the reason in why, or SHS_ENOMEM. value: borrowed, valid until this
 * returns; *out: caller frees with a. */
int shs__donors_parse(shs_arena *a, const char *value, shs__donor **out, uint32_t *n, char *why,
		      size_t cap);

/* Appends donors as XLA prints them (HloBufferDonorConfig::ToShortString, in braces). */
void shs__donors_print(shs_buf *b, const shs__donor *d, uint32_t n);

/* Checks a header attribute's value (is_scheduled: a bool; buffer_donor: donors) and sets
 * *canonical to the text XLA prints for it, as shs__raw_canonical. Others are kept as they are. */
int shs__header_canonical(shs_arena *a, const char *name, const char *value,
			  const char **canonical, char *why, size_t cap);

#endif
