/* Flash attention as a custom call (attention.c), for the custom-call strategy. */
#ifndef SHS_STRATEGY_ATTENTION_H
#define SHS_STRATEGY_ATTENTION_H

#include <stdbool.h>

#include "common.h"

/* The custom-call targets of flash attention: cuDNN's, Pallas' (splash attention in a
 * tpu_custom_call) and Transformer Engine's. */
#define SHS_ATTENTION_TARGETS                                                                  \
	"__cudnn$fmhaSoftmax", "__cudnn$fmhaSoftmaxBackward", "tpu_custom_call",               \
		"te_fused_attn_forward", "te_fused_attn_backward", "te_fused_attn_forward_ffi", \
		"te_fused_attn_backward_ffi"

/* When q's instruction is a flash-attention call, emits its candidates into out, sets *rc to
 * 0 (or -1 when they cannot be enumerated) and returns true; false for any other call. q, out
 * and api: borrowed, valid until this returns. */
bool shs_attention_serve(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, int *rc);

#endif
