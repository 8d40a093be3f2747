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

/* Where 4-byte run i (0..31) of a row's ql, and run i (0..15) of its qh,
 * go for row j. */
static size_t ql_off(int j, int i)
{
	const int n = i / 16, s = (i / 8) % 2, c = i % 8;

	return 1024 * (size_t)n + 512 * (size_t)s + 64 * (size_t)c + 32 * (size_t)(j / 8) +
	       4 * (size_t)(j % 8);
}

static size_t qh_off(int j, int i)
{
	return STRATA_Q6K_R16_QH + 512 * (size_t)(i / 8) + 64 * (size_t)(i % 8) +
	       32 * (size_t)(j / 8) + 4 * (size_t)(j % 8);
}

void strata_q6_k_r16_pack(const uint8_t *const w[ROWS], int64_t nb, uint8_t *dst)
{
	for (int64_t b = 0; b < nb; b++) {
		uint8_t *o = dst + b * STRATA_Q6K_R16_SB;
		const uint8_t *blk[ROWS];

		for (int j = 0; j < ROWS; j++) {
			blk[j] = w[j] + b * Q6K_BYTES;
			for (int k = 0; k < 16; k++)
				o[STRATA_Q6K_R16_SC + 16 * k + j] = blk[j][192 + k];
			memcpy(o + STRATA_Q6K_R16_D + 2 * j, blk[j] + 208, 2);
		}
		/* in the order of the output, 4-byte runs: a load pass over GBs */
		for (int i = 0; i < 32; i++)
			for (int j = 0; j < ROWS; j++)
				memcpy(o + ql_off(j, i), blk[j] + 4 * i, 4);
		for (int i = 0; i < 16; i++)
			for (int j = 0; j < ROWS; j++)
				memcpy(o + qh_off(j, i), blk[j] + 128 + 4 * i, 4);
	}
}

/* Row j's GGUF block back from a repacked super-block. */
static void gguf_block(const uint8_t *sb, int j, uint8_t blk[Q6K_BYTES])
{
	for (int i = 0; i < 32; i++)
		memcpy(blk + 4 * i, sb + ql_off(j, i), 4);
	for (int i = 0; i < 16; i++)
		memcpy(blk + 128 + 4 * i, sb + qh_off(j, i), 4);
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
