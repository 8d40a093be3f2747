/*
 * quants_iq_x86.h - private to quants_iq_avx2.c and quants_iq_avx512.c: the
 * i-quant block decoders both x86 levels share (AVX2 intrinsics; the
 * AVX-512 TU gets the same code with its wider flags, and uses mask
 * registers for the signs).
 *
 * An i-quant block is too expensive to unpack once per token (codebook
 * lookups, sign bits, scale nibbles), so the SIMD tile kernels unpack each
 * weight block once into a `struct iq_dec` that every token then reads:
 *   w    the 256 weights as signed integers (|w| <= 62),
 *   sc   the integer scale of each pair of weights (the scale of its group
 *        of 16), laid out to match vpmaddubsw's 16-bit pair sums: lanes
 *        16 h .. 16 h + 15 belong to weights 32 h .. 32 h + 31,
 *   corr -128 * sum(sc * w), which undoes the +128 that makes the signed
 *        Q8_K activations unsigned for vpmaddubsw (u8 x s8),
 *   d    the block's float scale including the type's power of two.
 * So for activations q: sum(d * sc * w * q) = d * (sum(sc * w * (q + 128))
 * + corr), every term exact in int32: |pair| <= 2 * 255 * 62 < 2^15 (no
 * vpmaddubsw saturation) and |sum| <= 256 * 255 * 62 * 31 < 2^31.
 */
#ifndef STRATA_QUANTS_IQ_X86_H
#define STRATA_QUANTS_IQ_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "iq_tables.h"
#include "quants_iq.h"

#define IQ_AI static inline __attribute__((always_inline))

struct iq_dec {
	_Alignas(64) int8_t w[256];
	int16_t sc[128];
	int32_t corr;
	float d;
};

enum iq_kind { IQ_2XS, IQ_2S, IQ_3XXS, IQ_3S, IQ_1M };

static const size_t iq_block_bytes[] = {
	[IQ_2XS] = STRATA_IQ2_XS_BYTES, [IQ_2S] = STRATA_IQ2_S_BYTES,
	[IQ_3XXS] = STRATA_IQ3_XXS_BYTES, [IQ_3S] = STRATA_IQ3_S_BYTES,
	[IQ_1M] = STRATA_IQ1_M_BYTES,
};

IQ_AI uint16_t iq_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

IQ_AI uint32_t iq_rd32(const uint8_t *p)
{
	return (uint32_t)iq_rd16(p) | (uint32_t)iq_rd16(p + 2) << 16;
}

IQ_AI uint64_t iq_rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8); /* x86: little-endian, as the file */
	return v;
}

/*
 * Eight 4-value grid entries.  Each is broadcast from memory (a load-port
 * op, no shuffle) and vpblendd (any vector ALU) puts it in its lane: the
 * vmovd/vpinsrd/vinserti128 build spent 7 shuffle-port ops per 32 weights,
 * which the sign and scale shuffles need (alone it measured even on Zen 5;
 * with the register-held indices, masks and scales below, the AVX2 IQ3_XXS
 * row went 13.8 -> 15.7 GMAC/s a core).  Scalar loads of this kind beat
 * vpgatherdd on the cores we measured (Zen 5: 15.5 against 10.8).
 */
IQ_AI __m256i iq_bcast32(const uint32_t *p)
{
	__m256i v;

	/* asm: the compiler would fold the blends below back into inserts */
	__asm__("vpbroadcastd %1, %0" : "=x"(v) : "m"(*p));
	return v;
}

IQ_AI __m256i iq_grid32(const uint32_t *grid, int i0, int i1, int i2, int i3,
			int i4, int i5, int i6, int i7)
{
	const __m256i a = _mm256_blend_epi32(iq_bcast32(grid + i0), iq_bcast32(grid + i1), 0x02);
	const __m256i b = _mm256_blend_epi32(iq_bcast32(grid + i2), iq_bcast32(grid + i3), 0x08);
	const __m256i c = _mm256_blend_epi32(iq_bcast32(grid + i4), iq_bcast32(grid + i5), 0x20);
	const __m256i d = _mm256_blend_epi32(iq_bcast32(grid + i6), iq_bcast32(grid + i7), 0x80);

	return _mm256_blend_epi32(_mm256_blend_epi32(a, b, 0x0c), _mm256_blend_epi32(c, d, 0xc0), 0xf0);
}

