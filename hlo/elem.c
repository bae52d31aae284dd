/* Element type table and half-precision conversions. */
#include "elem.h"

#include <math.h>
#include <string.h>

enum kind { K_I, K_U, K_F, K_C, K_P, K_O };
#define I K_I
#define U K_U
#define F K_F
#define C K_C
#define P K_P
#define O K_O

static const struct info {
	const char *name;
	int bits;
	enum kind kind;
} infos[SHS_ELEM_COUNT] = {
#define SHS_ELEM_INFO(e, nm, num, b, k) [num] = { nm, b, k },
	SHS_ELEM_LIST(SHS_ELEM_INFO)
#undef SHS_ELEM_INFO
};

#undef I
#undef U
#undef F
#undef C
#undef P
#undef O

bool shs_elem_valid(int type)
{
	return type > 0 && type < SHS_ELEM_COUNT && infos[type].name;
}

const char *shs_elem_name(int type)
{
	return shs_elem_valid(type) ? infos[type].name : NULL;
}

int shs_elem_from_name(const char *s, size_t len)
{
	for (int t = 1; t < SHS_ELEM_COUNT; t++)
		if (infos[t].name && strlen(infos[t].name) == len && !memcmp(infos[t].name, s, len))
			return t;
	return -1;
}

int shs_elem_bits(int type)
{
	return shs_elem_valid(type) ? infos[type].bits : 0;
}

int shs_elem_bytes(int type)
{
	int bits = shs_elem_bits(type);

	return bits ? (bits + 7) / 8 : 0;
}

static bool is_kind(int type, enum kind k)
{
	return shs_elem_valid(type) && infos[type].kind == k;
}

bool shs_elem_is_float(int type) { return is_kind(type, K_F); }
bool shs_elem_is_complex(int type) { return is_kind(type, K_C); }
bool shs_elem_is_signed_int(int type) { return is_kind(type, K_I); }
bool shs_elem_is_unsigned_int(int type) { return is_kind(type, K_U); }
bool shs_elem_is_array(int type) { return shs_elem_valid(type) && infos[type].kind != K_O; }

uint16_t shs_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if (isnan(f))
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

float shs_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

uint16_t shs_f64_to_f16(double d)
{
	uint16_t sign = signbit(d) ? 0x8000 : 0;
	double a = fabs(d);
	int e;
	double m;
	uint32_t q;

	if (isnan(d))
		return sign | 0x7e00;
	if (a >= 65520.0) /* rounds to infinity */
		return sign | 0x7c00;
	if (a < 0x1p-14) {
		/* subnormal: units of 2^-24, round to nearest even */
		q = (uint32_t)nearbyint(a * 0x1p24);
		return sign | (uint16_t)q;
	}
	m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
	q = (uint32_t)nearbyint(m * 2048.0); /* 11 significant bits */
	if (q == 2048) {
		q = 1024;
		e++;
	}
	return sign | (uint16_t)(((uint32_t)(e + 14) << 10) | (q & 0x3ff));
}

double shs_f16_to_f64(uint16_t h)
{
	int e = (h >> 10) & 0x1f;
	int m = h & 0x3ff;
	double v;

	if (e == 0x1f)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp(m, -24);
	else
		v = ldexp(m + 1024, e - 25);
	return (h & 0x8000) ? -v : v;
}
