/*
 * ple_row.c - decoding table rows, synthetic rows, and finding the table in
 * a GGUF file.
 *
 * Rows decode through the CPU kernels' strata_dequant(), so a row decodes
 * exactly as a weight of its type would; the reader accepts the types the
 * PLE table ships in (and plain floats), as long as the kernels have them.
 */
#include "ple/ple.h"

#include <errno.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/types.h"
#include "gguf/gguf.h"
#include "util/log.h"

int strata_ple_type_ok(uint32_t type)
{
	switch (type) {
	case STRATA_TYPE_F32:
	case STRATA_TYPE_F16:
	case STRATA_TYPE_BF16:
	case STRATA_TYPE_Q8_0:
	case STRATA_TYPE_Q4_0:
	case STRATA_TYPE_Q5_0:
	case STRATA_TYPE_Q5_1:
	case STRATA_TYPE_IQ4_NL:
		return strata_type_supported(type);
	default:
		return 0;
	}
}

int strata_ple_decode_row(uint32_t type, const void *src, float *dst, uint32_t n)
{
	uint32_t blk = strata_type_block(type);

	if (!strata_ple_type_ok(type) || blk == 0 || n % blk)
		return -EINVAL;
	strata_dequant(type, src, dst, n);
	return 0;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* A value in [-2, 2) from the hash stream, exact in every float type here. */
static float synth_value(uint64_t *s)
{
	return (float)((int)(splitmix(s) & 0x3ff) - 512) / 256.0f;
}

void strata_ple_synth_row(uint32_t type, uint32_t row_len, uint64_t idx, void *buf)
{
	size_t rb = strata_type_row_bytes(type, row_len);
	uint32_t bb = strata_type_block_bytes(type), hdr = type == STRATA_TYPE_Q5_1 ? 4 : 2;
	uint64_t s = idx * 0xD1B54A32D192ED03ull + 0x504c45;
	uint8_t *b = buf;
	uint32_t id32 = (uint32_t)idx;

	if (type == STRATA_TYPE_F32 || type == STRATA_TYPE_F16 || type == STRATA_TYPE_BF16) {
		for (uint32_t i = 0; i < row_len; i++) {
			float v = synth_value(&s);

			if (type == STRATA_TYPE_F32) {
				memcpy(b + 4 * i, &v, 4);
			} else {
				uint16_t h = type == STRATA_TYPE_F16 ? strata_f32_to_fp16(v)
								     : strata_f32_to_bf16(v);

				memcpy(b + 2 * i, &h, 2);
			}
		}
		return;
	}
	for (size_t i = 0; i < rb; i += 8) {
		uint64_t x = splitmix(&s);

		memcpy(b + i, &x, rb - i < 8 ? rb - i : 8);
	}
	for (size_t off = 0; off < rb; off += bb) {
		/* d in [2^-7, 2^-6): finite and normal; Q5_1's m centres the values. */
		float d = (1.0f + (float)((idx + off) % 1021) / 1021.0f) / 128.0f;
		uint16_t hd = strata_f32_to_fp16(d), hm = strata_f32_to_fp16(-16.0f * d);

		memcpy(b + off, &hd, 2);
		if (type == STRATA_TYPE_Q5_1)
			memcpy(b + off + 2, &hm, 2);
	}
	memcpy(b + hdr, &id32, 4);
}

int strata_ple_table_from_gguf(const struct strata_gguf *g, struct strata_ple_table *t)
{
	const struct strata_gguf_tensor *tn = strata_gguf_find_tensor(g, STRATA_PLE_TENSOR);

	if (!tn) {
		strata_error("%s: no tensor %s: not a qwen4exp model with a PLE table",
			     strata_gguf_path(g), STRATA_PLE_TENSOR);
		return -ENOENT;
	}
	if (tn->n_dims != 2 || tn->ne[0] <= 0 || tn->ne[1] <= 0) {
		strata_error("%s: tensor %s: expected 2 dimensions [row length, rows]",
			     strata_gguf_path(g), STRATA_PLE_TENSOR);
		return -EINVAL;
	}
	if (!strata_ple_type_ok(tn->type) ||
	    strata_type_row_bytes(tn->type, tn->ne[0]) == 0 || tn->ne[0] > UINT32_MAX) {
		strata_error("%s: tensor %s: rows of %lld %s values cannot be decoded "
			     "(IQ4_NL, Q4_0, Q5_0, Q5_1, Q8_0, BF16, F16 or F32 rows can)",
			     strata_gguf_path(g), STRATA_PLE_TENSOR, (long long)tn->ne[0],
			     strata_type_name(tn->type));
		return -EINVAL;
	}
	t->path = strata_gguf_file_path(g, tn->file); /* the shard that holds it */
	t->base = tn->file_off;
	t->n_rows = (uint64_t)tn->ne[1];
	t->type = tn->type;
	t->row_len = (uint32_t)tn->ne[0];
	return 0;
}
