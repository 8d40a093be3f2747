/*
 * q8_0_r16.c - Q8_0 weights repacked at load (q8_0_r16.h): the repack
 * of one group, row reads, and the scalar level's product over the repacked
 * bytes, which sums exactly as its product over GGUF rows does.
 */
#include <string.h>

#include "kernels.h"
#include "q8_0_r16.h"

void strata_q8_0_r16_pack_blocks(const uint8_t *const w[STRATA_R16_ROWS], int64_t b0, int nb,
				 uint8_t *dst)
{
	for (int b = 0; b < nb; b++) {
		uint8_t *d = dst + strata_r16_d_off(b), *q = dst + strata_r16_q_off(b);

		for (int j = 0; j < STRATA_R16_ROWS; j++) {
			const uint8_t *blk = w[j] + (b0 + b) * STRATA_Q8_0_BYTES;

			memcpy(d + 2 * j, blk, 2);
			for (int c = 0; c < 8; c++)
				memcpy(q + 64 * c + 32 * (j / 8) + 4 * (j % 8), blk + 2 + 4 * c, 4);
		}
	}
}

/* Row r's value i (of block b) and block scale, in place. */
static inline const uint8_t *r16_group(const uint8_t *w, size_t row_bytes, int64_t r)
{
	return w + (size_t)(r / STRATA_R16_ROWS) * STRATA_R16_ROWS * row_bytes;
}

static inline int8_t r16_q(const uint8_t *g, int64_t b, int j, int i)
{
	return (int8_t)g[strata_r16_q_off(b) + 64 * (i / 4) + 32 * (j / 8) + 4 * (j % 8) + i % 4];
}

static inline float r16_d(const uint8_t *g, int64_t b, int j)
{
	return strata_load_fp16(g + strata_r16_d_off(b) + 2 * j);
}

/* Same values as strata_dequant of the GGUF row: d * q per value. */
void strata_q8_0_r16_get_row(const struct strata_mat *m, int64_t r, float *dst)
{
	const uint8_t *g = r16_group(m->data, m->row_bytes, r);
	const int j = (int)(r % STRATA_R16_ROWS);

	for (int64_t b = 0; b < m->cols / STRATA_QK8_0; b++) {
		const float d = r16_d(g, b, j);

		for (int i = 0; i < STRATA_QK8_0; i++)
			dst[b * STRATA_QK8_0 + i] = d * (float)r16_q(g, b, j, i);
	}
}

/* kernels_scalar.c's mm_q8_0, reading the interleaved bytes: the same
 * integer sums and the same float operations in the same order. */
void strata_q8_0_r16_mm_scalar(const struct strata_mm_args *a)
{
	const int64_t nb = a->k / STRATA_QK8_0;

	for (int64_t t = 0; t < a->nt; t++) {
		const int8_t *xq = (const int8_t *)(a->x + t * a->x_stride);
		const float *xd = (const float *)(a->x + t * a->x_stride + a->k);

		for (int64_t r = 0; r < a->nr; r++) {
			const uint8_t *g = r16_group(a->w, a->w_stride, r);
			const int j = (int)(r % STRATA_R16_ROWS);
			float sum = 0.0f;

			for (int64_t b = 0; b < nb; b++) {
				int32_t isum = 0;

				for (int i = 0; i < STRATA_QK8_0; i++)
					isum += r16_q(g, b, j, i) * xq[b * STRATA_QK8_0 + i];
				sum += (float)isum * (r16_d(g, b, j) * xd[b]);
			}
			a->y[t * a->ldy + r] = sum;
		}
	}
}
