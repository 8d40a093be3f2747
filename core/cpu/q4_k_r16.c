/*
 * q4_k_r16.c - Q4_K weights repacked at load (q4_k_r16.h): the repack
 * itself, row reads, and the scalar level's product over the repacked
 * bytes, in the float order every level uses on this layout.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "q4_k_r16.h"

#define QK STRATA_QK_K
#define Q4K_BYTES 144 /* GGUF: d, dmin, scales[12], qs[128] */

static size_t qs_off(int j, int i)
{
	/* byte i (0..127) of row j's qs */
	const int h = i / 32, c = (i % 32) / 4;

	return STRATA_Q4K_R16_QS + 512 * (size_t)h + 64 * (size_t)c + 32 * (size_t)(j / 8) +
	       4 * (size_t)(j % 8) + (size_t)(i % 4);
}

void strata_q4_k_r16_pack(const uint8_t *const w[STRATA_Q4K_R16_ROWS], int64_t nb, uint8_t *dst)
{
	for (int64_t b = 0; b < nb; b++) {
		uint8_t *o = dst + b * STRATA_Q4K_R16_SB;
		const uint8_t *blk[STRATA_Q4K_R16_ROWS];

		for (int j = 0; j < STRATA_Q4K_R16_ROWS; j++) {
			blk[j] = w[j] + b * Q4K_BYTES;
			memcpy(o + 2 * j, blk[j], 2);
			memcpy(o + 32 + 2 * j, blk[j] + 2, 2);
			for (int k = 0; k < 12; k++)
				o[STRATA_Q4K_R16_SC + 16 * k + j] = blk[j][4 + k];
		}
		/* in the order of the output, 4-byte runs: a load pass over GBs */
		for (int i = 0; i < 128; i += 4)
			for (int j = 0; j < STRATA_Q4K_R16_ROWS; j++)
				memcpy(o + qs_off(j, i), blk[j] + 16 + i, 4);
	}
}

/* Row j's GGUF block back from a repacked super-block. */
static void gguf_block(const uint8_t *sb, int j, uint8_t blk[Q4K_BYTES])
{
	memcpy(blk, sb + 2 * j, 2);
	memcpy(blk + 2, sb + 32 + 2 * j, 2);
	for (int k = 0; k < 12; k++)
		blk[4 + k] = sb[STRATA_Q4K_R16_SC + 16 * k + j];
	for (int i = 0; i < 128; i++)
		blk[16 + i] = sb[qs_off(j, i)];
}

static const uint8_t *group_of(const uint8_t *w, size_t row_bytes, int64_t r)
{
	return w + (size_t)(r / STRATA_Q4K_R16_ROWS) * STRATA_Q4K_R16_ROWS * row_bytes;
}

void strata_q4_k_r16_get_row(const struct strata_mat *m, int64_t r, float *dst)
{
	const uint8_t *g = group_of(m->data, m->row_bytes, r);
	uint8_t blk[Q4K_BYTES];

	for (int64_t b = 0; b < m->cols / QK; b++) {
		gguf_block(g + b * STRATA_Q4K_R16_SB, (int)(r % STRATA_Q4K_R16_ROWS), blk);
		strata_dequant(STRATA_TYPE_Q4_K, blk, dst + b * QK, QK);
	}
}

/* GGUF's get_scale_min_k4: sub-block s's 6-bit scale and min. */
static void scale_min(const uint8_t *q, int s, int *sc, int *m)
{
	if (s < 4) {
		*sc = q[s] & 63;
		*m = q[s + 4] & 63;
	} else {
		*sc = (q[s + 4] & 0xf) | ((q[s - 4] >> 6) << 4);
		*m = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
	}
}

/* One row's super-block against one token: y in, y out. */
static float sb_dot(const uint8_t *blk, const uint8_t *x, int64_t k, int64_t b, float y)
{
	const int8_t *xq = STRATA_Q8K_QS(x) + b * QK;
	const int16_t *bs = STRATA_Q8K_BSUMS(x, k) + b * 16;
	const float dx = STRATA_Q8K_D(x, k)[b];
	int32_t S = 0, M = 0;

	for (int s = 0; s < 8; s++) {
		const uint8_t *qs = blk + 16 + 32 * (s / 2);
		int sc, m, dot = 0;

		scale_min(blk + 4, s, &sc, &m);
		for (int i = 0; i < 32; i++)
			dot += ((s % 2 ? qs[i] >> 4 : qs[i] & 0xf)) * xq[32 * s + i];
		S += sc * dot;
		M += m * (bs[2 * s] + bs[2 * s + 1]);
	}
	y = fmaf((float)S, strata_load_fp16(blk) * dx, y);
	return fmaf(-(float)M, strata_load_fp16(blk + 2) * dx, y);
}

void strata_q4_k_r16_mm_scalar(const struct strata_mm_args *a)
{
	const int64_t nb = a->k / QK;
	uint8_t blk[Q4K_BYTES];

	for (int64_t r = 0; r < a->nr; r++) {
		const uint8_t *g = group_of(a->w, a->w_stride, r);

		for (int64_t t = 0; t < a->nt; t++)
			a->y[t * a->ldy + r] = 0.0f;
		for (int64_t b = 0; b < nb; b++) {
			gguf_block(g + b * STRATA_Q4K_R16_SB, (int)(r % STRATA_Q4K_R16_ROWS), blk);
			for (int64_t t = 0; t < a->nt; t++) {
				float *y = &a->y[t * a->ldy + r];

				*y = sb_dot(blk, a->x + t * a->x_stride, a->k, b, *y);
			}
		}
	}
}
