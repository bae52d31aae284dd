/* Private to the HLO text parser: constant literals. */
#ifndef SHS_TEXT_LITERAL_H
#define SHS_TEXT_LITERAL_H

#include "arena.h"
#include "ir.h"
#include "text_lexer.h"

/* Parses the literal of a constant of the given shape, starting at lx's current token (just
 * after `constant(`) and stopping at the token after it. *out: caller frees with
 * shs_arena_free(a) (the module's arena: shs_module_free); lx and shape: borrowed, valid until
 * this returns. Values follow ir.h:
 * row-major logical order, shs_elem_bytes() little-endian per element, floats converted as XLA
 * does (double, then the type, bf16/f16 through f32). Returns SHS_OK, SHS_EPARSE (wrong element
 * count, value out of range, ...), SHS_EUNSUPPORTED (f8/f4 types) or SHS_ENOMEM, with the
 * message in lx->e. */
int shs__text_literal_parse(shs_lexer *lx, shs_arena *a, const shs_shape *shape,
			    shs_literal **out);

#endif
