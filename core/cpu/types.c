#include "types.h"

#include <strings.h>

struct type_info {
	const char *name;
	uint32_t block;
	uint32_t bytes;
};

/* Block sizes and bytes per block are GGUF's (ggml's) layouts. */
static const struct type_info g_types[STRATA_TYPE_COUNT] = {
	[STRATA_TYPE_F32] = { "F32", 1, 4 },
	[STRATA_TYPE_F16] = { "F16", 1, 2 },
	[STRATA_TYPE_Q4_0] = { "Q4_0", 32, 18 },
	[STRATA_TYPE_Q4_1] = { "Q4_1", 32, 20 },
	[STRATA_TYPE_Q5_0] = { "Q5_0", 32, 22 },
	[STRATA_TYPE_Q5_1] = { "Q5_1", 32, 24 },
	[STRATA_TYPE_Q8_0] = { "Q8_0", 32, 34 },
	[STRATA_TYPE_Q8_1] = { "Q8_1", 32, 36 },
	[STRATA_TYPE_Q2_K] = { "Q2_K", 256, 84 },
	[STRATA_TYPE_Q3_K] = { "Q3_K", 256, 110 },
	[STRATA_TYPE_Q4_K] = { "Q4_K", 256, 144 },
	[STRATA_TYPE_Q5_K] = { "Q5_K", 256, 176 },
	[STRATA_TYPE_Q6_K] = { "Q6_K", 256, 210 },
	[STRATA_TYPE_Q8_K] = { "Q8_K", 256, 292 },
	[STRATA_TYPE_IQ2_XXS] = { "IQ2_XXS", 256, 66 },
	[STRATA_TYPE_IQ2_XS] = { "IQ2_XS", 256, 74 },
	[STRATA_TYPE_IQ3_XXS] = { "IQ3_XXS", 256, 98 },
	[STRATA_TYPE_IQ1_S] = { "IQ1_S", 256, 50 },
	[STRATA_TYPE_IQ4_NL] = { "IQ4_NL", 32, 18 },
	[STRATA_TYPE_IQ3_S] = { "IQ3_S", 256, 110 },
	[STRATA_TYPE_IQ2_S] = { "IQ2_S", 256, 82 },
	[STRATA_TYPE_IQ4_XS] = { "IQ4_XS", 256, 136 },
	[STRATA_TYPE_I8] = { "I8", 1, 1 },
	[STRATA_TYPE_I16] = { "I16", 1, 2 },
	[STRATA_TYPE_I32] = { "I32", 1, 4 },
	[STRATA_TYPE_I64] = { "I64", 1, 8 },
	[STRATA_TYPE_F64] = { "F64", 1, 8 },
	[STRATA_TYPE_IQ1_M] = { "IQ1_M", 256, 56 },
	[STRATA_TYPE_BF16] = { "BF16", 1, 2 },
};

const char *strata_type_name(uint32_t type)
{
	if (type >= STRATA_TYPE_COUNT || !g_types[type].name)
		return "?";
	return g_types[type].name;
}

uint32_t strata_type_block(uint32_t type)
{
	return type < STRATA_TYPE_COUNT ? g_types[type].block : 0;
}

uint32_t strata_type_block_bytes(uint32_t type)
{
	return type < STRATA_TYPE_COUNT ? g_types[type].bytes : 0;
}

int strata_type_from_name(const char *name)
{
	for (int i = 0; i < STRATA_TYPE_COUNT; i++)
		if (g_types[i].name && strcasecmp(g_types[i].name, name) == 0)
			return i;
	return -1;
}

size_t strata_type_row_bytes(uint32_t type, int64_t n)
{
	uint32_t blk = strata_type_block(type);

	if (blk == 0 || n < 0 || n % blk)
		return 0;
	return (size_t)(n / blk) * strata_type_block_bytes(type);
}

