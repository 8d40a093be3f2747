/*
 * attn.c - attention: dispatch to the SIMD level and the portable version.
 */
#include "attn.h"

#include "attn_heads.h"
#include "kernels.h"

void strata_attn_heads_scalar(STRATA_ATTN_HEADS_ARGS)
{
	attn_heads_portable(q, qstride, G, kt, hd, v, vstride, hdv, len, scale, o,
			    ostride, sc);
}

void strata_attn_heads(STRATA_ATTN_HEADS_ARGS)
{
#if defined(__x86_64__) && !defined(STRATA_NO_SIMD)
	switch (strata_simd_get()) {
	case STRATA_SIMD_AVX512:
		strata_attn_heads_avx512(q, qstride, G, kt, hd, v, vstride, hdv, len,
					 scale, o, ostride, sc);
		return;
	case STRATA_SIMD_AVX2:
		strata_attn_heads_avx2(q, qstride, G, kt, hd, v, vstride, hdv, len,
				       scale, o, ostride, sc);
		return;
	default:
		break;
	}
#endif
	strata_attn_heads_scalar(q, qstride, G, kt, hd, v, vstride, hdv, len, scale, o,
				 ostride, sc);
}
