/* HloProto / HloModuleProto -> IR. */
#include "io.h"

int shs_proto_load(const uint8_t *buf, size_t len, const char *origin, shs_module **out, shs_err *e)
{
	(void)buf; (void)len; (void)out;
	return shs_seterr(e, SHS_EUNSUPPORTED, "%s: protobuf not implemented yet", origin);
}
