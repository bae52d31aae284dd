/* Structural hashes with XXH3. */
#include "io.h"

int shs_module_hash(const shs_module *m, uint64_t *out, shs_err *e)
{
	(void)m; (void)out;
	return shs_seterr(e, SHS_EUNSUPPORTED, "hash not implemented yet");
}
