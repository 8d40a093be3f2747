/*
 * kernels_scalar.c - the portable reference level.
 *
 * Every weight type must have an entry here: it is what the SIMD levels are
 * tested against and what runs where no SIMD entry exists.  Plain C, written
 * to be obviously right rather than fast.
 */
#include <math.h>
#include <string.h>

#include "kernels_impl.h"
#include "iq4_nl_r16.h"
#include "q4_k_r16.h"
#include "q6_k_r16.h"
#include "q8_0_r16.h"
#include "quants.h"
#include "quants_iq.h"

/* ---- activation formats ---------------------------------------------------- */

static size_t round64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* Q8_0 activations here: k int8 values, then k/32 float scales. */
static size_t q8_row_bytes(int64_t k)
{
	return round64((size_t)k + (size_t)(k / STRATA_QK8_0) * sizeof(float));
}

static void q8_quantize(const float *x, void *dst, int64_t k)
{
	int8_t *qs = dst;
	float *ds = (float *)(qs + k);

	for (int64_t b = 0; b < k / STRATA_QK8_0; b++) {
		const float *xb = x + b * STRATA_QK8_0;
		float amax = 0.0f, id;

		for (int i = 0; i < STRATA_QK8_0; i++)
			amax = fmaxf(amax, fabsf(xb[i]));
		id = amax != 0.0f ? 127.0f / amax : 0.0f;
		ds[b] = strata_fp16_to_f32(strata_f32_to_fp16(amax / 127.0f));
		for (int i = 0; i < STRATA_QK8_0; i++)
			qs[b * STRATA_QK8_0 + i] = (int8_t)nearbyintf(xb[i] * id);
	}
}

static void q8_peek(const void *row, int64_t k, int64_t i, int8_t *q, float *d)
{
	const int8_t *qs = row;

	*q = qs[i];
	memcpy(d, (const char *)row + k + (i / STRATA_QK8_0) * sizeof(float),
	       sizeof(float));
}

/* ---- to_float ------------------------------------------------------------- */

static void f32_to_float(const void *src, float *dst, int64_t n)
{
	memcpy(dst, src, (size_t)n * sizeof(float));
}

static void f16_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *s = src;

	for (int64_t i = 0; i < n; i++) {
		uint16_t h;

		memcpy(&h, s + 2 * i, 2);
		dst[i] = strata_fp16_to_f32(h);
	}
}

static void bf16_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *s = src;

	for (int64_t i = 0; i < n; i++) {
		uint16_t h;

		memcpy(&h, s + 2 * i, 2);
		dst[i] = strata_bf16_to_f32(h);
	}
}

static void q8_0_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *blk = src;

	for (int64_t b = 0; b < n / STRATA_QK8_0; b++, blk += STRATA_Q8_0_BYTES) {
		uint16_t h;
		float d;

		memcpy(&h, blk, 2);
		d = strata_fp16_to_f32(h);
		for (int i = 0; i < STRATA_QK8_0; i++)
			dst[b * STRATA_QK8_0 + i] = d * (float)(int8_t)blk[2 + i];
	}
}

/* ---- from_float (weights, for model writers) ------------------------------ */

static void f32_from_float(const float *src, void *dst, int64_t n)
{
	memcpy(dst, src, (size_t)n * sizeof(float));
}

static void f16_from_float(const float *src, void *dst, int64_t n)
{
	uint8_t *d = dst;

	for (int64_t i = 0; i < n; i++) {
		uint16_t h = strata_f32_to_fp16(src[i]);

		memcpy(d + 2 * i, &h, 2);
	}
}

static void bf16_from_float(const float *src, void *dst, int64_t n)
{
	uint8_t *d = dst;

	for (int64_t i = 0; i < n; i++) {
		uint16_t h = strata_f32_to_bf16(src[i]);

		memcpy(d + 2 * i, &h, 2);
	}
}

/* ggml's quantize_row_q8_0_ref (and gguf-py's): d = amax / 127,
 * q = round-half-away(x / d). */
static void q8_0_from_float(const float *src, void *dst, int64_t n)
{
	uint8_t *blk = dst;

	for (int64_t b = 0; b < n / STRATA_QK8_0; b++, blk += STRATA_Q8_0_BYTES) {
		const float *x = src + b * STRATA_QK8_0;
		float amax = 0.0f, d, id;
		uint16_t h;

		for (int i = 0; i < STRATA_QK8_0; i++)
			amax = fmaxf(amax, fabsf(x[i]));
		d = amax / 127.0f;
		id = d != 0.0f ? 1.0f / d : 0.0f;
		h = strata_f32_to_fp16(d);
		memcpy(blk, &h, 2);
		for (int i = 0; i < STRATA_QK8_0; i++)
			blk[2 + i] = (uint8_t)(int8_t)roundf(x[i] * id);
	}
}

