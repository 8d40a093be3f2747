/*
 * quants_iq.c - the i-quants (IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_M) at the
 * scalar level: dequantisation (bit-identical to ggml's, which fixes the
 * order of every float operation below) and the reference tile kernels.
 * Layouts and the integer form of the dot products: see quants_iq.h.
 */
#include "iq_tables.h"
#include "quants_iq.h"

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Byte j of a grid entry (value j of its group). */
static int gbyte(uint64_t entry, int j)
{
	return (int)((entry >> (8 * j)) & 0xff);
}

/* IQ1_M keeps its f16 block scale in the top nibbles of its four u16s. */
static float iq1m_scale(const uint8_t *blk)
{
	const uint8_t *sc = blk + 48;
	uint16_t h = (uint16_t)((rd16(sc) >> 12) | ((rd16(sc + 2) >> 8) & 0x00f0) |
				((rd16(sc + 4) >> 4) & 0x0f00) |
				(rd16(sc + 6) & 0xf000));

	return strata_fp16_to_f32(h);
}

/* ---- dequantisation ----------------------------------------------------------- */

/* ggml: y = db * grid * (+-1), db = d * (0.5 + s) * 0.25. */
void strata_iq2_xs_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *blk = src;

	for (int64_t b = 0; b < n / STRATA_QK_K; b++, blk += STRATA_IQ2_XS_BYTES) {
		const float d = strata_fp16_to_f32(rd16(blk));
		float *y = dst + b * STRATA_QK_K;

		for (int ib = 0; ib < 8; ib++) {
			const uint8_t sc = blk[66 + ib];
			float db[2];

			db[0] = d * (0.5f + (float)(sc & 0xf)) * 0.25f;
			db[1] = d * (0.5f + (float)(sc >> 4)) * 0.25f;
			for (int l = 0; l < 4; l++, y += 8) {
				const uint16_t q = rd16(blk + 2 + 2 * (4 * ib + l));
				const uint64_t g = strata_iq2xs_grid[q & 511];
				const uint8_t s = strata_ksigns_iq2xs[q >> 9];

				for (int j = 0; j < 8; j++) {
					float v = db[l / 2] * (float)gbyte(g, j);

					y[j] = (s >> j) & 1 ? -v : v;
				}
			}
		}
	}
}

void strata_iq2_s_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *blk = src;

	for (int64_t b = 0; b < n / STRATA_QK_K; b++, blk += STRATA_IQ2_S_BYTES) {
		const float d = strata_fp16_to_f32(rd16(blk));
		const uint8_t *qs = blk + 2, *signs = blk + 34, *qh = blk + 66;
		float *y = dst + b * STRATA_QK_K;

		for (int ib = 0; ib < 8; ib++) {
			const uint8_t sc = blk[74 + ib];
			float db[2];

			db[0] = d * (0.5f + (float)(sc & 0xf)) * 0.25f;
			db[1] = d * (0.5f + (float)(sc >> 4)) * 0.25f;
			for (int l = 0; l < 4; l++, y += 8) {
				const int idx = qs[4 * ib + l] |
						(((qh[ib] >> (2 * l)) & 3) << 8);
				const uint64_t g = strata_iq2s_grid[idx];
				const uint8_t s = signs[4 * ib + l];

				for (int j = 0; j < 8; j++) {
					float v = db[l / 2] * (float)gbyte(g, j);

					y[j] = (s >> j) & 1 ? -v : v;
				}
			}
		}
	}
}

/* ggml: db = d * (0.5 + s) * 0.5, the scale in the top 4 bits of the u32. */
void strata_iq3_xxs_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *blk = src;

	for (int64_t b = 0; b < n / STRATA_QK_K; b++, blk += STRATA_IQ3_XXS_BYTES) {
		const float d = strata_fp16_to_f32(rd16(blk));
		const uint8_t *qs = blk + 2;
		float *y = dst + b * STRATA_QK_K;

		for (int ib = 0; ib < 8; ib++) {
			const uint32_t aux = rd32(blk + 66 + 4 * ib);
			const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;

			for (int l = 0; l < 4; l++, y += 8) {
				const uint8_t s = strata_ksigns_iq2xs[(aux >> (7 * l)) & 127];
				const uint32_t g0 = strata_iq3xxs_grid[qs[8 * ib + 2 * l]];
				const uint32_t g1 = strata_iq3xxs_grid[qs[8 * ib + 2 * l + 1]];

				for (int j = 0; j < 4; j++) {
					float v0 = db * (float)gbyte(g0, j);
					float v1 = db * (float)gbyte(g1, j);

					y[j] = (s >> j) & 1 ? -v0 : v0;
					y[j + 4] = (s >> (j + 4)) & 1 ? -v1 : v1;
				}
			}
		}
	}
}

