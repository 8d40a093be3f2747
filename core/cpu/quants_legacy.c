/*
 * quants_legacy.c - the 32-value block types (Q4_0, Q4_1, Q5_0, Q5_1,
 * IQ4_NL) at the scalar level, and the Q8_1 activation format of Q4_1/Q5_1.
 *
 * Every block is first decoded to 32 small integers q, a scale d and an
 * offset: a weight is q * d - mneg (mneg = -m; +0 for the symmetric types,
 * which leaves q * d bit for bit unchanged, signed zeros included).  That
 * one form gives ggml's dequantisation exactly and an integer dot product
 * against int8 activations.
 */
#include <math.h>
#include <string.h>

#include "quants.h"

#define QK 32

/* ggml's kvalues_iq4nl: a non-linear 4-bit codebook. */
const int8_t strata_iq4nl_values[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
					 1,    13,   25,  38,  53,  69,  89,  113 };

struct ldec {
	float d, mneg;
	int8_t q[QK];
};

/* ---- decoding --------------------------------------------------------------- */

static void dec_q4_0(const uint8_t *b, struct ldec *o)
{
	o->d = strata_load_fp16(b);
	o->mneg = 0.0f;
	for (int j = 0; j < 16; j++) {
		o->q[j] = (int8_t)((b[2 + j] & 0xf) - 8);
		o->q[j + 16] = (int8_t)((b[2 + j] >> 4) - 8);
	}
}

static void dec_q4_1(const uint8_t *b, struct ldec *o)
{
	o->d = strata_load_fp16(b);
	o->mneg = -strata_load_fp16(b + 2);
	for (int j = 0; j < 16; j++) {
		o->q[j] = (int8_t)(b[4 + j] & 0xf);
		o->q[j + 16] = (int8_t)(b[4 + j] >> 4);
	}
}

/* The fifth bits of the 32 values, bit j for value j. */
static uint32_t ld_qh(const uint8_t *p)
{
	uint32_t qh;

	memcpy(&qh, p, 4);
	return qh;
}

