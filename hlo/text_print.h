/* Private to the HLO text printer's files: the printing context and the pieces they share. */
#ifndef SHS_TEXT_PRINT_H
#define SHS_TEXT_PRINT_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "ir.h"

enum {
	SHS__INDEX_COMMENT_EVERY = 5 /* XLA's index comment before every fifth list element */
};

/* What one printing pass needs: the output, the module, the computation being printed and the
 * style. All borrowed for the pass. */
typedef struct shs__printer {
	shs_buf *b;
	const shs_module *m;
	const shs_computation *c;
	shs_text_style st;
	const char *const *operands; /* names for the operands of the instruction printed (NULL,
				      * or an entry NULL: their own) */
} shs__printer;

/* Before element i of a list: nothing for the first, else `, `; then, when indexed, XLA's
 * index comment (index=5, 10, ...) on every fifth element. b: borrowed, valid until this returns.
 * */
void shs__put_list_sep(shs_buf *b, uint32_t i, bool indexed);

/* v[0..n) in decimal, separated by commas, without brackets: `1,0,2`. b and v: borrowed, valid
 * until this returns. */
void shs__put_i64_csv(shs_buf *b, const int64_t *v, uint32_t n);

/* The list l in braces: `{1,0,2}`, `{}`. b and l: borrowed, valid until this returns. */
void shs__put_i64_braced(shs_buf *b, const shs_i64s *l);

/* An instruction or computation name, with `%` in the percent style; NULL prints as empty.
 * p and name: borrowed, valid until this returns. */
void shs__put_name(const shs__printer *p, const char *name);

/* Instruction idx of the computation being printed, or NULL when out of range. The result:
 * borrowed, valid until p->m is freed. */
const shs_instr *shs__instr_at(const shs__printer *p, uint32_t idx);

/* A constant's literal of shape s as XLA's Literal::ToString prints it between the parentheses
 * of `constant(...)`; `{...}` when elided or when the data does not cover the shape. b, l and s:
 * borrowed, valid until this returns. */
void shs__put_literal(shs_buf *b, const shs_literal *l, const shs_shape *s);

/* Everything XLA prints after an instruction's operand list, each attribute as `, name=value`,
 * in XLA's order: the opcode's attributes, called computations, sharding, frontend attributes,
 * control predecessors, metadata, backend config. p and in: borrowed, valid until this returns. */
void shs__put_instr_attrs(const shs__printer *p, const shs_instr *in);

/* Attributes kept verbatim, each as `, name=value`. b and r: borrowed, valid until this returns. */
void shs__put_raw_attrs(shs_buf *b, const shs_raw_attr *r, uint32_t n);

/* FrontendAttributesToString: `{key="value",key={json},...}` sorted by key. Sets b->oom when
 * out of memory. b and kv: borrowed, valid until this returns. */
void shs__put_frontend_attrs(shs_buf *b, const shs_attr_kv *kv, uint32_t n);

#endif
