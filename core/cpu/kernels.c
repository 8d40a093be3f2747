/*
 * kernels.c - SIMD level selection, weights repacked at load, types and
 * the vector ops.
 *
 * The arithmetic lives in the per-level tables (kernels_scalar.c,
 * kernels_avx2.c, kernels_avx512.c; see kernels_impl.h).  This file decides
 * which table runs; matmul.c cuts products into pieces for the threads.
 */
#define _GNU_SOURCE
#include "kernels.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels_impl.h"
#include "iq4_nl_r16.h"
#include "q4_k_r16.h"
#include "q6_k_r16.h"
#include "q8_0_r16.h"
#include "util/log.h"
#include "util/mem.h"

#ifdef STRATA_KERN_X86
#include <cpuid.h>
#endif

/* ---- level selection ---------------------------------------------------- */

static const struct strata_kern_level *_Atomic g_lv;
static _Atomic int g_level;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

const struct strata_kern_level *strata_kern_level_get(int level)
{
	switch (level) {
	case STRATA_SIMD_SCALAR:
		return &strata_kern_scalar;
#ifdef STRATA_KERN_X86
	case STRATA_SIMD_AVX2:
		return &strata_kern_avx2;
	case STRATA_SIMD_AVX512:
		return &strata_kern_avx512;
#endif
	default:
		return NULL;
	}
}

#ifdef STRATA_KERN_X86
/* CPUID.1:ECX.F16C; clang (14) has no __builtin_cpu_supports("f16c"). */
static int cpu_has_f16c(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

enum strata_simd strata_simd_detect(void)
{
#ifdef STRATA_KERN_X86
	__builtin_cpu_init();
	/* AVX-512 here includes VNNI (Cascade Lake, Ice Lake, Zen 4 on): the
	 * Q8 kernels are built around vpdpbusd, and the TU is compiled with
	 * -mavx512vnni, so older AVX-512 parts use the AVX2 level. */
	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
	    !cpu_has_f16c())
		return STRATA_SIMD_SCALAR;
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") &&
	    __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512vnni"))
		return STRATA_SIMD_AVX512;
	return STRATA_SIMD_AVX2;
#else
	return STRATA_SIMD_SCALAR;
#endif
}

const char *strata_simd_name(enum strata_simd level)
{
	switch (level) {
	case STRATA_SIMD_SCALAR:
		return "scalar";
	case STRATA_SIMD_AVX2:
		return "avx2";
	case STRATA_SIMD_AVX512:
		return "avx512";
	}
	return "?";
}

static void init_level(void)
{
	enum strata_simd lvl = strata_simd_detect();
	const char *cap = getenv("STRATA_SIMD");

	if (cap && *cap) {
		int c = -1;

		for (int i = STRATA_SIMD_SCALAR; i <= STRATA_SIMD_AVX512; i++)
			if (strcasecmp(cap, strata_simd_name(i)) == 0)
				c = i;
		if (c < 0)
			strata_warn("STRATA_SIMD=%s: expected scalar, avx2 or avx512; "
				    "ignored", cap);
		else if (c < (int)lvl)
			lvl = (enum strata_simd)c;
	}
	atomic_store(&g_level, (int)lvl);
	atomic_store(&g_lv, strata_kern_level_get(lvl));
}

static const struct strata_kern_level *cur_level(void)
{
	const struct strata_kern_level *lv =
		atomic_load_explicit(&g_lv, memory_order_acquire);

	if (lv)
		return lv;
	pthread_once(&g_once, init_level);
	return atomic_load(&g_lv);
}

enum strata_simd strata_simd_get(void)
{
	cur_level();
	return (enum strata_simd)atomic_load(&g_level);
}