/* ---- tile kernels ------------------------------------------------------------ */

/* Float-activation types: convert each weight, accumulate in float. */
static float dot_row_float(uint32_t type, const uint8_t *w, const float *x,
			   int64_t k)
{
	float sum = 0.0f;

	for (int64_t i = 0; i < k; i++) {
		float wv;
		uint16_t h;

		switch (type) {
		case STRATA_TYPE_F16:
			memcpy(&h, w + 2 * i, 2);
			wv = strata_fp16_to_f32(h);
			break;
		case STRATA_TYPE_BF16:
			memcpy(&h, w + 2 * i, 2);
			wv = strata_bf16_to_f32(h);
			break;
		default:
			memcpy(&wv, w + 4 * i, 4);
			break;
		}
		sum += wv * x[i];
	}
	return sum;
}

static void mm_float(uint32_t type, const struct strata_mm_args *a)
{
	for (int64_t t = 0; t < a->nt; t++) {
		const float *x = (const float *)(a->x + t * a->x_stride);

		for (int64_t r = 0; r < a->nr; r++)
			a->y[t * a->ldy + r] =
				dot_row_float(type, a->w + r * a->w_stride, x, a->k);
	}
}

static void mm_f32(const struct strata_mm_args *a)
{
	mm_float(STRATA_TYPE_F32, a);
}

static void mm_f16(const struct strata_mm_args *a)
{
	mm_float(STRATA_TYPE_F16, a);
}

static void mm_bf16(const struct strata_mm_args *a)
{
	mm_float(STRATA_TYPE_BF16, a);
}

/* Q8_0 x Q8_0: exact int32 per block, scaled by d_w * d_x. */
static void mm_q8_0(const struct strata_mm_args *a)
{
	const int64_t nb = a->k / STRATA_QK8_0;

	for (int64_t t = 0; t < a->nt; t++) {
		const int8_t *xq = (const int8_t *)(a->x + t * a->x_stride);
		const float *xd = (const float *)(a->x + t * a->x_stride + a->k);

		for (int64_t r = 0; r < a->nr; r++) {
			const uint8_t *blk = a->w + r * a->w_stride;
			float sum = 0.0f;

			for (int64_t b = 0; b < nb; b++, blk += STRATA_Q8_0_BYTES) {
				int32_t isum = 0;
				uint16_t h;

				for (int i = 0; i < STRATA_QK8_0; i++)
					isum += (int8_t)blk[2 + i] *
						xq[b * STRATA_QK8_0 + i];
				memcpy(&h, blk, 2);
				sum += (float)isum * (strata_fp16_to_f32(h) * xd[b]);
			}
			a->y[t * a->ldy + r] = sum;
		}
	}
}

/* ---- vector helpers ----------------------------------------------------- */

static float dot_f32(const float *a, const float *b, int64_t n)
{
	float sum = 0.0f;

	for (int64_t i = 0; i < n; i++)
		sum += a[i] * b[i];
	return sum;
}

static void axpy_f32(float *y, float a, const float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] += a * x[i];
}

static void axpby_f32(float *y, float a, const float *x, float b, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = b * y[i] + a * x[i];
}

static void mul_acc_f32(float *y, const float *a, const float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] += a[i] * b[i];
}

/* Eight partial sums in double (kernels.h: strata_sumsq_f32): the order
 * every level keeps, so RMSNorm gives the same bits at each. */
static double sumsq_f32(const float *x, int64_t n)
{
	double p[8] = { 0 };
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			p[j] += (double)x[i + j] * x[i + j];
	for (; i < n; i++)
		p[0] += (double)x[i] * x[i];
	return ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
}

static void scale_mul_f32(float *y, const float *x, float s, const float *w, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = w ? x[i] * s * w[i] : x[i] * s;
}

