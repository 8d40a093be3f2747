/*
 * quants_k.c - the K-quants (Q2_K .. Q6_K) at the scalar level, and the
 * Q8_K activation format they (and the 256-value IQ types) are computed
 * against.
 *
 * Every 256-value super-block is first decoded to 256 small integers q and,
 * per 16 values, an integer scale sc and min m: a weight is
 * (d * sc) * q - dmin * m, evaluated in that order, which is ggml's
 * dequantisation bit for bit (Q3_K and Q6_K have no min: dmin = m = 0, and
 * x - 0 is x, signed zeros included).  The dot product with Q8_K
 * activations is then d * dx * sum(sc * sum(q x)) - dmin * dx * sum(m * bsum),
 * all sums exact in int32.
 */
#include <math.h>
#include <string.h>

#include "quants.h"

#define QK STRATA_QK_K

struct kdec {
	float d, dmin;
	int16_t sc[16], m[16];
	int8_t q[QK];
};

/* ---- decoding --------------------------------------------------------------- */

/* Q4_K / Q5_K: eight 6-bit scales and mins packed in 12 bytes. */
static void scale_min_k4(const uint8_t *s, int j, int *sc, int *m)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*m = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 0xf) | (s[j - 4] >> 6) << 4;
		*m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
	}
}

/* Layout: scales[16] (4-bit scale | 4-bit min << 4), qs[64], d, dmin. */
static void dec_q2_k(const uint8_t *b, struct kdec *o)
{
	const uint8_t *qs = b + 16;

	o->d = strata_load_fp16(b + 80);
	o->dmin = strata_load_fp16(b + 82);
	for (int g = 0; g < 16; g++) {
		o->sc[g] = b[g] & 0xf;
		o->m[g] = b[g] >> 4;
	}
	for (int n = 0; n < 2; n++)
		for (int j = 0; j < 4; j++)
			for (int l = 0; l < 32; l++)
				o->q[128 * n + 32 * j + l] =
					(int8_t)((qs[32 * n + l] >> (2 * j)) & 3);
}

/* Q3_K's sixteen 6-bit scales: low nibbles in bytes 0..7, the top two bits
 * in bytes 8..11. */
static int q3k_scale(const uint8_t *s, int g)
{
	int lo = g < 8 ? s[g] & 0xf : s[g - 8] >> 4;
	int hi = (s[8 + g % 4] >> (2 * (g / 4))) & 3;

	return (lo | hi << 4) - 32;
}

/* Layout: hmask[32], qs[64], scales[12], d. */
static void dec_q3_k(const uint8_t *b, struct kdec *o)
{
	const uint8_t *hm = b, *qs = b + 32;

	o->d = strata_load_fp16(b + 108);
	o->dmin = 0.0f;
	for (int g = 0; g < 16; g++) {
		o->sc[g] = (int16_t)q3k_scale(b + 96, g);
		o->m[g] = 0;
	}
	for (int n = 0; n < 2; n++)
		for (int j = 0; j < 4; j++)
			for (int l = 0; l < 32; l++) {
				int low = (qs[32 * n + l] >> (2 * j)) & 3;
				int high = (hm[l] >> (4 * n + j)) & 1;

				o->q[128 * n + 32 * j + l] = (int8_t)(low - (high ? 0 : 4));
			}
}

/* Layout: d, dmin, scales[12], qs[128]. */
static void dec_q4_k(const uint8_t *b, struct kdec *o)
{
	const uint8_t *qs = b + 16;

	o->d = strata_load_fp16(b);
	o->dmin = strata_load_fp16(b + 2);
	for (int s = 0; s < 8; s++) {
		int sc, m;

		scale_min_k4(b + 4, s, &sc, &m);
		o->sc[2 * s] = o->sc[2 * s + 1] = (int16_t)sc;
		o->m[2 * s] = o->m[2 * s + 1] = (int16_t)m;
	}
	for (int j = 0; j < 4; j++)
		for (int l = 0; l < 32; l++) {
			o->q[64 * j + l] = (int8_t)(qs[32 * j + l] & 0xf);
			o->q[64 * j + 32 + l] = (int8_t)(qs[32 * j + l] >> 4);
		}
}