int strata_simd_set(enum strata_simd level)
{
	const struct strata_kern_level *lv = strata_kern_level_get(level);

	if ((int)level < STRATA_SIMD_SCALAR || (int)level > STRATA_SIMD_AVX512)
		return -EINVAL;
	if (!lv || level > strata_simd_detect())
		return -ENOTSUP;
	pthread_once(&g_once, init_level);
	atomic_store(&g_level, (int)level);
	atomic_store(&g_lv, lv);
	return 0;
}

const struct strata_kern_level *strata_kern_level_for(uint32_t type)
{
	const struct strata_kern_level *lv = cur_level();

	return lv->type[type].mm ? lv : &strata_kern_scalar;
}

strata_mm_fn strata_kern_mm_for(const struct strata_kern_level *lv, const struct strata_mat *W)
{
	switch (W->layout) {
	case STRATA_LAYOUT_Q8_0_R16:
		return lv->q8_0_r16_mm;
	case STRATA_LAYOUT_Q4_K_R16:
		return lv->q4_k_r16_mm;
	case STRATA_LAYOUT_Q6_K_R16:
		return lv->q6_k_r16_mm;
	case STRATA_LAYOUT_IQ4_NL_R16:
		return lv->iq4_nl_r16_mm;
	default:
		return lv->type[W->type].mm;
	}
}

/* ---- weights repacked at load ---------------------------------------------- */

uint32_t strata_layout_r16(uint32_t type)
{
	switch (type) {
	case STRATA_TYPE_Q8_0:
		return STRATA_LAYOUT_Q8_0_R16;
	case STRATA_TYPE_Q4_K:
		return STRATA_LAYOUT_Q4_K_R16;
	case STRATA_TYPE_Q6_K:
		return STRATA_LAYOUT_Q6_K_R16;
	case STRATA_TYPE_IQ4_NL:
		return STRATA_LAYOUT_IQ4_NL_R16;
	default:
		return STRATA_LAYOUT_ROWS;
	}
}

int strata_mat_repackable(const struct strata_mat *m)
{
	if (strata_layout_r16(m->type) == STRATA_LAYOUT_ROWS || m->layout != STRATA_LAYOUT_ROWS ||
	    m->rows <= 0 || m->rows % 16 || strata_simd_get() == STRATA_SIMD_SCALAR)
		return 0;
	/* Q8_0, IQ4_NL: pairs of blocks */
	return (m->type != STRATA_TYPE_Q8_0 && m->type != STRATA_TYPE_IQ4_NL) || m->cols % 64 == 0;
}

void strata_mat_repack(const struct strata_mat *m, int64_t g0, int64_t g1, void *dst)
{
	const size_t group = 16 * m->row_bytes;

	for (int64_t g = g0; g < g1; g++) {
		const uint8_t *w[16];
		uint8_t *o = (uint8_t *)dst + (size_t)g * group;

		for (int j = 0; j < 16; j++)
			w[j] = (const uint8_t *)m->data + (size_t)(g * 16 + j) * m->row_bytes;
		if (m->type == STRATA_TYPE_Q8_0)
			strata_q8_0_r16_pack_blocks(w, 0, (int)(m->cols / STRATA_QK8_0), o);
		else if (m->type == STRATA_TYPE_Q4_K)
			strata_q4_k_r16_pack(w, m->cols / STRATA_QK_K, o);
		else if (m->type == STRATA_TYPE_IQ4_NL)
			strata_iq4_nl_r16_pack(w, m->cols / 32, o);
		else
			strata_q6_k_r16_pack(w, m->cols / STRATA_QK_K, o);
	}
}

void strata_mat_repacked(const struct strata_mat *m, const void *dst, struct strata_mat *out)
{
	*out = *m;
	out->data = dst;
	out->layout = strata_layout_r16(m->type);
}

/* ---- types, dequantisation ------------------------------------------------ */

int strata_type_supported(uint32_t type)
{
	return type < STRATA_TYPE_COUNT && strata_kern_scalar.type[type].mm;
}