/* Four 8-value grid entries, as iq_grid32. */
IQ_AI __m256i iq_bcast64(const uint64_t *p)
{
	__m256i v;

	__asm__("vpbroadcastq %1, %0" : "=x"(v) : "m"(*p));
	return v;
}

IQ_AI __m256i iq_grid64(const uint64_t *grid, int i0, int i1, int i2, int i3)
{
	return _mm256_blend_epi32(_mm256_blend_epi32(iq_bcast64(grid + i0), iq_bcast64(grid + i1), 0x0c),
				  _mm256_blend_epi32(iq_bcast64(grid + i2), iq_bcast64(grid + i3), 0xc0),
				  0xf0);
}

/* Two 4-bit scales per byte (IQ2_XS, IQ2_S): groups 2i, 2i+1 from byte i;
 * returns the 16 group scales 2 s + 1 as bytes. */
IQ_AI __m128i iq_nibble_scales(const uint8_t *p)
{
	const __m128i m4 = _mm_set1_epi8(0x0f);
	__m128i b = _mm_loadl_epi64((const __m128i *)p);
	__m128i s = _mm_unpacklo_epi8(_mm_and_si128(b, m4),
				      _mm_and_si128(_mm_srli_epi16(b, 4), m4));

	return _mm_add_epi8(_mm_add_epi8(s, s), _mm_set1_epi8(1));
}

/*
 * Store the 32 weights of half h, their pair scales (from the group scales
 * S, bytes), and add their share of the +128 correction to *cv.
 */
IQ_AI void iq_put(struct iq_dec *o, int h, __m256i w, __m128i S, __m256i *cv)
{
	const __m128i pick = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1,
					   1, 1, 1, 1);
	__m256i sc = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(
		S, _mm_add_epi8(pick, _mm_set1_epi8((char)(2 * h)))));

	_mm256_store_si256((__m256i *)(o->w + 32 * h), w);
	_mm256_storeu_si256((__m256i *)(o->sc + 16 * h), sc);
	*cv = _mm256_add_epi32(*cv, _mm256_madd_epi16(
		_mm256_maddubs_epi16(_mm256_set1_epi8((char)0x80), w), sc));
}

IQ_AI void iq_finish(struct iq_dec *o, __m256i cv, float d)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(cv),
				  _mm256_extracti128_si256(cv, 1));

	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
	o->corr = -_mm_cvtsi128_si32(s);
	o->d = d;
}

/*
 * The 16 group scales (2 s + 1, one per 16 weights) as bytes, made in
 * registers: a byte loop here was a quarter of IQ3_XXS's one-token rows.
 */
IQ_AI __m128i iq_scales(enum iq_kind kind, const uint8_t *p)
{
	const __m128i m4 = _mm_set1_epi8(0x0f), one = _mm_set1_epi8(1);
	__m128i s;

	switch (kind) {
	case IQ_2XS:
		return iq_nibble_scales(p + 66);
	case IQ_2S:
		return iq_nibble_scales(p + 74);
	case IQ_3XXS: { /* the top nibble of each of the 8 words at 66, twice */
		const __m128i lo = _mm_loadu_si128((const __m128i *)(p + 66));
		const __m128i hi = _mm_loadu_si128((const __m128i *)(p + 82));

		s = _mm_or_si128(_mm_shuffle_epi8(lo, _mm_setr_epi8(3, 3, 7, 7, 11, 11, 15, 15,
								    -1, -1, -1, -1, -1, -1, -1, -1)),
				 _mm_shuffle_epi8(hi, _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1,
								    3, 3, 7, 7, 11, 11, 15, 15)));
		s = _mm_and_si128(_mm_srli_epi16(s, 4), m4);
		break;
	}
	case IQ_3S: { /* nibbles of the 4 bytes at 106, low first, twice */
		int32_t v;

		memcpy(&v, p + 106, 4);
		s = _mm_cvtsi32_si128(v);
		s = _mm_unpacklo_epi8(_mm_and_si128(s, m4), _mm_and_si128(_mm_srli_epi16(s, 4), m4));
		s = _mm_unpacklo_epi8(s, s);
		break;
	}
	case IQ_1M: { /* 3-bit fields at 0, 3, 6, 9 of the 4 words at 48 */
		const __m256i w = _mm256_shuffle_epi8(
			_mm256_set1_epi64x((long long)iq_rd64(p + 48)),
			_mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3,
					 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7));
		/* field at bit b to the top 3 bits: times 2^(13 - b) */
		const __m256i f = _mm256_srli_epi16(_mm256_mullo_epi16(w, _mm256_setr_epi16(
			1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4,
			1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4)), 13);

		s = _mm_packus_epi16(_mm256_castsi256_si128(f), _mm256_extracti128_si256(f, 1));
		break;
	}
	default:
		return _mm_setzero_si128();
	}
	return _mm_add_epi8(_mm_add_epi8(s, s), one);
}

