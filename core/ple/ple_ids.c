/*
 * ple_ids.c - the qwen4exp row-id function and its two-token history.
 *
 * The arithmetic is the published model's: products and XOR in wrapping
 * uint64, then a modulo per head.  An EOS predecessor (or none) cuts the
 * context: it and everything older read as EOS, so a document boundary in
 * the middle of a chunk gives the same rows as a fresh sequence would.
 */
#include "ple/ple.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gguf/gguf.h"
#include "util/log.h"

static const uint64_t g_mult[3] = { 23703573157769ull, 20109073645365ull, 8052911324071ull };

static const uint64_t g_sizes[STRATA_PLE_HEADS] = {
	20000003, 20000023, 20000033, 20000047, 20000059, 20000063, 20000069, 20000077,
	20000081, 20000093, 20000107, 20000147, 20000153, 20000159, 20000161, 20000171,
};

void strata_ple_hash_default(struct strata_ple_hash *h)
{
	uint64_t off = 0;

	memcpy(h->mult, g_mult, sizeof(g_mult));
	for (int i = 0; i < STRATA_PLE_HEADS; i++) {
		h->size[i] = g_sizes[i];
		h->offset[i] = off;
		off += g_sizes[i];
	}
	h->eos = STRATA_PLE_EOS;
}

/* An integer array key of exactly n elements into out; absent leaves out alone. */
static int read_u64_array(const struct strata_gguf *g, const char *key, uint64_t *out,
			  uint64_t n)
{
	enum strata_gguf_vtype et;
	const void *data;
	uint64_t len;
	int rc = strata_gguf_get_arr(g, key, &et, &len, &data);

	if (rc == -ENOENT)
		return 0;
	if (rc || len != n || !data) {
		strata_error("%s: key %s: expected an array of %llu integers",
			     strata_gguf_path(g), key, (unsigned long long)n);
		return -EINVAL;
	}
	for (uint64_t i = 0; i < n; i++) {
		const unsigned char *p = data;
		uint64_t v = 0;

		switch (et) {
		case STRATA_GGUF_U32:
		case STRATA_GGUF_I32: {
			uint32_t x;

			memcpy(&x, p + 4 * i, 4);
			if (et == STRATA_GGUF_I32 && (int32_t)x < 0)
				goto bad;
			v = x;
			break;
		}
		case STRATA_GGUF_U64:
		case STRATA_GGUF_I64:
			memcpy(&v, p + 8 * i, 8);
			if (et == STRATA_GGUF_I64 && (int64_t)v < 0)
				goto bad;
			break;
		default:
			goto bad;
		}
		out[i] = v;
	}
	return 0;
bad:
	strata_error("%s: key %s: expected non-negative 32- or 64-bit integers",
		     strata_gguf_path(g), key);
	return -EINVAL;
}

int strata_ple_hash_from_gguf(const struct strata_gguf *g, struct strata_ple_hash *h)
{
	struct strata_str arch = { "qwen4exp", 8 };
	char key[160];
	int rc;

	strata_ple_hash_default(h);
	strata_gguf_get_str(g, "general.architecture", &arch);
	snprintf(key, sizeof(key), "%.*s.ple.layer_multipliers", (int)arch.len, arch.s);
	if ((rc = read_u64_array(g, key, h->mult, 3)))
		return rc;
	snprintf(key, sizeof(key), "%.*s.ple.head_vocab_sizes", (int)arch.len, arch.s);
	if ((rc = read_u64_array(g, key, h->size, STRATA_PLE_HEADS)))
		return rc;
	for (int i = 0; i < STRATA_PLE_HEADS; i++)
		if (h->size[i] == 0) {
			strata_error("%s: key %s: head %d has size 0", strata_gguf_path(g), key, i);
			return -EINVAL;
		}
	/* Without stored offsets the slices follow each other, as in the model code. */
	h->offset[0] = 0;
	for (int i = 1; i < STRATA_PLE_HEADS; i++)
		h->offset[i] = h->offset[i - 1] + h->size[i - 1];
	snprintf(key, sizeof(key), "%.*s.ple.head_offsets", (int)arch.len, arch.s);
	if ((rc = read_u64_array(g, key, h->offset, STRATA_PLE_HEADS)))
		return rc;
	return 0;
}

void strata_ple_hist_init(const struct strata_ple_hash *h, struct strata_ple_hist *st)
{
	st->prev1 = h->eos;
	st->prev2 = h->eos;
}

void strata_ple_row_ids(const struct strata_ple_hash *h, struct strata_ple_hist *st,
			const int32_t *tokens, size_t n, uint64_t *rows)
{
	uint64_t p1 = st->prev1, p2 = st->prev2;

	for (size_t i = 0; i < n; i++) {
		uint64_t c0 = (uint64_t)(uint32_t)tokens[i];
		/* An EOS predecessor hides everything older than it. */
		uint64_t c1 = p1, c2 = p1 == h->eos ? h->eos : p2;
		uint64_t mixed2 = (c0 * h->mult[0]) ^ (c1 * h->mult[1]);
		uint64_t mixed3 = mixed2 ^ (c2 * h->mult[2]);
		uint64_t *r = rows + i * STRATA_PLE_HEADS;

		for (int k = 0; k < STRATA_PLE_HEADS / 2; k++)
			r[k] = mixed2 % h->size[k] + h->offset[k];
		for (int k = STRATA_PLE_HEADS / 2; k < STRATA_PLE_HEADS; k++)
			r[k] = mixed3 % h->size[k] + h->offset[k];
		p2 = p1;
		p1 = c0;
	}
	st->prev1 = p1;
	st->prev2 = p2;
}
