/*
 * types.h - tensor element types (GGUF/ggml numbering) and their block sizes.
 *
 * This table is what the GGUF reader validates tensor sizes with; whether the
 * CPU kernels can compute with a type is a separate question answered by
 * strata_type_supported() in kernels.h.
 */
#ifndef STRATA_TYPES_H
#define STRATA_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* enum strata_type (GGUF numbering) and the block layouts are public: */
#include "strata/quants.h"

/* "F32", "Q4_K", ...; "?" for an unknown id. */
const char *strata_type_name(uint32_t type);
/* Values per block (1 for plain types); 0 for an unknown id. */
uint32_t strata_type_block(uint32_t type);
/* Bytes per block; 0 for an unknown id. */
uint32_t strata_type_block_bytes(uint32_t type);
/* Lookup by name, case-insensitive; -1 when unknown. */
int strata_type_from_name(const char *name);
/*
 * Bytes of a row of n values: 0 when the type is unknown or n is not a
 * multiple of its block.
 */
size_t strata_type_row_bytes(uint32_t type, int64_t n);

/* IEEE half and bfloat16 conversions (round to nearest even). */
static inline float strata_fp16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	float f;

	if (exp == 0) {
		/* zero or subnormal: value = man * 2^-24 */
		f = (float)man * (1.0f / 16777216.0f);
		memcpy(&bits, &f, 4);
		bits |= sign;
	} else if (exp == 31) {
		bits = sign | 0x7f800000u | (man << 13);
	} else {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	}
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t strata_f32_to_fp16(float f);

/* The f16 stored at p (possibly unaligned, as in GGUF blocks), as a float. */
static inline float strata_load_fp16(const void *p)
{
	uint16_t h;

	memcpy(&h, p, 2);
	return strata_fp16_to_f32(h);
}

/* Store f at p as f16 (possibly unaligned). */
static inline void strata_store_fp16(void *p, float f)
{
	uint16_t h = strata_f32_to_fp16(f);

	memcpy(p, &h, 2);
}

static inline float strata_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;

	memcpy(&f, &bits, 4);
	return f;
}

uint16_t strata_f32_to_bf16(float f);

#endif
