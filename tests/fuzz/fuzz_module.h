/* Checks shared by the module targets (fuzz_text, fuzz_proto): what a loaded module must
 * survive. */
#ifndef SHS_FUZZ_MODULE_H
#define SHS_FUZZ_MODULE_H

#include <stdbool.h>

#include "io.h"

/* m (loaded, borrowed) prints and saves without a fault, verified or not. When it verifies: it
 * hashes; its text loads back as a module that verifies, prints the same and, when m was read
 * from text (from_text), is equal to m (protobuf ids are not in the text); saved as protobuf
 * (when it can be) it loads back equal and saves to the same bytes. Aborts on a broken round
 * trip. */
void fuzz_check_module(const shs_module *m, bool from_text);

#endif
