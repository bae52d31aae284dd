/* Private to the verifier's files: the state of one verification and the shape rules. */
#ifndef SHS_VERIFY_INTERNAL_H
#define SHS_VERIFY_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

#include "buf.h"
#include "ir.h"
#include "status.h"

/* State of one verification. params[c][k] is the parameter instruction k of computation c. */
typedef struct shs__verifier {
	const shs_module *m;
	shs_err *e;
	const shs_instr ***params;
	uint32_t *n_params;
	shs_buf txt[2];          /* scratch for shapes and dims quoted in messages */
} shs__verifier;

/* Sets v->e to SHS_EVERIFY with the message fmt names, led by where it is: "computation 'C',
 * instruction 'I': ", or only the computation when i is NULL, or only the module when c is
 * NULL too. Returns SHS_EVERIFY. v, c, i and fmt: borrowed, valid until this returns. */
int shs__verify_vfail(const shs__verifier *v, const shs_computation *c, const shs_instr *i,
		      const char *fmt, va_list ap) SHS_PRINTF(4, 0);

/* What one rule looks at: the verification, the computation and the instruction (NULL: a rule
 * about the whole computation). */
typedef struct shs__site {
	shs__verifier *v;
	const shs_computation *c;
	const shs_instr *i;
} shs__site;

/* Fails with fmt's message on the site's instruction (or computation): SHS_EVERIFY. */
static inline int shs__site_fail(const shs__site *s, const char *fmt, ...) SHS_PRINTF(2, 3);
static inline int shs__site_fail(const shs__site *s, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = shs__verify_vfail(s->v, s->c, s->i, fmt, ap);
	va_end(ap);
	return rc;
}

/* The shape rule of i's opcode in computation c (dot, broadcast, transpose, reshape, reduce,
 * tuple, get-tuple-element, while, call, fusion, conditional, element-wise; others have none).
 * Needs a module whose structure passed (operands and callees in range, v->params filled).
 * Returns SHS_OK, SHS_EVERIFY or SHS_ENOMEM with the reason in v->e. v, c and i: borrowed, valid
 * until this returns. */
int shs__verify_instr_shape(shs__verifier *v, const shs_computation *c, const shs_instr *i);

/* The attribute rules of i (verify_ops.c): concatenate's and iota's dimension, slice strides
 * and bounds, gather's dimension numbers in range, a Sharding custom call's one operand, and
 * its sharding's tiles (positive, multiplying to the device count), device ids (each once,
 * within it) and tuple elements (one per leaf). Same needs and returns as
 * shs__verify_instr_shape. */
int shs__verify_instr_attrs(shs__verifier *v, const shs_computation *c, const shs_instr *i);

/* The entry's parameters and root agree with the module's entry_computation_layout, layouts
 * aside (SHS_OK when there is none). Returns SHS_OK or SHS_EVERIFY with the reason in v->e.
 * v: borrowed, valid until this returns. */
int shs__verify_entry_layout(shs__verifier *v);

#endif