static void dec_q5_0(const uint8_t *b, struct ldec *o)
{
	uint32_t qh = ld_qh(b + 2);

	o->d = strata_load_fp16(b);
	o->mneg = 0.0f;
	for (int j = 0; j < 16; j++) {
		o->q[j] = (int8_t)(((b[6 + j] & 0xf) | ((qh >> j) & 1) << 4) - 16);
		o->q[j + 16] = (int8_t)(((b[6 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16);
	}
}

static void dec_q5_1(const uint8_t *b, struct ldec *o)
{
	uint32_t qh = ld_qh(b + 4);

	o->d = strata_load_fp16(b);
	o->mneg = -strata_load_fp16(b + 2);
	for (int j = 0; j < 16; j++) {
		o->q[j] = (int8_t)((b[8 + j] & 0xf) | ((qh >> j) & 1) << 4);
		o->q[j + 16] = (int8_t)((b[8 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
	}
}

static void dec_iq4_nl(const uint8_t *b, struct ldec *o)
{
	o->d = strata_load_fp16(b);
	o->mneg = 0.0f;
	for (int j = 0; j < 16; j++) {
		o->q[j] = strata_iq4nl_values[b[2 + j] & 0xf];
		o->q[j + 16] = strata_iq4nl_values[b[2 + j] >> 4];
	}
}

typedef void (*ldec_fn)(const uint8_t *b, struct ldec *o);

static void to_float(ldec_fn dec, size_t bbytes, const void *src, float *dst,
		     int64_t n)
{
	const uint8_t *b = src;
	struct ldec o;

	for (int64_t i = 0; i < n / QK; i++, b += bbytes, dst += QK) {
		dec(b, &o);
		for (int j = 0; j < QK; j++)
			dst[j] = (float)o.q[j] * o.d - o.mneg;
	}
}

/* ---- tile kernels ------------------------------------------------------------ */

/*
 * Rows outer, blocks, tokens inner: each weight block is decoded once per
 * call.  Symmetric types read Q8_0 activations (scalar layout: qs[k], then
 * d[k/32]); the offset types read Q8_1 and add m * d_x * sum(q_x).
 */
static void mm_legacy(ldec_fn dec, size_t bbytes, int offset,
		      const struct strata_mm_args *a)
{
	const int64_t nb = a->k / QK;

	for (int64_t r = 0; r < a->nr; r++) {
		const uint8_t *b = a->w + r * a->w_stride;

		for (int64_t t = 0; t < a->nt; t++)
			a->y[t * a->ldy + r] = 0.0f;
		for (int64_t i = 0; i < nb; i++, b += bbytes) {
			struct ldec o;

			dec(b, &o);
			for (int64_t t = 0; t < a->nt; t++) {
				const uint8_t *x = a->x + t * a->x_stride;
				const int8_t *xq = (const int8_t *)x + i * QK;
				const float dx = ((const float *)(x + a->k))[i];
				int32_t isum = 0;
				float v;

				for (int j = 0; j < QK; j++)
					isum += o.q[j] * xq[j];
				v = (float)isum * (o.d * dx);
				if (offset)
					v -= o.mneg * STRATA_Q8_1_S(x, a->k)[i];
				a->y[t * a->ldy + r] += v;
			}
		}
	}
}

/* ---- reference quantisers (ggml's quantize_row_*_ref) ------------------------- */

/* Largest magnitude, keeping its sign (the first one on ties). */
static float signed_absmax(const float *x, int n)
{
	float amax = 0.0f, max = 0.0f;

	for (int j = 0; j < n; j++)
		if (fabsf(x[j]) > amax) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	return max;
}

static void minmax(const float *x, int n, float *mn, float *mx)
{
	*mn = INFINITY;
	*mx = -INFINITY;
	for (int j = 0; j < n; j++) {
		*mn = x[j] < *mn ? x[j] : *mn;
		*mx = x[j] > *mx ? x[j] : *mx;
	}
}

/* Q4_0 / Q5_0: the extreme value maps to -2^(bits-1); q = trunc(x/d + half). */
static void sym_from_float(const float *x, uint8_t *b, int bits)
{
	const float lo = (float)(1 << (bits - 1)), top = (float)((1 << bits) - 1);
	float d = signed_absmax(x, QK) / -lo, id = d != 0.0f ? 1.0f / d : 0.0f;
	uint32_t qh = 0;
	uint8_t *qs = b + (bits == 5 ? 6 : 2);

	strata_store_fp16(b, d);
	for (int j = 0; j < 16; j++) {
		float v0 = x[j] * id + (lo + 0.5f), v1 = x[j + 16] * id + (lo + 0.5f);
		int q0 = (int)(v0 < top ? v0 : top), q1 = (int)(v1 < top ? v1 : top);

		qs[j] = (uint8_t)((q0 & 0xf) | (q1 & 0xf) << 4);
		qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + 16);
	}
	if (bits == 5)
		memcpy(b + 2, &qh, 4);
}

/* Q4_1 / Q5_1: d = (max - min) / top, m = min, q = trunc((x - min)/d + 0.5). */
static void asym_from_float(const float *x, uint8_t *b, int bits)
{
	const int top = (1 << bits) - 1;
	float mn, mx, d, id;
	uint32_t qh = 0;
	uint8_t *qs = b + (bits == 5 ? 8 : 4);

	minmax(x, QK, &mn, &mx);
	d = (mx - mn) / (float)top;
	id = d != 0.0f ? 1.0f / d : 0.0f;
	strata_store_fp16(b, d);
	strata_store_fp16(b + 2, mn);
	for (int j = 0; j < 16; j++) {
		int q0 = (int)((x[j] - mn) * id + 0.5f);
		int q1 = (int)((x[j + 16] - mn) * id + 0.5f);

		q0 = q0 < top ? q0 : top;
		q1 = q1 < top ? q1 : top;
		qs[j] = (uint8_t)((q0 & 0xf) | (q1 & 0xf) << 4);
		qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + 16);
	}
	if (bits == 5)
		memcpy(b + 4, &qh, 4);
}

/* Index of the codebook value nearest to v (the lower one on ties), as
 * ggml's best_index_int8, without its data-dependent branches: between the
 * ends, c values are <= v and v lies in [val[c-1], val[c]). */
static int iq4nl_index(float v)
{
	const int8_t *val = strata_iq4nl_values;
	int c = 0;

	if (v <= val[0])
		return 0;
	if (v >= val[15])
		return 15;
	for (int i = 0; i < 16; i++)
		c += (float)val[i] <= v;
	return v - val[c - 1] < val[c] - v ? c - 1 : c;
}

/* Weighted least squares over the codebook indices that scale `id` picks. */
static void iq4nl_fit(const float *x, const float *w, float id, float *sqx,
		      float *sq2)
{
	float sumqx = 0.0f, sumq2 = 0.0f;

	for (int j = 0; j < QK; j++) {
		float q = strata_iq4nl_values[iq4nl_index(id * x[j])];

		sumqx += w[j] * q * x[j];
		sumq2 += w[j] * q * q;
	}
	*sqx = sumqx;
	*sq2 = sumq2;
}

/* ggml's quantize_iq4_nl without an importance matrix: weights x^2, the
 * scale refined over 15 trial scales around -max/127. */
static void iq4_nl_block(const float *x, uint8_t *b)
{
	const int ntry = 7;
	float w[QK], amax = 0.0f, max = 0.0f, d = 0.0f, id, best, sqx, sq2;
	uint8_t L[QK];

	for (int j = 0; j < QK; j++) {
		w[j] = x[j] * x[j];
		if (fabsf(x[j]) > amax) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	}
	if (amax >= 1e-15f) {
		d = -max / strata_iq4nl_values[0];
		iq4nl_fit(x, w, 1.0f / d, &sqx, &sq2);
		d = sqx / sq2;
		best = d * sqx;
		for (int itry = -ntry; itry <= ntry; itry++) {
			iq4nl_fit(x, w, (float)(itry + strata_iq4nl_values[0]) / max,
				  &sqx, &sq2);
			if (sq2 > 0 && sqx * sqx > best * sq2) {
				d = sqx / sq2;
				best = d * sqx;
			}
		}
	}
	strata_store_fp16(b, d);
	id = d != 0.0f ? 1.0f / d : 0.0f;
	for (int j = 0; j < QK; j++)
		L[j] = (uint8_t)iq4nl_index(id * x[j]);
	for (int j = 0; j < 16; j++)
		b[2 + j] = (uint8_t)(L[j] | L[j + 16] << 4);
}

/* ---- exported entries ----------------------------------------------------------- */

#define LEGACY_TYPE(t, bytes, offset, quant_call)                             \
	void strata_##t##_to_float(const void *src, float *dst, int64_t n)    \
	{                                                                     \
		to_float(dec_##t, bytes, src, dst, n);                        \
	}                                                                     \
	void strata_##t##_mm(const struct strata_mm_args *a)                  \
	{                                                                     \
		mm_legacy(dec_##t, bytes, offset, a);                         \
	}                                                                     \
	void strata_##t##_from_float(const float *src, void *dst, int64_t n)  \
	{                                                                     \
		uint8_t *b = dst;                                             \
		for (int64_t i = 0; i < n / QK; i++, b += bytes)              \
			quant_call(src + i * QK, b);                          \
	}

#define Q_SYM4(x, b) sym_from_float(x, b, 4)
#define Q_SYM5(x, b) sym_from_float(x, b, 5)
#define Q_ASYM4(x, b) asym_from_float(x, b, 4)
#define Q_ASYM5(x, b) asym_from_float(x, b, 5)

LEGACY_TYPE(q4_0, STRATA_Q4_0_BYTES, 0, Q_SYM4)
LEGACY_TYPE(q4_1, STRATA_Q4_1_BYTES, 1, Q_ASYM4)
LEGACY_TYPE(q5_0, STRATA_Q5_0_BYTES, 0, Q_SYM5)
LEGACY_TYPE(q5_1, STRATA_Q5_1_BYTES, 1, Q_ASYM5)
LEGACY_TYPE(iq4_nl, STRATA_IQ4_NL_BYTES, 0, iq4_nl_block)

/* ---- Q8_1 activations ------------------------------------------------------ */

size_t strata_q8_1_row_bytes(int64_t k)
{
	return STRATA_Q8_1_ROW_BYTES(k);
}

/* Q8_0's rounding (ggml's x86 quantize_row_q8_1), plus s = d * sum(q). */
void strata_q8_1_quantize(const float *x, void *dst, int64_t k)
{
	int8_t *qs = dst;
	float *ds = (float *)((uint8_t *)dst + k);
	float *ss = ds + k / QK;

	for (int64_t b = 0; b < k / QK; b++) {
		const float *xb = x + b * QK;
		float amax = 0.0f, id;
		int sum = 0;

		for (int i = 0; i < QK; i++)
			amax = fmaxf(amax, fabsf(xb[i]));
		id = amax != 0.0f ? 127.0f / amax : 0.0f;
		ds[b] = strata_fp16_to_f32(strata_f32_to_fp16(amax / 127.0f));
		for (int i = 0; i < QK; i++) {
			int8_t q = (int8_t)nearbyintf(xb[i] * id);

			qs[b * QK + i] = q;
			sum += q;
		}
		ss[b] = ds[b] * (float)sum;
	}
}

void strata_q8_1_peek(const void *row, int64_t k, int64_t i, int8_t *q, float *d)
{
	*q = STRATA_Q8_1_QS(row)[i];
	*d = STRATA_Q8_1_D(row, k)[i / QK];
}
