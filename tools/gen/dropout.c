/* Dropout as JAX lowers it and XLA runs it: a keep mask from pseudo-random bits, the kept values
 * scaled by 1 / (1 - rate), and the mask as what the backward pass keeps.
 *
 * JAX's threefry PRNG lowers to elementwise integer arithmetic over an iota of element
 * positions, which XLA fuses into the mask's consumer (no HBM traffic of its own); the mask,
 * a pred (one byte an element: Korthikanti et al.'s "dropout mask"), is saved for the
 * backward pass. Here the bits are a multiply-xorshift hash of each element's position and a
 * per-site seed (the same masks in every layer: the cost does not depend on the bits). */
#include <math.h>

#include "model_internal.h"

static const double GOLDEN = 2654435761.0; /* 2^32 / phi: Knuth's multiplicative hash */
static const double MIX = 2246822507.0;    /* 0x85ebca6b: murmur3's finaliser multiplier */

static shs_v u32(shs_gb *g, double value, shs_gdims dims)
{
	return shs_gb_splat(g, SHS_U32, value, dims);
}

shs_v shs_gen_dropout_mask(shs_gen_ctx *x, shs_gdims dims, uint32_t site)
{
	shs_gb *g = &x->g;
	shs_v h = u32(g, (double)site, dims);

	shs_gb_push(g, "dropout");
	for (uint32_t d = 0; d < dims.n; d++) {
		h = shs_gb_mul(g, h, u32(g, GOLDEN, dims));
		h = shs_gb_binary(g, SHS_OP_XOR, h, shs_gb_iota(g, SHS_U32, dims, d));
	}
	h = shs_gb_binary(g, SHS_OP_XOR, h,
			  shs_gb_binary(g, SHS_OP_SHIFT_RIGHT_LOGICAL, h, u32(g, 16, dims)));
	h = shs_gb_mul(g, h, u32(g, MIX, dims));
	/* kept when the bits fall below (1 - rate) * 2^32 */
	h = shs_gb_compare(g, h, u32(g, floor((1 - x->cfg->dropout) * 4294967295.0), dims), "LT");
	shs_gb_pop(g);
	return h;
}

shs_v shs_gen_dropout_apply(shs_gen_ctx *x, shs_v v, shs_v mask)
{
	shs_gb *g = &x->g;
	shs_gdims d = shs_gb_dims(g, v);
	shs_v r;

	shs_gb_push(g, "dropout");
	r = shs_gb_select(g, mask, shs_gb_scale(g, v, 1 / (1 - x->cfg->dropout)),
			  shs_gb_splat(g, shs_gb_type(g, v), 0.0, d));
	shs_gb_pop(g);
	return r;
}
