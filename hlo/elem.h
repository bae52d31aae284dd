/* Element types: XLA's PrimitiveType numbers, their text names, sizes and float conversions. */
#ifndef SHS_ELEM_H
#define SHS_ELEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(enum suffix, text name, XLA number, bits, kind) ; kind: I signed int, U unsigned int,
 * F float, C complex, P pred, O other (tuple, token, opaque). */
#define SHS_ELEM_LIST(X)                      \
	X(INVALID, "invalid", 0, 0, O)            \
	X(PRED, "pred", 1, 8, P)                  \
	X(S8, "s8", 2, 8, I)                      \
	X(S16, "s16", 3, 16, I)                   \
	X(S32, "s32", 4, 32, I)                   \
	X(S64, "s64", 5, 64, I)                   \
	X(U8, "u8", 6, 8, U)                      \
	X(U16, "u16", 7, 16, U)                   \
	X(U32, "u32", 8, 32, U)                   \
	X(U64, "u64", 9, 64, U)                   \
	X(F16, "f16", 10, 16, F)                  \
	X(F32, "f32", 11, 32, F)                  \
	X(F64, "f64", 12, 64, F)                  \
	X(TUPLE, "tuple", 13, 0, O)               \
	X(OPAQUE, "opaque", 14, 0, O)             \
	X(C64, "c64", 15, 64, C)                  \
	X(BF16, "bf16", 16, 16, F)                \
	X(TOKEN, "token", 17, 0, O)               \
	X(C128, "c128", 18, 128, C)               \
	X(F8E5M2, "f8e5m2", 19, 8, F)             \
	X(F8E4M3FN, "f8e4m3fn", 20, 8, F)         \
	X(S4, "s4", 21, 4, I)                     \
	X(U4, "u4", 22, 4, U)                     \
	X(F8E4M3B11FNUZ, "f8e4m3b11fnuz", 23, 8, F) \
	X(F8E5M2FNUZ, "f8e5m2fnuz", 24, 8, F)     \
	X(F8E4M3FNUZ, "f8e4m3fnuz", 25, 8, F)     \
	X(S2, "s2", 26, 2, I)                     \
	X(U2, "u2", 27, 2, U)                     \
	X(F8E4M3, "f8e4m3", 28, 8, F)             \
	X(F8E3M4, "f8e3m4", 29, 8, F)             \
	X(S1, "s1", 30, 1, I)                     \
	X(U1, "u1", 31, 1, U)                     \
	X(F4E2M1FN, "f4e2m1fn", 32, 4, F)         \
	X(F8E8M0FNU, "f8e8m0fnu", 33, 8, F)       \
	X(BUFFER, "buffer", 34, 0, O)

typedef enum shs_elem {
#define SHS_ELEM_ENUM(e, name, num, bits, kind) SHS_##e = num,
	SHS_ELEM_LIST(SHS_ELEM_ENUM)
#undef SHS_ELEM_ENUM
	SHS_ELEM_COUNT
} shs_elem;

/* The text name ("bf16"), or NULL for a number XLA does not define. */
const char *shs_elem_name(int type);

/* The type named by s[0..len) (case-sensitive, as XLA prints it), or -1. */
int shs_elem_from_name(const char *s, size_t len);

/* True for a number this library knows. */
bool shs_elem_valid(int type);

/* Storage bits of one element: 1..128 for array types, 0 for tuple, token and opaque. */
int shs_elem_bits(int type);

/* Bytes one element takes when the layout does not pack it: sub-byte types take one byte each,
 * as XLA stores them unpacked unless element_size_in_bits says otherwise. 0 for non-arrays. */
int shs_elem_bytes(int type);

bool shs_elem_is_float(int type);    /* f16, bf16, f32, f64 and the f8/f4 types */
bool shs_elem_is_complex(int type);
bool shs_elem_is_signed_int(int type);
bool shs_elem_is_unsigned_int(int type);
bool shs_elem_is_array(int type);    /* everything with data: not tuple, token, opaque */

/* IEEE binary16 and bfloat16 conversions, rounding to nearest even, NaN kept as NaN. */
uint16_t shs_f32_to_bf16(float f);
float shs_bf16_to_f32(uint16_t h);
uint16_t shs_f64_to_f16(double d);
double shs_f16_to_f64(uint16_t h);

#endif
