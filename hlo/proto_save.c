/* IR -> HloProto / HloModuleProto. */
#include "io.h"

int shs_proto_save(const shs_module *m, bool as_hlo_proto, uint8_t **out, size_t *out_len, shs_err *e)
{
	(void)m; (void)as_hlo_proto; (void)out; (void)out_len;
	return shs_seterr(e, SHS_EUNSUPPORTED, "protobuf output not implemented yet");
}