/* The reference forms the vector levels approximate. */
static void silu_mul_f32(float *o, const float *g, const float *u, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		o[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

static void sigmoid_mul_f32(float *o, const float *x, const float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		o[i] = x[i] / (1.0f + expf(-y[i]));
}

const struct strata_kern_level strata_kern_scalar = {
	.name = "scalar",
	.q8_0_r16_mm = strata_q8_0_r16_mm_scalar,
	.q4_k_r16_mm = strata_q4_k_r16_mm_scalar,
	.q6_k_r16_mm = strata_q6_k_r16_mm_scalar,
	.iq4_nl_r16_mm = strata_iq4_nl_r16_mm_scalar,
	.act = {
		[STRATA_ACT_Q8_0] = { q8_row_bytes, q8_quantize, q8_peek },
		[STRATA_ACT_Q8_K] = { strata_q8k_row_bytes, strata_q8k_quantize,
				      strata_q8k_peek },
		[STRATA_ACT_Q8_1] = { strata_q8_1_row_bytes, strata_q8_1_quantize,
				      strata_q8_1_peek },
	},
	.type = {
		[STRATA_TYPE_F32] = { STRATA_ACT_F32, mm_f32, f32_to_float,
				      f32_from_float },
		[STRATA_TYPE_F16] = { STRATA_ACT_F32, mm_f16, f16_to_float,
				      f16_from_float },
		[STRATA_TYPE_BF16] = { STRATA_ACT_F32, mm_bf16, bf16_to_float,
				       bf16_from_float },
		[STRATA_TYPE_Q8_0] = { STRATA_ACT_Q8_0, mm_q8_0, q8_0_to_float,
				       q8_0_from_float },
		[STRATA_TYPE_Q4_0] = { STRATA_ACT_Q8_0, strata_q4_0_mm,
			strata_q4_0_to_float, strata_q4_0_from_float },
		[STRATA_TYPE_Q4_1] = { STRATA_ACT_Q8_1, strata_q4_1_mm,
			strata_q4_1_to_float, strata_q4_1_from_float },
		[STRATA_TYPE_Q5_0] = { STRATA_ACT_Q8_0, strata_q5_0_mm,
			strata_q5_0_to_float, strata_q5_0_from_float },
		[STRATA_TYPE_Q5_1] = { STRATA_ACT_Q8_1, strata_q5_1_mm,
			strata_q5_1_to_float, strata_q5_1_from_float },
		[STRATA_TYPE_IQ4_NL] = { STRATA_ACT_Q8_0, strata_iq4_nl_mm,
			strata_iq4_nl_to_float, strata_iq4_nl_from_float },
		[STRATA_TYPE_Q2_K] = { STRATA_ACT_Q8_K, strata_q2_k_mm,
			strata_q2_k_to_float, strata_q2_k_from_float },
		[STRATA_TYPE_Q3_K] = { STRATA_ACT_Q8_K, strata_q3_k_mm,
			strata_q3_k_to_float, strata_q3_k_from_float },
		[STRATA_TYPE_Q4_K] = { STRATA_ACT_Q8_K, strata_q4_k_mm,
			strata_q4_k_to_float, strata_q4_k_from_float },
		[STRATA_TYPE_Q5_K] = { STRATA_ACT_Q8_K, strata_q5_k_mm,
			strata_q5_k_to_float, strata_q5_k_from_float },
		[STRATA_TYPE_Q6_K] = { STRATA_ACT_Q8_K, strata_q6_k_mm,
			strata_q6_k_to_float, strata_q6_k_from_float },
		[STRATA_TYPE_IQ2_XS] = { STRATA_ACT_Q8_K, strata_iq2_xs_mm,
			strata_iq2_xs_to_float, strata_iq2_xs_from_float,
			strata_iq2_xs_quant_init },
		[STRATA_TYPE_IQ2_S] = { STRATA_ACT_Q8_K, strata_iq2_s_mm,
			strata_iq2_s_to_float, strata_iq2_s_from_float,
			strata_iq2_s_quant_init },
		[STRATA_TYPE_IQ3_XXS] = { STRATA_ACT_Q8_K, strata_iq3_xxs_mm,
			strata_iq3_xxs_to_float, strata_iq3_xxs_from_float,
			strata_iq3_xxs_quant_init },
		[STRATA_TYPE_IQ3_S] = { STRATA_ACT_Q8_K, strata_iq3_s_mm,
			strata_iq3_s_to_float, strata_iq3_s_from_float,
			strata_iq3_s_quant_init },
		[STRATA_TYPE_IQ1_M] = { STRATA_ACT_Q8_K, strata_iq1_m_mm,
			strata_iq1_m_to_float, strata_iq1_m_from_float,
			strata_iq1_m_quant_init },
	},
	.dot_f32 = dot_f32,
	.axpy_f32 = axpy_f32,
	.mul_acc_f32 = mul_acc_f32,
	.axpby_f32 = axpby_f32,
	.silu_mul_f32 = silu_mul_f32,
	.sigmoid_mul_f32 = sigmoid_mul_f32,
	.sumsq_f32 = sumsq_f32,
	.scale_mul_f32 = scale_mul_f32,
};
