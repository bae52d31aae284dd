/* Config keys: one table of names, types and offsets, and shs_gen_config_set over it. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_keys.h"

static const char NAME_CHARS[] = "[A-Za-z0-9._-]";

enum { DECIMAL = 10, KEY_LIST_MAX = 512, PRINTABLE_FIRST = 0x20, PRINTABLE_LAST = 0x7e };

#define INT_KEY(field, lowest) { #field, SHS__KEY_INT, offsetof(shs_gen_config, field), lowest, NULL }
#define REAL_KEY(field) { #field, SHS__KEY_REAL, offsetof(shs_gen_config, field), 0, NULL }
#define BOOL_KEY(field) { #field, SHS__KEY_BOOL, offsetof(shs_gen_config, field), 0, NULL }
#define CHOICE_KEY(field, words) { #field, SHS__KEY_CHOICE, offsetof(shs_gen_config, field), 0, words }

/* The words of the enum keys, in the order of their enum's values. */
static const char *const ATTENTION_WORDS[] = { "flash", "dot", NULL };
static const char *const KERNEL_WORDS[] = { "pallas", "cudnn", NULL };

_Static_assert(sizeof(shs_gen_attention) == sizeof(int) &&
		       sizeof(shs_gen_attn_kernel) == sizeof(int),
	       "choice keys are stored as int");

/* Sizes that every model has start at 1; those a kind may lack (mlp-only has no vocab or
 * heads, dense models no experts) start at 0. shs_gen_config_check does the rest. */
static const shs__gen_key KEYS[] = {
	INT_KEY(vocab, 0),
	INT_KEY(d_model, 1),
	INT_KEY(d_ff, 1),
	INT_KEY(layers, 1),
	INT_KEY(heads, 0),
	INT_KEY(kv_heads, 0),
	INT_KEY(head_dim, 0),
	INT_KEY(seq, 1),
	INT_KEY(batch, 1),
	INT_KEY(microbatches, 1),
	INT_KEY(experts, 0),
	INT_KEY(top_k, 0),
	INT_KEY(shared_experts, 0),
	REAL_KEY(capacity_factor),
	REAL_KEY(norm_eps),
	REAL_KEY(learning_rate),
	REAL_KEY(adam_b1),
	REAL_KEY(adam_b2),
	REAL_KEY(adam_eps),
	REAL_KEY(weight_decay),
	REAL_KEY(grad_clip),
	REAL_KEY(dropout),
	BOOL_KEY(scan),
	BOOL_KEY(gated_mlp),
	BOOL_KEY(tied_embedding),
	{ "dtype", SHS__KEY_DTYPE, offsetof(shs_gen_config, dtype), 0, NULL },
	CHOICE_KEY(attention, ATTENTION_WORDS),
	CHOICE_KEY(attention_kernel, KERNEL_WORDS),
	{ "name", SHS__KEY_NAME, offsetof(shs_gen_config, name), 0, NULL },
};

enum { N_KEYS = sizeof(KEYS) / sizeof(KEYS[0]) };

const shs__gen_key *shs__gen_keys(size_t *n)
{
	*n = N_KEYS;
	return KEYS;
}

const shs__gen_key *shs__gen_key_find(const char *name)
{
	for (size_t i = 0; name && i < N_KEYS; i++)
		if (!strcmp(KEYS[i].name, name))
			return &KEYS[i];
	return NULL;
}

