/* HLO text parser. */
#include "io.h"

int shs_text_load(const char *text, size_t len, const char *origin, shs_module **out, shs_err *e)
{
	(void)text; (void)len; (void)out;
	return shs_seterr(e, SHS_EUNSUPPORTED, "%s: HLO text not implemented yet", origin);
}
