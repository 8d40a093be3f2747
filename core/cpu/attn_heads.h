/*
 * attn_heads.h - private: the portable body of strata_attn_heads(), included
 * by attn.c (the scalar reference).
 */
#ifndef STRATA_ATTN_HEADS_H
#define STRATA_ATTN_HEADS_H

#include <math.h>
#include <string.h>

#include "attn.h"

static inline void attn_heads_portable(const float *q, size_t qstride, int G, const float *kt,
				       int hd, const float *v, size_t vstride, int hdv,
				       uint32_t len, float scale, float *o, size_t ostride,
				       float *sc)
{
	for (int g = 0; g < G; g++) {
		const float *qg = q + (size_t)g * qstride;
		float *og = o + (size_t)g * ostride;
		float mx = -INFINITY, sum = 0.0f, inv;

		for (uint32_t j = 0; j < len; j++)
			sc[j] = 0.0f;
		for (uint32_t j0 = 0; j0 < len; j0 += STRATA_KT_TILE) {
			const uint32_t w = len - j0 < STRATA_KT_TILE ? len - j0 : STRATA_KT_TILE;

			for (int d = 0; d < hd; d++) {
				const float *kr = kt + strata_kt_at(hd, d, j0);
				const float qd = qg[d];

				for (uint32_t i = 0; i < w; i++)
					sc[j0 + i] += qd * kr[i];
			}
		}
		for (uint32_t j = 0; j < len; j++) {
			sc[j] *= scale;
			mx = sc[j] > mx ? sc[j] : mx;
		}
		for (uint32_t j = 0; j < len; j++) {
			sc[j] = expf(sc[j] - mx);
			sum += sc[j];
		}
		inv = 1.0f / sum;
		for (int d = 0; d < hdv; d++)
			og[d] = 0.0f;
		for (uint32_t j = 0; j < len; j++) {
			const float *vj = v + (size_t)j * vstride;
			const float p = sc[j];

			for (int d = 0; d < hdv; d++)
				og[d] += p * vj[d];
		}
		for (int d = 0; d < hdv; d++)
			og[d] *= inv;
	}
}

#endif
