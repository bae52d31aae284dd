/* Mixture-of-experts feed-forward: router, top-k dispatch and combine einsums, expert MLPs. */
#include "model_internal.h"

uint32_t shs_gen_moe_saved(const shs_gen_config *c)
{
	(void)c;
	return 0;
}

shs_v shs_gen_moe_fwd(shs_gen_ctx *x, shs_v y, const shs_v *w, shs_v *saved)
{
	(void)y; (void)w; (void)saved;
	shs_gb_fail(&x->g, SHS_EUNSUPPORTED, "MoE layers are not built yet");
	return 0;
}

shs_v shs_gen_moe_bwd(shs_gen_ctx *x, shs_v y, const shs_v *w, const shs_v *saved, shs_v dout,
		      shs_v *dw)
{
	(void)y; (void)w; (void)saved; (void)dout; (void)dw;
	shs_gb_fail(&x->g, SHS_EUNSUPPORTED, "MoE layers are not built yet");
	return 0;
}