/* Layout: d, dmin, scales[12], qh[32], qs[128]. */
static void dec_q5_k(const uint8_t *b, struct kdec *o)
{
	const uint8_t *qh = b + 16, *qs = b + 48;

	dec_q4_k(b, o); /* same scales; q fixed up below */
	for (int j = 0; j < 4; j++)
		for (int l = 0; l < 32; l++) {
			o->q[64 * j + l] = (int8_t)((qs[32 * j + l] & 0xf) |
						    ((qh[l] >> (2 * j)) & 1) << 4);
			o->q[64 * j + 32 + l] = (int8_t)((qs[32 * j + l] >> 4) |
							 ((qh[l] >> (2 * j + 1)) & 1) << 4);
		}
}

/* Layout: ql[128], qh[64], scales[16] (int8), d. */
static void dec_q6_k(const uint8_t *b, struct kdec *o)
{
	o->d = strata_load_fp16(b + 208);
	o->dmin = 0.0f;
	for (int g = 0; g < 16; g++) {
		o->sc[g] = (int8_t)b[192 + g];
		o->m[g] = 0;
	}
	for (int n = 0; n < 2; n++) {
		const uint8_t *ql = b + 64 * n, *qh = b + 128 + 32 * n;
		int8_t *q = o->q + 128 * n;

		for (int l = 0; l < 32; l++) {
			q[l] = (int8_t)(((ql[l] & 0xf) | ((qh[l] >> 0) & 3) << 4) - 32);
			q[l + 32] = (int8_t)(((ql[l + 32] & 0xf) | ((qh[l] >> 2) & 3) << 4) - 32);
			q[l + 64] = (int8_t)(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
			q[l + 96] = (int8_t)(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
		}
	}
}

typedef void (*kdec_fn)(const uint8_t *b, struct kdec *o);

static void to_float(kdec_fn dec, size_t bbytes, const void *src, float *dst,
		     int64_t n)
{
	const uint8_t *b = src;
	struct kdec o;

	for (int64_t i = 0; i < n / QK; i++, b += bbytes, dst += QK) {
		dec(b, &o);
		for (int g = 0; g < 16; g++) {
			const float dl = o.d * (float)o.sc[g];
			const float ml = o.dmin * (float)o.m[g];

			for (int l = 0; l < 16; l++)
				dst[16 * g + l] = dl * (float)o.q[16 * g + l] - ml;
		}
	}
}

/* ---- tile kernel ----------------------------------------------------------- */

/* Rows outer, super-blocks, tokens inner: each block is decoded once. */
static void mm_k(kdec_fn dec, size_t bbytes, const struct strata_mm_args *a)
{
	const int64_t nb = a->k / QK;

	for (int64_t r = 0; r < a->nr; r++) {
		const uint8_t *b = a->w + r * a->w_stride;

		for (int64_t t = 0; t < a->nt; t++)
			a->y[t * a->ldy + r] = 0.0f;
		for (int64_t i = 0; i < nb; i++, b += bbytes) {
			struct kdec o;

			dec(b, &o);
			for (int64_t t = 0; t < a->nt; t++) {
				const uint8_t *x = a->x + t * a->x_stride;
				const int8_t *xq = STRATA_Q8K_QS(x) + i * QK;
				const int16_t *bs = STRATA_Q8K_BSUMS(x, a->k) + i * 16;
				const float dx = STRATA_Q8K_D(x, a->k)[i];
				int32_t isum = 0, msum = 0;

				for (int g = 0; g < 16; g++) {
					int32_t s = 0;

					for (int l = 0; l < 16; l++)
						s += o.q[16 * g + l] * xq[16 * g + l];
					isum += o.sc[g] * s;
					msum += o.m[g] * bs[g];
				}
				a->y[t * a->ldy + r] += (o.d * dx) * (float)isum -
							(o.dmin * dx) * (float)msum;
			}
		}
	}
}

/* ---- reference quantisers (ggml's quantize_row_*_ref, no importance matrix) ---- */

#define GROUP_MAX_EPS 1e-15f

/*
 * Round half to even for |f| < 2^22, as ggml's nearest_int: adding 1.5 * 2^23
 * leaves the rounded integer in the low mantissa bits.  (rintf would do,
 * but without SSE4.1 it is a libm call, and the quantisers call this
 * tens of times per value.)
 */
static int nearest_int(float f)
{
	float v = f + 12582912.0f;
	int32_t i;

	memcpy(&i, &v, 4);
	return (i & 0x007fffff) - 0x00400000;
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * ggml's make_qkx2_quants, for NB sub-blocks of N values at once: each
 * sub-block's x ~ scale * L + min with L in [0, nmax] and min <= 0, trying
 * nstep+1 trial scales (rmin + rdelta*is over the range) and keeping the
 * weighted least-squares fit with the smallest error.  The arithmetic of
 * each sub-block is ggml's, in ggml's order (the files must come out the
 * same); the sub-blocks only run side by side, in the innermost loops,
 * because each one's sums are a chain of dependent float additions that
 * would otherwise leave the CPU idle (Q2_K 2.5x, Q4_K/Q5_K 1.2x faster;
 * they are now bound by the ~25 scalar operations per value and trial).
 *
 * x, w and L are N x NB, value i of sub-block s at [i * NB + s].  Stores
 * scale[s] and the_min[s] = -min.
 */
static inline __attribute__((always_inline)) void
make_qkx2(const int NB, const int N, int nmax, const float *x, const float *w,
	  uint8_t *L, float *scale, float *the_min, float rmin, float rdelta,
	  int nstep, int use_mad)
{
	float min[NB], max[NB], sum_w[NB], sum_x[NB], best[NB], iscale[NB];
	float sum_l[NB], sum_l2[NB], sum_xl[NB], err[NB], tsc[NB], tmn[NB];
	uint8_t Laux[N * NB];
	int flat[NB];

	for (int s = 0; s < NB; s++) {
		min[s] = max[s] = x[s];
		sum_w[s] = w[s];
		sum_x[s] = w[s] * x[s];
	}
	for (int i = 1; i < N; i++)
		for (int s = 0; s < NB; s++) {
			const float xi = x[i * NB + s], wi = w[i * NB + s];

			min[s] = xi < min[s] ? xi : min[s];
			max[s] = xi > max[s] ? xi : max[s];
			sum_w[s] += wi;
			sum_x[s] += wi * xi;
		}
	for (int s = 0; s < NB; s++) {
		if (min[s] > 0)
			min[s] = 0;
		/* max == min (a flat sub-block) gives inf and NaN below; such
		 * a sub-block never adopts a trial and is set at the end */
		flat[s] = max[s] == min[s];
		iscale[s] = (float)nmax / (max[s] - min[s]);
		scale[s] = 1 / iscale[s];
		best[s] = 0.0f;
	}
	for (int i = 0; i < N; i++)
		for (int s = 0; s < NB; s++) {
			const int j = i * NB + s;
			float diff;

			L[j] = (uint8_t)clampi(nearest_int(iscale[s] * (x[j] - min[s])), 0, nmax);
			diff = scale[s] * (float)L[j] + min[s] - x[j];
			best[s] += w[j] * (use_mad ? fabsf(diff) : diff * diff);
		}
	for (int is = 0; is <= nstep; is++) {
		for (int s = 0; s < NB; s++) {
			iscale[s] = (rmin + rdelta * (float)is + (float)nmax) / (max[s] - min[s]);
			sum_l[s] = sum_l2[s] = sum_xl[s] = err[s] = 0.0f;
		}
		for (int i = 0; i < N; i++)
			for (int s = 0; s < NB; s++) {
				const int j = i * NB + s;
				const int l = clampi(nearest_int(iscale[s] * (x[j] - min[s])),
						     0, nmax);

				Laux[j] = (uint8_t)l;
				sum_l[s] += w[j] * (float)l;
				sum_l2[s] += w[j] * (float)l * (float)l;
				sum_xl[s] += w[j] * (float)l * x[j];
			}
		for (int s = 0; s < NB; s++) {
			const float D = sum_w[s] * sum_l2[s] - sum_l[s] * sum_l[s];

			tsc[s] = (sum_w[s] * sum_xl[s] - sum_x[s] * sum_l[s]) / D;
			tmn[s] = (sum_l2[s] * sum_x[s] - sum_l[s] * sum_xl[s]) / D;
			if (tmn[s] > 0) {
				tmn[s] = 0;
				tsc[s] = sum_xl[s] / sum_l2[s];
			}
			if (!(D > 0))
				tsc[s] = NAN; /* not a candidate */
		}
		for (int i = 0; i < N; i++)
			for (int s = 0; s < NB; s++) {
				const int j = i * NB + s;
				float diff = tsc[s] * (float)Laux[j] + tmn[s] - x[j];

				err[s] += w[j] * (use_mad ? fabsf(diff) : diff * diff);
			}
		for (int s = 0; s < NB; s++)
			if (err[s] < best[s]) { /* false for NaN */
				for (int i = 0; i < N; i++)
					L[i * NB + s] = Laux[i * NB + s];
				best[s] = err[s];
				scale[s] = tsc[s];
				min[s] = tmn[s];
			}
	}
	for (int s = 0; s < NB; s++) {
		if (flat[s]) {
			for (int i = 0; i < N; i++)
				L[i * NB + s] = 0;
			scale[s] = 0.0f;
		}
		the_min[s] = -min[s];
	}
}

/* v[i * nb + s] = u[s * n + i] and back: sub-blocks side by side. */
static void to_side(const float *u, float *v, int nb, int n)
{
	for (int s = 0; s < nb; s++)
		for (int i = 0; i < n; i++)
			v[i * nb + s] = u[s * n + i];
}

/* The value of largest magnitude (the first on ties) and that magnitude. */
static float signed_absmax(const float *x, int n, float *amax)
{
	float max = 0.0f;

	*amax = 0.0f;
	for (int i = 0; i < n; i++)
		if (fabsf(x[i]) > *amax) {
			*amax = fabsf(x[i]);
			max = x[i];
		}
	return max;
}

/*
 * ggml's make_q3_quants with do_rmse: L in [-nmax, nmax) by rounding, then
 * up to five passes that move single values where that improves the
 * x^2-weighted fit.  Stores L + nmax; returns the fitted scale.
 */
static float make_q3(int n, int nmax, const float *x, int8_t *L)
{
	float amax, max = signed_absmax(x, n, &amax), iscale;
	float sumlx = 0, suml2 = 0;

	if (amax < GROUP_MAX_EPS) {
		memset(L, 0, (size_t)n);
		return 0.0f;
	}
	iscale = (float)-nmax / max;
	for (int i = 0; i < n; i++) {
		int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
		float w = x[i] * x[i];

		L[i] = (int8_t)l;
		sumlx += w * x[i] * (float)l;
		suml2 += w * (float)l * (float)l;
	}
	for (int itry = 0; itry < 5; itry++) {
		int changed = 0;

		for (int i = 0; i < n; i++) {
			float w = x[i] * x[i];
			float slx = sumlx - w * x[i] * (float)L[i], sl2;
			int nl;

			if (!(slx > 0))
				continue;
			sl2 = suml2 - w * (float)L[i] * (float)L[i];
			nl = clampi(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
			if (nl == L[i])
				continue;
			slx += w * x[i] * (float)nl;
			sl2 += w * (float)nl * (float)nl;
			if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
				L[i] = (int8_t)nl;
				sumlx = slx;
				suml2 = sl2;
				changed++;
			}
		}
		if (!changed)
			break;
	}
	for (int i = 0; i < n; i++)
		L[i] = (int8_t)(L[i] + nmax);
	return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* x^2-weighted sums of the fit for scale 1/iscale; L (when given) gets
 * l + nmax. */
static void qx_sums(int n, int nmax, const float *x, float iscale, int8_t *L,
		    float *sumlx, float *suml2)
{
	float slx = 0, sl2 = 0;

	for (int i = 0; i < n; i++) {
		int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
		float w = x[i] * x[i];

		if (L)
			L[i] = (int8_t)(l + nmax);
		slx += w * x[i] * (float)l;
		sl2 += w * (float)l * (float)l;
	}
	*sumlx = slx;
	*suml2 = sl2;
}

/* ggml's make_qx_quants with rmse_type 1 and no importance: 19 trial
 * scales around -max/nmax, best x^2-weighted least squares. */
static float make_qx(int n, int nmax, const float *x, int8_t *L)
{
	float amax, max = signed_absmax(x, n, &amax), sumlx, suml2, scale, best;

	if (amax < GROUP_MAX_EPS) {
		memset(L, 0, (size_t)n);
		return 0.0f;
	}
	qx_sums(n, nmax, x, (float)-nmax / max, L, &sumlx, &suml2);
	scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
	best = scale * sumlx;
	for (int is = -9; is <= 9; is++) {
		float iscale = -((float)nmax + 0.1f * (float)is) / max;

		if (is == 0)
			continue;
		qx_sums(n, nmax, x, iscale, NULL, &sumlx, &suml2);
		if (suml2 > 0 && sumlx * sumlx > best * suml2) {
			qx_sums(n, nmax, x, iscale, L, &sumlx, &suml2);
			scale = sumlx / suml2;
			best = scale * sumlx;
		}
	}
	return scale;
}

/* Four 2-bit values per byte, strided by 32 within each 128 (Q2_K, Q3_K). */
static void pack_2bit(const uint8_t *L, uint8_t *qs)
{
	for (int j = 0; j < QK; j += 128)
		for (int l = 0; l < 32; l++)
			qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 |
						  L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

static void q2_k_block(const float *x, uint8_t *b)
{
	uint8_t L[QK], Lt[QK], *sc = b;
	float xt[QK], wt[QK], scales[16], mins[16], max_scale = 0, max_min = 0, d, dm;

	to_side(x, xt, 16, 16);
	for (int i = 0; i < QK; i++)
		wt[i] = fabsf(xt[i]);
	make_qkx2(16, 16, 3, xt, wt, Lt, scales, mins, -0.5f, 0.1f, 15, 1);
	for (int j = 0; j < 16; j++) {
		for (int l = 0; l < 16; l++)
			L[16 * j + l] = Lt[l * 16 + j];
		max_scale = scales[j] > max_scale ? scales[j] : max_scale;
		max_min = mins[j] > max_min ? mins[j] : max_min;
	}
	memset(sc, 0, 16);
	strata_store_fp16(b + 80, max_scale > 0 ? max_scale / 15.0f : 0.0f);
	strata_store_fp16(b + 82, max_min > 0 ? max_min / 15.0f : 0.0f);
	for (int j = 0; j < 16; j++) {
		if (max_scale > 0)
			sc[j] = (uint8_t)nearest_int(15.0f / max_scale * scales[j]);
		if (max_min > 0)
			sc[j] |= (uint8_t)(nearest_int(15.0f / max_min * mins[j]) << 4);
	}
	d = strata_load_fp16(b + 80);
	dm = strata_load_fp16(b + 82);
	for (int j = 0; j < 16; j++) {
		const float dl = d * (float)(sc[j] & 0xf), ml = dm * (float)(sc[j] >> 4);

		if (dl == 0.0f)
			continue;
		for (int l = 0; l < 16; l++)
			L[16 * j + l] = (uint8_t)clampi(nearest_int((x[16 * j + l] + ml) / dl),
							0, 3);
	}
	pack_2bit(L, b + 16);
}

static void q3_k_block(const float *x, uint8_t *b)
{
	int8_t L[QK];
	uint8_t *s = b + 96;
	float scales[16], amax = 0, max_scale = 0, d;

	for (int j = 0; j < 16; j++) {
		scales[j] = make_q3(16, 4, x + 16 * j, L + 16 * j);
		if (fabsf(scales[j]) > amax) {
			amax = fabsf(scales[j]);
			max_scale = scales[j];
		}
	}
	memset(s, 0, 12);
	if (max_scale != 0.0f) {
		float iscale = -32.0f / max_scale;

		for (int j = 0; j < 16; j++) {
			int l = clampi((int8_t)nearest_int(iscale * scales[j]), -32, 31) + 32;

			if (j < 8)
				s[j] = (uint8_t)(l & 0xf);
			else
				s[j - 8] |= (uint8_t)((l & 0xf) << 4);
			s[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
		}
		strata_store_fp16(b + 108, 1 / iscale);
	} else {
		strata_store_fp16(b + 108, 0.0f);
	}
	d = strata_load_fp16(b + 108);
	for (int j = 0; j < 16; j++) {
		const float dl = d * (float)q3k_scale(s, j);

		if (dl == 0.0f)
			continue;
		for (int l = 0; l < 16; l++)
			L[16 * j + l] = (int8_t)(clampi(nearest_int(x[16 * j + l] / dl),
							-4, 3) + 4);
	}
	/* High bit of value j goes to hmask[j % 32], bit j / 32. */
	memset(b, 0, 32);
	for (int j = 0; j < QK; j++)
		if (L[j] > 3) {
			b[j % 32] |= (uint8_t)(1 << (j / 32));
			L[j] = (int8_t)(L[j] - 4);
		}
	pack_2bit((const uint8_t *)L, b + 32);
}

/*
 * Q4_K and Q5_K: per 32 values a make_qkx2 fit weighted by rms + |x|, the
 * eight scales and mins quantised to 6 bits against their maxima, then the
 * values re-rounded against the stored scales.  Fills L (0..nmax).
 */
static void q45_k_scales(const float *x, uint8_t *b, uint8_t *L, int nmax)
{
	uint8_t *s = b + 4, Lt[QK];
	float w[QK], xt[QK], wt[QK], scales[8], mins[8], max_scale = 0, max_min = 0;
	float inv_scale, inv_min, d, dmin;
	const float rmin = nmax == 15 ? -1.0f : -0.5f;
	const int nstep = nmax == 15 ? 20 : 15;

	for (int j = 0; j < 8; j++) {
		float sum_x2 = 0, av_x;

		for (int l = 0; l < 32; l++)
			sum_x2 += x[32 * j + l] * x[32 * j + l];
		av_x = sqrtf(sum_x2 / 32);
		for (int l = 0; l < 32; l++)
			w[32 * j + l] = av_x + fabsf(x[32 * j + l]);
	}
	to_side(x, xt, 8, 32);
	to_side(w, wt, 8, 32);
	make_qkx2(8, 32, nmax, xt, wt, Lt, scales, mins, rmin, 0.1f, nstep, 0);
	for (int j = 0; j < 8; j++) {
		for (int l = 0; l < 32; l++)
			L[32 * j + l] = Lt[l * 8 + j];
		max_scale = scales[j] > max_scale ? scales[j] : max_scale;
		max_min = mins[j] > max_min ? mins[j] : max_min;
	}
	inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
	inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
	for (int j = 0; j < 8; j++) {
		uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
		uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);

		ls = ls < 63 ? ls : 63;
		lm = lm < 63 ? lm : 63;
		if (j < 4) {
			s[j] = ls;
			s[j + 4] = lm;
		} else {
			s[j + 4] = (uint8_t)((ls & 0xf) | (lm & 0xf) << 4);
			s[j - 4] |= (uint8_t)((ls >> 4) << 6);
			s[j] |= (uint8_t)((lm >> 4) << 6);
		}
	}
	strata_store_fp16(b, max_scale / 63.0f);
	strata_store_fp16(b + 2, max_min / 63.0f);
	d = strata_load_fp16(b);
	dmin = strata_load_fp16(b + 2);
	for (int j = 0; j < 8; j++) {
		int sc, m;
		float dl, ml;

		scale_min_k4(s, j, &sc, &m);
		dl = d * (float)sc;
		if (dl == 0.0f)
			continue;
		ml = dmin * (float)m;
		for (int l = 0; l < 32; l++)
			L[32 * j + l] = (uint8_t)clampi(
				nearest_int((x[32 * j + l] + ml) / dl), 0, nmax);
	}
}

static void q4_k_block(const float *x, uint8_t *b)
{
	uint8_t L[QK], *qs = b + 16;

	q45_k_scales(x, b, L, 15);
	for (int j = 0; j < 4; j++)
		for (int l = 0; l < 32; l++)
			qs[32 * j + l] = (uint8_t)(L[64 * j + l] | L[64 * j + 32 + l] << 4);
}

static void q5_k_block(const float *x, uint8_t *b)
{
	uint8_t L[QK], *qh = b + 16, *qs = b + 48;

	q45_k_scales(x, b, L, 31);
	memset(qh, 0, 32);
	for (int j = 0; j < 4; j++)
		for (int l = 0; l < 32; l++) {
			int lo = L[64 * j + l], hi = L[64 * j + 32 + l];

			qh[l] |= (uint8_t)((lo >> 4) << (2 * j) | (hi >> 4) << (2 * j + 1));
			qs[32 * j + l] = (uint8_t)((lo & 0xf) | (hi & 0xf) << 4);
		}
}

static void q6_k_block(const float *x, uint8_t *b)
{
	int8_t L[QK], *sc = (int8_t *)(b + 192);
	float scales[16], amax = 0, max_scale = 0, iscale, d;

	for (int j = 0; j < 16; j++) {
		scales[j] = make_qx(16, 32, x + 16 * j, L + 16 * j);
		if (fabsf(scales[j]) > amax) {
			amax = fabsf(scales[j]);
			max_scale = scales[j];
		}
	}
	if (amax < GROUP_MAX_EPS) {
		memset(b, 0, STRATA_Q6_K_BYTES);
		return;
	}
	iscale = -128.0f / max_scale;
	strata_store_fp16(b + 208, 1 / iscale);
	for (int j = 0; j < 16; j++) {
		int l = nearest_int(iscale * scales[j]);

		sc[j] = (int8_t)(l < 127 ? l : 127);
	}
	d = strata_load_fp16(b + 208);
	for (int j = 0; j < 16; j++) {
		const float dl = d * (float)sc[j];

		if (dl == 0.0f)
			continue;
		for (int l = 0; l < 16; l++)
			L[16 * j + l] = (int8_t)(clampi(nearest_int(x[16 * j + l] / dl),
							-32, 31) + 32);
	}
	for (int n = 0; n < 2; n++) {
		const int8_t *Ln = L + 128 * n;
		uint8_t *ql = b + 64 * n, *qh = b + 128 + 32 * n;

		for (int l = 0; l < 32; l++) {
			ql[l] = (uint8_t)((Ln[l] & 0xf) | (Ln[l + 64] & 0xf) << 4);
			ql[l + 32] = (uint8_t)((Ln[l + 32] & 0xf) | (Ln[l + 96] & 0xf) << 4);
			qh[l] = (uint8_t)(Ln[l] >> 4 | (Ln[l + 32] >> 4) << 2 |
					  (Ln[l + 64] >> 4) << 4 | (Ln[l + 96] >> 4) << 6);
		}
	}
}

/* ---- exported entries ----------------------------------------------------------- */

#define K_TYPE(t, bytes)                                                      \
	void strata_##t##_to_float(const void *src, float *dst, int64_t n)    \
	{                                                                     \
		to_float(dec_##t, bytes, src, dst, n);                        \
	}                                                                     \
	void strata_##t##_mm(const struct strata_mm_args *a)                  \
	{                                                                     \
		mm_k(dec_##t, bytes, a);                                      \
	}                                                                     \
	void strata_##t##_from_float(const float *src, void *dst, int64_t n)  \
	{                                                                     \
		uint8_t *b = dst;                                             \
		for (int64_t i = 0; i < n / QK; i++, b += bytes)              \
			t##_block(src + i * QK, b);                           \
	}

K_TYPE(q2_k, STRATA_Q2_K_BYTES)
K_TYPE(q3_k, STRATA_Q3_K_BYTES)
K_TYPE(q4_k, STRATA_Q4_K_BYTES)
K_TYPE(q5_k, STRATA_Q5_K_BYTES)
K_TYPE(q6_k, STRATA_Q6_K_BYTES)

/* ---- Q8_K activations ------------------------------------------------------ */

size_t strata_q8k_row_bytes(int64_t k)
{
	return STRATA_Q8K_ROW_BYTES(k);
}

/* ggml's quantize_row_q8_K: the value of largest magnitude maps to -127. */
void strata_q8k_quantize(const float *x, void *dst, int64_t k)
{
	int8_t *qs = dst;
	int16_t *bsums = (int16_t *)(qs + k);
	float *ds = (float *)((uint8_t *)dst + k + k / 8);

	for (int64_t b = 0; b < k / QK; b++) {
		const float *xb = x + b * QK;
		int8_t *q = qs + b * QK;
		float amax, max = signed_absmax(xb, QK, &amax), iscale;

		if (amax == 0.0f) {
			ds[b] = 0.0f;
			memset(q, 0, QK);
			memset(bsums + b * 16, 0, 16 * sizeof(int16_t));
			continue;
		}
		iscale = -127.0f / max;
		for (int i = 0; i < QK; i++) {
			int v = nearest_int(iscale * xb[i]);

			q[i] = (int8_t)(v < 127 ? v : 127); /* |v| <= 128: exact */
		}
		for (int j = 0; j < 16; j++) {
			int s = 0;

			for (int i = 0; i < 16; i++)
				s += q[16 * j + i];
			bsums[b * 16 + j] = (int16_t)s;
		}
		ds[b] = 1 / iscale;
	}
}

void strata_q8k_peek(const void *row, int64_t k, int64_t i, int8_t *q, float *d)
{
	*q = STRATA_Q8K_QS(row)[i];
	*d = STRATA_Q8K_D(row, k)[i / QK];
}