int strata_mat_init(struct strata_mat *m, uint32_t type, int64_t rows,
		    int64_t cols, const void *data)
{
	size_t rb;

	if (!strata_type_supported(type) || rows < 0 || cols <= 0)
		return -EINVAL;
	rb = strata_type_row_bytes(type, cols);
	if (rb == 0)
		return -EINVAL;
	m->type = type;
	m->rows = rows;
	m->cols = cols;
	m->row_bytes = rb;
	m->data = data;
	m->layout = STRATA_LAYOUT_ROWS;
	return 0;
}

void strata_dequant(uint32_t type, const void *src, float *dst, int64_t n)
{
	const struct strata_kern_level *lv;

	if (!strata_type_supported(type) || n % strata_type_block(type)) {
		/* A caller bug; NaNs make it visible downstream. */
		strata_error("dequant: %s, %lld values: unsupported type or not a "
			     "multiple of its block", strata_type_name(type),
			     (long long)n);
		for (int64_t i = 0; i < n; i++)
			dst[i] = NAN;
		return;
	}
	lv = cur_level();
	if (!lv->type[type].to_float)
		lv = &strata_kern_scalar;
	lv->type[type].to_float(src, dst, n);
}

int64_t strata_quantize(uint32_t type, const float *src, void *dst, int64_t n)
{
	const struct strata_type_ops *to;

	if (type >= STRATA_TYPE_COUNT || !strata_kern_scalar.type[type].from_float)
		return -ENOTSUP;
	if (n < 0 || n % strata_type_block(type))
		return -EINVAL;
	if (n == 0)
		return 0; /* a probe: before any table is built */
	to = &strata_kern_scalar.type[type];
	if (to->from_float_init) {
		int rc = to->from_float_init();

		if (rc)
			return rc;
	}
	to->from_float(src, dst, n);
	return (int64_t)strata_type_row_bytes(type, n);
}

void strata_mat_get_row(const struct strata_mat *m, int64_t r, float *dst)
{
	if (m->layout == STRATA_LAYOUT_Q8_0_R16) {
		strata_q8_0_r16_get_row(m, r, dst);
		return;
	}
	if (m->layout == STRATA_LAYOUT_Q4_K_R16) {
		strata_q4_k_r16_get_row(m, r, dst);
		return;
	}
	if (m->layout == STRATA_LAYOUT_Q6_K_R16) {
		strata_q6_k_r16_get_row(m, r, dst);
		return;
	}
	if (m->layout == STRATA_LAYOUT_IQ4_NL_R16) {
		strata_iq4_nl_r16_get_row(m, r, dst);
		return;
	}
	strata_dequant(m->type, (const uint8_t *)m->data + (size_t)r * m->row_bytes,
		       dst, m->cols);
}

/* ---- vectors ---------------------------------------------------------------- */

float strata_dot_f32(const float *a, const float *b, int64_t n)
{
	return cur_level()->dot_f32(a, b, n);
}

void strata_axpy_f32(float *y, float a, const float *x, int64_t n)
{
	cur_level()->axpy_f32(y, a, x, n);
}

void strata_axpby_f32(float *y, float a, const float *x, float b, int64_t n)
{
	cur_level()->axpby_f32(y, a, x, b, n);
}

void strata_mul_acc_f32(float *y, const float *a, const float *b, int64_t n)
{
	cur_level()->mul_acc_f32(y, a, b, n);
}

void strata_silu_mul_f32(float *o, const float *g, const float *u, int64_t n)
{
	cur_level()->silu_mul_f32(o, g, u, n);
}

double strata_sumsq_f32(const float *x, int64_t n)
{
	return cur_level()->sumsq_f32(x, n);
}

void strata_scale_mul_f32(float *y, const float *x, float s, const float *w, int64_t n)
{
	cur_level()->scale_mul_f32(y, x, s, w, n);
}

void strata_sigmoid_mul_f32(float *o, const float *x, const float *y, int64_t n)
{
	cur_level()->sigmoid_mul_f32(o, x, y, n);
}