/* fp16 to float: F16C where the level has it (both x86 levels do). */
IQ_AI float iq_h2f(uint16_t h)
{
#if defined(__F16C__)
	return _cvtsh_ss(h);
#else
	return strata_fp16_to_f32(h);
#endif
}

/* The block's float scale times the type's power of two (quants_iq.h). */
IQ_AI float iq_dscale(enum iq_kind kind, const uint8_t *p)
{
	const uint8_t *sc = p + 48;

	switch (kind) {
	case IQ_3XXS:
		return iq_h2f(iq_rd16(p)) * 0.25f;
	case IQ_3S:
		return iq_h2f(iq_rd16(p));
	case IQ_1M:
		return iq_h2f((uint16_t)((iq_rd16(sc) >> 12) |
			((iq_rd16(sc + 2) >> 8) & 0x00f0) |
			((iq_rd16(sc + 4) >> 4) & 0x0f00) |
			(iq_rd16(sc + 6) & 0xf000))) * 0.125f;
	default:
		return iq_h2f(iq_rd16(p)) * 0.125f;
	}
}

/*
 * IQ2_XS and IQ3_XXS store seven sign bits per 8 weights, the eighth being
 * their parity: the parity of a 7-bit field is a 16-entry shuffle of the
 * XOR of its halves (as ik_llama.cpp does it), for every byte of f at once
 * (fields in bits 0-6, bit 7 clear); returns f with the parity as bit 7.
 */
IQ_AI __m256i iq_parity7(__m256i f)
{
	const __m256i par = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128,
					     0, -128, -128, 0, 0, -128, -128, 0, -128, 0, 0, -128,
					     -128, 0, 0, -128, 0, -128, -128, 0);

	return _mm256_or_si256(f, _mm256_shuffle_epi8(par, _mm256_and_si256(
		_mm256_xor_si256(f, _mm256_srli_epi16(f, 4)), _mm256_set1_epi8(15))));
}

/*
 * A block's sign masks in one register: bit i of byte 4 h + k set when
 * weight 32 h + 8 k + i is negative (IQ1_M has no sign bits: zero).  Made
 * for the whole block in vectors and read per 32 weights by iq_signs_h
 * straight from the register (they went through memory before: AVX2
 * IQ3_XXS row 13.6 -> 14.1 GMAC/s); IQ3_XXS's four fields of a word go to
 * its four bytes first, so one parity pass serves them all, not one a field.
 */
