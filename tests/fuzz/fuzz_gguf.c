/*
 * fuzz_gguf.c - the GGUF reader, and what is built from a GGUF's metadata
 * (the tokenizer, the model's hyperparameters and tensor table), on any bytes.
 *
 * The input is a GGUF file.  It is opened twice: as it is, and grown with
 * zeros to 4 MiB, so a header whose tensors point past its end (every seed
 * is a header without its data) still reaches the accessors, the tokenizer
 * and the model loader.  After a successful open every accessor must be safe
 * with any argument (gguf.h), every key and tensor must be found again by its
 * name, and every tensor must lie inside the file.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cpu/types.h"
#include "fuzz.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "tok/tokenizer.h"

#define FUZZ_GGUF_EXTEND (4u << 20)

int fuzz_target_init(void)
{
	fuzz_quiet();
	return 0;
}

static void walk_kv(const struct strata_gguf *g)
{
	int64_t n = strata_gguf_n_kv(g);
	char buf[96], tiny[5], name[256];

	for (int64_t i = -1; i <= n; i++) {
		struct strata_str k = strata_gguf_key(g, i);
		enum strata_gguf_vtype et;
		uint64_t an;
		const void *ad;
		uint32_t u32;
		int64_t i64;
		float f;
		int b;

		strata_gguf_format_value(g, i, buf, sizeof(buf));
		strata_gguf_format_value(g, i, tiny, sizeof(tiny)); /* the cut path */
		FUZZ_CHECK(memchr(buf, 0, sizeof(buf)) && memchr(tiny, 0, sizeof(tiny)));
		(void)strata_gguf_vtype_name(strata_gguf_kv_type(g, i));
		if (strata_gguf_kv_arr(g, i, &et, &an, &ad) == 0 && et == STRATA_GGUF_STRING &&
		    an > 0) {
			struct strata_str s0 = strata_gguf_arr_str(g, i, 0);
			struct strata_str sl = strata_gguf_arr_str(g, i, an - 1);

			FUZZ_CHECK(s0.s && sl.s);
			FUZZ_CHECK(!strata_gguf_arr_str(g, i, an).s);
		}
		if (i < 0 || i == n) {
			FUZZ_CHECK(k.s == NULL || k.len == 0);
			continue;
		}
		/* A key without NUL bytes is found again by its name. */
		if (k.len >= sizeof(name) || memchr(k.s, 0, k.len))
			continue;
		memcpy(name, k.s, k.len);
		name[k.len] = 0;
		FUZZ_CHECK(strata_gguf_find_key(g, name) == i);
		(void)strata_gguf_get_u32(g, name, &u32);
		(void)strata_gguf_get_i64(g, name, &i64);
		(void)strata_gguf_get_f32(g, name, &f);
		(void)strata_gguf_get_bool(g, name, &b);
		(void)strata_gguf_get_arr(g, name, &et, &an, &ad);
	}
}

static void walk_tensors(const struct strata_gguf *g)
{
	const uint8_t *base = NULL;
	int64_t n = strata_gguf_n_tensors(g);
	char name[256];

	FUZZ_CHECK(strata_gguf_tensor(g, -1) == NULL && strata_gguf_tensor(g, n) == NULL);
	for (int64_t i = 0; i < n; i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		uint64_t end = strata_gguf_data_offset(g) + t->offset + t->size;

		FUZZ_CHECK(end <= strata_gguf_file_size(g));
		FUZZ_CHECK(strata_type_block(t->type) != 0);
		FUZZ_CHECK(t->size == strata_type_row_bytes(t->type, t->ne[0]) *
					      (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]));
		if (!base)
			base = (const uint8_t *)t->data - strata_gguf_data_offset(g) - t->offset;
		FUZZ_CHECK((const uint8_t *)t->data ==
			   base + strata_gguf_data_offset(g) + t->offset);
		if (t->name.len >= sizeof(name) || memchr(t->name.s, 0, t->name.len))
			continue;
		memcpy(name, t->name.s, t->name.len);
		name[t->name.len] = 0;
		FUZZ_CHECK(strata_gguf_find_tensor(g, name) == t);
	}
}

/* A tokenizer built from fuzzed metadata must tokenize and detokenize sanely. */
static void try_tokenizer(const struct strata_gguf *g)
{
	static const char text[] = "Hello world! <s> \xC3\xA9t\xC3\xA9 123 \xF0\x9F\x98\x80 \xFF";
	struct strata_tokenizer *t;
	int32_t *ids = NULL;
	char out[512];
	int n;

	if (strata_tokenizer_load(g, &t) != 0)
		return;
	n = strata_tokenize(t, text, sizeof(text) - 1,
			    STRATA_TOK_ADD_BOS | STRATA_TOK_PARSE_SPECIAL, &ids);
	if (n > 0) {
		for (int i = 0; i < n; i++)
			FUZZ_CHECK(ids[i] >= 0 && ids[i] < strata_tokenizer_n_vocab(t));
		int k = strata_detokenize(t, ids, (size_t)n, 0, out, sizeof(out));

		FUZZ_CHECK(k >= 0 || k == -EOVERFLOW);
	}
	free(ids);
	for (int32_t id = -1; id <= 3; id++)
		(void)strata_token_to_piece(t, id, out, 8);
	strata_tokenizer_free(t);
}

static void open_as_file(const uint8_t *data, size_t size, size_t extend)
{
	struct strata_gguf *g;
	struct strata_model *m;
	char path[64];
	int fd = fuzz_memfile(data, size, extend, path, sizeof(path));

	if (fd < 0)
		return;
	if (strata_gguf_open(path, &g) == 0) {
		walk_kv(g);
		walk_tensors(g);
		try_tokenizer(g);
		strata_gguf_close(g);
		/* Only a file that opens can be a model. */
		if (strata_model_load(path, &m) == 0)
			strata_model_free(m);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	open_as_file(data, size, 0);
	if (size < FUZZ_GGUF_EXTEND)
		open_as_file(data, size, FUZZ_GGUF_EXTEND);
	return 0;
}