/* ggml: db = d * (1 + 2 s), the 9th index bit from qh, one sign bit each. */
void strata_iq3_s_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *blk = src;

	for (int64_t b = 0; b < n / STRATA_QK_K; b++, blk += STRATA_IQ3_S_BYTES) {
		const float d = strata_fp16_to_f32(rd16(blk));
		const uint8_t *qs = blk + 2, *qh = blk + 66, *signs = blk + 74;
		float *y = dst + b * STRATA_QK_K;

		for (int ib = 0; ib < 8; ib++) {
			const int sc = (blk[106 + ib / 2] >> (4 * (ib & 1))) & 0xf;
			const float db = d * (float)(1 + 2 * sc);

			for (int l = 0; l < 4; l++, y += 8) {
				const int m = 2 * l;
				const uint32_t g0 = strata_iq3s_grid[qs[8 * ib + m] |
					(((qh[ib] >> m) & 1) << 8)];
				const uint32_t g1 = strata_iq3s_grid[qs[8 * ib + m + 1] |
					(((qh[ib] >> (m + 1)) & 1) << 8)];
				const uint8_t s = signs[4 * ib + l];

				for (int j = 0; j < 4; j++) {
					float v0 = db * (float)gbyte(g0, j);
					float v1 = db * (float)gbyte(g1, j);

					y[j] = (s >> j) & 1 ? -v0 : v0;
					y[j + 4] = (s >> (j + 4)) & 1 ? -v1 : v1;
				}
			}
		}
	}
}

/* ggml: y = dl * (grid + delta), dl = d * (2 s + 1), delta = +-1/8. */
void strata_iq1_m_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *blk = src;

	for (int64_t b = 0; b < n / STRATA_QK_K; b++, blk += STRATA_IQ1_M_BYTES) {
		const float d = iq1m_scale(blk);
		const uint8_t *qs = blk, *qh = blk + 32;
		float *y = dst + b * STRATA_QK_K;

		for (int ib = 0; ib < 8; ib++) {
			const uint16_t sc = rd16(blk + 48 + 2 * (ib / 2));
			const int sh = 6 * (ib & 1);

			for (int l = 0; l < 4; l++, y += 8) {
				const uint8_t h = qh[2 * ib + l / 2] >> (4 * (l & 1));
				const uint64_t g = strata_iq1s_grid[qs[4 * ib + l] |
								    ((h & 7) << 8)];
				const float delta = h & 8 ? -0.125f : 0.125f;
				const int ls = (sc >> (sh + 3 * (l / 2))) & 7;
				const float dl = d * (float)(2 * ls + 1);

				for (int j = 0; j < 8; j++)
					y[j] = dl * ((float)(int8_t)gbyte(g, j) + delta);
			}
		}
	}
}

/* ---- dot products against Q8_K -------------------------------------------------- */

/* Signed dot of 8 grid magnitudes with 8 activations; sign bit j negates j. */
static int32_t dot8(uint64_t g, uint8_t signs, const int8_t *q)
{
	int32_t s = 0;

	for (int j = 0; j < 8; j++) {
		int32_t v = gbyte(g, j) * q[j];

		s += (signs >> j) & 1 ? -v : v;
	}
	return s;
}

static int32_t dot4x2(uint32_t g0, uint32_t g1, uint8_t signs, const int8_t *q)
{
	return dot8((uint64_t)g0 | (uint64_t)g1 << 32, signs, q);
}

/* Each block dot returns sum(w * q) as an integer multiple of d / 2^shift
 * (shift per type, see quants_iq.h); the caller scales it. */
static int32_t iq2_xs_block(const uint8_t *blk, const int8_t *q)
{
	int32_t isum = 0;

	for (int ib = 0; ib < 8; ib++) {
		const uint8_t sc = blk[66 + ib];
		int32_t s[2] = { 0, 0 };

		for (int l = 0; l < 4; l++, q += 8) {
			const uint16_t v = rd16(blk + 2 + 2 * (4 * ib + l));

			s[l / 2] += dot8(strata_iq2xs_grid[v & 511],
					 strata_ksigns_iq2xs[v >> 9], q);
		}
		isum += (2 * (sc & 0xf) + 1) * s[0] + (2 * (sc >> 4) + 1) * s[1];
	}
	return isum;
}

static int32_t iq2_s_block(const uint8_t *blk, const int8_t *q)
{
	const uint8_t *qs = blk + 2, *signs = blk + 34, *qh = blk + 66;
	int32_t isum = 0;

	for (int ib = 0; ib < 8; ib++) {
		const uint8_t sc = blk[74 + ib];
		int32_t s[2] = { 0, 0 };

		for (int l = 0; l < 4; l++, q += 8) {
			const int idx = qs[4 * ib + l] | (((qh[ib] >> (2 * l)) & 3) << 8);

			s[l / 2] += dot8(strata_iq2s_grid[idx], signs[4 * ib + l], q);
		}
		isum += (2 * (sc & 0xf) + 1) * s[0] + (2 * (sc >> 4) + 1) * s[1];
	}
	return isum;
}