IQ_AI __m256i iq_block_signs_v(enum iq_kind kind, const uint8_t *p)
{
	switch (kind) {
	case IQ_2XS: {
		const __m256i v0 = _mm256_loadu_si256((const __m256i *)(p + 2));
		const __m256i v1 = _mm256_loadu_si256((const __m256i *)(p + 34));

		/* packus works per lane: quarters come out as m0 m2 m1 m3 */
		return _mm256_permute4x64_epi64(_mm256_packus_epi16(
			iq_parity7(_mm256_srli_epi16(v0, 9)),
			iq_parity7(_mm256_srli_epi16(v1, 9))), 0xd8); /* high bytes 0 */
	}
	case IQ_3XXS: { /* field i (bits 7 i ..) to byte i, then one parity pass */
		const __m256i sw = _mm256_loadu_si256((const __m256i *)(p + 66));
		const __m256i f = _mm256_or_si256(
			_mm256_or_si256(_mm256_and_si256(sw, _mm256_set1_epi32(0x7f)),
					_mm256_and_si256(_mm256_slli_epi32(sw, 1), _mm256_set1_epi32(0x7f00))),
			_mm256_or_si256(_mm256_and_si256(_mm256_slli_epi32(sw, 2), _mm256_set1_epi32(0x7f0000)),
					_mm256_and_si256(_mm256_slli_epi32(sw, 3), _mm256_set1_epi32(0x7f000000))));

		return iq_parity7(f);
	}
	case IQ_2S:
		return _mm256_loadu_si256((const __m256i *)(p + 34));
	case IQ_3S:
		return _mm256_loadu_si256((const __m256i *)(p + 74));
	default:
		return _mm256_setzero_si256();
	}
}

/* The 128-bit lane of iq_block_signs_v's V that half h reads, in both lanes. */
IQ_AI __m256i iq_signs_lane(__m256i V, int h)
{
	return h < 4 ? _mm256_permute2x128_si256(V, V, 0x00) : _mm256_permute2x128_si256(V, V, 0x11);
}

/* Negate the bytes of v whose weight in half h is negative (L: iq_signs_lane). */
IQ_AI __m256i iq_signs_h(__m256i v, __m256i L, int h)
{
	const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
	const __m256i s = _mm256_shuffle_epi8(L, _mm256_add_epi8(_mm256_setr_epi8(
		0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
		2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3), _mm256_set1_epi8((char)(4 * (h & 3)))));
#if defined(__AVX512BW__) && defined(__AVX512VL__)
	return _mm256_mask_sub_epi8(v, _mm256_test_epi8_mask(s, bits), _mm256_setzero_si256(), v);
#else
	/* 0x7f where the bit is clear, 0x80 .. 0xff where it is set: never
	 * zero, negative just where v's byte is to be negated */
	return _mm256_sign_epi8(v, _mm256_add_epi8(_mm256_and_si256(s, bits),
						   _mm256_set1_epi8(0x7f)));
#endif
}

/* Half h's pair scales (word lanes 0-7: group 2 h, 8-15: group 2 h + 1)
 * from T, iq_signs_lane of the 16 group scales as words. */
IQ_AI __m256i iq_pair_scales(__m256i T, int h)
{
	const int b = 4 * (h & 3);

	return _mm256_shuffle_epi8(T, _mm256_setr_epi8(
		b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1,
		b + 2, b + 3, b + 2, b + 3, b + 2, b + 3, b + 2, b + 3,
		b + 2, b + 3, b + 2, b + 3, b + 2, b + 3, b + 2, b + 3));
}

/*
 * Weights 32 h .. 32 h + 31 of a block: their magnitudes (iq_block_signs_v
 * says which are negative).  IQ3_S and IQ1_M: iq3s_half and iq1m_half.
 */
