/* Opcode names and classes. */
#include "opcode.h"

#include <string.h>

static const char *const names[SHS_OP_COUNT] = {
#define SHS_OPCODE_NAME(e, name) [SHS_OP_##e] = name,
	SHS_OPCODE_LIST(SHS_OPCODE_NAME)
#undef SHS_OPCODE_NAME
};

const char *shs_opcode_name(shs_opcode op)
{
	return (unsigned)op < SHS_OP_COUNT ? names[op] : "?";
}

int shs_opcode_from_name(const char *s, size_t len)
{
	/* names[] is sorted by enum order, which is near-alphabetical; a linear scan over
	 * ~130 short names is cheap next to parsing the rest of the instruction */
	for (int op = 0; op < SHS_OP_COUNT; op++)
		if (strlen(names[op]) == len && !memcmp(names[op], s, len))
			return op;
	return -1;
}

bool shs_opcode_runs_called(shs_opcode op)
{
	return op == SHS_OP_CALL || op == SHS_OP_WHILE || op == SHS_OP_CONDITIONAL;
}

bool shs_opcode_is_elementwise(shs_opcode op)
{
	switch (op) {
	case SHS_OP_ABS: case SHS_OP_ADD: case SHS_OP_AND: case SHS_OP_ATAN2:
	case SHS_OP_BITCAST_CONVERT: case SHS_OP_CBRT: case SHS_OP_CEIL:
	case SHS_OP_CLAMP: case SHS_OP_CLZ: case SHS_OP_COMPARE: case SHS_OP_COMPLEX:
	case SHS_OP_CONVERT: case SHS_OP_COPY: case SHS_OP_COS: case SHS_OP_DIVIDE:
	case SHS_OP_ERF: case SHS_OP_EXP: case SHS_OP_EXPM1: case SHS_OP_FLOOR:
	case SHS_OP_IMAG: case SHS_OP_IS_FINITE: case SHS_OP_LOG: case SHS_OP_LOG1P:
	case SHS_OP_LOGISTIC: case SHS_OP_MAXIMUM: case SHS_OP_MINIMUM:
	case SHS_OP_MULTIPLY: case SHS_OP_NEGATE: case SHS_OP_NOT: case SHS_OP_OR:
	case SHS_OP_POPCNT: case SHS_OP_POWER: case SHS_OP_REAL:
	case SHS_OP_REDUCE_PRECISION: case SHS_OP_REMAINDER:
	case SHS_OP_ROUND_NEAREST_AFZ: case SHS_OP_ROUND_NEAREST_EVEN:
	case SHS_OP_RSQRT: case SHS_OP_SELECT: case SHS_OP_SHIFT_LEFT:
	case SHS_OP_SHIFT_RIGHT_ARITHMETIC: case SHS_OP_SHIFT_RIGHT_LOGICAL:
	case SHS_OP_SIGN: case SHS_OP_SIN: case SHS_OP_SQRT:
	case SHS_OP_STOCHASTIC_CONVERT: case SHS_OP_SUBTRACT: case SHS_OP_TAN:
	case SHS_OP_TANH: case SHS_OP_XOR:
		return true;
	default:
		return false;
	}
}
