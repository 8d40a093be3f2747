/*
 * iq4_nl_r16.c - IQ4_NL weights repacked at load (iq4_nl_r16.h): the
 * repack itself, row reads, and the scalar level's product over the
 * repacked bytes, in the float order every level uses on this layout.
 */
#include <math.h>
#include <string.h>

#include "iq4_nl_r16.h"
#include "kernels.h"
#include "quants.h"

#define QK 32
#define ROWS STRATA_IQ4NL_R16_ROWS

/* Byte i (0..15) of row j's values in block b's values. */
static size_t qs_off(int j, int i)
{
	return 64 * (size_t)(i / 4) + 32 * (size_t)(j / 8) + 4 * (size_t)(j % 8) + (size_t)(i % 4);
}

void strata_iq4_nl_r16_pack(const uint8_t *const w[ROWS], int64_t nb, uint8_t *dst)
{
	for (int64_t b = 0; b < nb; b++) {
		uint8_t *d = dst + strata_iq4nl_r16_d_off(b), *q = dst + strata_iq4nl_r16_q_off(b);

		for (int j = 0; j < ROWS; j++) {
			const uint8_t *blk = w[j] + b * STRATA_IQ4_NL_BYTES;

			memcpy(d + 2 * j, blk, 2);
			for (int i = 0; i < 16; i += 4)
				memcpy(q + qs_off(j, i), blk + 2 + i, 4);
		}
	}
}

/* Row j's GGUF block b back from a repacked group. */
static void gguf_block(const uint8_t *g, int64_t b, int j, uint8_t blk[STRATA_IQ4_NL_BYTES])
{
	const uint8_t *q = g + strata_iq4nl_r16_q_off(b);

	memcpy(blk, g + strata_iq4nl_r16_d_off(b) + 2 * j, 2);
	for (int i = 0; i < 16; i++)
		blk[2 + i] = q[qs_off(j, i)];
}

static const uint8_t *group_of(const uint8_t *w, size_t row_bytes, int64_t r)
{
	return w + (size_t)(r / ROWS) * ROWS * row_bytes;
}

void strata_iq4_nl_r16_get_row(const struct strata_mat *m, int64_t r, float *dst)
{
	const uint8_t *g = group_of(m->data, m->row_bytes, r);
	uint8_t blk[STRATA_IQ4_NL_BYTES];

	for (int64_t b = 0; b < m->cols / QK; b++) {
		gguf_block(g, b, (int)(r % ROWS), blk);
		strata_dequant(STRATA_TYPE_IQ4_NL, blk, dst + b * QK, QK);
	}
}

/* The activation row at the scalar level: qs[k] int8, then d[k/32] float. */
void strata_iq4_nl_r16_mm_scalar(const struct strata_mm_args *a)
{
	const int64_t nb = a->k / QK;
	uint8_t blk[STRATA_IQ4_NL_BYTES];

	for (int64_t r = 0; r < a->nr; r++) {
		const uint8_t *g = group_of(a->w, a->w_stride, r);

		for (int64_t t = 0; t < a->nt; t++)
			a->y[t * a->ldy + r] = 0.0f;
		for (int64_t b = 0; b < nb; b++) {
			gguf_block(g, b, (int)(r % ROWS), blk);
			for (int64_t t = 0; t < a->nt; t++) {
				const int8_t *xq = (const int8_t *)(a->x + t * a->x_stride);
				const float dx = ((const float *)(xq + a->k))[b];
				float *y = &a->y[t * a->ldy + r];
				int32_t S = 0;

				for (int i = 0; i < 16; i++)
					S += strata_iq4nl_values[blk[2 + i] & 15] * xq[b * QK + i] +
					     strata_iq4nl_values[blk[2 + i] >> 4] * xq[b * QK + 16 + i];
				*y = fmaf((float)S, strata_load_fp16(blk) * dx, *y);
			}
		}
	}
}