IQ_AI __m256i iq_half(enum iq_kind kind, const uint8_t *p, int h)
{
	const uint8_t *q;
	int qh;

	switch (kind) {
	case IQ_2XS: { /* four 9-bit indices in the low bits of four words */
		uint64_t e = iq_rd64(p + 2 + 8 * h);

		__asm__("" : "+r"(e)); /* one load, taken apart in registers */
		return iq_grid64(strata_iq2xs_grid, (int)(e & 511), (int)(e >> 16 & 511),
				 (int)(e >> 32 & 511), (int)(e >> 48 & 511));
	}
	case IQ_2S:
		q = p + 2 + 4 * h;
		qh = p[66 + h];
		return _mm256_setr_epi64x(
			(long long)strata_iq2s_grid[q[0] | (qh & 3) << 8],
			(long long)strata_iq2s_grid[q[1] | (qh & 12) << 6],
			(long long)strata_iq2s_grid[q[2] | (qh & 48) << 4],
			(long long)strata_iq2s_grid[q[3] | (qh & 192) << 2]);
	case IQ_3XXS: {
		/* one load for the 8 indices, taken apart in registers: 8 byte
		 * loads were half the loads of a row, and loads bound it */
		uint64_t e = iq_rd64(p + 2 + 8 * h);

		__asm__("" : "+r"(e));
		return iq_grid32(strata_iq3xxs_grid, (int)(e & 255), (int)(e >> 8 & 255),
				 (int)(e >> 16 & 255), (int)(e >> 24 & 255), (int)(e >> 32 & 255),
				 (int)(e >> 40 & 255), (int)(e >> 48 & 255), (int)(e >> 56));
	}
	default: /* IQ3_S, IQ1_M: iq_half_ix */
		break;
	}
	return _mm256_setzero_si256();
}

#if defined(__AVX512BW__)
/* ---- AVX-512 only (quants_iq_avx512.c, quants_iq_vbmi.c) ---- */

/* The 16 group scales (iq_scales) as words. */
IQ_AI __m512i scales16(enum iq_kind kind, const uint8_t *p)
{
	return _mm512_zextsi256_si512(_mm256_cvtepu8_epi16(iq_scales(kind, p)));
}

/*
 * Word lanes 0..31 of a group-of-16 scale vector for weights 64 c .. 64 c
 * + 63 (vpmaddubsw pair L belongs to group 4 c + L / 8): S16 holds the 16
 * group scales as words.
 */
IQ_AI __m512i pair_scales(__m512i S16, int c)
{
	const __m512i lane = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21,
					      20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10,
					      9, 8, 7, 6, 5, 4, 3, 2, 1, 0);

	return _mm512_permutexvar_epi16(_mm512_add_epi16(_mm512_srli_epi16(lane, 3),
							 _mm512_set1_epi16((short)(4 * c))), S16);
}

/* The exact int32 dot of 64 magnitudes g (unsigned) with activations x
 * whose sign bits m negate, each pair scaled by sc. */
IQ_AI __m512i dot64(__m512i s, __m512i g, const int8_t *x, const uint32_t *m, __m512i sc)
{
	const __m512i xv = _mm512_loadu_si512(x);
	__mmask64 neg;

	memcpy(&neg, m, 8); /* m[0] the low 32 weights, m[1] the high */
	return _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(g, _mm512_mask_sub_epi8(
		xv, neg, _mm512_setzero_si512(), xv)), sc);
}

#endif

/*
 * quants_iq_vbmi.c: the rows of a one-token call (a->nt == 1) with VBMI
 * permutes; returns 0, computing nothing, for a kind it has no rows for
 * (IQ2_S, IQ1_M).  Call only where the CPU has AVX-512 VBMI.
 */
int strata_iq_rows_vbmi(enum iq_kind kind, const struct strata_mm_args *a);
/* ... and iq_decode of n consecutive blocks from w into dec[0 .. n-1]. */
int strata_iq_decode_vbmi(enum iq_kind kind, const uint8_t *w, int n, struct iq_dec *dec);

/*
 * IQ3_S's 64 grid indices of a block, 9 bits each (the qs byte, and bit 8
 * from qh: bit e of the qh bytes read as words), made in vectors and kept
 * there (v[i]: entries 16 i .. 16 i + 15 as words): the per-entry shifts
 * and masks cost more than the loads, and word loads of the indices stored
 * to memory bound the row (IQ3_S 11 -> 13 GMAC/s a core at AVX2, Zen 5).
 */
IQ_AI void iq3s_indices(const uint8_t *p, __m256i v[4])
{
	const __m256i bit = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024,
					      2048, 4096, 8192, 16384, -32768);

	_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
		const __m256i hb = _mm256_and_si256(_mm256_set1_epi16((short)iq_rd16(p + 66 + 2 * i)),
						    bit);

		v[i] = _mm256_or_si256(
			_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(p + 2 + 16 * i))),
			_mm256_and_si256(_mm256_cmpeq_epi16(hb, bit), _mm256_set1_epi16(256)));
	}
}