uint16_t strata_f32_to_fp16(float f)
{
	uint32_t x, sign, man;
	int32_t exp;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
	man = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0xff) /* inf / nan */
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		uint32_t shift, m, half, r;

		if (exp < -10)
			return (uint16_t)sign;
		m = man | 0x800000;
		shift = (uint32_t)(14 - exp);
		half = 1u << (shift - 1);
		r = m >> shift;
		if ((m & ((1u << shift) - 1)) > half ||
		    ((m & ((1u << shift) - 1)) == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	{
		uint32_t r = ((uint32_t)exp << 10) | (man >> 13);
		uint32_t rem = man & 0x1fff;

		if (rem > 0x1000 || (rem == 0x1000 && (r & 1)))
			r++; /* may carry into the exponent: still correct */
		return (uint16_t)(sign | r);
	}
}

uint16_t strata_f32_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000) /* nan: keep it quiet */
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

/*
 * include/strata/quants.h is what device plugins compile against: its
 * structs must have the bytes this table (and every kernel) uses.
 */
#include <stddef.h>
_Static_assert(sizeof(struct strata_block_q4_0) == 18, "q4_0");
_Static_assert(sizeof(struct strata_block_q4_1) == 20, "q4_1");
_Static_assert(sizeof(struct strata_block_q5_0) == 22, "q5_0");
_Static_assert(sizeof(struct strata_block_q5_1) == 24, "q5_1");
_Static_assert(sizeof(struct strata_block_q8_0) == 34, "q8_0");
_Static_assert(sizeof(struct strata_block_q8_1) == 36, "q8_1");
_Static_assert(sizeof(struct strata_block_iq4_nl) == 18, "iq4_nl");
_Static_assert(sizeof(struct strata_block_q2_k) == 84, "q2_k");
_Static_assert(sizeof(struct strata_block_q3_k) == 110, "q3_k");
_Static_assert(sizeof(struct strata_block_q4_k) == 144, "q4_k");
_Static_assert(sizeof(struct strata_block_q5_k) == 176, "q5_k");
_Static_assert(sizeof(struct strata_block_q6_k) == 210, "q6_k");
_Static_assert(sizeof(struct strata_block_q8_k) == 292, "q8_k");
_Static_assert(sizeof(struct strata_block_iq2_xs) == 74, "iq2_xs");
_Static_assert(sizeof(struct strata_block_iq2_s) == 82, "iq2_s");
_Static_assert(sizeof(struct strata_block_iq3_xxs) == 98, "iq3_xxs");
_Static_assert(sizeof(struct strata_block_iq3_s) == 110, "iq3_s");
_Static_assert(sizeof(struct strata_block_iq1_m) == 56, "iq1_m");
/* Field offsets the kernels read by hand (quants_k.c, quants_iq.c). */
_Static_assert(offsetof(struct strata_block_q2_k, d) == 80, "q2_k.d");
_Static_assert(offsetof(struct strata_block_q3_k, scales) == 96, "q3_k.scales");
_Static_assert(offsetof(struct strata_block_q3_k, d) == 108, "q3_k.d");
_Static_assert(offsetof(struct strata_block_q4_k, qs) == 16, "q4_k.qs");
_Static_assert(offsetof(struct strata_block_q5_k, qh) == 16, "q5_k.qh");
_Static_assert(offsetof(struct strata_block_q5_k, qs) == 48, "q5_k.qs");
_Static_assert(offsetof(struct strata_block_q6_k, scales) == 192, "q6_k.scales");
_Static_assert(offsetof(struct strata_block_q6_k, d) == 208, "q6_k.d");
_Static_assert(offsetof(struct strata_block_q8_k, bsums) == 260, "q8_k.bsums");
_Static_assert(offsetof(struct strata_block_iq2_xs, scales) == 66, "iq2_xs.scales");
_Static_assert(offsetof(struct strata_block_iq2_s, qh) == 66, "iq2_s.qh");
_Static_assert(offsetof(struct strata_block_iq2_s, scales) == 74, "iq2_s.scales");
_Static_assert(offsetof(struct strata_block_iq3_s, qh) == 66, "iq3_s.qh");
_Static_assert(offsetof(struct strata_block_iq3_s, signs) == 74, "iq3_s.signs");
_Static_assert(offsetof(struct strata_block_iq3_s, scales) == 106, "iq3_s.scales");
_Static_assert(offsetof(struct strata_block_iq1_m, qh) == 32, "iq1_m.qh");
_Static_assert(offsetof(struct strata_block_iq1_m, scales) == 48, "iq1_m.scales");
