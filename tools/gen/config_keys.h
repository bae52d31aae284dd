/* Private: the table of config keys that --set and JSON configs share (tools/gen only). */
#ifndef SHS_GEN_CONFIG_KEYS_H
#define SHS_GEN_CONFIG_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "gen.h"

/* How a key's value is written and stored. */
typedef enum shs__gen_key_type {
	SHS__KEY_INT = 0,  /* int64_t, decimal */
	SHS__KEY_REAL = 1, /* double, finite and >= 0 */
	SHS__KEY_BOOL = 2, /* bool: true, false, 1 or 0 */
	SHS__KEY_DTYPE = 3, /* shs_gen_dtype: bf16 or f32-master */
	SHS__KEY_NAME = 4,  /* char[SHS_GEN_NAME_MAX] of [A-Za-z0-9._-] */
	SHS__KEY_CHOICE = 5 /* an enum stored as int: the index of its word in choices */
} shs__gen_key_type;

/* One key: its name, type, where it lives in shs_gen_config, (ints) its smallest value and
 * (choices) its words, NULL-terminated, the enum's value k spelled choices[k]. */
typedef struct shs__gen_key {
	const char *name;
	shs__gen_key_type type;
	size_t offset;
	int64_t min;
	const char *const *choices;
} shs__gen_key;

/* "a string (w0, w1 or w2)" style list of k's choices into buf (cap bytes, truncated). */
void shs__gen_key_choices(const shs__gen_key *k, char *buf, size_t cap);

/* All keys, in the order --help lists them; *n receives their count. Static storage. */
const shs__gen_key *shs__gen_keys(size_t *n);

/* The key named name, or NULL; static storage. */
const shs__gen_key *shs__gen_key_find(const char *name);

/* Sets e to SHS_EINVAL "unknown key 'name' (keys: ...)"; returns SHS_EINVAL. */
int shs__gen_key_unknown(const char *name, shs_err *e);

/* Parses text as the value of key k and stores it in *c. On error *c is unchanged and e's
 * message describes the value without naming the key ("'abc' is not an integer"); returns
 * SHS_OK or SHS_EINVAL. */
int shs__gen_key_apply(const shs__gen_key *k, const char *text, shs_gen_config *c, shs_err *e);

/* Checks that text can be a module name: 1 to SHS_GEN_NAME_MAX - 1 characters of
 * [A-Za-z0-9._-]. Returns SHS_OK or SHS_EINVAL (message without the key name). */
int shs__gen_name_check(const char *text, shs_err *e);

#endif