/* Weights 32 h .. 32 h + 31 of an IQ3_S block from its indices. */
IQ_AI __m256i iq3s_half(const __m256i v[4], int h)
{
	const __m128i w = h & 1 ? _mm256_extracti128_si256(v[h >> 1], 1)
				: _mm256_castsi256_si128(v[h >> 1]);
	const uint64_t a = (uint64_t)_mm_cvtsi128_si64(w);
	const uint64_t b = (uint64_t)_mm_extract_epi64(w, 1);

	return iq_grid32(strata_iq3s_grid, (int)(a & 0xffff), (int)(a >> 16 & 0xffff),
			 (int)(a >> 32 & 0xffff), (int)(a >> 48), (int)(b & 0xffff),
			 (int)(b >> 16 & 0xffff), (int)(b >> 32 & 0xffff), (int)(b >> 48));
}

/* Words 4 q .. 4 q + 3 of the index vectors v (16 words each) as one qword. */
IQ_AI uint64_t iq_words4(const __m256i *v, int q)
{
	const __m128i l = q & 2 ? _mm256_extracti128_si256(v[q >> 2], 1)
				: _mm256_castsi256_si128(v[q >> 2]);

	return (uint64_t)(q & 1 ? _mm_extract_epi64(l, 1) : _mm_cvtsi128_si64(l));
}

/*
 * IQ1_M's 32 11-bit grid indices of a block (the qs byte, 3 bits from the
 * entry's qh nibble: byte e / 2, the low one for even e) and their delta
 * signs (bit e of *dneg: the nibble's bit 3, delta -1), made in vectors and
 * kept there (v[i]: entries 16 i .. 16 i + 15 as words; iq3s_indices says
 * why).
 */
IQ_AI void iq1m_indices(const uint8_t *p, __m256i v[2], uint32_t *dneg)
{
	const __m128i m15 = _mm_set1_epi8(15);
	const __m128i qh = _mm_loadu_si128((const __m128i *)(p + 32));
	const __m128i lo = _mm_and_si128(qh, m15);
	const __m128i hi = _mm_and_si128(_mm_srli_epi16(qh, 4), m15);
	const __m128i n0 = _mm_unpacklo_epi8(lo, hi), n1 = _mm_unpackhi_epi8(lo, hi);

	*dneg = (uint32_t)_mm_movemask_epi8(_mm_slli_epi16(n0, 4)) |
		(uint32_t)_mm_movemask_epi8(_mm_slli_epi16(n1, 4)) << 16;
	v[0] = _mm256_or_si256(
		_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p)),
		_mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_and_si128(n0, _mm_set1_epi8(7))), 8));
	v[1] = _mm256_or_si256(
		_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(p + 16))),
		_mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_and_si128(n1, _mm_set1_epi8(7))), 8));
}

/* Weights 32 h .. 32 h + 31 of an IQ1_M block, signed: 8 grid +- 1. */
IQ_AI __m256i iq1m_half(const __m256i v[2], uint32_t dneg, int h)
{
	const __m256i bit = _mm256_setr_epi64x(1, 2, 4, 8);
	const uint64_t e = iq_words4(v, h);
	__m256i g = iq_grid64(strata_iq1s_grid, (int)(e & 0xffff), (int)(e >> 16 & 0xffff),
			      (int)(e >> 32 & 0xffff), (int)(e >> 48));
	/* -1 for the entries whose delta bit is set, else +1 */
	const __m256i dm = _mm256_set1_epi64x((long long)((dneg >> 4 * h) & 15));
	const __m256i delta = _mm256_or_si256(_mm256_cmpeq_epi64(_mm256_and_si256(dm, bit), bit),
					      _mm256_set1_epi8(1));

	g = _mm256_add_epi8(g, g);
	g = _mm256_add_epi8(g, g);
	return _mm256_add_epi8(_mm256_add_epi8(g, g), delta);
}

/* A block's grid indices where its kind makes them in vectors first. */
struct iq_idx {
	__m256i v[4]; /* IQ3_S: 4, IQ1_M: 2 */
	uint32_t dneg;
};

