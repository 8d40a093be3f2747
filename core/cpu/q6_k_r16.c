/*
 * q6_k_r16.c - Q6_K weights repacked at load (q6_k_r16.h): the repack
 * itself, row reads, and the scalar level's product over the repacked
 * bytes, in the float order every level uses on this layout.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "q6_k_r16.h"

#define QK STRATA_QK_K
#define Q6K_BYTES 210 /* GGUF: ql[128], qh[64], scales[16], d */
#define ROWS STRATA_Q6K_R16_ROWS

/* Where byte l (0..31: column l / 4, byte l % 4) of half n, plane p, lies
 * for row j. */
static size_t val_off(int j, int n, int p, int l)
{
	return STRATA_Q6K_R16_HALF * (size_t)n + STRATA_Q6K_R16_COL * (size_t)(l / 4) +
	       64 * (size_t)p + 32 * (size_t)(j / 8) + 4 * (size_t)(j % 8) + (size_t)(l % 4);
}

/* GGUF's 6-bit value of weight 128 n + 32 qq + l (Q6_K: ql, then qh). */
static unsigned q6_val(const uint8_t *blk, int n, int qq, int l)
{
	const uint8_t ql = blk[64 * n + 32 * (qq % 2) + l], qh = blk[128 + 32 * n + l];

	return (unsigned)((qq < 2 ? ql & 15 : ql >> 4) | ((qh >> (2 * qq)) & 3) << 4);
}

void strata_q6_k_r16_pack(const uint8_t *const w[ROWS], int64_t nb, uint8_t *dst)
{
	for (int64_t b = 0; b < nb; b++) {
		uint8_t *o = dst + b * STRATA_Q6K_R16_SB;

		for (int j = 0; j < ROWS; j++) {
			const uint8_t *blk = w[j] + b * Q6K_BYTES;

			for (int k = 0; k < 16; k++)
				o[STRATA_Q6K_R16_SC + 16 * k + j] = blk[192 + k];
			memcpy(o + STRATA_Q6K_R16_D + 2 * j, blk + 208, 2);
			for (int n = 0; n < 2; n++)
				for (int l = 0; l < 32; l++) {
					const unsigned v0 = q6_val(blk, n, 0, l), v1 = q6_val(blk, n, 1, l);
					const unsigned v2 = q6_val(blk, n, 2, l), v3 = q6_val(blk, n, 3, l);

					o[val_off(j, n, 0, l)] = (uint8_t)(v0 | (v2 >> 4) << 6);
					o[val_off(j, n, 1, l)] = (uint8_t)(v1 | (v3 >> 4) << 6);
					o[val_off(j, n, 2, l)] = (uint8_t)((v2 & 15) | (v3 & 15) << 4);
				}
		}
	}
}

/* Row j's GGUF block back from a repacked super-block. */
static void gguf_block(const uint8_t *sb, int j, uint8_t blk[Q6K_BYTES])
{
	for (int n = 0; n < 2; n++)
		for (int l = 0; l < 32; l++) {
			const unsigned b0 = sb[val_off(j, n, 0, l)], b1 = sb[val_off(j, n, 1, l)];
			const unsigned b2 = sb[val_off(j, n, 2, l)];
			const unsigned v[4] = { b0 & 63, b1 & 63, (b2 & 15) | (b0 >> 6) << 4,
						(b2 >> 4) | (b1 >> 6) << 4 };

			blk[64 * n + l] = (uint8_t)((v[0] & 15) | (v[2] & 15) << 4);
			blk[64 * n + 32 + l] = (uint8_t)((v[1] & 15) | (v[3] & 15) << 4);
			blk[128 + 32 * n + l] = (uint8_t)(v[0] >> 4 | (v[1] >> 4) << 2 |
							  (v[2] >> 4) << 4 | (v[3] >> 4) << 6);
		}
	for (int k = 0; k < 16; k++)
		blk[192 + k] = sb[STRATA_Q6K_R16_SC + 16 * k + j];
	memcpy(blk + 208, sb + STRATA_Q6K_R16_D + 2 * j, 2);
}

static const uint8_t *group_of(const uint8_t *w, size_t row_bytes, int64_t r)
{
	return w + (size_t)(r / ROWS) * ROWS * row_bytes;
}

void strata_q6_k_r16_get_row(const struct strata_mat *m, int64_t r, float *dst)
{
	const uint8_t *g = group_of(m->data, m->row_bytes, r);
	uint8_t blk[Q6K_BYTES];

	for (int64_t b = 0; b < m->cols / QK; b++) {
		gguf_block(g + b * STRATA_Q6K_R16_SB, (int)(r % ROWS), blk);
		strata_dequant(STRATA_TYPE_Q6_K, blk, dst + b * QK, QK);
	}
}

/* One row's super-block against one token: y in, y out. */
static float sb_dot(const uint8_t *blk, const uint8_t *x, int64_t k, int64_t b, float y)
{
	const int8_t *xq = STRATA_Q8K_QS(x) + b * QK;
	const int16_t *bs = STRATA_Q8K_BSUMS(x, k) + b * 16;
	const float dx = STRATA_Q8K_D(x, k)[b];
	int32_t S = 0;

	for (int j = 0; j < 16; j++) {
		const int n = j / 8, qq = (j % 8) / 2, l0 = 16 * (j % 2);
		const uint8_t *ql = blk + 64 * n + 32 * (qq % 2), *qh = blk + 128 + 32 * n;
		int dot = 0;

		for (int l = l0; l < l0 + 16; l++) {
			const int q = ((qq < 2 ? ql[l] & 0xf : ql[l] >> 4) |
				       ((qh[l] >> (2 * qq)) & 3) << 4);

			dot += q * xq[128 * n + 32 * qq + l];
		}
		S += (int8_t)blk[192 + j] * (dot - 32 * bs[j]);
	}
	return fmaf((float)S, strata_load_fp16(blk + 208) * dx, y);
}

void strata_q6_k_r16_mm_scalar(const struct strata_mm_args *a)
{
	const int64_t nb = a->k / QK;
	uint8_t blk[Q6K_BYTES];

	for (int64_t r = 0; r < a->nr; r++) {
		const uint8_t *g = group_of(a->w, a->w_stride, r);

		for (int64_t t = 0; t < a->nt; t++)
			a->y[t * a->ldy + r] = 0.0f;
		for (int64_t b = 0; b < nb; b++) {
			gguf_block(g + b * STRATA_Q6K_R16_SB, (int)(r % ROWS), blk);
			for (int64_t t = 0; t < a->nt; t++) {
				float *y = &a->y[t * a->ldy + r];

				*y = sb_dot(blk, a->x + t * a->x_stride, a->k, b, *y);
			}
		}
	}
}