static int32_t iq3_xxs_block(const uint8_t *blk, const int8_t *q)
{
	const uint8_t *qs = blk + 2;
	int32_t isum = 0;

	for (int ib = 0; ib < 8; ib++) {
		const uint32_t aux = rd32(blk + 66 + 4 * ib);
		int32_t s = 0;

		for (int l = 0; l < 4; l++, q += 8)
			s += dot4x2(strata_iq3xxs_grid[qs[8 * ib + 2 * l]],
				    strata_iq3xxs_grid[qs[8 * ib + 2 * l + 1]],
				    strata_ksigns_iq2xs[(aux >> (7 * l)) & 127], q);
		isum += (int32_t)(2 * (aux >> 28) + 1) * s;
	}
	return isum;
}

static int32_t iq3_s_block(const uint8_t *blk, const int8_t *q)
{
	const uint8_t *qs = blk + 2, *qh = blk + 66, *signs = blk + 74;
	int32_t isum = 0;

	for (int ib = 0; ib < 8; ib++) {
		const int sc = (blk[106 + ib / 2] >> (4 * (ib & 1))) & 0xf;
		int32_t s = 0;

		for (int l = 0; l < 4; l++, q += 8) {
			const int m = 2 * l;

			s += dot4x2(strata_iq3s_grid[qs[8 * ib + m] |
						     (((qh[ib] >> m) & 1) << 8)],
				    strata_iq3s_grid[qs[8 * ib + m + 1] |
						     (((qh[ib] >> (m + 1)) & 1) << 8)],
				    signs[4 * ib + l], q);
		}
		isum += (2 * sc + 1) * s;
	}
	return isum;
}

/* Weights 8 * grid +- 1 (the delta), in units of d / 8. */
static int32_t iq1_m_block(const uint8_t *blk, const int8_t *q)
{
	const uint8_t *qs = blk, *qh = blk + 32;
	int32_t isum = 0;

	for (int ib = 0; ib < 8; ib++) {
		const uint16_t sc = rd16(blk + 48 + 2 * (ib / 2));
		const int sh = 6 * (ib & 1);
		int32_t s[2] = { 0, 0 };

		for (int l = 0; l < 4; l++, q += 8) {
			const uint8_t h = qh[2 * ib + l / 2] >> (4 * (l & 1));
			const uint64_t g = strata_iq1s_grid[qs[4 * ib + l] | ((h & 7) << 8)];
			const int delta = h & 8 ? -1 : 1;
			int32_t t = 0;

			for (int j = 0; j < 8; j++)
				t += (8 * (int8_t)gbyte(g, j) + delta) * q[j];
			s[l / 2] += t;
		}
		isum += (2 * ((sc >> sh) & 7) + 1) * s[0] +
			(2 * ((sc >> (sh + 3)) & 7) + 1) * s[1];
	}
	return isum;
}

/* ---- tile kernels --------------------------------------------------------------- */

typedef int32_t (*block_fn)(const uint8_t *blk, const int8_t *q);

/*
 * y = sum over blocks of d_w * d_x * isum * unit.  d_w is the f16 at the
 * block start except for IQ1_M (scale_iq1m set).
 */
static void mm_iq(const struct strata_mm_args *a, block_fn dot, size_t bytes,
		  float unit, int scale_iq1m)
{
	const int64_t nb = a->k / STRATA_QK_K;

	for (int64_t t = 0; t < a->nt; t++) {
		const uint8_t *xr = a->x + t * a->x_stride;
		const int8_t *xq = STRATA_Q8K_QS(xr);
		const float *xd = STRATA_Q8K_D(xr, a->k);

		for (int64_t r = 0; r < a->nr; r++) {
			const uint8_t *blk = a->w + r * a->w_stride;
			float sum = 0.0f;

			for (int64_t b = 0; b < nb; b++, blk += bytes) {
				float dw = scale_iq1m ? iq1m_scale(blk)
						      : strata_fp16_to_f32(rd16(blk));

				sum += dw * xd[b] * unit *
				       (float)dot(blk, xq + b * STRATA_QK_K);
			}
			a->y[t * a->ldy + r] = sum;
		}
	}
}

void strata_iq2_xs_mm(const struct strata_mm_args *a)
{
	mm_iq(a, iq2_xs_block, STRATA_IQ2_XS_BYTES, 0.125f, 0);
}

void strata_iq2_s_mm(const struct strata_mm_args *a)
{
	mm_iq(a, iq2_s_block, STRATA_IQ2_S_BYTES, 0.125f, 0);
}

void strata_iq3_xxs_mm(const struct strata_mm_args *a)
{
	mm_iq(a, iq3_xxs_block, STRATA_IQ3_XXS_BYTES, 0.25f, 0);
}

void strata_iq3_s_mm(const struct strata_mm_args *a)
{
	mm_iq(a, iq3_s_block, STRATA_IQ3_S_BYTES, 1.0f, 0);
}

void strata_iq1_m_mm(const struct strata_mm_args *a)
{
	mm_iq(a, iq1_m_block, STRATA_IQ1_M_BYTES, 0.125f, 1);
}