IQ_AI void iq_indices(enum iq_kind kind, const uint8_t *p, struct iq_idx *ix)
{
	if (kind == IQ_3S)
		iq3s_indices(p, ix->v);
	else if (kind == IQ_1M)
		iq1m_indices(p, ix->v, &ix->dneg);
}

IQ_AI __m256i iq_half_ix(enum iq_kind kind, const uint8_t *p, const struct iq_idx *ix, int h)
{
	if (kind == IQ_3S)
		return iq3s_half(ix->v, h);
	if (kind == IQ_1M)
		return iq1m_half(ix->v, ix->dneg, h);
	return iq_half(kind, p, h);
}

/* Unpack one block for the tile kernels. */
IQ_AI void iq_decode(enum iq_kind kind, const uint8_t *p, struct iq_dec *o)
{
	const __m128i S = iq_scales(kind, p);
	const __m256i V = iq_block_signs_v(kind, p);
	const __m256i L0 = iq_signs_lane(V, 0), L1 = iq_signs_lane(V, 4);
	__m256i cv = _mm256_setzero_si256();
	struct iq_idx ix;

	iq_indices(kind, p, &ix);
	_Pragma("GCC unroll 8") for (int h = 0; h < 8; h++) {
		__m256i g = iq_half_ix(kind, p, &ix, h);

		iq_put(o, h, kind == IQ_1M ? g : iq_signs_h(g, h < 4 ? L0 : L1, h), S, &cv);
	}
	iq_finish(o, cv, iq_dscale(kind, p));
}

/*
 * One row against one token (the decode GEMV), without the unpacked copy:
 * the signs go onto the activations instead, so vpmaddubsw multiplies the
 * unsigned magnitudes by signed activations and no +128 correction is
 * needed.  Returns the row's dot product.
 */
IQ_AI float iq_dot_row(enum iq_kind kind, const uint8_t *w, const uint8_t *x,
		       int64_t k)
{
	const int8_t *xq = STRATA_Q8K_QS(x);
	const float *xd = STRATA_Q8K_D(x, k);
	const size_t bytes = iq_block_bytes[kind];
	__m256 acc = _mm256_setzero_ps();
	__m128 r;

	for (int64_t b = 0; b < k / STRATA_QK_K; b++, w += bytes, xq += STRATA_QK_K) {
		/* the 16 group scales as words; half h reads words 2 h, 2 h + 1 */
		const __m256i S16 = _mm256_cvtepu8_epi16(iq_scales(kind, w));
		const __m256i S0 = iq_signs_lane(S16, 0), S1 = iq_signs_lane(S16, 4);
		__m256i s = _mm256_setzero_si256();
		const __m256i V = iq_block_signs_v(kind, w);
		const __m256i L0 = iq_signs_lane(V, 0), L1 = iq_signs_lane(V, 4);
		struct iq_idx ix;

		iq_indices(kind, w, &ix);
		_Pragma("GCC unroll 8")
		for (int h = 0; h < 8; h++) {
			__m256i g = iq_half_ix(kind, w, &ix, h);
			__m256i xv = _mm256_loadu_si256((const __m256i *)(xq + 32 * h));
			__m256i sc = iq_pair_scales(h < 4 ? S0 : S1, h);
			__m256i pr;

			if (kind == IQ_1M)
				pr = _mm256_maddubs_epi16(_mm256_sign_epi8(g, g),
							  _mm256_sign_epi8(xv, g));
			else
				pr = _mm256_maddubs_epi16(g, iq_signs_h(xv, h < 4 ? L0 : L1, h));
			s = _mm256_add_epi32(s, _mm256_madd_epi16(pr, sc));
		}
		acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s),
				      _mm256_set1_ps(iq_dscale(kind, w) * xd[b]), acc);
	}
	r = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
	r = _mm_add_ps(r, _mm_movehl_ps(r, r));
	r = _mm_add_ss(r, _mm_movehdup_ps(r));
	return _mm_cvtss_f32(r);
}

#endif