int shs__gen_key_unknown(const char *name, shs_err *e)
{
	char list[KEY_LIST_MAX];
	size_t n = 0;

	list[0] = '\0';
	for (size_t i = 0; i < N_KEYS && n < sizeof(list); i++) {
		int k = snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", KEYS[i].name);

		if (k < 0)
			break;
		n += (size_t)k;
	}
	return shs_seterr(e, SHS_EINVAL, "unknown key '%s' (keys: %s)", name ? name : "(null)",
			  list);
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* A decimal integer, optionally negative (so that the range message can show it). */
static int parse_int(const char *text, int64_t min, int64_t *out, shs_err *e)
{
	const char *digits = text[0] == '-' ? text + 1 : text;
	char *end;
	long long v;

	if (!is_digit(digits[0]))
		return shs_seterr(e, SHS_EINVAL, "'%s' is not an integer", text);
	errno = 0;
	v = strtoll(text, &end, DECIMAL);
	if (*end)
		return shs_seterr(e, SHS_EINVAL, "'%s' is not an integer", text);
	if (errno == ERANGE)
		return shs_seterr(e, SHS_EINVAL, "'%s' is out of range", text);
	if (v < min)
		return shs_seterr(e, SHS_EINVAL, "must be >= %" PRId64 " (got %lld)", min, v);
	*out = (int64_t)v;
	return SHS_OK;
}

/* A finite, non-negative decimal number: digits, '.', exponent; no hex, inf or nan. */
static int parse_real(const char *text, double *out, shs_err *e)
{
	char *end;
	double v;

	if (!text[0] || strspn(text, "0123456789.eE+-") != strlen(text) ||
	    !(is_digit(text[0]) || text[0] == '.' || text[0] == '-'))
		return shs_seterr(e, SHS_EINVAL, "'%s' is not a number", text);
	errno = 0;
	v = strtod(text, &end);
	if (*end)
		return shs_seterr(e, SHS_EINVAL, "'%s' is not a number", text);
	if (errno == ERANGE || !isfinite(v))
		return shs_seterr(e, SHS_EINVAL, "'%s' is out of range", text);
	if (v < 0)
		return shs_seterr(e, SHS_EINVAL, "must be >= 0 (got %s)", text);
	*out = v;
	return SHS_OK;
}

static int parse_bool(const char *text, bool *out, shs_err *e)
{
	if (!strcmp(text, "true") || !strcmp(text, "1"))
		*out = true;
	else if (!strcmp(text, "false") || !strcmp(text, "0"))
		*out = false;
	else
		return shs_seterr(e, SHS_EINVAL, "'%s' is not a boolean (true, false, 1 or 0)",
				  text);
	return SHS_OK;
}

static int parse_dtype(const char *text, shs_gen_dtype *out, shs_err *e)
{
	if (!strcmp(text, "bf16"))
		*out = SHS_GEN_BF16;
	else if (!strcmp(text, "f32-master"))
		*out = SHS_GEN_F32_MASTER;
	else
		return shs_seterr(e, SHS_EINVAL, "'%s' is not a dtype (bf16 or f32-master)", text);
	return SHS_OK;
}

void shs__gen_key_choices(const shs__gen_key *k, char *buf, size_t cap)
{
	size_t n = 0;

	if (!cap)
		return;
	buf[0] = '\0';
	for (size_t i = 0; k->choices && k->choices[i] && n < cap; i++) {
		const char *sep = !i ? "" : k->choices[i + 1] ? ", " : " or ";
		int w = snprintf(buf + n, cap - n, "%s%s", sep, k->choices[i]);

		if (w < 0)
			break;
		n += (size_t)w;
	}
}

static int parse_choice(const shs__gen_key *k, const char *text, int *out, shs_err *e)
{
	char words[KEY_LIST_MAX];

	for (int i = 0; k->choices && k->choices[i]; i++) {
		if (!strcmp(text, k->choices[i])) {
			*out = i;
			return SHS_OK;
		}
	}
	shs__gen_key_choices(k, words, sizeof(words));
	return shs_seterr(e, SHS_EINVAL, "'%s' is not one of %s", text, words);
}

static bool is_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || is_digit(ch) || ch == '.' ||
	       ch == '_' || ch == '-';
}

/* The module's name: it goes into HLO text as is, so only [A-Za-z0-9._-]. */
int shs__gen_name_check(const char *text, shs_err *e)
{
	size_t n = strlen(text);

	if (!n)
		return shs_seterr(e, SHS_EINVAL, "must not be empty");
	if (n >= SHS_GEN_NAME_MAX)
		return shs_seterr(e, SHS_EINVAL, "'%s' is longer than %d characters", text,
				  SHS_GEN_NAME_MAX - 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)text[i];

		if (is_name_char(text[i]))
			continue;
		if (ch >= PRINTABLE_FIRST && ch <= PRINTABLE_LAST)
			return shs_seterr(e, SHS_EINVAL, "'%s' has character '%c' outside %s", text,
					  ch, NAME_CHARS);
		return shs_seterr(e, SHS_EINVAL, "'%s' has byte 0x%02x outside %s", text, ch,
				  NAME_CHARS);
	}
	return SHS_OK;
}

int shs__gen_key_apply(const shs__gen_key *k, const char *text, shs_gen_config *c, shs_err *e)
{
	unsigned char *field = (unsigned char *)c + k->offset;
	int rc = SHS_EINVAL;

	switch (k->type) {
	case SHS__KEY_INT: {
		int64_t v = 0;

		rc = parse_int(text, k->min, &v, e);
		if (rc == SHS_OK)
			memcpy(field, &v, sizeof(v));
		break;
	}
	case SHS__KEY_REAL: {
		double v = 0;

		rc = parse_real(text, &v, e);
		if (rc == SHS_OK)
			memcpy(field, &v, sizeof(v));
		break;
	}
	case SHS__KEY_BOOL: {
		bool v = false;

		rc = parse_bool(text, &v, e);
		if (rc == SHS_OK)
			memcpy(field, &v, sizeof(v));
		break;
	}
	case SHS__KEY_DTYPE: {
		shs_gen_dtype v = SHS_GEN_BF16;

		rc = parse_dtype(text, &v, e);
		if (rc == SHS_OK)
			memcpy(field, &v, sizeof(v));
		break;
	}
	case SHS__KEY_CHOICE: {
		int v = 0;

		rc = parse_choice(k, text, &v, e);
		if (rc == SHS_OK)
			memcpy(field, &v, sizeof(v));
		break;
	}
	case SHS__KEY_NAME:
		rc = shs__gen_name_check(text, e);
		if (rc == SHS_OK)
			memcpy(field, text, strlen(text) + 1);
		break;
	}
	return rc;
}

int shs_gen_config_set(shs_gen_config *c, const char *key, const char *value, shs_err *e)
{
	const shs__gen_key *k = shs__gen_key_find(key);
	int rc;

	if (!k)
		return shs__gen_key_unknown(key, e);
	if (!value)
		return shs_seterr(e, SHS_EINVAL, "%s: no value", key);
	rc = shs__gen_key_apply(k, value, c, e);
	if (rc != SHS_OK)
		shs_err_prefix(e, "%s", key);
	return rc;
}
